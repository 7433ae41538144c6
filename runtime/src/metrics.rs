//! Process metrics, recorded through the `metrics` facade and exposed in
//! the Prometheus text format on `--metrics-listen` (see
//! [`crate::server::prometheus`]).
//!
//! Until [`install`] runs (it does when `--metrics-listen` is given) every
//! function here is a no-op costing an atomic load. Labels are bounded:
//! tool names come from the catalogue, everything else from the small enums
//! below; no user ids, no request paths, no status codes beyond their class.
//!
//! | metric | labels |
//! |---|---|
//! | `toolforge_tool_calls_total` | `tool`, `surface` (`direct`, `code`, `codemode`), `outcome` ([`CallOutcome`]) |
//! | `toolforge_tool_call_duration_seconds` (histogram) | `surface` |
//! | `toolforge_upstream_responses_total` | `class` (`1xx`…`5xx`, `error`) |
//! | `toolforge_upstream_duration_seconds` (histogram) | `class` |
//! | `toolforge_listing_requests_total`, `toolforge_listing_bytes_total` | `encoding` (`identity`, `gzip`, `br`) |
//! | `toolforge_schema_mismatches_total` | `tool` |
//! | `toolforge_schema_checks_total` | `result` (`ok`, `mismatch`, `skipped`) |
//! | `toolforge_auth_events_total` | `event` ([`AuthEvent`]) |
//! | `toolforge_sandbox_runs_total` | `kind` (`search`, `execute`, `code`), `outcome` ([`SandboxOutcome`]) |
//! | `toolforge_sandbox_queue_wait_seconds` (histogram) | — |
//! | `toolforge_sandbox_worker_restarts_total` | — |

use std::time::Duration;

use metrics::{counter, histogram};

/// How a `tools/call` ended, for `toolforge_tool_calls_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A successful result.
    Ok,
    /// A tool error (`isError`): the API failed, or the run threw.
    ToolError,
    /// Refused: the API answered 401/403, or no credential is configured.
    Refused,
    /// The arguments did not match the input schema (or were too large).
    InvalidArguments,
    /// The client cancelled the call or went away.
    Cancelled,
}

impl CallOutcome {
    /// `Ok` or `ToolError`, from the result alone.
    pub fn of(result: &rmcp::model::CallToolResult) -> Self {
        if result.is_error == Some(true) {
            Self::ToolError
        } else {
            Self::Ok
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Refused => "refused",
            Self::InvalidArguments => "invalid_arguments",
            Self::Cancelled => "cancelled",
        }
    }
}

/// An authorization event, for `toolforge_auth_events_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthEvent {
    /// The server issued an access token (OAuth).
    Issued,
    /// A refresh token was exchanged for a new access token (OAuth).
    Refreshed,
    /// A grant or token was revoked (OAuth).
    Revoked,
    /// A request to `/mcp` was refused for a missing or invalid token.
    Rejected,
}

impl AuthEvent {
    /// Every event (each is exposed from the start, at 0).
    pub const ALL: [AuthEvent; 4] = [Self::Issued, Self::Refreshed, Self::Revoked, Self::Rejected];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Issued => "issued",
            Self::Refreshed => "refreshed",
            Self::Revoked => "revoked",
            Self::Rejected => "rejected",
        }
    }
}

/// How a sandbox run ended, for `toolforge_sandbox_runs_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxOutcome {
    /// It returned a value.
    Ok,
    /// It threw, did not compile, or hit another limit.
    Error,
    /// It ran out of CPU or wall-clock time.
    Timeout,
    /// Its JavaScript heap reached the memory limit.
    MemoryAbort,
    /// The worker process died under it.
    Crashed,
    /// Refused: the queue was full.
    Busy,
    /// The client cancelled it.
    Cancelled,
}

impl SandboxOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::MemoryAbort => "memory_abort",
            Self::Crashed => "crashed",
            Self::Busy => "busy",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Counts one `tools/call` of `tool` (a catalogue or mode tool name).
pub fn tool_call(tool: &'static str, surface: &'static str, outcome: CallOutcome, took: Duration) {
    counter!("toolforge_tool_calls_total", "tool" => tool, "surface" => surface, "outcome" => outcome.as_str())
        .increment(1);
    histogram!("toolforge_tool_call_duration_seconds", "surface" => surface)
        .record(took.as_secs_f64());
}

/// The label of an upstream status (`None`: no response at all).
pub fn status_class(status: Option<u16>) -> &'static str {
    match status {
        Some(100..=199) => "1xx",
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        _ => "error",
    }
}

/// Counts one upstream exchange and its latency.
pub fn upstream_response(status: Option<u16>, took: Duration) {
    let class = status_class(status);
    counter!("toolforge_upstream_responses_total", "class" => class).increment(1);
    histogram!("toolforge_upstream_duration_seconds", "class" => class).record(took.as_secs_f64());
}

/// Counts one `tools/list` answer of `bytes` bytes on the wire.
pub fn listing(encoding: &'static str, bytes: usize) {
    counter!("toolforge_listing_requests_total", "encoding" => encoding).increment(1);
    counter!("toolforge_listing_bytes_total", "encoding" => encoding).increment(bytes as u64);
}

/// Counts one response that did not match `tool`'s response schema.
pub fn schema_mismatch(tool: &'static str) {
    counter!("toolforge_schema_mismatches_total", "tool" => tool).increment(1);
}

/// Counts one response schema check (`ok`, `mismatch` or `skipped`).
pub fn schema_check(result: &'static str) {
    counter!("toolforge_schema_checks_total", "result" => result).increment(1);
}

/// Counts an authorization event; the OAuth layer calls this for
/// issued, refreshed and revoked tokens, the token check for rejections.
pub fn auth_event(event: AuthEvent) {
    counter!("toolforge_auth_events_total", "event" => event.as_str()).increment(1);
}

/// Counts one sandbox run and how long it waited for a worker slot.
pub fn sandbox_run(kind: &'static str, outcome: SandboxOutcome, queued: Duration) {
    counter!("toolforge_sandbox_runs_total", "kind" => kind, "outcome" => outcome.as_str())
        .increment(1);
    histogram!("toolforge_sandbox_queue_wait_seconds").record(queued.as_secs_f64());
}

/// Counts a sandbox worker process replaced after a crash or a kill.
pub fn sandbox_worker_restart() {
    counter!("toolforge_sandbox_worker_restarts_total").increment(1);
}

/// Histogram buckets, in seconds (1 ms to 60 s).
pub const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0,
];

/// Why the metrics recorder could not be installed.
#[cfg(feature = "http")]
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The exporter refused its configuration or a recorder was already set.
    #[error("cannot install the Prometheus recorder: {0}")]
    Install(String),
}

/// Installs the process-wide Prometheus recorder and describes every
/// metric; returns the handle that renders the exposition.
///
/// # Errors
///
/// A recorder is already installed in this process.
#[cfg(feature = "http")]
pub fn install() -> Result<metrics_exporter_prometheus::PrometheusHandle, MetricsError> {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("seconds".into()), &BUCKETS)
        .map_err(|e| MetricsError::Install(e.to_string()))?
        .install_recorder()
        .map_err(|e| MetricsError::Install(e.to_string()))?;
    describe();
    for event in AuthEvent::ALL {
        counter!("toolforge_auth_events_total", "event" => event.as_str()).absolute(0);
    }
    counter!("toolforge_sandbox_worker_restarts_total").absolute(0);
    Ok(handle)
}

#[cfg(feature = "http")]
fn describe() {
    use metrics::{describe_counter, describe_histogram};
    describe_counter!(
        "toolforge_tool_calls_total",
        "tools/call requests by tool, surface (mode) and outcome."
    );
    describe_histogram!(
        "toolforge_tool_call_duration_seconds",
        metrics::Unit::Seconds,
        "tools/call latency by surface."
    );
    describe_counter!(
        "toolforge_upstream_responses_total",
        "Upstream API exchanges by status class (error: no response)."
    );
    describe_histogram!(
        "toolforge_upstream_duration_seconds",
        metrics::Unit::Seconds,
        "Upstream API latency by status class."
    );
    describe_counter!(
        "toolforge_listing_requests_total",
        "tools/list answers by content encoding."
    );
    describe_counter!(
        "toolforge_listing_bytes_total",
        "Bytes of tools/list answers on the wire, by content encoding."
    );
    describe_counter!(
        "toolforge_schema_mismatches_total",
        "Upstream responses that did not match the tool's response schema."
    );
    describe_counter!(
        "toolforge_schema_checks_total",
        "Response schema checks by result (ok, mismatch, skipped)."
    );
    describe_counter!(
        "toolforge_auth_events_total",
        "Authorization events: tokens issued, refreshed, revoked; requests rejected."
    );
    describe_counter!(
        "toolforge_sandbox_runs_total",
        "Code Mode sandbox runs by kind and outcome."
    );
    describe_histogram!(
        "toolforge_sandbox_queue_wait_seconds",
        metrics::Unit::Seconds,
        "Time a sandbox run waited for a worker slot."
    );
    describe_counter!(
        "toolforge_sandbox_worker_restarts_total",
        "Sandbox worker processes replaced after a crash or a kill."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_classes() {
        assert_eq!(status_class(Some(200)), "2xx");
        assert_eq!(status_class(Some(404)), "4xx");
        assert_eq!(status_class(Some(503)), "5xx");
        assert_eq!(status_class(Some(99)), "error");
        assert_eq!(status_class(None), "error");
    }
}
