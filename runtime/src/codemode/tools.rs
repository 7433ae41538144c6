//! The host side of `codemode.<tool>(args)` in the `code` mode: each call
//! runs the exposed tool through the same pipeline as a direct `tools/call`
//! (schema validation, default account, request building, upstream,
//! response mapping) and resolves with its structured output, or rejects
//! with the tool's error text.

use std::sync::Arc;

use rmcp::model::CallToolResult;
use serde_json::Value;

use super::report::Notes;
use super::routes::{levenshtein, shown};
use crate::authz::Connection;
use crate::credential::Credential;
use crate::direct::Direct;
use crate::sandbox::{HostApi, HostFuture, HostRequest, ToolCall};

/// Most tool names suggested for an unknown one.
const MAX_SUGGESTIONS: usize = 5;

/// `codemode.<tool>` for one run: the direct pipeline and the caller's
/// credential.
#[derive(Debug, Clone)]
pub struct ToolHost {
    direct: Arc<Direct>,
    credential: Credential,
    connection: Connection,
    notes: Notes,
}

impl ToolHost {
    /// A host that calls with `credential`.
    pub fn new(direct: Arc<Direct>, credential: Credential) -> Self {
        Self {
            direct,
            credential,
            connection: Connection::default(),
            notes: Notes::default(),
        }
    }

    /// Explains refusals for `connection` (see [`crate::authz`]).
    pub fn with_connection(mut self, connection: Connection) -> Self {
        self.connection = connection;
        self
    }

    /// Runs one call: the tool's structured output (or its text as JSON or
    /// a string), or the error text.
    pub async fn call(&self, call: ToolCall) -> Result<Value, String> {
        let Some((index, tool)) = self.direct.lookup(&call.tool) else {
            return Err(unknown(&self.direct, &call.tool));
        };
        let Value::Object(args) = call.args else {
            return Err(format!(
                "codemode.{}: the argument must be an object of named arguments, e.g. codemode.{}({{...}})",
                tool.name, tool.name
            ));
        };
        let size = crate::truncate::json_len(&args);
        let max = self.direct.max_argument_bytes();
        if size > max {
            return Err(format!(
                "codemode.{}: the arguments are too large: {size} bytes, and this server accepts at most {max}",
                tool.name
            ));
        }
        let result = self
            .direct
            .run(
                index,
                tool,
                Some(args),
                Some(&self.credential),
                &self.connection,
            )
            .await;
        if result.is_error != Some(true) {
            // After the body, a direct result's text blocks are notes.
            for note in result.content.iter().skip(1).filter_map(|c| c.as_text()) {
                self.notes
                    .add(format!("codemode.{}: {}", tool.name, note.text));
            }
        }
        into_value(result)
    }

    /// The notes about this run's results (shared by clones).
    pub fn notes(&self) -> &Notes {
        &self.notes
    }
}

impl HostApi for ToolHost {
    fn request(&self, _request: HostRequest) -> HostFuture {
        Box::pin(async {
            Err("api.request is not available in the code tool; call the codemode.<tool>(args) functions".to_owned())
        })
    }

    fn call_tool(&self, call: ToolCall) -> HostFuture {
        let host = self.clone();
        Box::pin(async move { host.call(call).await })
    }
}

/// The value a tool result resolves with, or its error text.
fn into_value(result: CallToolResult) -> Result<Value, String> {
    let text = || {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if result.is_error == Some(true) {
        return Err(text());
    }
    if let Some(value) = result.structured_content.clone() {
        return Ok(value);
    }
    let first = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    Ok(serde_json::from_str(&first).unwrap_or(Value::String(first)))
}

/// The error for a name that is not an exposed tool, with close names.
fn unknown(direct: &Direct, name: &str) -> String {
    let mut scored: Vec<(usize, &str)> = direct
        .tools()
        .iter()
        .map(|t| (levenshtein(name, t.name), t.name))
        .collect();
    scored.sort();
    let close: Vec<&str> = scored
        .iter()
        .take(MAX_SUGGESTIONS)
        .filter(|(d, t)| *d <= t.len().max(name.len()) / 2)
        .map(|(_, t)| *t)
        .collect();
    let mut message = format!("codemode.{} is not a tool of this server", shown(name));
    if close.is_empty() {
        message.push_str("; the tools are declared in the code tool's description");
    } else {
        message.push_str(&format!("; did you mean: {}?", close.join(", ")));
    }
    message
}
