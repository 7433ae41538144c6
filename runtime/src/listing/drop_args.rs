//! An input schema's text without some of its arguments (those a scoped URL
//! fixes), every other byte copied as it was: a narrowed listing writes the
//! flagship's account tools without parsing each schema into a value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// An object's members in text order, their values unparsed.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// The members of the object `text`, or `None` when it is not one or
/// names a member twice (a value keeps the last, in the first's place:
/// the value path below does that).
fn members(text: &str) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    let Members(members) = serde_json::from_str(text).ok()?;
    let mut names: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
    names.sort_unstable();
    names.windows(2).all(|w| w[0] != w[1]).then_some(members)
}

/// Appends `name` as a JSON string, as serde_json writes it.
fn push_key(out: &mut String, name: &str) {
    out.push_str(&serde_json::to_string(name).unwrap_or_default());
}

/// Appends input schema `schema` without the arguments `dropped` names:
/// gone from `properties` and `required`, every other member in its place.
/// The same as parsing the schema, removing them (keeping the order of the
/// rest) and writing it compact, when `schema` is compact as the catalogue
/// writes it (`listing::tests` compares the two).
pub fn push_without(out: &mut String, schema: &str, dropped: &[&str]) {
    if dropped.is_empty() || !push_raw_without(out, schema, dropped) {
        push_value_without(out, schema, dropped);
    }
}

/// [`push_without`] on the text; `false` (nothing appended) when `schema`
/// is not an object with distinct members, or its `properties` are not.
fn push_raw_without(out: &mut String, schema: &str, dropped: &[&str]) -> bool {
    let Some(top) = members(schema) else {
        return false;
    };
    let start = out.len();
    out.push('{');
    for (i, (name, value)) in top.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_key(out, name);
        out.push(':');
        let text = value.get();
        match name.as_ref() {
            "properties" if text.starts_with('{') => {
                let Some(props) = members(text) else {
                    out.truncate(start);
                    return false;
                };
                out.push('{');
                let kept = props.iter().filter(|(n, _)| !dropped.contains(&n.as_ref()));
                for (j, (n, v)) in kept.enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_key(out, n);
                    out.push(':');
                    out.push_str(v.get());
                }
                out.push('}');
            }
            "required" if text.starts_with('[') => {
                let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                    out.truncate(start);
                    return false;
                };
                out.push('[');
                let kept = items.iter().filter(|v| {
                    serde_json::from_str::<Cow<'_, str>>(v.get())
                        .map_or(true, |s| !dropped.contains(&s.as_ref()))
                });
                for (j, v) in kept.enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    out.push_str(v.get());
                }
                out.push(']');
            }
            _ => out.push_str(text),
        }
    }
    out.push('}');
    true
}

/// [`push_without`] through a parsed value (any text: a schema that is not
/// an object is appended as it is).
fn push_value_without(out: &mut String, schema: &str, dropped: &[&str]) {
    let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(schema) else {
        out.push_str(schema);
        return;
    };
    remove_args(&mut object, dropped);
    match serde_json::to_string(&object) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str(schema),
    }
}

/// Removes the arguments `dropped` names from input schema `schema`'s
/// `properties` and `required`, the others keeping their order.
pub fn remove_args(schema: &mut serde_json::Map<String, Value>, dropped: &[&str]) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for arg in dropped {
            props.shift_remove(*arg);
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !dropped.contains(&r)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both(schema: &str, dropped: &[&str]) -> (String, String) {
        let mut raw = String::new();
        assert!(push_raw_without(&mut raw, schema, dropped), "{schema}");
        let mut value = String::new();
        push_value_without(&mut value, schema, dropped);
        (raw, value)
    }

    #[test]
    fn the_text_path_writes_what_the_value_path_writes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "b": {"type": "string", "description": "x \"q\" \u{2028} é"},
                "account_id": {"type": "string"},
                "a": {"type": "object", "properties": {"account_id": {"type": "integer"}}},
                "z\"q": {"enum": [1, 2.5, -3e2]},
            },
            "required": ["account_id", "b", "z\"q", 7],
            "$defs": {"d": {"properties": {"account_id": {}}, "required": ["account_id"]}},
            "additionalProperties": false,
        });
        let text = serde_json::to_string(&schema).unwrap();
        for dropped in [
            &["account_id"][..],
            &["account_id", "z\"q"],
            &["nope"],
            &["b", "a"],
        ] {
            let (raw, value) = both(&text, dropped);
            assert_eq!(raw, value, "{dropped:?}");
            let parsed: Value = serde_json::from_str(&raw).unwrap();
            for d in dropped {
                assert!(parsed["properties"].get(*d).is_none());
                assert!(!parsed["required"].as_array().unwrap().contains(&json!(d)));
            }
            // Only the root's arguments: nested and `$defs` members stay.
            assert_eq!(parsed["$defs"], schema["$defs"]);
            if !dropped.contains(&"a") {
                assert_eq!(parsed["properties"]["a"], schema["properties"]["a"]);
            }
        }
        // The rest keep their order.
        let (raw, _) = both(&text, &["account_id"]);
        let parsed: Value = serde_json::from_str(&raw).unwrap();
        let names: Vec<&String> = parsed["properties"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["b", "a", "z\"q"]);
    }

    #[test]
    fn odd_schemas_fall_back_to_the_value_path_or_stay_as_they_are() {
        let cases = [
            // A member named twice: a value keeps the last.
            (
                r#"{"properties":{"a":1,"a":2,"b":3}}"#,
                r#"{"properties":{"a":2}}"#,
            ),
            (
                r#"{"properties":{"b":1},"properties":{"a":1}}"#,
                r#"{"properties":{"a":1}}"#,
            ),
            // Not an object: as it is.
            ("[1]", "[1]"),
            ("not json", "not json"),
            // `properties` or `required` of another shape are left alone.
            (
                r#"{"properties":true,"required":"b"}"#,
                r#"{"properties":true,"required":"b"}"#,
            ),
        ];
        for (schema, want) in cases {
            let mut out = String::from(">");
            push_without(&mut out, schema, &["b"]);
            assert_eq!(out, format!(">{want}"), "{schema}");
        }
        let mut out = String::new();
        push_without(&mut out, r#"{"b":1}"#, &[]);
        assert_eq!(out, r#"{"b":1}"#);
    }
}
