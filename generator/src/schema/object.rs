//! Reading a converted schema as one object: the properties a tool input
//! can flatten.

use serde_json::{Map, Value};

/// Deepest `allOf` nesting [`object_shape`] looks through.
const MAX_ALLOF_DEPTH: usize = 64;

/// The object a converted schema describes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectShape {
    /// Properties in order (same-named ones from several `allOf` members are
    /// combined as `{"allOf": [first, second, …]}`).
    pub properties: Map<String, Value>,
    /// Required property names, in order of first mention, without repeats.
    pub required: Vec<String>,
    /// `additionalProperties`: `false` if any part forbids extra
    /// properties, else the last one given.
    pub additional_properties: Option<Value>,
}

/// The object shape of a CONVERTED schema: a plain `type: object` schema
/// (or one with `properties` and no `type`; `type: ["object", "null"]` is
/// read as an object), or an `allOf` whose members are all such objects,
/// merged. `None` for `oneOf`/`anyOf`/`not`, arrays, primitives, `$ref`s to
/// `$defs` and anything else.
pub fn object_shape(converted: &Value) -> Option<ObjectShape> {
    let mut shape = ObjectShape::default();
    merge_into(&mut shape, converted, 0)?;
    Some(shape)
}

fn merge_into(shape: &mut ObjectShape, schema: &Value, depth: usize) -> Option<()> {
    if depth > MAX_ALLOF_DEPTH {
        return None;
    }
    let map = schema.as_object()?;
    if ["$ref", "anyOf", "oneOf", "not", "const", "enum"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return None;
    }
    let is_object_type = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "object")
                && types.iter().all(|t| t == "object" || t == "null")
        }
        Some(_) => false,
        None => map.contains_key("properties") || map.contains_key("allOf"),
    };
    if !is_object_type {
        return None;
    }
    if let Some(members) = map.get("allOf") {
        for member in members.as_array()? {
            merge_into(shape, member, depth + 1)?;
        }
    }
    if let Some(properties) = map.get("properties") {
        for (name, schema) in properties.as_object()? {
            add_property(&mut shape.properties, name, schema);
        }
    }
    if let Some(required) = map.get("required") {
        for name in required.as_array()? {
            let name = name.as_str()?;
            if !shape.required.iter().any(|r| r == name) {
                shape.required.push(name.to_string());
            }
        }
    }
    if let Some(additional) = map.get("additionalProperties")
        && shape.additional_properties != Some(Value::Bool(false))
    {
        shape.additional_properties = Some(additional.clone());
    }
    Some(())
}

fn add_property(properties: &mut Map<String, Value>, name: &str, schema: &Value) {
    match properties.get_mut(name) {
        None => {
            properties.insert(name.to_string(), schema.clone());
        }
        Some(existing) if existing == schema => {}
        Some(existing) => {
            let combined = existing.get("allOf").is_some()
                && existing.as_object().is_some_and(|m| m.len() == 1);
            if combined {
                if let Some(Value::Array(list)) = existing.get_mut("allOf") {
                    list.push(schema.clone());
                }
            } else {
                let first = existing.take();
                // By hand: `json!` would re-serialise both (deep copies).
                let mut all = Map::new();
                all.insert("allOf".into(), Value::Array(vec![first, schema.clone()]));
                *existing = Value::Object(all);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_objects() {
        let s = object_shape(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a"],
            "additionalProperties": false
        }))
        .unwrap();
        assert_eq!(s.properties.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(s.required, ["a"]);
        assert_eq!(s.additional_properties, Some(json!(false)));
        let s = object_shape(&json!({"properties": {"x": {}}})).unwrap();
        assert_eq!(s.properties.len(), 1);
        assert_eq!(s.additional_properties, None);
        let s = object_shape(&json!({"type": "object"})).unwrap();
        assert!(s.properties.is_empty());
        assert!(object_shape(&json!({"type": ["object", "null"], "properties": {}})).is_some());
    }

    #[test]
    fn non_objects() {
        for schema in [
            json!({"type": "string"}),
            json!({"type": "array", "items": {}}),
            json!({"oneOf": [{"type": "object"}]}),
            json!({"anyOf": [{"type": "object"}, {"type": "null"}]}),
            json!({"$ref": "#/$defs/Node"}),
            json!({}),
            json!(true),
            json!({"type": ["object", "string"]}),
            json!({"allOf": [{"type": "object"}, {"type": "string"}]}),
            json!({"allOf": [{"type": "object"}, {"$ref": "#/$defs/X"}]}),
            json!({"allOf": "nonsense"}),
        ] {
            assert_eq!(object_shape(&schema), None, "{schema}");
        }
    }

    #[test]
    fn all_of_merges() {
        let s = object_shape(&json!({
            "allOf": [
                {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id"]},
                {"allOf": [{"properties": {"n": {"minimum": 1}, "m": {}}, "required": ["n", "id"]}]},
                {"type": "object", "properties": {"n": {"maximum": 9}}, "additionalProperties": false},
                {"type": "object", "additionalProperties": true}
            ],
            "properties": {"tail": {}},
            "description": "outer"
        }))
        .unwrap();
        assert_eq!(
            s.properties.keys().collect::<Vec<_>>(),
            ["id", "n", "m", "tail"]
        );
        assert_eq!(
            s.properties["n"],
            json!({"allOf": [{"type": "integer"}, {"minimum": 1}, {"maximum": 9}]})
        );
        assert_eq!(s.required, ["id", "n"]);
        assert_eq!(s.additional_properties, Some(json!(false)));
    }

    #[test]
    fn deep_all_of_is_bounded() {
        let mut schema = json!({"type": "object", "properties": {"a": {}}});
        for _ in 0..100 {
            schema = json!({"allOf": [schema]});
        }
        assert_eq!(object_shape(&schema), None);
    }
}
