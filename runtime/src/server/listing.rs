//! The tool listing, encoded once.
//!
//! `tools/list` must not re-encode the catalogue per request. rmcp encodes
//! every response itself, so the handler answers `tools/list` with one
//! placeholder tool whose name carries a per-process marker; the transport
//! (an HTTP middleware, or the stdio writer) replaces the encoded
//! placeholder array with the pre-encoded listing bytes. rmcp still does
//! everything else (version checks, `_meta`, result type, cache hints).
//! The placeholder pattern holds unescaped quotes, so it can only match the
//! JSON structure rmcp wrote, never text inside a string value.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, OnceLock};

use rmcp::model::{JsonObject, Tool};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::catalogue::ToolDef;
use crate::credential::find;

/// Responses larger than this are never scanned for the placeholder.
pub(crate) const SPLICE_MAX: usize = 16 * 1024;

/// The pre-encoded listings and their placeholders.
#[derive(Debug)]
pub struct Listing {
    tools: Vec<&'static ToolDef>,
    compact: Vec<u8>,
    full: OnceLock<Vec<u8>>,
    placeholders: [Tool; 2],
    patterns: [Vec<u8>; 2],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    name: &'a str,
    title: &'a str,
    description: &'a str,
    input_schema: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a RawValue>,
    annotations: Hints,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Hints {
    read_only_hint: bool,
    destructive_hint: bool,
    idempotent_hint: bool,
    open_world_hint: bool,
}

const FALLBACK_SCHEMA: &str = r#"{"type":"object"}"#;

fn raw(text: &'static str, tool: &str, what: &str) -> &'static RawValue {
    match serde_json::from_str::<&'static RawValue>(text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(tool, what, error = %e, "invalid schema JSON in the catalogue; listing it as {FALLBACK_SCHEMA}");
            serde_json::from_str::<&'static RawValue>(FALLBACK_SCHEMA).unwrap_or(RawValue::NULL)
        }
    }
}

fn encode(tools: &[&'static ToolDef], with_output: bool) -> Vec<u8> {
    let entries: Vec<Entry<'_>> = tools
        .iter()
        .map(|t| Entry {
            name: t.name,
            title: t.title,
            description: t.description,
            input_schema: raw(t.input_schema, t.name, "input"),
            output_schema: if with_output {
                t.output_schema.map(|s| raw(s, t.name, "output"))
            } else {
                None
            },
            annotations: Hints {
                read_only_hint: t.annotations.read_only,
                destructive_hint: t.annotations.destructive,
                idempotent_hint: t.annotations.idempotent,
                open_world_hint: t.annotations.open_world,
            },
        })
        .collect();
    serde_json::to_vec(&entries).unwrap_or_else(|_| b"[]".to_vec())
}

impl Listing {
    /// Encodes the listing of `tools` (without output schemas; the variant
    /// with them is encoded on first request).
    pub fn new(tools: Vec<&'static ToolDef>) -> Self {
        let nonce = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let placeholders = [0, 1].map(|v| {
            Tool::new(
                format!("toolforge_listing_{nonce:016x}_{v}"),
                "",
                Arc::new(JsonObject::new()),
            )
        });
        let patterns = [0, 1].map(|v| {
            let mut p = b"[".to_vec();
            p.extend(serde_json::to_vec(&placeholders[v]).unwrap_or_default());
            p.push(b']');
            p
        });
        let compact = encode(&tools, false);
        Self {
            tools,
            compact,
            full: OnceLock::new(),
            placeholders,
            patterns,
        }
    }

    /// The encoded listing (a JSON array of tools).
    pub fn bytes(&self, with_output: bool) -> &[u8] {
        if with_output {
            self.full.get_or_init(|| encode(&self.tools, true))
        } else {
            &self.compact
        }
    }

    /// The placeholder tool that stands for the listing in a response.
    pub fn placeholder(&self, with_output: bool) -> Tool {
        self.placeholders[usize::from(with_output)].clone()
    }

    /// `body` with the encoded placeholder array replaced by the listing,
    /// or `None` when it holds no placeholder.
    pub fn splice(&self, body: &[u8]) -> Option<Vec<u8>> {
        if body.len() > SPLICE_MAX {
            return None;
        }
        for (v, pattern) in self.patterns.iter().enumerate() {
            if let Some(at) = find(body, pattern) {
                let listing = self.bytes(v == 1);
                let mut out = Vec::with_capacity(body.len() + listing.len());
                out.extend_from_slice(&body[..at]);
                out.extend_from_slice(listing);
                out.extend_from_slice(&body[at + pattern.len()..]);
                return Some(out);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::testing::custom;
    use rmcp::model::{ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult};
    use serde_json::{Value, json};

    fn tools() -> Vec<&'static ToolDef> {
        vec![
            custom(|t| {
                t.name = "a_list";
                t.title = "List A";
                t.input_schema = r#"{"type":"object","properties":{"x":{"type":"string"}}}"#;
                t.output_schema = Some(r#"{"type":"object"}"#);
            }),
            custom(|t| t.name = "b_get"),
        ]
    }

    fn response(listing: &Listing, with_output: bool) -> Vec<u8> {
        let result = ListToolsResult::with_all_items(vec![listing.placeholder(with_output)]);
        let msg = ServerJsonRpcMessage::response(
            ServerResult::ListToolsResult(result),
            RequestId::Number(7),
        );
        serde_json::to_vec(&msg).unwrap()
    }

    #[test]
    fn splices_the_listing_into_an_rmcp_response() {
        let listing = Listing::new(tools());
        let body = listing.splice(&response(&listing, false)).unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 7);
        let list = v["result"]["tools"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["name"], "a_list");
        assert_eq!(list[0]["title"], "List A");
        assert_eq!(list[0]["inputSchema"]["properties"]["x"]["type"], "string");
        assert!(list[0].get("outputSchema").is_none());
        assert_eq!(
            list[1]["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
        );
        let full: Value =
            serde_json::from_slice(&listing.splice(&response(&listing, true)).unwrap()).unwrap();
        assert_eq!(
            full["result"]["tools"][0]["outputSchema"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn placeholder_inside_a_string_is_not_spliced() {
        let listing = Listing::new(tools());
        let name = listing.placeholder(false).name.to_string();
        let echoed =
            serde_json::to_vec(&json!({"text": format!("[{{\"name\":\"{name}\"}}]")})).unwrap();
        assert!(listing.splice(&echoed).is_none());
        assert!(listing.splice(b"{}").is_none());
    }
}
