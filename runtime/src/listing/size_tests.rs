//! The size of a generated crate's direct listing, measured from its
//! artifacts with the encoder the server uses (docs/benchmarks.md, "Direct
//! listing size"): `toolforge generate --spec … --out DIR`, then
//! `TOOLFORGE_LISTING_ARTIFACTS=DIR/artifacts cargo test -p
//! toolforge-runtime --lib listing::size_tests -- --nocapture`. Without the
//! variable it measures a small catalogue of its own, so the reading of
//! artifacts stays tested.

use std::io::Write as _;

use serde_json::Value;

use super::{Variant, encode};
use crate::catalogue::{Annotations, SharedText, SharedTexts, ToolDef};
use crate::request::testing::custom;

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// The tools of `artifacts/tools.json`, their schemas from
/// `artifacts/schemas.json`, as a generated crate holds them (the fields
/// the listing reads).
fn tools_of(tools_json: &str, schemas_json: &'static str) -> Vec<&'static ToolDef> {
    let head: Value = serde_json::from_str(schemas_json).unwrap_or(Value::Null);
    let key = leak(
        head["key"]
            .as_str()
            .unwrap_or("x-toolforge-chunk")
            .to_string(),
    );
    let table: &'static SharedTexts = Box::leak(Box::new(SharedTexts::new(key, &[], schemas_json)));
    let parsed: Value = serde_json::from_str(tools_json).unwrap_or(Value::Null);
    let text = |v: &Value| leak(v.as_str().unwrap_or_default().to_string());
    let hint = |t: &Value, k: &str| t["annotations"][k].as_bool().unwrap_or_default();
    parsed["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let schema = match &t["input_schema"] {
                Value::String(name) if table.stored(name).is_some() => {
                    SharedText::Entry(leak(name.clone()), table)
                }
                Value::String(literal) => SharedText::Marked(leak(literal.clone()), table),
                other => SharedText::Marked(leak(other.to_string()), table),
            };
            let annotations = Annotations {
                read_only: hint(t, "readOnlyHint"),
                destructive: hint(t, "destructiveHint"),
                idempotent: hint(t, "idempotentHint"),
                open_world: hint(t, "openWorldHint"),
            };
            custom(|d| {
                d.name = text(&t["name"]);
                d.title = text(&t["title"]);
                d.description = text(&t["description"]);
                d.input_schema = schema;
                d.annotations = annotations;
            })
        })
        .collect()
}

/// Bytes of `listing` compressed as the server pre-compresses it (gzip
/// best, brotli quality 9, window 22).
fn compressed(listing: &[u8]) -> (usize, usize) {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = gz.write_all(listing);
    let gz = gz.finish().map(|v| v.len()).unwrap_or_default();
    let mut br = brotli::CompressorWriter::new(Vec::new(), 1 << 16, 9, 22);
    let _ = br.write_all(listing);
    (gz, br.into_inner().len())
}

#[test]
fn listing_size_of_the_artifacts() {
    let (tools_json, schemas_json) = match std::env::var_os("TOOLFORGE_LISTING_ARTIFACTS") {
        Some(dir) => {
            let dir = std::path::Path::new(&dir);
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
            (read("tools.json"), leak(read("schemas.json")))
        }
        None => (
            r#"{"tools":[{"name":"a","title":"A","description":"A","input_schema":"S_1",
                "annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true}}]}"#
                .to_string(),
            "{\"key\":\"k\",\"entries\":{\n\"S_1\":{\"type\":\"object\",\"properties\":{\"p\":{\"k\":\"S_2\"}}},\n\"S_2\":{\"type\":\"string\"}\n}}\n",
        ),
    };
    let tools = tools_of(&tools_json, schemas_json);
    let listing = encode(&tools, Variant::DEFAULT);
    let (gz, br) = compressed(&listing);
    let parsed: Vec<Value> = serde_json::from_slice(&listing).unwrap();
    assert_eq!(parsed.len(), tools.len());
    let part = |k: &str| {
        parsed
            .iter()
            .filter_map(|t| t.get(k))
            .map(|v| serde_json::to_string(v).map_or(0, |s| s.len()))
            .sum::<usize>()
    };
    eprintln!(
        "listing: {} tools, {} bytes (gzip {gz}, brotli {br}); inputSchema {}, annotations {}, \
         description {}, name {}, title {}",
        tools.len(),
        listing.len(),
        part("inputSchema"),
        part("annotations"),
        part("description"),
        part("name"),
        part("title"),
    );
    if std::env::var_os("TOOLFORGE_LISTING_ARTIFACTS").is_none() {
        assert_eq!(
            std::str::from_utf8(&listing).unwrap(),
            r#"[{"name":"a","description":"A","inputSchema":{"type":"object","properties":{"p":{"type":"string"}}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true}}]"#
        );
    }
}
