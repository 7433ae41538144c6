//! Keyword lookups in small JSON objects without hashing.
//!
//! `serde_json::Map` hashes every looked-up key with SipHash, which costs
//! more than comparing the few keys a schema object has; the walks that
//! ask every node for `$ref`, `nullable` or `$defs` spend a tenth of a
//! generation doing it. These answer exactly what `Map::get` answers.

use serde_json::{Map, Value};

/// Objects with at most this many members are searched in order.
const LINEAR_UP_TO: usize = 12;

/// `map.get(key)`, by comparing keys when `map` is small.
pub(crate) fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= LINEAR_UP_TO {
        map.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        map.get(key)
    }
}

/// `map.contains_key(key)`, by comparing keys when `map` is small.
pub(crate) fn has(map: &Map<String, Value>, key: &str) -> bool {
    get(map, key).is_some()
}

/// `value.get(key)` for an object `value` (`None` for anything else).
pub(crate) fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object().and_then(|map| get(map, key))
}

/// `map.get_mut(key)`, by comparing keys when `map` is small.
pub(crate) fn get_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() <= LINEAR_UP_TO {
        map.iter_mut().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        map.get_mut(key)
    }
}

/// `a == b`, trying members in order first: equal subschemas of one spec
/// almost always list their keys in the same order, and walking both
/// objects side by side hashes no key (`Map`'s `==` looks each one up).
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    same_in_order(a, b) || a == b
}

/// Whether `a` and `b` are equal with every object's members in the same
/// order (so `a == b` too).
fn same_in_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_in_order(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_in_order(p, q))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every key of objects on both sides of the threshold, and absent keys,
    /// give what `Map` gives.
    #[test]
    fn lookups_agree_with_the_map() {
        for size in [0, 1, 2, LINEAR_UP_TO, LINEAR_UP_TO + 1, 40] {
            let mut map = Map::new();
            for i in 0..size {
                map.insert(format!("k{i}"), json!(i));
            }
            let mut copy = map.clone();
            for i in 0..size + 2 {
                let key = format!("k{i}");
                assert_eq!(get(&map, &key), map.get(&key), "{size} {key}");
                assert_eq!(has(&map, &key), map.contains_key(&key));
                assert_eq!(member(&Value::Object(map.clone()), &key), map.get(&key));
                let expected = map.get(&key).cloned();
                assert_eq!(get_mut(&mut copy, &key).map(|v| v.clone()), expected);
            }
            assert_eq!(get(&map, ""), None);
            assert_eq!(member(&json!([1]), "k0"), None);
        }
    }

    /// `equal` is `==`, whatever the order of the members.
    #[test]
    fn equality_agrees_with_values() {
        let a = json!({"type": "object", "properties": {"x": {"type": "string"}, "y": [1, {"z": null}]}});
        let reordered = json!({"properties": {"y": [1, {"z": null}], "x": {"type": "string"}}, "type": "object"});
        let other =
            json!({"type": "object", "properties": {"x": {"type": "string"}, "y": [1, {"z": 0}]}});
        let longer = json!({"type": "object", "properties": {"x": {"type": "string"}, "y": [1, {"z": null}]}, "n": 1});
        let values = [
            a.clone(),
            reordered,
            other,
            longer,
            json!([a.clone()]),
            json!([]),
            json!(null),
            json!(1.0),
            json!(1),
        ];
        for p in &values {
            for q in &values {
                assert_eq!(equal(p, q), p == q, "{p} {q}");
            }
        }
        assert!(equal(&values[0], &values[1]));
        assert!(!same_in_order(&values[0], &values[1]));
    }
}
