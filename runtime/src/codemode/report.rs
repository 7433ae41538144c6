//! Turning a sandbox [`Report`] into an MCP tool result.
//!
//! Success: one text block with the returned value as compact JSON
//! (structurally truncated when asked), then a block with the truncation
//! note, then one with the console output. Failure: a tool error naming
//! what went wrong (the limit hit, the uncaught error and its stack), with
//! the console output captured up to then. The credential is scrubbed from
//! every block as a last line of defence (the sandbox never sees it).

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock};

use crate::credential::Credential;
use crate::sandbox::{LogLevel, Logs, Report, SandboxError};
use crate::truncate::truncate;

/// Notes about one run's API responses for the model (e.g. an empty list
/// the token may lack the permission to see), added to the tool result
/// because the code usually returns only part of what it received.
#[derive(Debug, Clone, Default)]
pub struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    /// Adds `note` unless it is already there.
    pub fn add(&self, note: String) {
        if let Ok(mut notes) = self.0.lock()
            && !notes.contains(&note)
        {
            notes.push(note);
        }
    }

    /// The notes, in the order they were added.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }
}

/// Builds the result of a `search`, `execute` or `code` call.
pub fn into_result(
    tool: &str,
    report: Report,
    truncate_to: Option<usize>,
    credential: Option<&Credential>,
) -> CallToolResult {
    let scrub = |text: String| match credential {
        Some(c) => c.redact(&text),
        None => text,
    };
    let logs = render_logs(&report.logs);
    match report.result {
        Ok(value) => {
            let (value, note) = match truncate_to {
                Some(max) => truncate(&value, max),
                None => (value, None),
            };
            let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".to_owned());
            let mut blocks = vec![ContentBlock::text(scrub(text))];
            if let Some(note) = note {
                blocks.push(ContentBlock::text(format!(
                    "note: {note}; or call again with truncate: false"
                )));
            }
            if let Some(logs) = logs {
                blocks.push(ContentBlock::text(scrub(logs)));
            }
            CallToolResult::success(blocks)
        }
        Err(error) => {
            let mut text = format!("{tool} failed: {error}");
            if let Some(hint) = hint(&error) {
                text.push('\n');
                text.push_str(hint);
            }
            let mut blocks = vec![ContentBlock::text(scrub(text))];
            if let Some(logs) = logs {
                blocks.push(ContentBlock::text(scrub(logs)));
            }
            CallToolResult::error(blocks)
        }
    }
}

/// What to do about a failure, when there is something to say.
fn hint(error: &SandboxError) -> Option<&'static str> {
    Some(match error {
        SandboxError::InvalidCode { .. } => {
            "Pass the source of a function, e.g. `async () => { ... }` (no imports, no top-level statements)."
        }
        SandboxError::CpuTimeLimit { .. } | SandboxError::WallClockLimit { .. } => {
            "Do less work per call: look up paths directly instead of scanning, and make fewer requests."
        }
        SandboxError::MemoryLimit { .. } | SandboxError::OutputTooLarge { .. } => {
            "Keep less in memory and return only the fields you need."
        }
        SandboxError::StackOverflow { .. } => "Avoid deep or unbounded recursion.",
        SandboxError::RequestLimit { .. } | SandboxError::ResponseBytesLimit { .. } => {
            "Split the work across several calls, or ask the API for less (filters, page sizes)."
        }
        SandboxError::NotSerialisable { .. } => {
            "Return plain JSON data (no BigInt, functions or cycles)."
        }
        SandboxError::NeverSettled => "Await every promise the function depends on.",
        _ => return None,
    })
}

/// The console output as one text block, or `None` when there was none.
fn render_logs(logs: &Logs) -> Option<String> {
    if logs.entries.is_empty() && !logs.truncated {
        return None;
    }
    let mut text = String::from("console output:");
    for entry in &logs.entries {
        text.push('\n');
        match entry.level {
            LogLevel::Log => {}
            LogLevel::Info => text.push_str("[info] "),
            LogLevel::Warn => text.push_str("[warn] "),
            LogLevel::Error => text.push_str("[error] "),
            LogLevel::Debug => text.push_str("[debug] "),
        }
        text.push_str(&entry.message);
    }
    if logs.truncated {
        text.push_str("\n[console output truncated]");
    }
    Some(text)
}
