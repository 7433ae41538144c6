//! Messages between the pool (parent) and a worker: one JSON object per line.
//!
//! Parent → worker: `init` (once, first), then `run` jobs, `reply`s to the
//! worker's `call`s and `cancel`s. Worker → parent: `ready` (once, first),
//! then per job `started` (its clocks start; the spec is loaded), a `call`
//! for each `api.request` or `codemode.<tool>` call, `waiting` each time the
//! code blocks on outstanding calls (the parent gives the run's CPU slot up
//! until a reply is due), and `done`. A `cancel` stops the job at once: the
//! interrupt handler sees it between instructions, a wait for replies
//! returns, and the job ends with `cancelled`. An `init` with an inline spec is followed
//! by exactly `bytes` raw bytes of JSON (not line-framed).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::engine::{HostReply, JobKind};
use super::types::{HostCall, Logs};
use super::{Limits, SandboxError};

/// Version both sides must agree on.
pub(crate) const PROTOCOL_VERSION: u32 = 2;

/// Largest line a worker accepts from the parent (replies carry responses).
pub(crate) const MAX_PARENT_LINE: usize = 256 << 20;

/// Spec location sent in `init`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireSpec {
    /// Read this file.
    Path(PathBuf),
    /// Read this many raw bytes right after the `init` line.
    Inline {
        /// Length of the JSON text.
        bytes: usize,
    },
}

/// Parent → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToWorker {
    Init {
        version: u32,
        spec: Option<WireSpec>,
        /// Index the spec at once (warm workers) or on the first search
        /// (workers started for one run, which is usually an execute).
        #[serde(default)]
        eager: bool,
    },
    Run {
        id: u64,
        kind: JobKind,
        code: String,
        limits: Limits,
    },
    Reply {
        id: u64,
        reply: HostReply,
    },
    DebugAbort {
        id: u64,
    },
    Cancel {
        id: u64,
    },
}

/// Worker → parent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorker {
    Ready {
        version: u32,
    },
    /// The job's clocks start now (the spec is loaded).
    Started {
        id: u64,
    },
    Call {
        id: u64,
        call: u32,
        request: HostCall,
    },
    /// The code waits for replies; it runs no JavaScript until one comes.
    Waiting {
        id: u64,
    },
    Done {
        id: u64,
        result: Result<String, SandboxError>,
        logs: Logs,
        requests: u32,
    },
}

/// Serialise `message` as one line (serde_json never emits raw newlines).
pub(crate) fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap_or_else(|e| {
        // Only non-string map keys can fail here, and our types have none.
        format!("{{\"encode_error\":{:?}}}", e.to_string()).into_bytes()
    });
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let msg = ToWorker::Run {
            id: 3,
            kind: JobKind::Execute,
            code: "async () => {\n return 1; }".into(),
            limits: Limits::default(),
        };
        let line = encode(&msg);
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let back: ToWorker = serde_json::from_slice(&line).unwrap();
        assert!(matches!(back, ToWorker::Run { id: 3, .. }));
        let done = FromWorker::Done {
            id: 3,
            result: Err(SandboxError::NeverSettled),
            logs: Logs::default(),
            requests: 0,
        };
        let back: FromWorker = serde_json::from_slice(&encode(&done)).unwrap();
        assert!(matches!(
            back,
            FromWorker::Done {
                result: Err(SandboxError::NeverSettled),
                ..
            }
        ));
    }
}
