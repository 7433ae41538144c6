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

use bytes::Bytes;
use rmcp::model::{JsonObject, Tool};

use crate::catalogue::ToolDef;

/// Responses larger than this are never scanned for the placeholder.
pub(crate) const SPLICE_MAX: usize = 16 * 1024;

pub(crate) mod drop_args;
mod encode;
#[cfg(test)]
mod json_check_tests;
mod narrowed;
#[cfg(all(test, feature = "http"))]
mod size_tests;

use encode::encode;
pub(crate) use encode::encode_without;
pub use encode::{FALLBACK_SCHEMA, Variant, entry, rmcp_tool};
pub use narrowed::{NARROWED_BUDGET, NarrowKey, NarrowedListings, NarrowedSlot, Recent};

/// The rmcp form of a tool definition, with its output schema and full
/// input schema (see [`rmcp_tool`] for the other variants): a listed tool
/// looked up by name, and Code Mode's own tools as a grant sees them.
pub(crate) fn full_tool(def: &ToolDef) -> Tool {
    rmcp_tool(def, Variant::FULL_WITH_OUTPUT)
}

/// The pre-encoded listings (one per [`Variant`]) and their placeholders.
#[derive(Debug)]
pub struct Listing {
    tools: Vec<&'static ToolDef>,
    /// Per variant; [`Variant::DEFAULT`]'s is encoded on a thread of its
    /// own from start-up (see [`Listing::new`]), the others on first use.
    encoded: [Arc<OnceLock<Bytes>>; Variant::COUNT],
    placeholders: [Tool; Variant::COUNT],
    patterns: [Vec<u8>; Variant::COUNT],
    /// Stands for a narrowed session's listing (handed over in a
    /// [`NarrowedSlot`]), and its encoded array.
    narrowed_placeholder: Tool,
    narrowed_pattern: Vec<u8>,
    /// Narrowed sessions' listings by what decides them.
    narrowed: NarrowedListings,
}

/// A response with the listing spliced in, as three pieces: the listing is
/// shared, never copied per response (it is megabytes on large APIs).
#[derive(Debug, Clone)]
pub struct Spliced {
    /// The response up to the listing.
    pub prefix: Bytes,
    /// The shared, pre-encoded listing.
    pub listing: Bytes,
    /// The response after the listing.
    pub suffix: Bytes,
    /// The listing's variant: `None` for a narrowed session's listing,
    /// which has no shared compressed form.
    pub variant: Option<Variant>,
}

impl Spliced {
    /// Bytes in all.
    pub fn len(&self) -> usize {
        self.prefix.len() + self.listing.len() + self.suffix.len()
    }

    /// Whether there are no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pieces in order.
    pub fn pieces(self) -> [Bytes; 3] {
        [self.prefix, self.listing, self.suffix]
    }

    /// An HTTP body that writes the pieces in order, with an exact length
    /// (hyper sends them with vectored writes, without joining them).
    #[cfg(feature = "http")]
    pub fn into_body(self) -> axum::body::Body {
        axum::body::Body::new(PiecesBody {
            pieces: self.pieces(),
            next: 0,
        })
    }
}

/// The body behind [`Spliced::into_body`].
#[cfg(feature = "http")]
struct PiecesBody {
    pieces: [Bytes; 3],
    next: usize,
}

#[cfg(feature = "http")]
impl http_body::Body for PiecesBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        while let Some(piece) = this.pieces.get_mut(this.next) {
            let piece = std::mem::take(piece);
            this.next += 1;
            if !piece.is_empty() {
                return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(piece))));
            }
        }
        std::task::Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.pieces[self.next.min(3)..].iter().all(Bytes::is_empty)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let left = self.pieces[self.next.min(3)..]
            .iter()
            .map(Bytes::len)
            .sum::<usize>();
        http_body::SizeHint::with_exact(left as u64)
    }
}

impl Listing {
    /// The listing of `tools`: encoded in [`Variant::DEFAULT`] on a thread
    /// started here, and in the other variants on the first request for
    /// each.
    pub fn new(tools: Vec<&'static ToolDef>) -> Self {
        Self::new_then(tools, || {})
    }

    /// [`Listing::new`], then `after` on the encoding thread once the
    /// default listing is encoded (never, when no thread could start: it is
    /// work that may wait). The server warms its upstream client up there:
    /// on two cores, doing both at once beside the main thread delayed the
    /// listening socket and the first `tools/list` (docs/benchmarks.md,
    /// "Cold start").
    pub fn new_then(tools: Vec<&'static ToolDef>, after: impl FnOnce() + Send + 'static) -> Self {
        let nonce = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let placeholders = Variant::ALL.map(|v| {
            Tool::new(
                format!("toolforge_listing_{nonce:016x}_{}", v.index()),
                "",
                Arc::new(JsonObject::new()),
            )
        });
        let pattern_of = |tool: &Tool| {
            let mut p = b"[".to_vec();
            p.extend(serde_json::to_vec(tool).unwrap_or_default());
            p.push(b']');
            p
        };
        let patterns = Variant::ALL.map(|v| pattern_of(&placeholders[v.index()]));
        let narrowed_placeholder = Tool::new(
            format!("toolforge_listing_{nonce:016x}_narrowed"),
            "",
            Arc::new(JsonObject::new()),
        );
        let narrowed_pattern = pattern_of(&narrowed_placeholder);
        // Encoding the listing of a large API takes milliseconds; a thread
        // of its own does it while the server starts (TLS roots, the
        // runtime, the listener), and the first request that needs it
        // waits for it (`OnceLock` runs one initialiser; a caller that
        // comes first, or a thread that could not start, encodes it).
        let encoded: [Arc<OnceLock<Bytes>>; Variant::COUNT] =
            std::array::from_fn(|_| Arc::new(OnceLock::new()));
        let (cell, listed) = (
            Arc::clone(&encoded[Variant::DEFAULT.index()]),
            tools.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("toolforge-listing".into())
            .spawn(move || {
                cell.get_or_init(|| encode(&listed, Variant::DEFAULT));
                after();
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the listing thread; the first request encodes the listing");
        }
        Self {
            tools,
            encoded,
            placeholders,
            patterns,
            narrowed_placeholder,
            narrowed_pattern,
            narrowed: NarrowedListings::default(),
        }
    }

    /// The encoded listing (a JSON array of tools) in `variant`, shared.
    pub fn bytes(&self, variant: Variant) -> Bytes {
        self.encoded[variant.index()]
            .get_or_init(|| encode(&self.tools, variant))
            .clone()
    }

    /// The placeholder tool that stands for the listing in a response.
    pub fn placeholder(&self, variant: Variant) -> Tool {
        self.placeholders[variant.index()].clone()
    }

    /// `body` with the encoded placeholder array replaced by the listing,
    /// or `None` when it holds no placeholder.
    pub fn splice(&self, body: &[u8]) -> Option<Spliced> {
        if body.len() > SPLICE_MAX {
            return None;
        }
        for variant in Variant::ALL {
            let pattern = &self.patterns[variant.index()];
            if let Some(at) = memchr::memmem::find(body, pattern) {
                return Some(Spliced {
                    prefix: Bytes::copy_from_slice(&body[..at]),
                    listing: self.bytes(variant),
                    suffix: Bytes::copy_from_slice(&body[at + pattern.len()..]),
                    variant: Some(variant),
                });
            }
        }
        None
    }

    /// The placeholder tool that stands for a narrowed session's listing.
    pub fn narrowed_placeholder(&self) -> Tool {
        self.narrowed_placeholder.clone()
    }

    /// The narrowed sessions' listings.
    pub fn narrowed(&self) -> &NarrowedListings {
        &self.narrowed
    }

    /// `body` with the narrowed placeholder replaced by `listing` (a JSON
    /// array of tools), or `None` when it holds no such placeholder.
    pub fn splice_narrowed(&self, body: &[u8], listing: Bytes) -> Option<Spliced> {
        if body.len() > SPLICE_MAX {
            return None;
        }
        let at = memchr::memmem::find(body, &self.narrowed_pattern)?;
        Some(Spliced {
            prefix: Bytes::copy_from_slice(&body[..at]),
            listing,
            suffix: Bytes::copy_from_slice(&body[at + self.narrowed_pattern.len()..]),
            variant: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::SharedText;
    use crate::request::testing::custom;
    use crate::schema_profile::SchemaProfile;
    use rmcp::model::{ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult};
    use serde_json::{Value, json};

    fn tools() -> Vec<&'static ToolDef> {
        vec![
            custom(|t| {
                t.name = "a_list";
                t.title = "List A";
                t.input_schema =
                    SharedText::Text(r#"{"type":"object","properties":{"x":{"type":"string"}}}"#);
                t.output_schema = Some(crate::catalogue::SharedText::Text(r#"{"type":"object"}"#));
            }),
            custom(|t| t.name = "b_get"),
        ]
    }

    fn joined(spliced: &Spliced) -> Vec<u8> {
        spliced.clone().pieces().concat()
    }

    fn response(listing: &Listing, with_output: bool) -> Vec<u8> {
        response_in(listing, Variant::new(SchemaProfile::Full, with_output))
    }

    fn response_in(listing: &Listing, variant: Variant) -> Vec<u8> {
        let result = ListToolsResult::with_all_items(vec![listing.placeholder(variant)]);
        let msg = ServerJsonRpcMessage::response(
            ServerResult::ListToolsResult(result),
            RequestId::Number(7),
        );
        serde_json::to_vec(&msg).unwrap()
    }

    #[test]
    fn splices_the_listing_into_an_rmcp_response() {
        let listing = Listing::new(tools());
        let spliced = listing.splice(&response(&listing, false)).unwrap();
        let body = joined(&spliced);
        let pieces = spliced.pieces();
        assert_eq!(
            pieces[1].as_ptr(),
            listing.bytes(Variant::DEFAULT).as_ptr(),
            "the listing is shared"
        );
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 7);
        let list = v["result"]["tools"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["name"], "a_list");
        assert_eq!(list[0]["title"], "List A");
        assert_eq!(list[0]["inputSchema"]["properties"]["x"]["type"], "string");
        assert!(list[0].get("outputSchema").is_none());
        // Only the hint that differs from MCP's default is written.
        assert_eq!(list[1]["annotations"], json!({"destructiveHint": false}));
        let full: Value =
            serde_json::from_slice(&joined(&listing.splice(&response(&listing, true)).unwrap()))
                .unwrap();
        assert_eq!(
            full["result"]["tools"][0]["outputSchema"],
            json!({"type": "object"})
        );
    }

    static PARTS: crate::catalogue::SharedTexts = crate::catalogue::SharedTexts::new(
        "k",
        &[(
            "S_P",
            r#"{"type":"string","description":"é \"quoted\" \\ \u0007"}"#,
        )],
        "",
    );

    /// The listing is exactly what serde_json writes for the same entries
    /// (field order, escaping), with shared parts put back and a schema
    /// that is not JSON listed as the fallback.
    #[test]
    fn encodes_as_serde_json_would() {
        let tools = vec![
            custom(|t| {
                t.name = "a_\"quoted\"\n";
                t.title = "Ünïcode \u{1F600} </script>";
                t.description = "tab\there \\ and \u{7f}\u{1}";
                t.input_schema = SharedText::Marked(
                    r#"{"type":"object","properties":{"p":{"k":"S_P"}}}"#,
                    &PARTS,
                );
                t.output_schema = Some(SharedText::Entry("S_P", &PARTS));
                t.annotations.read_only = true;
            }),
            custom(|t| {
                t.name = "b";
                t.input_schema = SharedText::Text("{not json");
                t.output_schema = Some(SharedText::Text("[1,"));
            }),
        ];
        let p: Value = serde_json::from_str(PARTS.stored("S_P").unwrap()).unwrap();
        let expect = |with_output: bool| {
            let a = tools[0].annotations;
            let hints = |a: crate::catalogue::Annotations| {
                let d = encode::HINT_DEFAULTS;
                let mut h = serde_json::Map::new();
                for (k, v, default) in [
                    ("readOnlyHint", a.read_only, d.read_only),
                    ("destructiveHint", a.destructive, d.destructive),
                    ("idempotentHint", a.idempotent, d.idempotent),
                    ("openWorldHint", a.open_world, d.open_world),
                ] {
                    if v != default {
                        h.insert(k.into(), json!(v));
                    }
                }
                Value::Object(h)
            };
            let mut first = json!({"name": tools[0].name, "title": tools[0].title,
                "description": tools[0].description,
                "inputSchema": {"type": "object", "properties": {"p": p}}});
            let mut second = json!({"name": "b", "title": tools[1].title,
                "description": tools[1].description, "inputSchema": {"type": "object"}});
            if with_output {
                first["outputSchema"] = p.clone();
                second["outputSchema"] = json!({"type": "object"});
            }
            first["annotations"] = hints(a);
            second["annotations"] = hints(tools[1].annotations);
            serde_json::to_vec(&json!([first, second])).unwrap()
        };
        for with_output in [false, true] {
            let got = encode(&tools, Variant::new(SchemaProfile::Full, with_output));
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&expect(with_output))
            );
        }
        assert_eq!(encode(&[], Variant::DEFAULT), "[]".as_bytes());
    }

    #[cfg(feature = "http")]
    #[tokio::test]
    async fn spliced_body_has_an_exact_length_and_the_same_bytes() {
        use http_body_util::BodyExt as _;
        let listing = Listing::new(tools());
        let spliced = listing.splice(&response(&listing, false)).unwrap();
        let expected = joined(&spliced);
        let body = spliced.into_body();
        assert_eq!(
            http_body::Body::size_hint(&body).exact(),
            Some(expected.len() as u64)
        );
        let got = body.collect().await.unwrap().to_bytes();
        assert_eq!(got.as_ref(), expected.as_slice());
    }

    /// Each variant has its own placeholder and listing: the strict ones
    /// hold no `$ref` and the tool's own full schema is untouched.
    #[test]
    fn every_variant_splices_its_own_listing() {
        let recursive = custom(|t| {
            t.name = "tree_put";
            t.input_schema = SharedText::Text(
                r##"{"type":"object","properties":{"n":{"$ref":"#/$defs/N"},"id":{"type":["string","null"],"format":"uuid"}},"$defs":{"N":{"type":"object","properties":{"k":{"$ref":"#/$defs/N"}}}}}"##,
            );
            t.output_schema = Some(SharedText::Text(r##"{"oneOf":[{"type":"string"}]}"##));
        });
        let listing = Listing::new(vec![recursive]);
        let mut seen = std::collections::HashSet::new();
        for variant in Variant::ALL {
            let spliced = listing.splice(&response_in(&listing, variant)).unwrap();
            assert_eq!(spliced.variant, Some(variant));
            let v: Value = serde_json::from_slice(&joined(&spliced)).unwrap();
            let tool = &v["result"]["tools"][0];
            let input = serde_json::to_string(&tool["inputSchema"]).unwrap();
            match variant.profile {
                SchemaProfile::Full => {
                    assert_eq!(input, recursive.input_schema_text());
                }
                SchemaProfile::Strict => {
                    assert!(
                        !input.contains("$ref") && !input.contains("null"),
                        "{input}"
                    );
                    assert_eq!(
                        tool["inputSchema"]["properties"]["id"],
                        json!({"type": "string", "description": "(format: uuid)"})
                    );
                }
            }
            // Output schemas describe the upstream: never simplified.
            assert_eq!(
                tool.get("outputSchema").cloned(),
                variant
                    .with_output
                    .then(|| json!({"oneOf": [{"type": "string"}]}))
            );
            assert!(seen.insert(listing.bytes(variant)), "{variant:?}");
        }
    }

    /// The rmcp form of a tool is its listing entry, in every variant, and
    /// a schema that is not a JSON object falls back the same way in both.
    #[test]
    fn the_rmcp_tool_is_the_listing_entry() {
        let odd = custom(|t| {
            t.name = "odd";
            t.input_schema = SharedText::Text("[1]");
            t.output_schema = Some(SharedText::Text("true"));
        });
        for t in tools().into_iter().chain([odd]) {
            for variant in Variant::ALL {
                let listed: Value = serde_json::from_slice(&encode(&[t], variant)).unwrap();
                let tool = serde_json::to_value(rmcp_tool(t, variant)).unwrap();
                assert_eq!(tool, listed[0], "{} {variant:?}", t.name);
                assert_eq!(
                    serde_json::from_str::<Value>(&entry(t, variant)).unwrap(),
                    listed[0]
                );
            }
        }
        let listed: Value = serde_json::from_slice(&encode(&[odd], Variant::ALL[3])).unwrap();
        assert_eq!(listed[0]["inputSchema"], json!({"type": "object"}));
        assert_eq!(listed[0]["outputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn placeholder_inside_a_string_is_not_spliced() {
        let listing = Listing::new(tools());
        let name = listing.placeholder(Variant::DEFAULT).name.to_string();
        let echoed =
            serde_json::to_vec(&json!({"text": format!("[{{\"name\":\"{name}\"}}]")})).unwrap();
        assert!(listing.splice(&echoed).is_none());
        assert!(listing.splice(b"{}").is_none());
    }

    #[test]
    fn after_runs_once_the_default_listing_is_encoded() {
        let (tx, rx) = std::sync::mpsc::channel();
        let listing = Listing::new_then(tools(), move || {
            let _ = tx.send(());
        });
        rx.recv_timeout(std::time::Duration::from_secs(30))
            .expect("the hook ran");
        assert!(
            listing.encoded[Variant::DEFAULT.index()].get().is_some(),
            "the default listing was encoded before the hook ran"
        );
        // The hook is gone with its sender: it ran once.
        assert!(rx.recv().is_err());
    }
}
