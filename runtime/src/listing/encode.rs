//! The one ToolDef → MCP JSON encoder: the pre-encoded listings, the rmcp
//! [`Tool`] of a tool (rmcp's own checks, the OAuth-narrowed listings) and
//! the CLI's `describe` all come from [`push_entry`], so they list the
//! same fields in the same order with the same fallback.

use bytes::Bytes;
use rmcp::model::Tool;
use serde_json::value::RawValue;

use crate::catalogue::{Annotations, SharedText, ToolDef, Written};
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
    // serde_json escapes only `"`, `\\` and control characters: most names
    // and descriptions have none, and are copied as they are (without a
    // string of their own per field: the listing writes thousands).
    if !value.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push('"');
        out.push_str(value);
        out.push('"');
        return;
    }
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
    let (start, unchecked) = (out.len(), written.unchecked());
    text.write_into(out, Some(written));
    let object = if written.unchecked() == unchecked {
        // One JSON value (see [`Written`]): an object when it opens with `{`.
        out[start..]
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('{')
    } else {
        is_json_object(&out[start..])
    };
    if !object {
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
/// that order. What a client reads the same when it is absent is left
/// out (see [`push_annotations`]; a `title` equal to the description).
pub fn push_entry(out: &mut String, written: &mut Written, t: &ToolDef, variant: Variant) {
    push_entry_without(out, written, t, variant, &[]);
}

/// [`push_entry`] without the arguments `dropped` names in the input
/// schema (see [`super::drop_args::push_without`]): a scoped URL's
/// listing.
pub fn push_entry_without(
    out: &mut String,
    written: &mut Written,
    t: &ToolDef,
    variant: Variant,
    dropped: &[&str],
) {
    out.push_str("{\"name\":");
    push_json_str(out, t.name);
    // A title that repeats the description word for word tells a client
    // nothing the description does not (8.6 KB of the flagship listing).
    if t.title != t.description {
        out.push_str(",\"title\":");
        push_json_str(out, t.title);
    }
    out.push_str(",\"description\":");
    push_json_str(out, t.description);
    out.push_str(",\"inputSchema\":");
    if dropped.is_empty() {
        push_input(out, written, t, variant);
    } else {
        // A buffer of its own: `written` notes places in `out` that later
        // entries copy from, and the schema is rewritten before it lands.
        let mut schema = String::new();
        push_input(&mut schema, &mut Written::default(), t, variant);
        super::drop_args::push_without(out, &schema, dropped);
    }
    if let Some(schema) = t.output_schema.filter(|_| variant.with_output) {
        out.push_str(",\"outputSchema\":");
        push_schema(out, written, schema, t.name, "output");
    }
    push_annotations(out, t.annotations);
    out.push('}');
}

/// MCP's value of each hint when a tool does not list it (`ToolAnnotations`
/// in the specification): a client reads a hint equal to its default the
/// same whether it is written or not.
pub const HINT_DEFAULTS: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Appends the input schema of `t` in the variant's profile.
fn push_input(out: &mut String, written: &mut Written, t: &ToolDef, variant: Variant) {
    match variant.profile {
        SchemaProfile::Full => push_schema(out, written, t.input_schema, t.name, "input"),
        SchemaProfile::Strict => push_strict(out, t.input_schema, t.name),
    }
}

/// Appends `,"annotations":{…}` with the hints that differ from
/// [`HINT_DEFAULTS`], in the specification's order, or nothing when none
/// does (69 KB of the flagship listing were hints equal to the defaults).
fn push_annotations(out: &mut String, a: Annotations) {
    let d = HINT_DEFAULTS;
    let hints = [
        ("readOnlyHint", a.read_only, d.read_only),
        ("destructiveHint", a.destructive, d.destructive),
        ("idempotentHint", a.idempotent, d.idempotent),
        ("openWorldHint", a.open_world, d.open_world),
    ];
    let mut first = true;
    for (name, value, default) in hints {
        if value == default {
            continue;
        }
        out.push_str(if first { ",\"annotations\":{\"" } else { ",\"" });
        first = false;
        out.push_str(name);
        out.push_str(if value { "\":true" } else { "\":false" });
    }
    if !first {
        out.push('}');
    }
}

/// The listing of `tools` as a JSON array. (Encoding parts on two threads
/// made the cold start slower: the threads' start and the other start-up
/// work cost more than they saved.)
pub fn encode(tools: &[&'static ToolDef], variant: Variant) -> Bytes {
    encode_without(tools.iter().copied(), variant, |_| Vec::new())
}

/// The listing of `tools` as a JSON array, each without the arguments
/// `dropped` names for it (see [`push_entry_without`]).
pub fn encode_without<'t>(
    tools: impl Iterator<Item = &'t ToolDef>,
    variant: Variant,
    dropped: impl Fn(&ToolDef) -> Vec<&'static str>,
) -> Bytes {
    let mut out = String::from("[");
    let mut written = Written::default();
    for (i, t) in tools.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_entry_without(&mut out, &mut written, t, variant, &dropped(t));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::testing::custom;
    use serde_json::Value;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0u8..0x80).map(|b| format!("a{}b", b as char)).collect();
        texts.extend(["", "plain", "é ü \u{2028} 😀", "\"q\"", "end\\"].map(String::from));
        for text in texts {
            let mut out = String::from("x");
            push_json_str(&mut out, &text);
            assert_eq!(out[1..], serde_json::to_string(&text).unwrap(), "{text:?}");
        }
    }

    /// Every combination of hints reads back the same with MCP's defaults
    /// filled in for what is left out, and no hint equal to its default
    /// (nor an empty `annotations`) is written.
    #[test]
    fn hints_equal_to_mcp_defaults_are_left_out_and_read_back_the_same() {
        for bits in 0u8..16 {
            let a = Annotations {
                read_only: bits & 1 != 0,
                destructive: bits & 2 != 0,
                idempotent: bits & 4 != 0,
                open_world: bits & 8 != 0,
            };
            let t = custom(|t| t.annotations = a);
            let listed: Value = serde_json::from_str(&entry(t, Variant::DEFAULT)).unwrap();
            let hint = |name: &str, default: bool| {
                let written = listed.get("annotations").and_then(|h| h.get(name));
                assert_ne!(written, Some(&Value::Bool(default)), "{name} of {a:?}");
                written.map_or(default, |v| v.as_bool().unwrap())
            };
            let d = HINT_DEFAULTS;
            let read = Annotations {
                read_only: hint("readOnlyHint", d.read_only),
                destructive: hint("destructiveHint", d.destructive),
                idempotent: hint("idempotentHint", d.idempotent),
                open_world: hint("openWorldHint", d.open_world),
            };
            assert_eq!(read, a);
            assert_eq!(listed.get("annotations").is_none(), a == d, "{listed}");
            // rmcp reads the same entry.
            let tool = rmcp_tool(t, Variant::DEFAULT);
            let hints = tool.annotations.unwrap_or_default();
            assert_eq!(
                hints.read_only_hint.unwrap_or(d.read_only),
                a.read_only,
                "{a:?}"
            );
            assert_eq!(
                hints.destructive_hint.unwrap_or(d.destructive),
                a.destructive
            );
        }
    }

    /// A title equal to the description is left out; any other is kept,
    /// even one that differs only in case or spaces.
    #[test]
    fn a_title_equal_to_its_description_is_left_out() {
        let same = custom(|t| {
            t.title = "List zones";
            t.description = "List zones";
        });
        let listed: Value = serde_json::from_str(&entry(same, Variant::DEFAULT)).unwrap();
        assert!(listed.get("title").is_none(), "{listed}");
        assert_eq!(listed["description"], "List zones");
        for title in ["List zones ", "list zones", "List zones."] {
            let t = custom(|t| {
                t.title = title;
                t.description = "List zones";
            });
            let listed: Value = serde_json::from_str(&entry(t, Variant::DEFAULT)).unwrap();
            assert_eq!(listed["title"], title);
        }
    }
}
