//! Turning an upstream response into an MCP tool result.
//!
//! A 2xx gives the body as text, plus `structuredContent` when the tool has
//! an output schema (unwrapped from the API's envelope). Anything else
//! gives a tool error (`isError: true`) naming method, path (no query),
//! status and the API's own messages, with explanations for 401/403 (from
//! the connection's authorization decision, [`crate::authz::explain`]), 429 (when to retry) and redirects (not
//! followed).

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use crate::authz::{Connection, explain};
use crate::catalogue::{Envelope, ToolDef};
use crate::credential::Credential;
use crate::profile::{BodyEnvelope, Profile};
use crate::upstream::UpstreamResponse;

/// How much of an unstructured error body is quoted.
const BODY_SNIPPET_CHARS: usize = 1000;

/// What the mapping needs to know about the call.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool called.
    pub tool: &'static ToolDef,
    /// Request path without the query.
    pub path: &'a str,
    /// The credential used: the response is already scrubbed of it
    /// ([`crate::upstream`]); composed error texts are scrubbed once more.
    pub credential: Option<&'a Credential>,
    /// The catalogue's profile (envelope, refusal texts).
    pub profile: &'a Profile,
    /// How the caller is connected: the refusal texts of a 401/403 come
    /// from its authorization decision ([`crate::authz`]).
    pub connection: &'a Connection,
}

/// A tool error result with one text block.
pub fn tool_error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// Maps an upstream response to the tool result.
pub fn map_response(call: Call<'_>, resp: UpstreamResponse) -> CallToolResult {
    let json = parse_body(&resp.body);
    map_parsed(call, resp, json)
}

/// The JSON of a response body: `None` when it is not UTF-8, blank, or
/// not JSON.
pub fn parse_body(body: &[u8]) -> Option<Value> {
    std::str::from_utf8(body)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .and_then(|t| serde_json::from_str(t).ok())
}

/// [`map_response`] with the body already parsed by [`parse_body`] (the
/// direct pipeline reads it for the next page too: one parse per call).
pub fn map_parsed(call: Call<'_>, resp: UpstreamResponse, json: Option<Value>) -> CallToolResult {
    let UpstreamResponse {
        status,
        content_type,
        retry_after,
        location_host,
        body,
        ..
    } = resp;
    let refuse = |msg: String| match call.credential {
        Some(c) => tool_error(c.redact(&msg)),
        None => tool_error(msg),
    };
    let method = call.tool.method.as_str();
    let path = call.path;
    let text = std::str::from_utf8(&body).ok();
    let status_text = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .trim_end()
    .to_owned();

    if status.is_success() {
        if let Some(v) = &json
            && call.profile.envelope.reports_failure(v)
        {
            let mut msg = format!(
                "{method} {path} answered {status_text} but the API reported failure ({})",
                call.profile.envelope.failure_text()
            );
            push_messages(&mut msg, call.profile.envelope, v, text);
            return refuse(msg);
        }
        if let Some(refusal) = emptied_refusal(call, &status_text, json.as_ref()) {
            if let Connection::OAuth(grant) = call.connection {
                grant.refused(call.tool, path);
            }
            return refuse(refusal);
        }
        return success(
            call,
            &status_text,
            content_type.as_deref(),
            &body,
            text,
            json,
        );
    }

    let mut msg = format!("{method} {path} failed: the API answered {status_text}");
    match status.as_u16() {
        300..=399 => {
            msg.push_str(&format!(
                ", a redirect{}; redirects are not followed, so nothing was fetched",
                location_host
                    .map(|h| format!(" to {h}"))
                    .unwrap_or_default()
            ));
        }
        401 => msg.push_str(
            ". The API did not accept the credential (missing, invalid, expired or revoked token)",
        ),
        403 => msg.push_str(". The credential is not allowed to make this call"),
        429 => match retry_after {
            Some(after) => msg.push_str(&format!(
                ". Rate limited: the API asks to retry after {after} (Retry-After); wait that long before calling again"
            )),
            None => msg.push_str(
                ". Rate limited (no Retry-After given): wait before calling again",
            ),
        },
        _ => {}
    }
    msg.push('.');
    match &json {
        Some(v) => push_messages(&mut msg, call.profile.envelope, v, text),
        None => push_snippet(&mut msg, text, body.len()),
    }
    if matches!(status.as_u16(), 401 | 403) {
        msg.push('\n');
        msg.push_str(&explain(call.connection, call.tool, path, call.profile));
    }
    refuse(msg)
}

fn success(
    call: Call<'_>,
    status_text: &str,
    content_type: Option<&str>,
    body: &[u8],
    text: Option<&str>,
    json: Option<Value>,
) -> CallToolResult {
    let method = call.tool.method.as_str();
    let path = call.path;
    let body_text = match text {
        Some(t) if t.trim().is_empty() => {
            format!("{method} {path} succeeded ({status_text}) with an empty body.")
        }
        Some(t) => t.to_owned(),
        None => format!(
            "Binary response ({} bytes, content type {}), base64-encoded:\n{}",
            body.len(),
            content_type.unwrap_or("unknown"),
            base64::engine::general_purpose::STANDARD.encode(body)
        ),
    };
    let mut content = vec![ContentBlock::text(body_text)];
    if let Some(note) = empty_list_note(call, json.as_ref()) {
        content.push(ContentBlock::text(note));
    }
    let mut result = CallToolResult::success(content);
    if call.tool.output_schema.is_some() {
        match json {
            Some(v) => {
                result.structured_content =
                    Some(structured(call.tool.envelope, call.profile.envelope, v));
            }
            None if text.is_some_and(|t| t.trim().is_empty()) => {
                result.structured_content = Some(Value::Object(Map::new()));
            }
            None => {
                let mut msg = format!(
                    "{method} {path} answered {status_text}, but the body is not the JSON the API documents for this call."
                );
                push_snippet(&mut msg, text, body.len());
                return tool_error(msg);
            }
        }
    }
    result
}

/// The `structuredContent` of a successful JSON body: the tool's
/// `envelope` says whether the body is the API's wrapper (`body_envelope`
/// says where its payload and page metadata are), the payload itself, or a
/// payload to wrap as `{result}`.
pub fn structured(envelope: Envelope, body_envelope: BodyEnvelope, mut body: Value) -> Value {
    if let Envelope::Result { list } = envelope
        && let Some((payload, page)) = body_envelope.unwrap(&mut body)
    {
        let mut out = Map::new();
        out.insert("result".into(), payload);
        if list && let (Some(page), Some(key)) = (page, body_envelope.page_key()) {
            out.insert(key, page);
        }
        return Value::Object(out);
    }
    match (envelope, body) {
        (Envelope::None, Value::Object(obj)) => Value::Object(obj),
        (_, other) => json!({ "result": other }),
    }
}

/// An empty list for an OAuth session that lacks every scope covering the
/// call: the API may have filtered it. A list with rows is never doubted.
fn emptied_by_permission(call: Call<'_>, body: &Value) -> bool {
    matches!(call.connection, Connection::OAuth(_))
        && call.profile.envelope.list(body).is_some_and(Vec::is_empty)
        && matches!(
            crate::authz::decide(call.connection, call.tool, call.path),
            crate::authz::Decision::Missing { .. }
        )
}

/// The refusal for a 2xx `body` that [`emptied_by_permission`]: the same
/// explanation as a 401/403, on every surface (direct tools and
/// `execute`). `status_text` is the status as shown (`200 OK`).
pub(crate) fn emptied_refusal(
    call: Call<'_>,
    status_text: &str,
    body: Option<&Value>,
) -> Option<String> {
    if !emptied_by_permission(call, body?) {
        return None;
    }
    Some(format!(
        "{} {} answered {status_text} with an empty list, but this session may not see what the list holds: the API leaves out what a token may not see instead of refusing.\n{}",
        call.tool.method.as_str(),
        call.path,
        explain(call.connection, call.tool, call.path, call.profile)
    ))
}

/// The note for an empty list from a tool that needs permissions, for
/// APIs that filter lists by permission instead of refusing them
/// ([`crate::profile::Refusals::empty_list`]).
pub(crate) fn empty_list_note(call: Call<'_>, json: Option<&Value>) -> Option<String> {
    if !call.profile.envelope.list(json?)?.is_empty() {
        return None;
    }
    call.profile.refusals.empty_list_note(call.tool.permissions)
}

fn push_messages(msg: &mut String, envelope: BodyEnvelope, body: &Value, text: Option<&str>) {
    let messages = envelope.error_messages(body);
    if messages.is_empty() {
        push_snippet(msg, text, text.map_or(0, str::len));
    } else {
        msg.push_str("\nAPI errors:\n");
        msg.push_str(
            &messages
                .iter()
                .map(|m| format!("- {m}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

fn push_snippet(msg: &mut String, text: Option<&str>, len: usize) {
    match text {
        Some(t) if !t.trim().is_empty() => {
            let clipped: String = t.chars().take(BODY_SNIPPET_CHARS).collect();
            msg.push_str("\nResponse body");
            if clipped.len() < t.len() {
                msg.push_str(&format!(" (first {BODY_SNIPPET_CHARS} characters)"));
            }
            msg.push_str(":\n");
            msg.push_str(&clipped);
        }
        Some(_) => msg.push_str(" (empty body)"),
        None => msg.push_str(&format!(" (binary body of {len} bytes)")),
    }
}

#[cfg(test)]
mod tests;
