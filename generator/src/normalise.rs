//! OpenAPI 3.1 → 3.0 model, in place, so the rest of the pipeline sees one
//! dialect.
//!
//! The walk is iterative (an explicit stack), so arbitrarily deep input
//! cannot overflow the call stack. Only schema positions are rewritten;
//! literal data (`example`, `default`, `enum`, `x-*`) is left untouched.

use serde_json::{Map, Value, json};

use crate::walk::{Ctx, child_ctx};

/// Keys that may sit next to a `$ref` without changing what it validates.
const REF_ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "summary",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "nullable",
    "example",
    "examples",
    "$comment",
];

/// Rewrites a 3.1 document into the 3.0 model:
/// - `type: [T, "null"]` → `type: T` + `nullable: true`; several non-null
///   types → `anyOf` of `{type: T}` (+ `nullable`); `type: "null"` →
///   `enum: [null]` + `nullable`;
/// - `const` → a single-value `enum`; schema `examples` → `example` (first);
/// - numeric `exclusiveMinimum`/`exclusiveMaximum` → `minimum`/`maximum`
///   plus the 3.0 boolean flags;
/// - `$ref` with constraining siblings → `allOf: [{$ref}, {siblings}]`
///   (annotations such as `description` stay next to the `allOf`);
/// - `contentEncoding: base64` → `format: byte`, `contentMediaType:
///   application/octet-stream` → `format: binary`;
/// - boolean schemas → `{}` / `{"not": {}}` (except `additionalProperties`);
/// - `openapi` becomes `"3.0.3"`; `webhooks` and `jsonSchemaDialect` are
///   dropped; a missing `paths` becomes `{}`.
pub fn to_openapi_30(root: &mut Value) {
    if let Some(map) = root.as_object_mut() {
        map.insert("openapi".into(), Value::String("3.0.3".into()));
        map.shift_remove("webhooks");
        map.shift_remove("jsonSchemaDialect");
        if !map.contains_key("paths") {
            map.insert("paths".into(), json!({}));
        }
    }
    // (context, node, whether a boolean here is kept as is)
    let mut stack: Vec<(Ctx, &mut Value, bool)> = vec![(Ctx::Root, root, false)];
    while let Some((ctx, node, keep_bool)) = stack.pop() {
        match node {
            Value::Bool(b) if ctx == Ctx::Schema && !keep_bool => {
                *node = if *b { json!({}) } else { json!({"not": {}}) };
            }
            Value::Object(map) => {
                if ctx == Ctx::Schema {
                    normalise_schema(map);
                }
                for (key, child) in map.iter_mut() {
                    let c = child_ctx(ctx, Some(key));
                    if c != Ctx::Data {
                        let keep = ctx == Ctx::Schema
                            && matches!(
                                key.as_str(),
                                "additionalProperties"
                                    | "unevaluatedProperties"
                                    | "unevaluatedItems"
                            );
                        stack.push((c, child, keep));
                    }
                }
            }
            Value::Array(items) => {
                let c = child_ctx(ctx, None);
                if c != Ctx::Data {
                    for child in items.iter_mut() {
                        stack.push((c, child, false));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Rewrites one schema object's own keywords (not its subschemas).
fn normalise_schema(map: &mut Map<String, Value>) {
    split_ref_siblings(map);
    normalise_type(map);
    if let Some(c) = map.shift_remove("const") {
        if c.is_null() {
            map.insert("nullable".into(), Value::Bool(true));
        }
        map.insert("enum".into(), Value::Array(vec![c]));
    }
    if let Some(Value::Array(mut examples)) = map.shift_remove("examples")
        && !map.contains_key("example")
        && !examples.is_empty()
    {
        map.insert("example".into(), examples.swap_remove(0));
    }
    exclusive_bound(map, "exclusiveMinimum", "minimum", |bound, exclusive| {
        bound > exclusive
    });
    exclusive_bound(map, "exclusiveMaximum", "maximum", |bound, exclusive| {
        bound < exclusive
    });
    content_to_format(map);
}

/// `{$ref, constraints…}` → `{annotations…, allOf: [{$ref}, {constraints…}]}`.
fn split_ref_siblings(map: &mut Map<String, Value>) {
    if !map.contains_key("$ref") || map.len() == 1 {
        return;
    }
    let has_constraints = map
        .keys()
        .any(|k| k != "$ref" && !REF_ANNOTATIONS.contains(&k.as_str()) && !k.starts_with("x-"));
    if !has_constraints {
        return;
    }
    let old = std::mem::take(map);
    let mut reference = Map::new();
    let mut constraints = Map::new();
    for (k, v) in old {
        if k == "$ref" {
            reference.insert(k, v);
        } else if REF_ANNOTATIONS.contains(&k.as_str()) || k.starts_with("x-") {
            map.insert(k, v);
        } else {
            constraints.insert(k, v);
        }
    }
    map.insert(
        "allOf".into(),
        Value::Array(vec![Value::Object(reference), Value::Object(constraints)]),
    );
}

fn normalise_type(map: &mut Map<String, Value>) {
    let types: Vec<String> = match map.get("type") {
        Some(Value::String(t)) if t == "null" => vec![t.clone()],
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            let mut out: Vec<String> = Vec::new();
            for t in items.iter().filter_map(Value::as_str) {
                if !out.iter().any(|o| o == t) {
                    out.push(t.to_string());
                }
            }
            out
        }
        _ => return,
    };
    let nullable = types.iter().any(|t| t == "null");
    let rest: Vec<String> = types.into_iter().filter(|t| t != "null").collect();
    match rest.as_slice() {
        [] => {
            map.shift_remove("type");
            if !map.contains_key("enum") {
                map.insert("enum".into(), json!([null]));
            }
        }
        [one] => {
            map.insert("type".into(), Value::String(one.clone()));
        }
        many => {
            map.shift_remove("type");
            let alternatives: Vec<Value> = many.iter().map(|t| json!({ "type": t })).collect();
            if map.contains_key("anyOf") {
                let all_of = map.entry("allOf").or_insert_with(|| json!([]));
                if let Some(list) = all_of.as_array_mut() {
                    list.push(json!({ "anyOf": alternatives }));
                }
            } else {
                map.insert("anyOf".into(), Value::Array(alternatives));
            }
        }
    }
    if nullable {
        map.insert("nullable".into(), Value::Bool(true));
    }
}

/// 3.1 numeric `exclusiveMinimum: n` → `minimum: n, exclusiveMinimum: true`
/// (or dropped when an inclusive bound is already stricter).
fn exclusive_bound(
    map: &mut Map<String, Value>,
    exclusive_key: &str,
    bound_key: &str,
    inclusive_is_stricter: fn(f64, f64) -> bool,
) {
    let Some(exclusive) = map.get(exclusive_key).and_then(Value::as_f64) else {
        return;
    };
    let Some(value) = map.get(exclusive_key).cloned() else {
        return;
    };
    let bound = map.get(bound_key).and_then(Value::as_f64);
    if bound.is_some_and(|b| inclusive_is_stricter(b, exclusive)) {
        map.shift_remove(exclusive_key);
    } else {
        map.insert(bound_key.into(), value);
        map.insert(exclusive_key.into(), Value::Bool(true));
    }
}

fn content_to_format(map: &mut Map<String, Value>) {
    let encoding = map.get("contentEncoding").and_then(Value::as_str);
    if matches!(encoding, Some("base64" | "base64url")) {
        map.shift_remove("contentEncoding");
        if !map.contains_key("format") {
            map.insert("format".into(), json!("byte"));
        }
    }
    let media = map.get("contentMediaType").and_then(Value::as_str);
    if media == Some("application/octet-stream") {
        map.shift_remove("contentMediaType");
        if !map.contains_key("format") {
            map.insert("format".into(), json!("binary"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm_schema(schema: Value) -> Value {
        let mut root = json!({"openapi": "3.1.0", "components": {"schemas": {"S": schema}}});
        to_openapi_30(&mut root);
        root["components"]["schemas"]["S"].take()
    }

    #[test]
    fn root_fields() {
        let mut root = json!({"openapi": "3.1.0", "webhooks": {"a": {}}, "jsonSchemaDialect": "x", "x-keep": 1});
        to_openapi_30(&mut root);
        assert_eq!(root, json!({"openapi": "3.0.3", "x-keep": 1, "paths": {}}));
    }

    #[test]
    fn type_arrays() {
        assert_eq!(
            norm_schema(json!({"type": ["string", "null"], "maxLength": 3})),
            json!({"type": "string", "maxLength": 3, "nullable": true})
        );
        assert_eq!(
            norm_schema(json!({"type": ["integer"]})),
            json!({"type": "integer"})
        );
        assert_eq!(
            norm_schema(json!({"type": ["string", "integer", "null"]})),
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true})
        );
        assert_eq!(
            norm_schema(json!({"type": ["string", "integer"], "anyOf": [{"minLength": 1}]})),
            json!({"anyOf": [{"minLength": 1}], "allOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}]})
        );
        assert_eq!(
            norm_schema(json!({"type": "null"})),
            json!({"enum": [null], "nullable": true})
        );
    }

    #[test]
    fn const_examples_and_bounds() {
        assert_eq!(
            norm_schema(
                json!({"const": "a", "examples": ["x", "y"], "exclusiveMinimum": 0, "exclusiveMaximum": 10, "maximum": 5})
            ),
            json!({"enum": ["a"], "example": "x", "minimum": 0, "exclusiveMinimum": true, "maximum": 5})
        );
        assert_eq!(
            norm_schema(json!({"const": null})),
            json!({"nullable": true, "enum": [null]})
        );
        assert_eq!(
            norm_schema(json!({"example": 1, "examples": [2]})),
            json!({"example": 1})
        );
        assert_eq!(
            norm_schema(json!({"minimum": 1, "exclusiveMinimum": 3})),
            json!({"minimum": 3, "exclusiveMinimum": true})
        );
    }

    #[test]
    fn ref_siblings_and_content() {
        assert_eq!(
            norm_schema(json!({"$ref": "#/components/schemas/A", "description": "d"})),
            json!({"$ref": "#/components/schemas/A", "description": "d"})
        );
        assert_eq!(
            norm_schema(
                json!({"description": "d", "$ref": "#/components/schemas/A", "properties": {"x": {"type": ["integer", "null"]}}})
            ),
            json!({"description": "d", "allOf": [{"$ref": "#/components/schemas/A"}, {"properties": {"x": {"type": "integer", "nullable": true}}}]})
        );
        assert_eq!(
            norm_schema(
                json!({"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"})
            ),
            json!({"type": "string", "format": "byte", "contentMediaType": "image/png"})
        );
        assert_eq!(
            norm_schema(json!({"type": "string", "contentMediaType": "application/octet-stream"})),
            json!({"type": "string", "format": "binary"})
        );
    }

    #[test]
    fn walks_nested_positions_but_not_data() {
        let mut root = json!({
            "openapi": "3.1.0",
            "paths": {"/x": {"post": {
                "parameters": [{"name": "p", "in": "query", "schema": {"type": ["integer", "null"]}}],
                "requestBody": {"content": {"application/json": {
                    "schema": {"type": "object", "properties": {
                        "a": {"items": {"const": 1}},
                        "b": true,
                        "c": {"additionalProperties": false, "items": false}
                    }},
                    "example": {"type": ["string", "null"]},
                    "examples": {"one": {"value": {"const": 1}}}
                }}}
            }}},
            "components": {"schemas": {"S": {
                "default": {"const": 1},
                "x-ext": {"type": ["string", "null"]},
                "enum": [{"const": 1}],
                "allOf": [{"oneOf": [{"const": 2}]}]
            }}}
        });
        to_openapi_30(&mut root);
        let op = &root["paths"]["/x"]["post"];
        assert_eq!(
            op["parameters"][0]["schema"],
            json!({"type": "integer", "nullable": true})
        );
        let media = &op["requestBody"]["content"]["application/json"];
        assert_eq!(
            media["schema"]["properties"]["a"]["items"],
            json!({"enum": [1]})
        );
        assert_eq!(media["schema"]["properties"]["b"], json!({}));
        assert_eq!(
            media["schema"]["properties"]["c"],
            json!({"additionalProperties": false, "items": {"not": {}}})
        );
        assert_eq!(media["example"], json!({"type": ["string", "null"]}));
        assert_eq!(media["examples"]["one"]["value"], json!({"const": 1}));
        let s = &root["components"]["schemas"]["S"];
        assert_eq!(s["default"], json!({"const": 1}));
        assert_eq!(s["x-ext"], json!({"type": ["string", "null"]}));
        assert_eq!(s["enum"], json!([{"const": 1}]));
        assert_eq!(s["allOf"][0]["oneOf"][0], json!({"enum": [2]}));
    }

    #[test]
    fn ten_thousand_deep_is_walked_iteratively() {
        let schema = crate::schema::nest_for_tests(json!({"type": ["string", "null"]}), 10_000);
        let mut root = json!({"openapi": "3.1.0", "components": {"schemas": {}}});
        root["components"]["schemas"]["Deep"] = schema;
        to_openapi_30(&mut root);
        let mut node = &root["components"]["schemas"]["Deep"];
        while let Some(next) = node.get("properties").and_then(|p| p.get("a")) {
            node = next;
        }
        assert_eq!(node, &json!({"type": "string", "nullable": true}));
        crate::schema::drop_deep(root);
    }
}
