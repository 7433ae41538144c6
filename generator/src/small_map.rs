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
}
