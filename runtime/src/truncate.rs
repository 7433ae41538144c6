//! Structural truncation of large JSON results (DESIGN.md, "Truncation").
//!
//! A result over the budget (default [`DEFAULT_MAX_BYTES`], ~24 KB) is shrunk
//! so that it stays valid JSON and says what was cut:
//!
//! 1. arrays keep their head items plus one `"--- TRUNCATED --- N more items"`
//!    string element, and long strings keep their head plus
//!    `" --- TRUNCATED --- N more bytes"`; this is tried with progressively
//!    smaller allowances (100 items / a quarter of the budget per string, down
//!    to 1 item / 32 bytes) until the result fits;
//! 2. if it still does not fit (e.g. an object with thousands of keys), object
//!    fields are dropped: the smallest single field whose removal suffices,
//!    otherwise the largest fields first; each is named (as a JSON Pointer) in
//!    the [`TruncationNote`];
//! 3. nesting deeper than [`MAX_DEPTH`] is replaced by a marker string.
//!
//! The result serialises (compact) to at most `max_bytes` for any
//! `max_bytes >= MIN_MAX_BYTES`, and the same input always gives the same
//! output.
//!
//! ```
//! use serde_json::json;
//! use toolforge_runtime::truncate::truncate;
//!
//! let big = json!({"result": (0..1000).map(|i| json!({"id": i, "name": format!("zone-{i}")})).collect::<Vec<_>>()});
//! let (small, note) = truncate(&big, 2_000);
//! assert!(serde_json::to_string(&small).map_or(0, |s| s.len()) <= 2_000);
//! let note = note.expect("something was cut");
//! assert_eq!(note.arrays_shortened, 1);
//! assert!(small["result"].as_array().and_then(|a| a.last()).and_then(|v| v.as_str()).is_some_and(|s| s.starts_with("--- TRUNCATED ---")));
//! ```

use std::fmt;
use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Default budget: ~24 KB of JSON.
pub const DEFAULT_MAX_BYTES: usize = 24 * 1024;

/// Smallest budget honoured; smaller values are raised to it.
pub const MIN_MAX_BYTES: usize = 64;

/// Nesting deeper than this is replaced by a marker when truncating.
pub const MAX_DEPTH: usize = 64;

/// Marker prefix used in every cut.
pub const MARKER: &str = "--- TRUNCATED ---";

/// Most dropped fields named individually in a note.
const MAX_NAMED_FIELDS: usize = 25;

/// What [`truncate`] cut.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncationNote {
    /// Compact JSON size before.
    pub original_bytes: usize,
    /// Compact JSON size after.
    pub truncated_bytes: usize,
    /// Arrays that kept only their head items.
    pub arrays_shortened: usize,
    /// Strings clipped.
    pub strings_clipped: usize,
    /// JSON Pointers of dropped object fields (at most 25 named).
    pub dropped_fields: Vec<String>,
    /// Dropped fields beyond those named.
    pub more_dropped_fields: usize,
    /// Subtrees replaced because they nested deeper than [`MAX_DEPTH`].
    pub deep_values_cut: usize,
}

impl fmt::Display for TruncationNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "result truncated from {} to {} bytes",
            self.original_bytes, self.truncated_bytes
        )?;
        let mut parts = Vec::new();
        if self.arrays_shortened > 0 {
            parts.push(format!("{} array(s) shortened", self.arrays_shortened));
        }
        if self.strings_clipped > 0 {
            parts.push(format!("{} string(s) clipped", self.strings_clipped));
        }
        if self.deep_values_cut > 0 {
            parts.push(format!(
                "{} value(s) nested deeper than {MAX_DEPTH} cut",
                self.deep_values_cut
            ));
        }
        if !self.dropped_fields.is_empty() {
            let mut names = self.dropped_fields.join(", ");
            if self.more_dropped_fields > 0 {
                names.push_str(&format!(" and {} more", self.more_dropped_fields));
            }
            parts.push(format!("fields dropped: {names}"));
        }
        if !parts.is_empty() {
            write!(f, ": {}", parts.join("; "))?;
        }
        write!(
            f,
            " (ask for less, e.g. filter fields or request fewer items)"
        )
    }
}

/// Shrink `value` to at most `max_bytes` of compact JSON (see the module
/// docs). Returns the value unchanged and `None` when it already fits.
pub fn truncate(value: &Value, max_bytes: usize) -> (Value, Option<TruncationNote>) {
    let max = max_bytes.max(MIN_MAX_BYTES);
    let mut note = TruncationNote::default();
    let too_deep = exceeds_depth(value, MAX_DEPTH);
    if !too_deep {
        let size = json_len(value);
        if size <= max {
            return (value.clone(), None);
        }
        note.original_bytes = size;
    }
    let base = if too_deep {
        let cut = cut_depth(value, MAX_DEPTH, &mut note.deep_values_cut);
        note.original_bytes = json_len(&cut); // lower bound: the deep part is not measured
        cut
    } else {
        value.clone()
    };
    if json_len(&base) <= max {
        return finish(base, note);
    }

    // Allowances from mild to harsh; the mildest that fits wins (binary
    // search: a harsher level never yields a larger result).
    const ITEMS: [usize; 8] = [100, 50, 25, 10, 5, 3, 2, 1];
    let level = |k: usize| {
        let strings = (max / 4)
            .checked_shr(u32::try_from(k).unwrap_or(31))
            .unwrap_or(0)
            .max(32);
        let mut trial = TruncationNote::default();
        let shrunk = shrink(&base, ITEMS[k.min(ITEMS.len() - 1)], strings, &mut trial);
        let fits = json_len(&shrunk) <= max;
        (shrunk, trial, fits)
    };
    let harshest = level(ITEMS.len() - 1);
    let best = if harshest.2 {
        let (mut lo, mut hi) = (0, ITEMS.len() - 1); // hi always fits
        let mut best = harshest;
        while lo < hi {
            let mid = (lo + hi) / 2;
            let trial = level(mid);
            if trial.2 {
                hi = mid;
                best = trial;
            } else {
                lo = mid + 1;
            }
        }
        Some((best.0, best.1))
    } else {
        Some((harshest.0, harshest.1))
    };
    let Some((mut current, trial)) = best else {
        return finish(base, note);
    };
    note.arrays_shortened = trial.arrays_shortened;
    note.strings_clipped = trial.strings_clipped;

    let mut dropped = Vec::new();
    for _ in 0..8 {
        let size = json_len(&current);
        if size <= max {
            break;
        }
        let fields = field_sizes(&current);
        let chosen = choose_drops(&fields, size - max);
        if chosen.is_empty() {
            break;
        }
        for pointer in &chosen {
            remove_pointer(&mut current, pointer);
        }
        dropped.extend(chosen);
    }
    note.more_dropped_fields = dropped.len().saturating_sub(MAX_NAMED_FIELDS);
    dropped.truncate(MAX_NAMED_FIELDS);
    note.dropped_fields = dropped;

    if json_len(&current) > max {
        // Nothing structural left to cut (e.g. a huge array of keys-only
        // objects at the smallest allowance): say so in a string.
        let text = format!(
            "{MARKER} result of {} bytes could not be shortened to {max} bytes",
            note.original_bytes
        );
        current = Value::String(text);
        if json_len(&current) > max {
            current = Value::Null;
        }
    }
    finish(current, note)
}

fn finish(value: Value, mut note: TruncationNote) -> (Value, Option<TruncationNote>) {
    note.truncated_bytes = json_len(&value);
    (value, Some(note))
}

/// Exact compact JSON length of `value` (a `Value`, or an argument map
/// as it stands): the runtime's one JSON size, counted while serialising
/// into nothing, so it never allocates.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// Whether `value` nests deeper than `limit` (bounded recursion).
fn exceeds_depth(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|v| exceeds_depth(v, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|v| exceeds_depth(v, limit - 1)),
        _ => false,
    }
}

fn cut_depth(value: &Value, limit: usize, cut: &mut usize) -> Value {
    match value {
        Value::Array(_) | Value::Object(_) if limit == 0 => {
            *cut += 1;
            Value::String(format!("{MARKER} nested too deep"))
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| cut_depth(v, limit - 1, cut)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), cut_depth(v, limit - 1, cut)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Copy of `value` with arrays cut to `items` head items and strings to
/// `string_bytes` bytes.
fn shrink(value: &Value, items: usize, string_bytes: usize, note: &mut TruncationNote) -> Value {
    match value {
        Value::String(s) if s.len() > string_bytes => {
            note.strings_clipped += 1;
            let head = clip(s, string_bytes);
            Value::String(format!(
                "{head} {MARKER} {} more bytes",
                s.len() - head.len()
            ))
        }
        Value::Array(list) if list.len() > items => {
            note.arrays_shortened += 1;
            let mut out: Vec<Value> = list
                .iter()
                .take(items)
                .map(|v| shrink(v, items, string_bytes, note))
                .collect();
            out.push(Value::String(format!(
                "{MARKER} {} more items",
                list.len() - items
            )));
            Value::Array(out)
        }
        Value::Array(list) => Value::Array(
            list.iter()
                .map(|v| shrink(v, items, string_bytes, note))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shrink(v, items, string_bytes, note)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

fn clip(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// One droppable object field.
#[derive(Debug, Clone)]
struct Field {
    /// JSON Pointer.
    pointer: String,
    /// Bytes its removal saves.
    size: usize,
    /// Bytes its nearest sub-fields would save together.
    children: usize,
    /// Index of the nearest enclosing field.
    parent: Option<usize>,
}

/// Every object field of `value`, in document order, in one pass.
fn field_sizes(value: &Value) -> Vec<Field> {
    /// Returns the compact JSON size of `value`.
    fn walk(
        value: &Value,
        pointer: &mut String,
        parent: Option<usize>,
        out: &mut Vec<Field>,
    ) -> usize {
        match value {
            Value::Object(map) => {
                let mut total = 2 + map.len().saturating_sub(1);
                for (key, child) in map {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    out.push(Field {
                        pointer: pointer.clone(),
                        size: 0,
                        children: 0,
                        parent,
                    });
                    let me = out.len() - 1;
                    let child_size = walk(child, pointer, Some(me), out);
                    let key_size = json_len(&Value::String(key.clone())) + 1;
                    if let Some(field) = out.get_mut(me) {
                        field.size = key_size + child_size + 1; // plus one comma
                    }
                    if let Some(field) = parent.and_then(|p| out.get_mut(p)) {
                        field.children += key_size + child_size + 1;
                    }
                    total += key_size + child_size;
                    pointer.truncate(len);
                }
                total
            }
            Value::Array(items) => {
                let mut total = 2 + items.len().saturating_sub(1);
                for (i, child) in items.iter().enumerate() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    total += walk(child, pointer, parent, out);
                    pointer.truncate(len);
                }
                total
            }
            leaf => json_len(leaf),
        }
    }
    let mut out = Vec::new();
    walk(value, &mut String::new(), None, &mut out);
    out
}

/// Fields to drop to save `excess` bytes, in order of preference:
/// 1. the smallest single field that suffices and is not itself a container
///    whose sub-fields could cover the excess (e.g. one big blob);
/// 2. else the members of the tightest container whose sub-fields can cover
///    the excess, largest first (a wide object loses members, not itself);
/// 3. else the largest top-level fields.
fn choose_drops(fields: &[Field], excess: usize) -> Vec<String> {
    let by_preference = |a: &&Field, b: &&Field| {
        a.size
            .cmp(&b.size)
            .then_with(|| b.pointer.len().cmp(&a.pointer.len()))
            .then_with(|| a.pointer.cmp(&b.pointer))
    };
    let single = fields
        .iter()
        .filter(|f| f.children < excess && f.size >= excess)
        .min_by(by_preference);
    if let Some(field) = single {
        return vec![field.pointer.clone()];
    }
    let container = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.children >= excess)
        .min_by(|(_, a), (_, b)| {
            a.children
                .cmp(&b.children)
                .then_with(|| b.pointer.len().cmp(&a.pointer.len()))
                .then_with(|| a.pointer.cmp(&b.pointer))
        })
        .map(|(i, _)| i);
    let mut members: Vec<&Field> = fields.iter().filter(|f| f.parent == container).collect();
    members.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.pointer.cmp(&b.pointer)));
    let mut chosen = Vec::new();
    let mut saved = 0;
    for field in members {
        if saved >= excess {
            break;
        }
        chosen.push(field.pointer.clone());
        saved += field.size;
    }
    chosen
}

/// Remove the object field at `pointer` (no-op when absent).
fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    if let Some(Value::Object(map)) = value.pointer_mut(parent) {
        map.shift_remove(&key);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_len_is_the_compact_encoding_length() {
        let value = serde_json::json!({"a": [1, 2.5, null, true], "é\"": "x\ny", "n": {"m": -3}});
        let Some(map) = value.as_object() else {
            unreachable!("an object")
        };
        let expected = serde_json::to_string(&value).map_or(0, |s| s.len());
        assert_eq!(super::json_len(&value), expected);
        assert_eq!(super::json_len(map), expected);
    }

    use super::*;
    use serde_json::json;

    fn check(value: &Value, max: usize) -> (Value, Option<TruncationNote>) {
        let (out, note) = truncate(value, max);
        assert!(
            json_len(&out) <= max.max(MIN_MAX_BYTES),
            "{} > {max}",
            json_len(&out)
        );
        assert_eq!(
            truncate(value, max),
            (out.clone(), note.clone()),
            "deterministic"
        );
        (out, note)
    }

    #[test]
    fn small_values_pass_through() {
        let v = json!({"a": [1, 2, 3]});
        assert_eq!(truncate(&v, 100), (v, None));
    }

    #[test]
    fn arrays_keep_head_items_and_a_marker() {
        let v = json!({"result": (0..500).collect::<Vec<_>>(), "result_info": {"count": 500}});
        let (out, note) = check(&v, 1_000);
        let list = out["result"].as_array().cloned().unwrap_or_default();
        assert_eq!(list.first(), Some(&json!(0)));
        assert_eq!(
            list.last(),
            Some(&json!(format!(
                "{MARKER} {} more items",
                500 - (list.len() - 1)
            )))
        );
        assert_eq!(out["result_info"], json!({"count": 500}));
        let note = note.unwrap_or_default();
        assert_eq!(note.arrays_shortened, 1);
        assert!(note.dropped_fields.is_empty());
        assert!(note.to_string().contains("1 array(s) shortened"));
    }

    #[test]
    fn long_strings_are_clipped_on_char_boundaries() {
        let v = json!({"text": "é".repeat(10_000)});
        let (out, note) = check(&v, 2_000);
        let text = out["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("éé"));
        assert!(text.contains(MARKER));
        assert_eq!(note.map(|n| n.strings_clipped), Some(1));
    }

    #[test]
    fn wide_objects_lose_their_largest_fields_by_name() {
        let mut map = Map::new();
        map.insert("id".into(), json!("keep"));
        for i in 0..300 {
            map.insert(
                format!("field{i:03}"),
                json!({"a": i, "b": "x".repeat(i % 7)}),
            );
        }
        let v = json!({"result": Value::Object(map)});
        let (out, note) = check(&v, 1_500);
        let note = note.unwrap_or_default();
        assert!(!note.dropped_fields.is_empty());
        assert!(
            note.dropped_fields
                .iter()
                .all(|p| p.starts_with("/result/field")),
            "{:?}",
            note.dropped_fields
        );
        assert_eq!(out["result"]["id"], "keep");
        assert!(note.to_string().contains("fields dropped: /result/field"));
    }

    #[test]
    fn one_huge_field_is_dropped_alone() {
        let blob: Map<String, Value> = (0..50).map(|i| (format!("k{i}"), json!(i))).collect();
        let v = json!({"keep": "small", "result": {"id": 1, "blob": blob}});
        let (out, note) = check(&v, 120);
        let note = note.unwrap_or_default();
        assert_eq!(out["keep"], "small");
        assert_eq!(out["result"]["id"], 1);
        assert!(
            note.dropped_fields
                .iter()
                .all(|p| p.starts_with("/result/blob/")),
            "{note:?}"
        );
        // A field that alone covers the excess and has no big sub-fields goes whole.
        let v = json!({"keep": "small", "result": {"id": 1, "blob": (0..200).map(|i| i * 1000).collect::<Vec<_>>()}});
        let (out, note) = check(&v, 200);
        assert_eq!(out["result"]["id"], 1);
        assert!(note.is_some());
    }

    #[test]
    fn huge_nested_inputs_fit_and_stay_valid() {
        // 5 levels of 4–8-wide objects holding arrays and strings: ~1 MB.
        fn build(depth: usize, seed: usize) -> Value {
            if depth == 0 {
                return json!({"s": "y".repeat(seed % 300), "n": seed, "list": (0..(seed % 50)).collect::<Vec<_>>()});
            }
            let mut map = Map::new();
            for i in 0..(4 + seed % 5) {
                map.insert(format!("k{i}"), build(depth - 1, seed * 31 + i));
            }
            map.insert(
                "items".into(),
                Value::Array((0..(seed % 30)).map(|i| build(0, seed + i)).collect()),
            );
            Value::Object(map)
        }
        let v = build(5, 7);
        assert!(json_len(&v) > 500_000, "{}", json_len(&v));
        for max in [64, 500, 5_000, DEFAULT_MAX_BYTES, 100_000] {
            let (out, note) = check(&v, max);
            let text = serde_json::to_string(&out).unwrap_or_default();
            assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(out.clone()));
            assert!(note.is_some());
        }
    }

    #[test]
    fn very_deep_nesting_is_cut_without_overflowing() {
        let mut v = json!("leaf");
        for _ in 0..1_000 {
            v = json!([v]);
        }
        let (out, note) = truncate(&v, 1_000);
        assert!(json_len(&out) <= 1_000);
        assert_eq!(note.map(|n| n.deep_values_cut), Some(1));
    }

    #[test]
    fn tiny_budgets_still_hold() {
        let v = json!({"a": "b".repeat(1_000), "c": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]});
        for max in [0, 10, 64, 65, 80] {
            check(&v, max);
        }
    }

    #[test]
    fn pointers_escape_and_remove() {
        let mut v = json!({"a/b": {"~c": 1, "d": 2}});
        let fields = field_sizes(&v);
        assert!(fields.iter().any(|f| f.pointer == "/a~1b/~0c"));
        assert_eq!(
            fields
                .iter()
                .map(|f| f.pointer.as_str())
                .collect::<Vec<_>>(),
            ["/a~1b", "/a~1b/~0c", "/a~1b/d"]
        );
        assert_eq!(
            fields
                .iter()
                .find(|f| f.pointer == "/a~1b")
                .map(|f| f.children),
            Some(13)
        );
        assert_eq!(
            fields.iter().find(|f| f.pointer == "/a~1b").map(|f| f.size),
            Some(json_len(&v) - 2 + 1)
        );
        remove_pointer(&mut v, "/a~1b/~0c");
        assert_eq!(v, json!({"a/b": {"d": 2}}));
    }
}
