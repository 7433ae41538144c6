//! Structure-aware mutation of JSON documents: a random node of the tree
//! is replaced, removed, copied, re-typed, nested deeply, given a
//! duplicate key or replaced by raw text that no `Value` can hold
//! (out-of-range numbers, lone surrogates, trailing commas…).
//!
//! Raw text is carried as a placeholder string in the tree and substituted
//! when the document is rendered ([`Doc::render`]).

use serde_json::{Map, Value};

use crate::Rng;
use crate::mutate::{NUMBERS, nesting_depth};

/// A JSON tree with raw-text splices.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// The tree; placeholders stand for `raws`.
    pub value: Value,
    raws: Vec<String>,
}

/// Raw JSON-ish text that serde_json's `Value` cannot hold.
const RAW_TOKENS: &[&str] = &[
    r#""\ud800""#,
    r#""\udc00\ud800""#,
    r#""\u12""#,
    r#""\x41""#,
    "'single'",
    "undefined",
    "NaN",
    "[1,]",
    "{\"a\":1,}",
    "/* comment */ 1",
    "\"tab\tin string\"",
    "\"nul\u{0}in string\"",
    "\"line\nbreak\"",
    "tru",
    "nul",
    "[",
    "{",
    "}",
    "\"unterminated",
];

impl Doc {
    /// A document for `value`.
    pub fn new(value: Value) -> Self {
        Doc {
            value,
            raws: Vec::new(),
        }
    }

    /// Parses `bytes` (None when they are not JSON).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok().map(Doc::new)
    }

    /// A placeholder value that renders as `text`.
    pub fn raw(&mut self, text: String) -> Value {
        let v = Value::String(format!("\u{1}raw{}\u{1}", self.raws.len()));
        self.raws.push(text);
        v
    }

    /// The document as JSON text (compact or pretty), raw splices in place.
    pub fn render(&self, pretty: bool) -> Vec<u8> {
        render_value(&self.value, &self.raws, pretty)
    }

    /// Applies one to four random tree mutations. `keys` and `strings` are
    /// the harness's dictionary (member names and string values that
    /// matter to the code under test).
    pub fn mutate(&mut self, rng: &mut Rng, keys: &[&str], strings: &[&str]) {
        for _ in 0..rng.range(1, 4) {
            self.mutate_once(rng, keys, strings);
        }
    }

    fn mutate_once(&mut self, rng: &mut Rng, keys: &[&str], strings: &[&str]) {
        let op = rng.below(12);
        // Values built before the tree is borrowed.
        let fresh = random_value(rng, 3, keys, strings);
        let raws_len = self.raws.len();
        match op {
            // replace a node with a fresh value
            0 | 1 => *pick_node(&mut self.value, rng) = fresh,
            // an edge-case scalar
            2 => {
                let v = edge_scalar(rng, strings);
                let v = match v {
                    Ok(v) => v,
                    Err(text) => self.raw(text),
                };
                *pick_node(&mut self.value, rng) = v;
            }
            // remove a member or an element
            3 => match pick_container(&mut self.value, rng) {
                Some(Value::Object(map)) if !map.is_empty() => {
                    let key = map.keys().nth(rng.below(map.len())).cloned();
                    if let Some(key) = key {
                        map.shift_remove(&key);
                    }
                }
                Some(Value::Array(items)) if !items.is_empty() => {
                    items.remove(rng.below(items.len()));
                }
                _ => {}
            },
            // add a member from the dictionary
            4 | 5 => {
                let key = dict_key(rng, keys);
                match pick_object(&mut self.value, rng) {
                    Some(map) => {
                        map.insert(key, fresh);
                    }
                    None => {
                        if let Value::Array(items) = &mut self.value {
                            items.push(fresh);
                        }
                    }
                }
            }
            // a duplicate key: `"k": old, "k": new`
            6 => {
                let raws = self.raws.clone();
                let Some(map) = pick_object(&mut self.value, rng) else {
                    return;
                };
                if map.is_empty() {
                    return;
                }
                let Some(key) = map.keys().nth(rng.below(map.len())).cloned() else {
                    return;
                };
                let old = map.get(&key).cloned().unwrap_or(Value::Null);
                let text = format!(
                    "{},{}:{}",
                    String::from_utf8_lossy(&render_value(&old, &raws, false)),
                    Value::String(key.clone()),
                    fresh
                );
                let placeholder = Value::String(format!("\u{1}raw{raws_len}\u{1}"));
                map.insert(key, placeholder);
                self.raws.push(text);
            }
            // nest a node deeply
            7 => {
                let depth = nesting_depth(rng);
                let raws = self.raws.clone();
                let node = pick_node(&mut self.value, rng);
                let inner = String::from_utf8_lossy(&render_value(node, &raws, false)).into_owned();
                let text = if rng.one_in(2) {
                    format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth))
                } else {
                    format!("{}{inner}{}", "{\"a\":".repeat(depth), "}".repeat(depth))
                };
                *node = Value::String(format!("\u{1}raw{raws_len}\u{1}"));
                self.raws.push(text);
            }
            // copy a subtree somewhere else
            8 => {
                let copy = pick_node(&mut self.value, rng).clone();
                *pick_node(&mut self.value, rng) = copy;
            }
            // re-type a node: wrap it, or turn it into its own JSON text
            9 => {
                let node = pick_node(&mut self.value, rng);
                let old = node.take();
                *node = match rng.below(3) {
                    0 => Value::Array(vec![old]),
                    1 => {
                        let mut map = Map::new();
                        map.insert(dict_key(rng, keys), old);
                        Value::Object(map)
                    }
                    _ => Value::String(old.to_string()),
                };
            }
            // raw text no Value can hold
            10 => {
                let text = (*rng.pick(RAW_TOKENS)).to_owned();
                let v = self.raw(text);
                *pick_node(&mut self.value, rng) = v;
            }
            // something large, now and then
            _ if !rng.one_in(8) => *pick_node(&mut self.value, rng) = fresh,
            _ => {
                let v = match rng.below(3) {
                    0 => Value::String("x".repeat(rng.range(1000, 100_000))),
                    1 => Value::Array(vec![Value::from(1); rng.range(1000, 20_000)]),
                    _ => {
                        let mut map = Map::new();
                        for i in 0..rng.range(100, 2000) {
                            map.insert(format!("k{i}"), Value::from(i));
                        }
                        Value::Object(map)
                    }
                };
                *pick_node(&mut self.value, rng) = v;
            }
        }
    }
}

fn render_value(value: &Value, raws: &[String], pretty: bool) -> Vec<u8> {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_default();
    if raws.is_empty() {
        return text.into_bytes();
    }
    // Later placeholders first, so `raw1` is not a prefix of `raw10`.
    let mut text = text;
    for (i, raw) in raws.iter().enumerate().rev() {
        let placeholder = format!("\"\\u0001raw{i}\\u0001\"");
        if text.contains(&placeholder) {
            text = text.replace(&placeholder, raw);
        }
    }
    text.into_bytes()
}

/// Number of nodes in `value`.
pub fn count_nodes(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// A random node of the tree (pre-order, uniformly).
pub fn pick_node<'a>(value: &'a mut Value, rng: &mut Rng) -> &'a mut Value {
    let n = count_nodes(value);
    nth_node(value, rng.below(n))
}

fn nth_node(value: &mut Value, mut n: usize) -> &mut Value {
    if n == 0 {
        return value;
    }
    n -= 1;
    let children: Vec<&mut Value> = match value {
        Value::Array(items) => items.iter_mut().collect(),
        Value::Object(map) => map.values_mut().collect(),
        _ => Vec::new(),
    };
    let mut chosen = None;
    for child in children {
        let size = count_nodes(child);
        if n < size {
            chosen = Some((child, n));
            break;
        }
        n -= size;
    }
    match chosen {
        Some((child, n)) => nth_node(child, n),
        None => unreachable!("node index out of range"),
    }
}

/// A random array or object of the tree, if there is one.
fn pick_container<'a>(value: &'a mut Value, rng: &mut Rng) -> Option<&'a mut Value> {
    let containers = count_where(value, &|v| v.is_array() || v.is_object());
    if containers == 0 {
        return None;
    }
    nth_where(value, rng.below(containers), &|v| {
        v.is_array() || v.is_object()
    })
}

/// A random object of the tree, if there is one.
pub fn pick_object<'a>(value: &'a mut Value, rng: &mut Rng) -> Option<&'a mut Map<String, Value>> {
    let objects = count_where(value, &Value::is_object);
    if objects == 0 {
        return None;
    }
    nth_where(value, rng.below(objects), &Value::is_object).and_then(Value::as_object_mut)
}

fn count_where(value: &Value, pred: &dyn Fn(&Value) -> bool) -> usize {
    usize::from(pred(value))
        + match value {
            Value::Array(items) => items.iter().map(|v| count_where(v, pred)).sum(),
            Value::Object(map) => map.values().map(|v| count_where(v, pred)).sum(),
            _ => 0,
        }
}

fn nth_where<'a>(
    value: &'a mut Value,
    mut n: usize,
    pred: &dyn Fn(&Value) -> bool,
) -> Option<&'a mut Value> {
    if pred(value) {
        if n == 0 {
            return Some(value);
        }
        n -= 1;
    }
    let children: Vec<&mut Value> = match value {
        Value::Array(items) => items.iter_mut().collect(),
        Value::Object(map) => map.values_mut().collect(),
        _ => return None,
    };
    for child in children {
        let size = count_where(child, pred);
        if n < size {
            return nth_where(child, n, pred);
        }
        n -= size;
    }
    None
}

fn dict_key(rng: &mut Rng, keys: &[&str]) -> String {
    if keys.is_empty() || rng.one_in(8) {
        (*rng.pick(&["", "a", "$ref", "__proto__", "x-y", "\u{0}", "🦀", "a/b~c"])).to_owned()
    } else {
        (*rng.pick(keys)).to_owned()
    }
}

/// An edge-case scalar: `Ok` when a `Value` can hold it, else the raw text.
fn edge_scalar(rng: &mut Rng, strings: &[&str]) -> Result<Value, String> {
    match rng.below(4) {
        0 => {
            let text = *rng.pick(NUMBERS);
            serde_json::from_str::<Value>(text).map_err(|_| text.to_owned())
        }
        1 => Ok(Value::String(
            (*rng.pick(&[
                "",
                " ",
                "\u{0}",
                "\u{feff}",
                "é",
                "🦀",
                "\u{202e}abc",
                "a\r\nb",
                "\\",
                "\"",
                "{}",
                "null",
                "2.0",
                "%00",
                "../..",
                "{id}",
            ]))
            .to_owned(),
        )),
        2 if !strings.is_empty() => Ok(Value::String((*rng.pick(strings)).to_owned())),
        _ => Ok(rng
            .pick(&[
                Value::Null,
                Value::Bool(true),
                Value::Bool(false),
                Value::from(0),
                Value::from(-1),
                Value::from(u64::MAX),
                Value::from(i64::MIN),
                Value::from(0.5),
                Value::Array(Vec::new()),
                Value::Object(Map::new()),
            ])
            .clone()),
    }
}

/// A random value at most `depth` levels deep, built from the dictionary.
pub fn random_value(rng: &mut Rng, depth: usize, keys: &[&str], strings: &[&str]) -> Value {
    let kinds = if depth == 0 { 5 } else { 7 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => match rng.below(3) {
            0 => Value::from(rng.below(10) as u64),
            1 => Value::from(rng.next_u64() as i64),
            _ => Value::from((rng.next_u64() as f64) / 7.0),
        },
        3 if !strings.is_empty() && rng.one_in(2) => Value::String((*rng.pick(strings)).to_owned()),
        3 | 4 => match edge_scalar(rng, strings) {
            Ok(v) => v,
            Err(_) => Value::from(1),
        },
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth - 1, keys, strings))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(5) {
                let key = dict_key(rng, keys);
                let value = random_value(rng, depth - 1, keys, strings);
                map.insert(key, value);
            }
            Value::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_splices_render_in_place() {
        let mut doc = Doc::new(json!({"a": 1, "b": [2]}));
        let raw = doc.raw("1e999".into());
        doc.value["b"][0] = raw;
        assert_eq!(doc.render(false), br#"{"a":1,"b":[1e999]}"#);
    }

    #[test]
    fn mutations_keep_going_on_any_tree() {
        let mut rng = Rng::new(3);
        let mut parsed = 0;
        for _ in 0..1000 {
            let mut doc = Doc::new(
                json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": [1, {"b": null}]}}),
            );
            doc.mutate(&mut rng, &["id", "method"], &["tools/call"]);
            let text = doc.render(rng.one_in(2));
            if serde_json::from_slice::<Value>(&text).is_ok() {
                parsed += 1;
            }
        }
        // most stay JSON, some do not
        assert!((300..1000).contains(&parsed), "{parsed}");
    }

    #[test]
    fn duplicate_keys_are_written_twice() {
        let mut rng = Rng::new(5);
        let mut seen = false;
        for _ in 0..500 {
            let mut doc = Doc::new(json!({"id": 1}));
            doc.mutate_once(&mut rng, &[], &[]);
            let text = String::from_utf8(doc.render(false)).unwrap_or_default();
            seen |= text.matches("\"id\"").count() == 2;
        }
        assert!(seen);
    }
}
