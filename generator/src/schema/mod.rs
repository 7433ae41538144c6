//! OpenAPI 3.0 schema objects → JSON Schema 2020-12 for MCP tool schemas.
//!
//! - [`Cycles`] finds, once per document, which schemas take part in a
//!   reference cycle;
//! - [`SchemaConverter`] (one per tool) inlines local `$ref`s, turns
//!   recursive ones into `$defs` entries, maps `nullable`, drops
//!   `readOnly`/`writeOnly` properties by [`SchemaMode`] and keeps only JSON
//!   Schema keywords;
//! - [`object_shape`] reads a converted schema as an object (properties,
//!   required, additional properties) for flattening into a tool input;
//! - [`trim_input`] takes out of an input schema what restates the rest
//!   of it (the lossless [`Trim`]s);
//! - [`strict`] simplifies input schemas for strict clients (the `strict`
//!   schema profile) and [`compat`] counts the features they reject.

pub mod compat;
mod convert;
mod cycles;
mod keywords;
mod object;
mod share;
mod trim;
/// The strict simplification, shared with the runtime (`toolforge-model`).
pub use toolforge_model::strict;

pub use convert::{DefMemo, INPUT_BUDGET, MemoBody, OUTPUT_BUDGET, SchemaConverter};
pub use cycles::Cycles;
#[cfg(any(test, feature = "oracles"))]
pub use object::ObjectShape;
pub use object::object_shape;
pub(crate) use share::{
    BodyCopies, Placed, nesting_placed, place_memo_bodies, share_repeated_placed, written_refs,
};
pub use share::{
    SharedView, fill_memo_bodies, inline_shared, kept_defs, share_repeated, share_repeated_input,
};
pub use trim::trim_input;
#[cfg(any(test, feature = "oracles"))]
pub use trim::{Trim, Trimmed};
#[cfg(any(test, feature = "oracles"))]
pub use share::{DefBody, MIN_INPUT_SHARED_BYTES, MIN_SHARED_BYTES, share_repeated_with};

/// Arrays and objects nested in `value` (0 for a scalar).
pub(crate) fn nesting(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// Which side of the API a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaMode {
    /// Tool input (request): `readOnly` properties are dropped.
    Input,
    /// Tool output (response): `writeOnly` properties are dropped.
    Output,
}

/// Bounds on converted schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of subschemas (each inlined `$ref` counts one level).
    pub max_depth: usize,
    /// Most schema nodes in one converter's output (one tool, `$defs` included).
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 64,
            max_nodes: 200_000,
        }
    }
}

/// Deepest literal value (`enum`, `default`, …) copied into a schema; the
/// parsers already refuse documents nested deeper than 128 levels.
pub(crate) const MAX_DATA_DEPTH: usize = 128;

/// Whether `value` nests more than `limit` levels (checked without recursion).
pub(crate) fn nests_deeper_than(value: &serde_json::Value, limit: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > limit {
            return true;
        }
        match v {
            serde_json::Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            serde_json::Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    false
}

/// `levels` schemas nested through `properties.a` (tests only).
#[cfg(test)]
pub(crate) fn nest_for_tests(leaf: serde_json::Value, levels: usize) -> serde_json::Value {
    // Built by hand: `json!` interpolation re-serialises recursively.
    let mut schema = leaf;
    for _ in 0..levels {
        let mut properties = serde_json::Map::new();
        properties.insert("a".into(), schema);
        let mut map = serde_json::Map::new();
        map.insert("type".into(), serde_json::Value::String("object".into()));
        map.insert("properties".into(), serde_json::Value::Object(properties));
        schema = serde_json::Value::Object(map);
    }
    schema
}

/// Drops a possibly very deep value without recursion (test inputs only:
/// `serde_json::Value`'s own drop recurses).
#[cfg(test)]
pub(crate) fn drop_deep(value: serde_json::Value) {
    let mut stack = vec![value];
    while let Some(mut v) = stack.pop() {
        match &mut v {
            serde_json::Value::Array(items) => stack.append(items),
            serde_json::Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    if let Some(child) = map.shift_remove(&k) {
                        stack.push(child);
                    }
                }
            }
            _ => {}
        }
    }
}
