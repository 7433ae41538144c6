//! Errors of a sandboxed run.

use serde::{Deserialize, Serialize};

/// Why a sandboxed run produced no value.
///
/// Every variant has a message fit for a model: it says what happened and, for
/// limits, which limit was hit. The enum is serialisable because the worker
/// process reports script-level failures to the parent as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SandboxError {
    /// The code did not compile, or did not evaluate to a function.
    #[error("invalid code: {message}")]
    InvalidCode {
        /// What was wrong, e.g. the syntax error.
        message: String,
    },
    /// The code threw (or its promise rejected) and nothing caught it.
    #[error("uncaught {message}{}", stack.as_deref().map(|s| format!("\n{s}")).unwrap_or_default())]
    Thrown {
        /// `Name: message` of the thrown error, or the thrown value as text.
        message: String,
        /// The first lines of the JavaScript stack, when there is one.
        stack: Option<String>,
    },
    /// The code ran longer than its CPU budget (time spent running
    /// JavaScript, not counting waits for `api.request`).
    #[error("CPU time limit of {limit_ms} ms exceeded")]
    CpuTimeLimit {
        /// The budget in milliseconds.
        limit_ms: u64,
    },
    /// The run, waits included, took longer than its wall-clock budget.
    #[error("wall-clock limit of {limit_ms} ms exceeded")]
    WallClockLimit {
        /// The budget in milliseconds.
        limit_ms: u64,
    },
    /// The JavaScript heap reached its limit.
    #[error("memory limit of {limit_bytes} bytes exceeded")]
    MemoryLimit {
        /// The heap limit in bytes.
        limit_bytes: usize,
    },
    /// Recursion went deeper than the stack limit allows.
    #[error("stack overflow: recursion exceeded the {limit_bytes}-byte stack limit")]
    StackOverflow {
        /// The stack limit in bytes.
        limit_bytes: usize,
    },
    /// The code called `api.request` more often than allowed.
    #[error(
        "request limit exceeded: at most {max} API calls (api.request or codemode.*) per execution"
    )]
    RequestLimit {
        /// The cap on calls.
        max: u32,
    },
    /// The responses of `api.request` added up to more than allowed.
    #[error("response size limit exceeded: api.request responses may total at most {max} bytes")]
    ResponseBytesLimit {
        /// The cap in bytes.
        max: u64,
    },
    /// The returned value, as JSON, is larger than allowed.
    #[error("result too large: {size} bytes of JSON, the limit is {max}")]
    OutputTooLarge {
        /// Size of the serialised result (a lower bound when huge).
        size: usize,
        /// The cap in bytes.
        max: usize,
    },
    /// The returned value cannot be turned into JSON (e.g. a BigInt or a cycle).
    #[error("result is not JSON-serialisable: {message}")]
    NotSerialisable {
        /// The error JSON.stringify gave.
        message: String,
    },
    /// The function's promise never settled and nothing was left to wait for.
    #[error("the returned promise never settled (nothing left to wait for)")]
    NeverSettled,
    /// `search` was called but no spec is available in the sandbox.
    #[error("the API spec is not available for search: {message}")]
    SpecUnavailable {
        /// Why (none configured, or it failed to load).
        message: String,
    },
    /// The worker process died while running the call (abort, signal, crash).
    #[error("sandbox worker crashed: {detail}")]
    WorkerCrashed {
        /// Exit status and the last lines the worker wrote to stderr.
        detail: String,
    },
    /// A worker process could not be started.
    #[error("could not start a sandbox worker: {message}")]
    Spawn {
        /// The operating-system error.
        message: String,
    },
    /// The worker sent something the parent did not expect.
    #[error("sandbox protocol error: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The client cancelled the request, or went away, while the run was
    /// queued or running; nothing more was sent to the API.
    #[error("the run was cancelled by the client")]
    Cancelled,
    /// The sandbox is saturated: the queue of runs waiting for a worker is
    /// full (for this client or in all), or none became free in time.
    #[error(
        "the Code Mode sandbox is busy ({queued} runs waiting for a worker); retry in a few seconds, and avoid starting many runs at once"
    )]
    Busy {
        /// Runs waiting when this one was refused.
        queued: usize,
    },
    /// Internal engine failure that is not the script's fault.
    #[error("sandbox internal error: {message}")]
    Internal {
        /// What failed.
        message: String,
    },
}

impl SandboxError {
    /// True when the failure is a resource limit (CPU, wall clock, memory,
    /// stack, requests, response bytes, output size).
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            Self::CpuTimeLimit { .. }
                | Self::WallClockLimit { .. }
                | Self::MemoryLimit { .. }
                | Self::StackOverflow { .. }
                | Self::RequestLimit { .. }
                | Self::ResponseBytesLimit { .. }
                | Self::OutputTooLarge { .. }
        )
    }

    /// True when the failure came from the worker process itself rather than
    /// from the script (the worker is then discarded and replaced).
    pub fn is_worker_failure(&self) -> bool {
        matches!(
            self,
            Self::WorkerCrashed { .. } | Self::Spawn { .. } | Self::Protocol { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_as_json() {
        let e = SandboxError::Thrown {
            message: "Error: boom".into(),
            stack: Some("    at f".into()),
        };
        let text = serde_json::to_string(&e).unwrap_or_default();
        assert!(text.contains("\"kind\":\"thrown\""), "{text}");
        let back: SandboxError = serde_json::from_str(&text).unwrap_or(SandboxError::NeverSettled);
        assert_eq!(back, e);
    }

    #[test]
    fn messages_name_the_limit() {
        assert_eq!(
            SandboxError::RequestLimit { max: 20 }.to_string(),
            "request limit exceeded: at most 20 API calls (api.request or codemode.*) per execution"
        );
        assert!(SandboxError::CpuTimeLimit { limit_ms: 5 }.is_limit());
        assert!(!SandboxError::NeverSettled.is_limit());
        assert!(
            SandboxError::WorkerCrashed {
                detail: String::new()
            }
            .is_worker_failure()
        );
        let thrown = SandboxError::Thrown {
            message: "Error: x".into(),
            stack: None,
        };
        assert_eq!(thrown.to_string(), "uncaught Error: x");
    }
}
