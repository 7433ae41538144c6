//! Keyword-by-keyword conversion of one OpenAPI 3.0 schema object into
//! JSON Schema 2020-12 (an explicit allowlist; everything else is dropped).

use serde_json::{Map, Number, Value, json};

use super::convert::SchemaConverter;
use super::{MAX_DATA_DEPTH, SchemaMode, nests_deeper_than};
use crate::error::{GenerateError, Result, push_pointer};
use crate::refs::{deref, invalid};
use crate::small_map;

/// JSON Schema type names (plus OpenAPI 2's `file`, read as a string).
const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "array", "object", "null",
];

/// Keywords whose value is one subschema.
const SUBSCHEMA: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords holding a non-negative integer.
const COUNTS: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];

/// Annotations moved outside a nullable `anyOf` wrapper and honoured next
/// to a `$ref`.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords that make a plain `type: [T, "null"]` insufficient for `nullable`.
const COMPOSITE: &[&str] = &["$ref", "allOf", "anyOf", "oneOf", "not", "const"];

/// Converts a schema object without `$ref`.
pub(super) fn convert_object(
    conv: &mut SchemaConverter<'_>,
    map: &Map<String, Value>,
    pointer: &str,
    depth: usize,
    keep: bool,
) -> Result<Value> {
    let file = conv.doc().file.as_str();
    let flag = |key: &str| small_map::get(map, key) == Some(&Value::Bool(true));
    let exclusive_min = flag("exclusiveMinimum");
    let exclusive_max = flag("exclusiveMaximum");
    let mut out = Map::with_capacity(map.len());
    let mut dropped: Vec<&str> = Vec::new();
    let mut is_file = false;
    for (key, value) in map {
        let at = || push_pointer(pointer, key);
        if matches!(
            key.as_str(),
            "enum" | "const" | "default" | "dependentRequired"
        ) && nests_deeper_than(value, MAX_DATA_DEPTH)
        {
            return Err(GenerateError::TooDeep {
                file: file.to_string(),
                pointer: at(),
                limit: MAX_DATA_DEPTH,
            });
        }
        match key.as_str() {
            "type" => {
                let (ty, file_type) = convert_type(value).ok_or_else(|| {
                    invalid(
                        file,
                        &at(),
                        &format!(
                            "`type` must be one of {} or a list of them",
                            TYPES.join(", ")
                        ),
                    )
                })?;
                is_file = file_type;
                out.insert(key.clone(), ty);
            }
            "properties" | "patternProperties" | "dependentSchemas" => {
                let here = at();
                let Some(entries) = value.as_object() else {
                    return Err(invalid(file, &here, "must be an object of schemas"));
                };
                let mut converted = Map::with_capacity(entries.len());
                for (name, sub) in entries {
                    let p = push_pointer(&here, name);
                    if key == "properties" && is_dropped(conv, sub, &p) {
                        dropped.push(name);
                        continue;
                    }
                    converted.insert(name.clone(), conv.convert_node(sub, &p, depth + 1, false)?);
                }
                out.insert(key.clone(), Value::Object(converted));
            }
            "required" => {
                let names = value.as_array().filter(|a| a.iter().all(Value::is_string));
                if names.is_none() {
                    return Err(invalid(
                        file,
                        &at(),
                        "`required` must be an array of strings",
                    ));
                }
                // Filled in below, once dropped properties are known.
                out.insert(key.clone(), Value::Null);
            }
            "items" if value.is_array() => {
                return Err(invalid(
                    file,
                    &at(),
                    "`items` must be a schema (tuple arrays are not OpenAPI 3.0)",
                ));
            }
            k if SUBSCHEMA.contains(&k) => {
                out.insert(
                    key.clone(),
                    conv.convert_node(value, &at(), depth + 1, false)?,
                );
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                let here = at();
                let Some(items) = value.as_array() else {
                    return Err(invalid(file, &here, "must be an array of schemas"));
                };
                if items.is_empty() {
                    continue;
                }
                let mut converted = Vec::with_capacity(items.len());
                for (i, sub) in items.iter().enumerate() {
                    let p = push_pointer(&here, &i.to_string());
                    if keep && key == "allOf" {
                        conv.keep_next_member();
                    }
                    converted.push(conv.convert_node(sub, &p, depth + 1, false)?);
                }
                out.insert(key.clone(), Value::Array(converted));
            }
            "enum" => {
                let Some(values) = value.as_array() else {
                    return Err(invalid(file, &at(), "`enum` must be an array"));
                };
                conv.count(values.len(), pointer)?;
                out.insert(key.clone(), value.clone());
            }
            "const" | "default" => {
                out.insert(key.clone(), value.clone());
            }
            "format" | "pattern" => {
                if !value.is_string() {
                    return Err(invalid(file, &at(), "must be a string"));
                }
                out.insert(key.clone(), value.clone());
            }
            "title" | "description" | "contentEncoding" | "contentMediaType"
                if value.is_string() =>
            {
                out.insert(key.clone(), value.clone());
            }
            "minimum" | "maximum" => {
                if !value.is_number() {
                    return Err(invalid(file, &at(), "must be a number"));
                }
                let exclusive = if key == "minimum" {
                    exclusive_min.then_some("exclusiveMinimum")
                } else {
                    exclusive_max.then_some("exclusiveMaximum")
                };
                out.insert(exclusive.unwrap_or(key).to_string(), value.clone());
            }
            "exclusiveMinimum" | "exclusiveMaximum" => match value {
                Value::Bool(_) => {}
                Value::Number(_) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => return Err(invalid(file, &at(), "must be a boolean or a number")),
            },
            "multipleOf" => {
                if !value.as_f64().is_some_and(|n| n > 0.0) {
                    return Err(invalid(file, &at(), "must be a number greater than 0"));
                }
                out.insert(key.clone(), value.clone());
            }
            k if COUNTS.contains(&k) => {
                let n = non_negative_integer(value)
                    .ok_or_else(|| invalid(file, &at(), "must be a non-negative integer"))?;
                out.insert(key.clone(), Value::Number(n));
            }
            "uniqueItems" | "deprecated" | "readOnly" | "writeOnly" | "nullable" => {
                if !value.is_boolean() {
                    return Err(invalid(file, &at(), "must be a boolean"));
                }
                if key != "nullable" {
                    out.insert(key.clone(), value.clone());
                }
            }
            "dependentRequired" => {
                let ok = value.as_object().is_some_and(|m| {
                    m.values()
                        .all(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
                });
                if !ok {
                    return Err(invalid(
                        file,
                        &at(),
                        "must be an object of arrays of strings",
                    ));
                }
                out.insert(key.clone(), value.clone());
            }
            // x-*, example(s), xml, discriminator, externalDocs, $defs,
            // $schema, $id, $comment and anything unknown.
            _ => {}
        }
    }
    if let Some(Value::Array(names)) = small_map::get(map, "required") {
        let kept: Vec<Value> = names
            .iter()
            .filter(|n| !n.as_str().is_some_and(|n| dropped.contains(&n)))
            .cloned()
            .collect();
        if kept.is_empty() {
            out.shift_remove("required");
        } else {
            out.insert("required".into(), Value::Array(kept));
        }
    }
    if is_file && !out.contains_key("format") {
        out.insert("format".into(), json!("binary"));
    }
    let mut out = Value::Object(out);
    if flag("nullable") {
        apply_nullable(&mut out);
    }
    Ok(out)
}

/// Validates `type` (string or array of strings); `file` becomes `string`.
/// Returns the converted value and whether `file` was seen.
fn convert_type(value: &Value) -> Option<(Value, bool)> {
    let one = |t: &str| -> Option<(&'static str, bool)> {
        if t == "file" {
            return Some(("string", true));
        }
        TYPES.iter().find(|k| **k == t).map(|k| (*k, false))
    };
    match value {
        Value::String(t) => one(t).map(|(t, f)| (json!(t), f)),
        Value::Array(items) if !items.is_empty() => {
            let mut out: Vec<Value> = Vec::new();
            let mut file = false;
            for item in items {
                let (t, f) = one(item.as_str()?)?;
                file |= f;
                if !out.iter().any(|o| o == t) {
                    out.push(json!(t));
                }
            }
            Some((Value::Array(out), file))
        }
        _ => None,
    }
}

/// An integer ≥ 0 (accepting `5.0`).
fn non_negative_integer(value: &Value) -> Option<Number> {
    if let Some(n) = value.as_u64() {
        return Some(n.into());
    }
    let f = value.as_f64()?;
    if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 {
        return Some((f as u64).into());
    }
    None
}

/// Whether a property is left out in this mode (`readOnly` in input,
/// `writeOnly` in output), looking through `$ref`s.
fn is_dropped(conv: &SchemaConverter<'_>, schema: &Value, pointer: &str) -> bool {
    let key = match conv.mode() {
        SchemaMode::Input => "readOnly",
        SchemaMode::Output => "writeOnly",
    };
    if let Some(Value::Bool(flag)) = small_map::member(schema, key) {
        return *flag;
    }
    if small_map::member(schema, "$ref").is_some()
        && let Ok((target, _)) = deref(conv.doc(), schema, pointer)
    {
        return small_map::member(target, key) == Some(&Value::Bool(true));
    }
    false
}

/// Honours the annotations and `nullable` written next to a `$ref`.
pub(super) fn apply_ref_siblings(
    conv: &mut SchemaConverter<'_>,
    map: &Map<String, Value>,
    out: &mut Value,
    pointer: &str,
) -> Result<()> {
    let annotations: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, v)| match k.as_str() {
            "title" | "description" => v.is_string(),
            "deprecated" | "readOnly" | "writeOnly" => v.is_boolean(),
            "default" => !nests_deeper_than(v, MAX_DATA_DEPTH),
            _ => false,
        })
        .collect();
    if !annotations.is_empty() {
        conv.count(annotations.len(), pointer)?;
        if let Value::Bool(b) = out {
            *out = if *b { json!({}) } else { json!({"not": {}}) };
        }
        if let Value::Object(target) = out {
            for (k, v) in annotations {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    if small_map::get(map, "nullable") == Some(&Value::Bool(true)) {
        conv.count(1, pointer)?;
        apply_nullable(out);
    }
    Ok(())
}

/// Lets a converted schema also accept `null`.
pub(super) fn apply_nullable(out: &mut Value) {
    let map = match out {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            *out = json!({"type": "null"});
            return;
        }
        Value::Object(map) => map,
        _ => return,
    };
    if COMPOSITE.iter().any(|k| small_map::has(map, k)) {
        let mut inner = std::mem::take(map);
        for key in ANNOTATIONS {
            if let Some(v) = inner.shift_remove(*key) {
                map.insert((*key).to_string(), v);
            }
        }
        // Built by hand: `json!` would re-serialise `inner` (a deep copy).
        map.insert(
            "anyOf".into(),
            Value::Array(vec![Value::Object(inner), json!({"type": "null"})]),
        );
        return;
    }
    match small_map::get_mut(map, "type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = small_map::get_mut(map, "enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
}
