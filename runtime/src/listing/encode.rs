//! The one ToolDef → MCP JSON encoder: the pre-encoded listings, the rmcp
//! [`Tool`] of a tool (rmcp's own checks, the OAuth-narrowed listings) and
//! the CLI's `describe` all come from [`push_entry`], so they list the
//! same fields in the same order with the same fallback.

use bytes::Bytes;
use rmcp::model::Tool;
use serde_json::value::RawValue;

use crate::catalogue::{SharedText, ToolDef, Written};
use crate::schema_profile::{SchemaProfile, strict_input_schema};

/// What a schema that is not a JSON object is listed as (MCP requires an
/// object; a generated crate never holds one, a hand-written one might).
pub const FALLBACK_SCHEMA: &str = r#"{"type":"object"}"#;

/// One form of the listing: the schema profile, and whether output schemas
/// are listed (`--output-schemas`, or `?output_schemas=1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Variant {
    /// The input schemas' profile.
    pub profile: SchemaProfile,
    /// Output schemas are listed.
    pub with_output: bool,
}

impl Variant {
    /// How many variants there are ([`Variant::index`] is below it).
    pub const COUNT: usize = 4;
    /// Every variant, in [`Variant::index`] order.
    pub const ALL: [Self; Self::COUNT] = [
        Self::new(SchemaProfile::Full, false),
        Self::new(SchemaProfile::Full, true),
        Self::new(SchemaProfile::Strict, false),
        Self::new(SchemaProfile::Strict, true),
    ];
    /// Full schemas without output schemas: what most clients are listed.
    pub const DEFAULT: Self = Self::new(SchemaProfile::Full, false);
    /// Everything as generated: rmcp's own checks use this form.
    pub const FULL_WITH_OUTPUT: Self = Self::new(SchemaProfile::Full, true);

    /// The variant of `profile`, with output schemas or not.
    pub const fn new(profile: SchemaProfile, with_output: bool) -> Self {
        Self {
            profile,
            with_output,
        }
    }

    /// A dense index, for per-variant tables.
    pub const fn index(self) -> usize {
        let p = match self.profile {
            SchemaProfile::Full => 0,
            SchemaProfile::Strict => 2,
        };
        p + self.with_output as usize
    }
}

/// Appends `value` as a JSON string (serde_json's escaping).
fn push_json_str(out: &mut String, value: &str) {
    // A string always serialises.
    out.push_str(&serde_json::to_string(value).unwrap_or_default());
}

/// Whether `text` is one JSON object.
fn is_json_object(text: &str) -> bool {
    serde_json::from_str::<&RawValue>(text).is_ok_and(|raw| raw.get().starts_with('{'))
}

/// Appends schema `text` put together from its shared parts straight into
/// `out` (no buffer per tool: the server does this for every tool before it
/// listens), or [`FALLBACK_SCHEMA`] when it is not a JSON object.
fn push_schema(out: &mut String, written: &mut Written, text: SharedText, tool: &str, what: &str) {
    let start = out.len();
    text.write_into(out, Some(written));
    if !is_json_object(&out[start..]) {
        tracing::warn!(
            tool,
            what,
            "invalid schema JSON in the catalogue; listing it as {FALLBACK_SCHEMA}"
        );
        out.truncate(start);
        // Parts noted since were cut away.
        written.clear();
        out.push_str(FALLBACK_SCHEMA);
    }
}

/// Appends the strict form of input schema `text` (see
/// [`strict_input_schema`]), or [`FALLBACK_SCHEMA`].
fn push_strict(out: &mut String, text: SharedText, tool: &str) {
    let strict = serde_json::from_str::<serde_json::Value>(&text.text())
        .ok()
        .filter(serde_json::Value::is_object)
        .map(|full| strict_input_schema(&full))
        .and_then(|s| serde_json::to_string(&s).ok());
    match strict {
        Some(s) => out.push_str(&s),
        None => {
            tracing::warn!(
                tool,
                what = "input",
                "invalid schema JSON in the catalogue; listing it as {FALLBACK_SCHEMA}"
            );
            out.push_str(FALLBACK_SCHEMA);
        }
    }
}

/// Appends the listing entry of `t`: `name`, `title`, `description`,
/// `inputSchema` (in the variant's profile), `outputSchema` (when the
/// variant lists them and the tool has one) and `annotations`, compact, in
/// that order.
pub fn push_entry(out: &mut String, written: &mut Written, t: &ToolDef, variant: Variant) {
    out.push_str("{\"name\":");
    push_json_str(out, t.name);
    out.push_str(",\"title\":");
    push_json_str(out, t.title);
    out.push_str(",\"description\":");
    push_json_str(out, t.description);
    out.push_str(",\"inputSchema\":");
    match variant.profile {
        SchemaProfile::Full => push_schema(out, written, t.input_schema, t.name, "input"),
        SchemaProfile::Strict => push_strict(out, t.input_schema, t.name),
    }
    if let Some(schema) = t.output_schema.filter(|_| variant.with_output) {
        out.push_str(",\"outputSchema\":");
        push_schema(out, written, schema, t.name, "output");
    }
    let a = t.annotations;
    out.push_str(&format!(
        ",\"annotations\":{{\"readOnlyHint\":{},\"destructiveHint\":{},\"idempotentHint\":{},\"openWorldHint\":{}}}}}",
        a.read_only, a.destructive, a.idempotent, a.open_world
    ));
}

/// The listing of `tools` as a JSON array. (Encoding parts on two threads
/// made the cold start slower: the threads' start and the other start-up
/// work cost more than they saved.)
pub fn encode(tools: &[&'static ToolDef], variant: Variant) -> Bytes {
    let mut out = String::from("[");
    let mut written = Written::default();
    for (i, t) in tools.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_entry(&mut out, &mut written, t, variant);
    }
    out.push(']');
    Bytes::from(out.into_bytes())
}

/// The listing entry of one tool as JSON text.
pub fn entry(t: &ToolDef, variant: Variant) -> String {
    let mut out = String::new();
    push_entry(&mut out, &mut Written::default(), t, variant);
    out
}

/// The rmcp form of a tool: its listing entry, parsed.
pub fn rmcp_tool(t: &ToolDef, variant: Variant) -> Tool {
    let text = entry(t, variant);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        // Not reached: every schema written is a JSON object.
        tracing::warn!(tool = t.name, error = %e, "listing entry does not parse as an MCP tool");
        Tool::new(t.name, t.description, std::sync::Arc::default())
    })
}
