//! Client-compatibility features of a tool schema: what strict clients
//! (OpenAI strict mode, Gemini) reject or mishandle, counted by the corpus
//! report before and after the `strict` profile.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::refs::{Ctx, schema_child_ctx};

/// Which features occur anywhere in one schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    /// A `$ref` or `$defs`.
    pub refs: bool,
    /// A `oneOf`.
    pub one_of: bool,
    /// An `anyOf`.
    pub any_of: bool,
    /// An `allOf`.
    pub all_of: bool,
    /// A `format`.
    pub format: bool,
    /// A `type` given as an array (`["string", "null"]`).
    pub type_array: bool,
    /// `not`, `if`/`then`/`else`, `patternProperties` or `dependentSchemas`.
    pub exotic: bool,
    /// The root is not `type: object` or has a top-level combinator.
    pub bad_root: bool,
}

impl Features {
    /// Scans `schema` (iteratively; every schema position, no literal data).
    pub fn of(schema: &Value) -> Self {
        let mut f = Features::default();
        let root_ok = schema.get("type").and_then(Value::as_str) == Some("object")
            && !["oneOf", "anyOf", "allOf", "not", "$ref"]
                .iter()
                .any(|k| schema.get(*k).is_some());
        f.bad_root = !root_ok;
        let mut stack: Vec<(Ctx, &Value)> = vec![(Ctx::Schema, schema)];
        while let Some((ctx, node)) = stack.pop() {
            match (ctx, node) {
                (Ctx::Schema, Value::Object(map)) => {
                    for (key, child) in map {
                        match key.as_str() {
                            "$ref" | "$defs" => f.refs = true,
                            "oneOf" => f.one_of = true,
                            "anyOf" => f.any_of = true,
                            "allOf" => f.all_of = true,
                            "format" => f.format = true,
                            "type" if child.is_array() => f.type_array = true,
                            "not" | "if" | "then" | "else" | "patternProperties"
                            | "dependentSchemas" => f.exotic = true,
                            _ => {}
                        }
                        let c = schema_child_ctx(key);
                        if c != Ctx::Data {
                            stack.push((c, child));
                        }
                    }
                }
                (Ctx::SchemaMap, Value::Object(map)) => {
                    stack.extend(map.values().map(|v| (Ctx::Schema, v)));
                }
                (Ctx::SchemaList, Value::Array(items)) => {
                    stack.extend(items.iter().map(|v| (Ctx::Schema, v)));
                }
                _ => {}
            }
        }
        f
    }
}

/// Per-feature counts of schemas (one count per schema that has it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureCounts {
    /// Schemas counted.
    pub schemas: usize,
    /// With `$ref` / `$defs`.
    pub refs: usize,
    /// With `oneOf`.
    pub one_of: usize,
    /// With `anyOf`.
    pub any_of: usize,
    /// With `allOf`.
    pub all_of: usize,
    /// With `format`.
    pub format: usize,
    /// With a type array.
    pub type_array: usize,
    /// With `not` / conditionals / `patternProperties` / `dependentSchemas`.
    pub exotic: usize,
    /// Root not `type: object`, or a top-level combinator.
    pub bad_root: usize,
}

impl FeatureCounts {
    /// Counts one schema's features.
    pub fn add(&mut self, f: Features) {
        self.schemas += 1;
        self.refs += usize::from(f.refs);
        self.one_of += usize::from(f.one_of);
        self.any_of += usize::from(f.any_of);
        self.all_of += usize::from(f.all_of);
        self.format += usize::from(f.format);
        self.type_array += usize::from(f.type_array);
        self.exotic += usize::from(f.exotic);
        self.bad_root += usize::from(f.bad_root);
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &FeatureCounts) {
        self.schemas += o.schemas;
        self.refs += o.refs;
        self.one_of += o.one_of;
        self.any_of += o.any_of;
        self.all_of += o.all_of;
        self.format += o.format;
        self.type_array += o.type_array;
        self.exotic += o.exotic;
        self.bad_root += o.bad_root;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_features_in_schema_positions_only() {
        let f = Features::of(&json!({
            "type": "object",
            "properties": {"a": {"type": ["string", "null"], "format": "uuid"},
                           "b": {"oneOf": [{"$ref": "#/$defs/X"}]}},
            "default": {"oneOf": 1, "$ref": "data"},
            "$defs": {"X": {"allOf": [{"not": {}}]}}
        }));
        assert!(f.refs && f.one_of && f.all_of && f.format && f.type_array && f.exotic);
        assert!(!f.any_of && !f.bad_root);
        let f = Features::of(&json!({"type": "object", "enum": [{"anyOf": []}]}));
        assert_eq!(f, Features::default());
        assert!(Features::of(&json!({"anyOf": [{"type": "object"}]})).bad_root);
        let mut c = FeatureCounts::default();
        c.add(Features::of(&json!({"type": "object", "format": "x"})));
        c.merge(&c.clone());
        assert_eq!((c.schemas, c.format), (2, 2));
    }
}
