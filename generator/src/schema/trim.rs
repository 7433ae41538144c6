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
    /// Whitespace at the start or end of a `description` or `title`, which
    /// Markdown does not render.
    EdgeWhitespace,
    /// A last sentence of a `description` that only restates the node's
    /// `default` (`Defaults to 80.` next to `"default": 80`), which stays.
    DefaultRestated,
}

/// Applies every [`Trim`] to `schema` (a tool's input schema, `$defs`
/// included) in place; returns how many were applied.
pub fn trim_input(schema: &mut Value) -> usize {
    let mut count = 0usize;
    let mut stack: Vec<&mut Value> = vec![schema];
    while let Some(node) = stack.pop() {
        let Value::Object(map) = node else {
            continue;
        };
        count = count.saturating_add(trim_node(map));
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

/// The trims of one node's own keywords.
fn trim_node(map: &mut Map<String, Value>) -> usize {
    let mut count = 0;
    if map.shift_remove("readOnly").is_some() {
        count += 1;
    }
    for key in ["description", "title"] {
        if let Some(Value::String(text)) = map.get_mut(key) {
            let trimmed = text.trim();
            if trimmed.len() != text.len() {
                *text = trimmed.to_string();
                count += 1;
            }
        }
    }
    let restated = match (map.get("description"), map.get("default")) {
        (Some(Value::String(text)), Some(default)) => without_default_sentence(text, default),
        _ => None,
    };
    if let Some(kept) = restated {
        map.insert("description".into(), Value::String(kept));
        count += 1;
    }
    count
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
        assert_eq!(trim_input(&mut s), 4);
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
        let mut s = json!({"title": " T ", "description": "Line one.  \n\n    code\n",
            "properties": {"p": {"description": "a  b\r\nc"}}});
        assert_eq!(trim_input(&mut s), 2);
        assert_eq!(s["title"], "T");
        assert_eq!(s["description"], "Line one.  \n\n    code");
        assert_eq!(s["properties"]["p"]["description"], "a  b\r\nc");
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
