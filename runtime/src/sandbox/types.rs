//! Values exchanged with the host: `api.request` calls, console output, results.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One `api.request({method, path, query, body, contentType})` call made by
/// sandboxed code, as the host receives it.
///
/// The sandbox only checks the shape (unknown fields are refused); the host
/// validates the method and path against the catalogue, fixes the base URL,
/// encodes the request and adds the credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HostRequest {
    /// HTTP method as written by the code, e.g. `"GET"`.
    pub method: String,
    /// Path relative to the API base, e.g. `"/zones/abc/dns_records"`.
    pub path: String,
    /// Query parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<Map<String, Value>>,
    /// Request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Content type of `body`; the host picks JSON when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// One `codemode.<tool>(args)` call made by sandboxed code in a
/// [`JobKind::Code`](super::JobKind::Code) run, as the host receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The property read on `codemode`, i.e. the tool name the code asked for
    /// (unchecked: the host looks it up).
    pub tool: String,
    /// The argument the code passed (`{}` when it passed none).
    #[serde(default)]
    pub args: Value,
}

/// What sandboxed code asks of the host: an `api.request` (execute runs) or a
/// `codemode.<tool>` call (code runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostCall {
    /// `api.request({...})`.
    Request(HostRequest),
    /// `codemode.<tool>(args)`.
    Tool(ToolCall),
}

/// The future a [`HostApi`] returns: the JSON value the code's promise
/// resolves with, or a message the promise rejects with (as an `Error`).
pub type HostFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'static>>;

/// The host side of `api.request`, called in the parent process (never in
/// the worker), so credentials stay out of the sandbox.
///
/// Closures `Fn(HostRequest) -> impl Future<Output = Result<Value, String>>`
/// implement it.
pub trait HostApi: Send + Sync + 'static {
    /// Perform one request. Runs concurrently with other requests of the same
    /// execution when the code awaits several at once; dropped (cancelled)
    /// when the execution ends first.
    fn request(&self, request: HostRequest) -> HostFuture;

    /// Run one `codemode.<tool>(args)` call of a code run. The default
    /// refuses: only hosts of the `code` mode implement it.
    fn call_tool(&self, call: ToolCall) -> HostFuture {
        let message = format!(
            "codemode.{} is not available here (this run has no typed tool functions)",
            call.tool.chars().take(64).collect::<String>()
        );
        Box::pin(async move { Err(message) })
    }
}

impl<F, Fut> HostApi for F
where
    F: Fn(HostRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, String>> + Send + 'static,
{
    fn request(&self, request: HostRequest) -> HostFuture {
        Box::pin(self(request))
    }
}

/// Console method a log line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `console.log`
    Log,
    /// `console.info`
    Info,
    /// `console.warn`
    Warn,
    /// `console.error`
    Error,
    /// `console.debug`
    Debug,
}

impl LogLevel {
    /// Parse the level name used by the console shim; unknown names are `Log`.
    pub(crate) fn from_name(name: &str) -> Self {
        match name {
            "info" => Self::Info,
            "warn" => Self::Warn,
            "error" => Self::Error,
            "debug" => Self::Debug,
            _ => Self::Log,
        }
    }
}

/// One captured console line (arguments joined with spaces; non-strings
/// shown as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Which console method.
    pub level: LogLevel,
    /// The text.
    pub message: String,
}

/// Captured console output, bounded by [`Limits::max_log_bytes`](super::Limits::max_log_bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Logs {
    /// Lines in order.
    pub entries: Vec<LogEntry>,
    /// True when lines were dropped or clipped because of the cap.
    pub truncated: bool,
    /// Bytes of message text held (kept to make `push` O(1)).
    #[serde(skip)]
    bytes: usize,
}

impl Logs {
    /// Append a line, clipping it to the remaining budget of `max_bytes`.
    pub(crate) fn push(&mut self, level: LogLevel, message: &str, max_bytes: usize) {
        let room = max_bytes.saturating_sub(self.bytes);
        if room == 0 {
            self.truncated = true;
            return;
        }
        let message = if message.len() > room {
            self.truncated = true;
            clip_str(message, room).to_owned()
        } else {
            message.to_owned()
        };
        self.bytes += message.len();
        self.entries.push(LogEntry { level, message });
    }
}

/// Longest prefix of `s` that is at most `max` bytes and ends on a char boundary.
pub(crate) fn clip_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// A successful run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The returned value as JSON (`undefined` becomes `null`).
    pub value: Value,
    /// Console output.
    pub logs: Logs,
    /// How many `api.request` calls reached the host.
    pub requests_made: u32,
    /// Wall-clock time of the whole call, as seen by the parent.
    pub duration: Duration,
}

/// Everything known about a run, success or not: the result plus the console
/// output and counters, which are useful in a tool error too.
#[derive(Debug, Clone)]
pub struct Report {
    /// The value, or why there is none.
    pub result: Result<Value, super::SandboxError>,
    /// Console output captured up to the end (empty when the worker died).
    pub logs: Logs,
    /// How many `api.request` calls reached the host.
    pub requests_made: u32,
    /// Wall-clock time of the whole call, as seen by the parent.
    pub duration: Duration,
}

impl Report {
    /// Drop the logs of a failed run and return the plain result.
    pub fn into_outcome(self) -> Result<Outcome, super::SandboxError> {
        let value = self.result?;
        Ok(Outcome {
            value,
            logs: self.logs,
            requests_made: self.requests_made,
            duration: self.duration,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_shape_is_strict() {
        let ok: Result<HostRequest, _> = serde_json::from_str(
            r#"{"method":"GET","path":"/zones","query":{"page":1},"contentType":"application/json"}"#,
        );
        let ok = ok.map_err(|e| e.to_string());
        assert_eq!(
            ok.as_ref().map(|r| r.content_type.as_deref()),
            Ok(Some("application/json"))
        );
        let bad: Result<HostRequest, _> =
            serde_json::from_str(r#"{"method":"GET","path":"/x","url":"http://evil"}"#);
        assert!(bad.is_err());
        let missing: Result<HostRequest, _> = serde_json::from_str(r#"{"path":"/x"}"#);
        assert!(missing.is_err());
    }

    #[test]
    fn logs_are_bounded_and_clip_on_char_boundaries() {
        let mut logs = Logs::default();
        logs.push(LogLevel::Log, "hello", 8);
        logs.push(LogLevel::Warn, "ééé", 8);
        assert_eq!(logs.entries.len(), 2);
        assert_eq!(logs.entries[1].message, "é");
        assert!(logs.truncated);
        logs.push(LogLevel::Error, "more", 8);
        assert_eq!(logs.entries[2].message, "m");
        logs.push(LogLevel::Error, "more", 8);
        assert_eq!(logs.entries.len(), 3);
        assert_eq!(LogLevel::from_name("warn"), LogLevel::Warn);
        assert_eq!(LogLevel::from_name("nope"), LogLevel::Log);
    }

    #[tokio::test]
    async fn closures_are_host_apis() {
        let host = |r: HostRequest| async move { Ok::<_, String>(Value::String(r.path)) };
        let req = HostRequest {
            method: "GET".into(),
            path: "/a".into(),
            query: None,
            body: None,
            content_type: None,
        };
        assert_eq!(host.request(req).await, Ok(Value::String("/a".into())));
    }
}
