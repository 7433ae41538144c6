//! Lossless trims of a tool's input schema.
//!
//! Every client downloads every input schema on `tools/list`; these
//! rewrites take out what tells a model nothing it cannot read elsewhere in
//! the same schema, and nothing else ([`Trim`] names each one; the check
//! in `generator/tests/test_lossless_listing.rs` applies exactly these to
//! the untrimmed schema and compares). Only schema positions are walked:
//! data (`enum`, `default`, `const`, `examples`) is never touched.

use serde_json::{Map, Value};

use crate::refs::{Ctx, schema_child_ctx};

/// One lossless rewrite of an input schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trim {
    /// `readOnly` on a node of an input schema: the converter has already
    /// left out read-only body properties, so what keeps the keyword is an
    /// argument the caller sends (a path or query parameter declared with a
    /// read-only component schema); the keyword has no validation effect.
    ReadOnlyKeyword,
    /// Whitespace at the end of a `description` or `title`, and blank lines
    /// and an indent of up to three spaces at its start, which Markdown
    /// does not render (a deeper indent, an indented code block, stays).
    EdgeWhitespace,
    /// A run of spaces inside a line of a `description`, between two other
    /// characters and outside code (no fenced block in the text, not in a
    /// backtick span, not an indented line), kept as one space: Markdown
    /// renders it as one (Cloudflare pads its Markdown tables with them).
    SpaceRun,
    /// `additionalProperties: true`, which is what its absence means, in a
    /// schema with no `unevaluatedProperties` anywhere (which would read
    /// the properties it evaluates).
    AdditionalPropertiesTrue,
    /// A last sentence of a `description` that only restates the node's
    /// `default` (`Defaults to 80.` next to `"default": 80`), which stays.
    DefaultRestated,
}

/// How many of each [`Trim`] were applied, indexed by `Trim as usize`.
pub type Trimmed = [usize; 5];

fn note(trimmed: &mut Trimmed, trim: Trim) {
    let slot = &mut trimmed[trim as usize];
    *slot = slot.saturating_add(1);
}

/// Applies every [`Trim`] to `schema` (a tool's input schema, `$defs`
/// included) in place; returns how many of each were applied.
pub fn trim_input(schema: &mut Value) -> Trimmed {
    let mut count = Trimmed::default();
    let open_is_default = !has_key(schema, "unevaluatedProperties");
    let mut stack: Vec<&mut Value> = vec![schema];
    while let Some(node) = stack.pop() {
        let Value::Object(map) = node else {
            continue;
        };
        trim_node(map, &mut count);
        if open_is_default && map.get("additionalProperties") == Some(&Value::Bool(true)) {
            map.shift_remove("additionalProperties");
            note(&mut count, Trim::AdditionalPropertiesTrue);
        }
        for (key, child) in map.iter_mut() {
            match (schema_child_ctx(key), child) {
                (Ctx::Schema, c @ Value::Object(_)) => stack.push(c),
                (Ctx::SchemaList | Ctx::Schema, Value::Array(items)) => {
                    stack.extend(items.iter_mut())
                }
                (Ctx::SchemaMap, Value::Object(members)) => stack.extend(members.values_mut()),
                _ => {}
            }
        }
    }
    count
}

/// Whether `key` is a member of any object in `value` (data included:
/// the guard errs on the side of keeping).
fn has_key(value: &Value, key: &str) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if map.contains_key(key) {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// The trims of one node's own keywords.
fn trim_node(map: &mut Map<String, Value>, count: &mut Trimmed) {
    if map.shift_remove("readOnly").is_some() {
        note(count, Trim::ReadOnlyKeyword);
    }
    for key in ["description", "title"] {
        if let Some(Value::String(text)) = map.get_mut(key) {
            let trimmed = without_edge_whitespace(text);
            if trimmed.len() != text.len() {
                *text = trimmed;
                note(count, Trim::EdgeWhitespace);
            }
        }
    }
    if let Some(Value::String(text)) = map.get_mut("description")
        && let Some(collapsed) = collapse_space_runs(text)
    {
        *text = collapsed;
        note(count, Trim::SpaceRun);
    }
    let restated = match (map.get("description"), map.get("default")) {
        (Some(Value::String(text)), Some(default)) => without_default_sentence(text, default),
        _ => None,
    };
    if let Some(kept) = restated {
        map.insert("description".into(), Value::String(kept));
        note(count, Trim::DefaultRestated);
    }
}

/// `text` without the whitespace [`Trim::EdgeWhitespace`] takes: all of
/// it at the end; at the start, blank lines and an indent of at most three
/// spaces (four, or a tab, start an indented code block, which stays).
fn without_edge_whitespace(text: &str) -> String {
    let end = text.trim_end();
    let body = end.trim_start();
    let lead = &end[..end.len() - body.len()];
    let indent = &lead[lead.rfind('\n').map_or(0, |i| i + 1)..];
    if indent.len() <= 3 && !indent.contains('\t') {
        body.to_string()
    } else {
        format!("{indent}{body}")
    }
}

/// `text` with every [`Trim::SpaceRun`] kept as one space (`None` when it
/// has none, or holds a fenced code block).
fn collapse_space_runs(text: &str) -> Option<String> {
    if !text.contains("  ") || text.contains("```") || text.contains("~~~") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.starts_with("    ") || line.starts_with('\t') {
            out.push_str(line);
            continue;
        }
        let mut in_code = false;
        let mut chars = line.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            out.push(c);
            if c == '`' {
                in_code = !in_code;
            }
            // A space after a character that is not one, outside code:
            // skip the spaces after it when another character follows.
            let after_text = at > 0 && !line[..at].ends_with(' ');
            if c == ' ' && after_text && !in_code {
                let rest = &line[at + 1..];
                let spaces = rest.len() - rest.trim_start_matches(' ').len();
                if spaces > 0 && spaces < rest.len() {
                    for _ in 0..spaces {
                        chars.next();
                    }
                }
            }
        }
    }
    (out.len() != text.len()).then_some(out)
}

/// The sentence forms that restate a default, `{}` standing for it.
const DEFAULT_SENTENCES: [(&str, &str); 4] = [
    ("Defaults to ", "."),
    ("The default value is ", "."),
    ("The default is ", "."),
    ("Default: ", "."),
];

/// `text` without its last sentence when that sentence is exactly one of
/// [`DEFAULT_SENTENCES`] naming `default` (a string as written, bare or in
/// backticks; any other value as its JSON text) and another sentence comes
/// before it (a description that is only the restatement stays whole).
fn without_default_sentence(text: &str, default: &Value) -> Option<String> {
    let shown = match default {
        Value::String(s) => s.clone(),
        Value::Number(_) | Value::Bool(_) => default.to_string(),
        _ => return None,
    };
    if shown.is_empty() {
        return None;
    }
    let spellings = [shown.clone(), format!("`{shown}`")];
    for (head, tail) in DEFAULT_SENTENCES {
        for spelled in &spellings {
            let sentence = format!(" {head}{spelled}{tail}");
            if let Some(kept) = text.strip_suffix(&sentence)
                && kept.ends_with(['.', '!', '?'])
            {
                return Some(kept.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_only_keywords_leave_every_schema_position_and_data_stays() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "zone_id": {"type": "string", "readOnly": true},
                "tags": {"type": "array", "items": {"readOnly": false, "type": "string"}},
                "pick": {"anyOf": [{"readOnly": true, "type": "integer"}]},
                "data": {"type": "object", "default": {"readOnly": true}, "enum": [{"readOnly": true}]}
            },
            "$defs": {"D": {"readOnly": true}}
        });
        assert_eq!(trim_input(&mut s), [4, 0, 0, 0, 0]);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "zone_id": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "pick": {"anyOf": [{"type": "integer"}]},
                    "data": {"type": "object", "default": {"readOnly": true}, "enum": [{"readOnly": true}]}
                },
                "$defs": {"D": {}}
            })
        );
    }

    #[test]
    fn edge_whitespace_leaves_texts_and_inner_whitespace_stays() {
        let mut s = json!({"title": " T ", "description": "\n\n  Line one.  \n\n    code\n",
            "properties": {"p": {"description": "\n    code\n"}, "q": {"description": "\t x "}}});
        assert_eq!(trim_input(&mut s)[Trim::EdgeWhitespace as usize], 4);
        assert_eq!(s["title"], "T");
        assert_eq!(s["description"], "Line one.  \n\n    code");
        assert_eq!(s["properties"]["p"]["description"], "    code");
        assert_eq!(s["properties"]["q"]["description"], "\t x");
    }

    #[test]
    fn open_additional_properties_leave_unless_unevaluated_properties_is_used() {
        let open = json!({"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": true},
            "n": {"type": "object", "additionalProperties": false},
            "s": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let mut s = open.clone();
        assert_eq!(trim_input(&mut s)[Trim::AdditionalPropertiesTrue as usize], 1);
        assert_eq!(s["properties"]["m"], json!({"type": "object"}));
        assert_eq!(s["properties"]["n"], open["properties"]["n"]);
        assert_eq!(s["properties"]["s"], open["properties"]["s"]);
        let mut guarded = open.clone();
        guarded["properties"]["u"] = json!({"allOf": [{"additionalProperties": true}],
            "unevaluatedProperties": false});
        let before = guarded.clone();
        assert_eq!(trim_input(&mut guarded), Trimmed::default());
        assert_eq!(guarded, before);
    }

    #[test]
    fn space_runs_collapse_outside_code_only() {
        let cases = [
            ("a  b   c", "a b c"),
            ("| Name      | URL |\n|---  |--- |", "| Name | URL |\n|--- |--- |"),
            // Line ends (a hard break), indentation, code spans, indented
            // and fenced code stay.
            ("hard  \nbreak", "hard  \nbreak"),
            ("- a\n  - b  c", "- a\n  - b c"),
            ("x `a  b` y  z", "x `a  b` y z"),
            ("    code  here\ntext  here", "    code  here\ntext here"),
            ("```\na  b\n```\nc  d", "```\na  b\n```\nc  d"),
            ("é  ü", "é ü"),
        ];
        for (text, kept) in cases {
            let mut s = json!({"description": text});
            trim_input(&mut s);
            assert_eq!(s["description"], kept, "{text:?}");
        }
    }

    #[test]
    fn only_an_exact_restatement_of_the_default_leaves() {
        let cases = [
            (json!(80), "Port to check. Defaults to 80.", "Port to check."),
            (json!("mid"), "How often. The default value is `mid`.", "How often."),
            (json!("reply"), "Kind. The default value is reply.", "Kind."),
            (json!(true), "Enabled? The default value is true.", "Enabled?"),
            (json!("8760h"), "Max age. Default: 8760h.", "Max age."),
            // Not the default's value, not the last sentence, not a sentence
            // of its own, more than the restatement, or all there is.
            (json!(443), "Port. Defaults to 80.", "Port. Defaults to 80."),
            (json!(80), "Defaults to 80. Port.", "Defaults to 80. Port."),
            (json!(80), "Port defaults to 80.", "Port defaults to 80."),
            (
                json!(80),
                "Port. Defaults to 80 for HTTP.",
                "Port. Defaults to 80 for HTTP.",
            ),
            (json!(80), "Defaults to 80.", "Defaults to 80."),
            (json!("80"), "Port. Defaults to `\"80\"`.", "Port. Defaults to `\"80\"`."),
            (json!([1]), "List. Defaults to [1].", "List. Defaults to [1]."),
        ];
        for (default, text, kept) in cases {
            let mut s = json!({"type": "string", "description": text, "default": default.clone()});
            trim_input(&mut s);
            assert_eq!(s["description"], kept, "{text}");
            assert_eq!(s["default"], default, "the keyword stays");
        }
    }
}
