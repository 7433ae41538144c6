//! The `strict` schema profile: tool input schemas simplified for clients
//! that accept only a subset of JSON Schema (OpenAI strict function
//! calling, Gemini function declarations).
//!
//! The one implementation both sides call: the generator for a crate
//! generated with `schema_profile: strict` (`schema::strict`), the runtime
//! at run time from the full schema a generated crate holds, so one binary
//! serves both profiles (`schema_profile::strict`). Applied to a tool input
//! schema (`type: object` root, `$defs` at the root), [`strict_input_schema`]:
//! - inlines every `#/$defs/…` reference; a recursive definition is
//!   unrolled [`MAX_UNROLL`] times along a branch, then replaced by a
//!   placeholder of its type (`{"type": "object", "description": …}`);
//! - turns `oneOf` into `anyOf`, merges `allOf` members into their parent,
//!   and unwraps an `anyOf` left with a single member;
//! - drops `null` (type arrays, `enum`, `{"type": "null"}` members): an input
//!   may always leave a value out instead of sending `null`; a type array
//!   of several types becomes an `anyOf` with each type's keywords;
//! - keeps `format` only where Gemini accepts it (`date-time` on strings,
//!   `int32`/`int64` on integers, `float`/`double` on numbers) and moves any
//!   other format into the description;
//! - `const` becomes a one-value `enum`; keywords outside the common subset
//!   (`not`, `if`/`then`/`else`, `patternProperties`, `default`, `uniqueItems`,
//!   `multipleOf`, `exclusiveMinimum`, schema-valued `additionalProperties`,
//!   …) are dropped.
//!
//! Output schemas are not touched: they describe what the upstream returns.

use serde_json::{Map, Value, json};

/// How many times one recursive definition is expanded along a branch.
pub const MAX_UNROLL: usize = 2;
/// Deepest nesting written; deeper parts become placeholders.
const MAX_DEPTH: usize = 96;
/// Most schema nodes produced by inlining before every further reference
/// becomes a placeholder (keeps the output of wide recursive graphs bounded).
const MAX_NODES: usize = 20_000;

/// Keywords kept in strict schemas (after the rewrites above).
const KEPT: &[&str] = &[
    "type",
    "title",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "anyOf",
    "format",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "additionalProperties",
];

/// Keywords that belong to one instance type (distributed when a type
/// array becomes an `anyOf`).
fn type_of_keyword(key: &str) -> Option<&'static str> {
    match key {
        "properties" | "required" | "additionalProperties" => Some("object"),
        "items" | "minItems" | "maxItems" => Some("array"),
        "minLength" | "maxLength" | "pattern" | "format" => Some("string"),
        "minimum" | "maximum" => Some("number"),
        _ => None,
    }
}

struct Simplifier<'a> {
    defs: Option<&'a Map<String, Value>>,
    /// `$defs` names being expanded on the current branch.
    branch: Vec<&'a str>,
    nodes: usize,
}

/// The strict-profile version of a converted tool input schema.
pub fn strict_input_schema(schema: &Value) -> Value {
    let mut s = Simplifier {
        defs: schema.get("$defs").and_then(Value::as_object),
        branch: Vec::new(),
        nodes: 0,
    };
    let mut out = s.node(schema, 0);
    if let Value::Object(map) = &mut out {
        map.shift_remove("$defs");
        map.insert("type".into(), json!("object"));
    }
    out
}

impl<'a> Simplifier<'a> {
    fn node(&mut self, schema: &'a Value, depth: usize) -> Value {
        self.nodes += 1;
        let Value::Object(map) = schema else {
            // Boolean schemas: `true` accepts anything, `false` nothing we can say.
            return json!({});
        };
        if depth > MAX_DEPTH {
            return placeholder(map, "nesting limit");
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, depth);
        }
        let mut out = Map::new();
        for (key, value) in map {
            match key.as_str() {
                "properties" => {
                    let mut props = Map::new();
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        props.insert(name.clone(), self.node(sub, depth + 1));
                    }
                    out.insert(key.clone(), Value::Object(props));
                }
                "items" => {
                    out.insert(key.clone(), self.node(value, depth + 1));
                }
                "additionalProperties" if value == &Value::Bool(false) => {
                    out.insert(key.clone(), Value::Bool(false));
                }
                "additionalProperties" => {}
                "anyOf" | "oneOf" | "allOf" => {
                    let members: Vec<Value> = value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|m| self.node(m, depth + 1))
                        .collect();
                    let target = if key == "allOf" { "allOf" } else { "anyOf" };
                    if target == "anyOf" && out.contains_key("anyOf") {
                        continue;
                    }
                    out.insert(target.into(), Value::Array(members));
                }
                "const" => {
                    out.insert("enum".into(), json!([value]));
                }
                "$defs" => {}
                k if KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
        finish(out)
    }

    fn reference(&mut self, map: &'a Map<String, Value>, reference: &Value, depth: usize) -> Value {
        let name = reference
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .unwrap_or("");
        let target = self.defs.and_then(|d| d.get_key_value(name));
        let Some((name, target)) = target else {
            return placeholder(map, "unresolvable reference");
        };
        let open = self.branch.iter().filter(|n| **n == name.as_str()).count();
        if open >= MAX_UNROLL || self.nodes > MAX_NODES {
            let mut p = match target {
                Value::Object(t) => placeholder(t, "recursive; deeper levels are not described"),
                _ => json!({}),
            };
            overlay_annotations(&mut p, map);
            return p;
        }
        self.branch.push(name);
        let mut out = self.node(target, depth + 1);
        self.branch.pop();
        overlay_annotations(&mut out, map);
        out
    }
}

/// `description`/`title` written next to a `$ref` win over the target's.
fn overlay_annotations(out: &mut Value, map: &Map<String, Value>) {
    if let Value::Object(o) = out {
        for key in ["title", "description"] {
            if let Some(v @ Value::String(_)) = map.get(key) {
                o.insert(key.into(), v.clone());
            }
        }
    }
}

/// A stand-in for a part not described: its type when that is one word.
fn placeholder(map: &Map<String, Value>, why: &str) -> Value {
    let mut out = Map::new();
    if let Some(Value::String(t)) = map.get("type")
        && t != "null"
    {
        out.insert("type".into(), json!(t));
    }
    let base = map
        .get("description")
        .and_then(Value::as_str)
        .map(|d| format!("{} ", d.trim_end()))
        .unwrap_or_default();
    out.insert("description".into(), json!(format!("{base}({why})")));
    Value::Object(out)
}

/// Post-processing of one simplified node (children already simplified).
fn finish(mut out: Map<String, Value>) -> Value {
    if let Some(Value::Array(members)) = out.shift_remove("allOf") {
        for member in members {
            merge_into(&mut out, member);
        }
    }
    drop_null(&mut out);
    if let Some(Value::Array(members)) = out.get_mut("anyOf") {
        members.retain(|m| m != &json!({"type": "null"}));
        match members.len() {
            0 => {
                out.shift_remove("anyOf");
            }
            1 => {
                if let Some(Value::Array(mut one)) = out.shift_remove("anyOf")
                    && let Some(Value::Object(member)) = one.pop()
                {
                    let outer = std::mem::take(&mut out);
                    out = member;
                    for (k, v) in outer {
                        out.insert(k, v);
                    }
                }
            }
            _ => {}
        }
    }
    split_type_array(&mut out);
    fix_format(&mut out);
    if let (Some(Value::Array(required)), Some(Value::Object(props))) =
        (out.get("required"), out.get("properties"))
    {
        let kept: Vec<Value> = required
            .iter()
            .filter(|r| r.as_str().is_some_and(|r| props.contains_key(r)))
            .cloned()
            .collect();
        if kept.is_empty() {
            out.shift_remove("required");
        } else {
            out.insert("required".into(), Value::Array(kept));
        }
    }
    Value::Object(out)
}

/// Merges an `allOf` member into its parent: properties and `required`
/// are united, other keywords fill gaps (the parent's win).
fn merge_into(out: &mut Map<String, Value>, member: Value) {
    let Value::Object(member) = member else {
        return;
    };
    for (key, value) in member {
        match (key.as_str(), out.get_mut(&key), value) {
            ("properties", Some(Value::Object(props)), Value::Object(more)) => {
                for (name, schema) in more {
                    props.entry(name).or_insert(schema);
                }
            }
            ("required", Some(Value::Array(req)), Value::Array(more)) => {
                for name in more {
                    if !req.contains(&name) {
                        req.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                out.insert(key, value);
            }
        }
    }
}

/// Removes `null` from `type` arrays and `enum`s.
fn drop_null(out: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = out.get_mut("type") {
        types.retain(|t| t != "null");
        match types.len() {
            0 => {
                out.shift_remove("type");
            }
            1 => {
                let t = types.pop().unwrap_or(Value::Null);
                out.insert("type".into(), t);
            }
            _ => {}
        }
    }
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        values.retain(|v| !v.is_null());
        if values.is_empty() {
            out.shift_remove("enum");
        }
    }
}

/// `type: [a, b]` → `anyOf: [{type: a, …a's keywords}, {type: b, …}]`.
fn split_type_array(out: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = out.get("type") else {
        return;
    };
    let types: Vec<String> = types
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    out.shift_remove("type");
    let mut branches: Vec<Map<String, Value>> = types
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("type".into(), json!(t));
            m
        })
        .collect();
    let keys: Vec<String> = out.keys().cloned().collect();
    for key in keys {
        let Some(owner) = type_of_keyword(&key) else {
            continue;
        };
        let Some(value) = out.shift_remove(&key) else {
            continue;
        };
        for (t, branch) in types.iter().zip(branches.iter_mut()) {
            if t == owner || (owner == "number" && t == "integer") {
                branch.insert(key.clone(), value.clone());
            }
        }
    }
    let branches: Vec<Value> = branches
        .into_iter()
        .map(|mut b| {
            fix_format(&mut b);
            Value::Object(b)
        })
        .collect();
    if !out.contains_key("anyOf") {
        out.insert("anyOf".into(), Value::Array(branches));
    }
}

/// Keeps only the formats Gemini accepts; others move to the description.
fn fix_format(out: &mut Map<String, Value>) {
    let Some(format) = out
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        out.shift_remove("format");
        return;
    };
    let ty = out.get("type").and_then(Value::as_str).unwrap_or("");
    let allowed = matches!(
        (ty, format.as_str()),
        ("string", "date-time") | ("integer", "int32" | "int64") | ("number", "float" | "double")
    );
    if allowed {
        return;
    }
    out.shift_remove("format");
    let note = format!("(format: {format})");
    let description = match out.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => format!("{} {note}", d.trim_end()),
        _ => note,
    };
    out.insert("description".into(), json!(description));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinators_nulls_and_formats() {
        let input = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"], "format": "uuid", "description": "id"},
                "b": {"oneOf": [{"type": "string"}, {"type": "integer", "format": "int64"}]},
                "c": {"description": "maybe", "anyOf": [{"type": "object", "properties": {"x": {"type": "string"}}}, {"type": "null"}]},
                "d": {"allOf": [{"type": "object", "properties": {"x": {}}, "required": ["x"]}, {"properties": {"y": {}}, "required": ["y", "zz"]}]},
                "e": {"type": ["string", "array"], "items": {"type": "string"}, "maxLength": 3},
                "f": {"const": "v", "default": "v", "not": {"type": "null"}},
                "g": {"type": "object", "additionalProperties": {"type": "string"}},
                "h": {"type": "string", "enum": ["a", null]}
            },
            "required": ["a"],
            "additionalProperties": false
        });
        let out = strict_input_schema(&input);
        let p = &out["properties"];
        assert_eq!(
            p["a"],
            json!({"type": "string", "description": "id (format: uuid)"})
        );
        assert_eq!(
            p["b"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer", "format": "int64"}]})
        );
        assert_eq!(
            p["c"],
            json!({"type": "object", "properties": {"x": {"type": "string"}}, "description": "maybe"})
        );
        assert_eq!(
            p["d"],
            json!({"type": "object", "properties": {"x": {}, "y": {}}, "required": ["x", "y"]})
        );
        assert_eq!(
            p["e"],
            json!({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "array", "items": {"type": "string"}}]})
        );
        assert_eq!(p["f"], json!({"enum": ["v"]}));
        assert_eq!(p["g"], json!({"type": "object"}));
        assert_eq!(p["h"], json!({"type": "string", "enum": ["a"]}));
        assert_eq!(out["additionalProperties"], json!(false));
        let text = serde_json::to_string(&out).unwrap();
        for keyword in ["oneOf", "allOf", "$ref", "\"null\""] {
            assert!(!text.contains(keyword), "{keyword} in {text}");
        }
    }

    #[test]
    fn recursion_is_unrolled_then_cut() {
        let input = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node", "description": "root"}, "bad": {"$ref": "#/$defs/Nope"}},
            "$defs": {"Node": {"type": "object", "description": "a node", "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}}
        });
        let out = strict_input_schema(&input);
        assert!(out.get("$defs").is_none());
        let tree = &out["properties"]["tree"];
        assert_eq!(tree["description"], "root");
        let level2 = &tree["properties"]["kids"]["items"];
        assert_eq!(level2["type"], "object");
        let cut = &level2["properties"]["kids"]["items"];
        assert_eq!(
            cut,
            &json!({"type": "object", "description": "a node (recursive; deeper levels are not described)"})
        );
        assert_eq!(
            out["properties"]["bad"],
            json!({"description": "(unresolvable reference)"})
        );
        assert!(!serde_json::to_string(&out).unwrap().contains("$ref"));
    }

    #[test]
    fn wide_recursive_graphs_stay_bounded() {
        let mut defs = Map::new();
        for i in 0..12 {
            let mut props = Map::new();
            for j in 0..12 {
                props.insert(format!("p{j}"), json!({"$ref": format!("#/$defs/D{j}")}));
            }
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": props}),
            );
        }
        let input =
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs});
        let out = strict_input_schema(&input);
        let size = serde_json::to_string(&out).unwrap().len();
        assert!(size < 20_000_000, "{size}");
    }
}
