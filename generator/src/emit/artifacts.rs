//! Code Mode artifacts: products and the tool catalogue as JSON (the
//! resolved spec is `resolved/`'s).

use serde::Serialize;
use serde_json::{Value, json};

use super::interned::{SchemaTable, ToolSchemas};

use crate::error::{GenerateError, Result};
use crate::ir::{Annotations, Body, Catalogue, Envelope, HttpMethod, Param, Route, Tool};

/// Pretty JSON with a trailing newline.
pub fn to_json(v: &impl serde::Serialize, file: &str) -> Result<String> {
    serde_json::to_string_pretty(v)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| GenerateError::emit_from(file, "serialising JSON", e))
}

/// `products.json`.
pub fn products(cat: &Catalogue, generated: &str) -> Value {
    json!({
        "@generated": generated,
        "products": cat.products.iter().map(|p| json!({
            "name": p.name,
            "tool_count": p.tools.len(),
            "tools": p.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `tools.json`: the IR catalogue.
#[cfg(any(test, feature = "oracles"))]
pub fn tools(cat: &Catalogue, generated: &str) -> Value {
    json!({
        "@generated": generated,
        "api": cat.api,
        "tools": cat.tools().collect::<Vec<_>>(),
        "skipped": cat.skipped,
    })
}

/// A tool as `tools.json` lists it: the IR without response schemas (they
/// are in the generated crate and, resolved, in `spec.json`). Input and
/// output schemas are written as the names of their entries in
/// `artifacts/schemas.json` (shared by all tools: Stripe's 451 output
/// schemas have 226 distinct texts).
#[derive(Serialize)]
struct ToolEntry<'a> {
    name: &'a str,
    operation_id: &'a str,
    product: &'a str,
    method: HttpMethod,
    path: &'a str,
    routes: &'a [Route],
    title: &'a str,
    description: &'a str,
    params: &'a [Param],
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a Body>,
    input_schema: InputSchema<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<OutputSchema<'a>>,
    responses: Vec<ResponseEntry<'a>>,
    annotations: Annotations,
    permissions: &'a [String],
    envelope: Envelope,
    deprecated: bool,
}

#[derive(Serialize)]
struct ResponseEntry<'a> {
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_type: Option<&'a str>,
}

/// An input schema: the IR's, or the name of its interned text.
#[derive(Serialize)]
#[serde(untagged)]
enum InputSchema<'a> {
    Inline(&'a Value),
    Shared(&'a str),
}

/// An output schema: the IR's, or the name of its interned root text.
#[derive(Serialize)]
#[serde(untagged)]
enum OutputSchema<'a> {
    Inline(&'a crate::ir::OutputSchema),
    Shared(&'a str),
}

impl<'a> ToolEntry<'a> {
    fn new(t: &'a Tool, interned: Option<&'a ToolSchemas>) -> Self {
        let output_schema = match (&t.output_schema, interned.and_then(|i| i.output.as_ref())) {
            (Some(_), Some(name)) => Some(OutputSchema::Shared(name.as_str())),
            (v, _) => v.as_deref().map(OutputSchema::Inline),
        };
        let input_schema = match interned.and_then(|i| i.input.as_deref()) {
            Some(name) => InputSchema::Shared(name),
            None => InputSchema::Inline(&t.input_schema),
        };
        ToolEntry {
            name: &t.name,
            operation_id: &t.operation_id,
            product: &t.product,
            method: t.method,
            path: &t.path,
            routes: &t.routes,
            title: &t.title,
            description: &t.description,
            params: &t.params,
            body: t.body.as_ref(),
            input_schema,
            output_schema,
            responses: t
                .responses
                .iter()
                .map(|r| ResponseEntry {
                    status: &r.status,
                    content_type: r.content_type.as_deref(),
                })
                .collect(),
            annotations: t.annotations,
            permissions: &t.permissions,
            envelope: t.envelope,
            deprecated: t.deprecated,
        }
    }
}

/// Appends `items` as a JSON array with one item per line.
fn push_lines<T: Serialize>(out: &mut Vec<u8>, items: impl Iterator<Item = T>) -> Result<()> {
    out.push(b'[');
    let mut any = false;
    for (i, item) in items.enumerate() {
        out.extend_from_slice(if i == 0 { &b"\n"[..] } else { &b",\n"[..] });
        serde_json::to_writer(&mut *out, &item).map_err(|e| {
            GenerateError::emit_from("artifacts/tools.json", "serialising a tool", e)
        })?;
        any = true;
    }
    if any {
        out.push(b'\n');
    }
    out.push(b']');
    Ok(())
}

/// The reference key of the shared texts: `{"x-toolforge-chunk": "S_…"}`
/// stands for the whole entry of that name (unless some text holds this
/// key itself; `artifacts/schemas.json` names the key in use).
pub const CHUNK_KEY: &str = "x-toolforge-chunk";

/// The root key of a `tools.json` whose schemas are in a table of their
/// own (older catalogues hold them under `schemas`, with this key `true`).
pub const CHUNKED_KEY: &str = "x-toolforge-chunked";

/// The root key naming the file, beside `tools.json`, that holds the
/// entries `output_schema` names (`schemas.json`).
pub const CHUNKS_FILE_KEY: &str = "x-toolforge-chunks";

/// `tools.json` text: compact JSON with one tool (and one skipped
/// operation) per line, so a regenerated catalogue diffs line by line.
/// A tool's `input_schema` and `output_schema` name their entries of
/// `artifacts/schemas.json`
/// (the file the crate embeds, written by
/// [`SchemaTable::schemas_json`]), so each schema text is stored once;
/// the root's [`CHUNKS_FILE_KEY`] names that file.
pub fn tools_json(cat: &Catalogue, table: &SchemaTable, generated: &str) -> Result<Vec<u8>> {
    let any_shared = table
        .tools
        .iter()
        .flatten()
        .any(|t| t.output.is_some() || t.input.is_some());
    let entries = cat
        .products
        .iter()
        .enumerate()
        .flat_map(|(p, product)| {
            product
                .tools
                .iter()
                .enumerate()
                .map(move |(t, tool)| ToolEntry::new(tool, table.tool(p, t)))
        })
        .collect::<Vec<_>>();
    // Generous: capacity never written costs no memory, regrowth copies.
    let mut out = Vec::with_capacity(entries.len().saturating_mul(16 * 1024) + 4096);
    let schemas_file = super::interned::SCHEMAS_JSON
        .strip_prefix("artifacts/")
        .unwrap_or(super::interned::SCHEMAS_JSON);
    let head = if any_shared {
        json!({"@generated": generated, "api": cat.api, CHUNKS_FILE_KEY: schemas_file})
    } else {
        json!({"@generated": generated, "api": cat.api})
    };
    let head = serde_json::to_string(&head)
        .map_err(|e| GenerateError::emit_from("artifacts/tools.json", "serialising the head", e))?;
    out.extend_from_slice(head.strip_suffix('}').unwrap_or(&head).as_bytes());
    out.extend_from_slice(b",\n\"tools\":");
    push_lines(&mut out, entries.into_iter())?;
    out.extend_from_slice(b",\n\"skipped\":");
    push_lines(&mut out, cat.skipped.iter())?;
    out.extend_from_slice(b"\n}\n");
    Ok(out)
}
