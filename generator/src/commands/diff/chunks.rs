//! Chunk references in a table of shared schema texts, put back.
//!
//! The generator writes each schema text cut into the chunks it shares
//! with other texts (`crate::emit::chunks`): `{"x-toolforge-chunk":
//! "S_…"}` stands for the whole entry of that name. The table is
//! `artifacts/schemas.json` (which names the key it uses), or, in older
//! catalogues, the `schemas` of `tools.json` itself. A catalogue is read
//! from wherever a user points the diff, so a reference that names
//! nothing, a loop, a nesting too deep to be a schema and a table that
//! expands to more values than any real one are errors, not hangs.

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};

/// Deepest nesting an expanded schema may reach: `serde_json`'s limit
/// when it reads a catalogue written whole.
const MAX_DEPTH: usize = 128;

/// Most values all expanded entries may hold together (a few times the
/// largest real catalogue's, and a bound on the memory a hostile table
/// can take).
const MAX_VALUES: usize = 20_000_000;

/// Expands entries of one table on demand (each once; every use is
/// counted against [`MAX_VALUES`]).
pub struct Expander<'a> {
    raw: &'a Map<String, Value>,
    /// The reference key (`None`: the entries are whole texts).
    key: Option<&'a str>,
    done: HashMap<String, (Value, usize)>,
    /// Entries being expanded (a reference to one is a loop).
    open: Vec<String>,
    values: usize,
}

impl<'a> Expander<'a> {
    /// An expander of `raw` (entry name → text with references), whose
    /// references are `{key: name}` (none without a key).
    pub fn new(raw: &'a Map<String, Value>, key: Option<&'a str>) -> Self {
        Expander {
            raw,
            key,
            done: HashMap::default(),
            open: Vec::new(),
            values: 0,
        }
    }

    /// Entry `name` with its references put back.
    ///
    /// # Errors
    /// A message naming the reference that names no entry or loops, or the
    /// limit an expansion passes.
    pub fn get(&mut self, name: &str) -> Result<Value, String> {
        self.entry(name, 0).map(|(v, _)| v)
    }

    /// The name a chunk reference stands for, if `v` is one.
    fn reference<'v>(&self, v: &'v Value) -> Option<&'v str> {
        match v {
            Value::Object(m) if m.len() == 1 => m.get(self.key?)?.as_str(),
            _ => None,
        }
    }

    /// Entry `name`, expanded, and the number of values it holds.
    fn entry(&mut self, name: &str, depth: usize) -> Result<(Value, usize), String> {
        if let Some(&(_, n)) = self.done.get(name) {
            self.charge(n)?;
            if let Some((v, _)) = self.done.get(name) {
                return Ok((v.clone(), n));
            }
        }
        if self.open.iter().any(|o| o == name) {
            return Err(format!("schema chunk {name:?} refers to itself"));
        }
        let Some(raw) = self.raw.get(name) else {
            return Err(format!("schema chunk {name:?} names no entry of the table"));
        };
        self.open.push(name.to_string());
        let expanded = self.value(raw, depth);
        self.open.pop();
        let (v, n) = expanded?;
        self.done.insert(name.to_string(), (v.clone(), n));
        Ok((v, n))
    }

    fn charge(&mut self, n: usize) -> Result<(), String> {
        self.values = self.values.saturating_add(n);
        if self.values > MAX_VALUES {
            return Err(format!(
                "the schema chunks expand to more than {MAX_VALUES} values"
            ));
        }
        Ok(())
    }

    /// `v` with its chunk references replaced.
    fn value(&mut self, v: &Value, depth: usize) -> Result<(Value, usize), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "a schema nests deeper than {MAX_DEPTH} levels once its chunks are put back"
            ));
        }
        if let Some(name) = self.reference(v) {
            return self.entry(name, depth);
        }
        self.charge(1)?;
        match v {
            Value::Object(m) => {
                let mut out = Map::with_capacity(m.len());
                let mut n = 1;
                for (k, x) in m {
                    let (x, c) = self.value(x, depth + 1)?;
                    n += c;
                    out.insert(k.clone(), x);
                }
                Ok((Value::Object(out), n))
            }
            Value::Array(a) => {
                let mut out = Vec::with_capacity(a.len());
                let mut n = 1;
                for x in a {
                    let (x, c) = self.value(x, depth + 1)?;
                    n += c;
                    out.push(x);
                }
                Ok((Value::Array(out), n))
            }
            other => Ok((other.clone(), 1)),
        }
    }
}

/// `schemas` with every chunk reference (`{key: name}`) replaced by the
/// entry it names.
///
/// # Errors
/// As [`Expander::get`].
#[cfg(test)]
fn expand(schemas: &Map<String, Value>, key: &str) -> Result<Map<String, Value>, String> {
    let mut expander = Expander::new(schemas, Some(key));
    schemas
        .keys()
        .map(|name| Ok((name.clone(), expander.get(name)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::artifacts::CHUNK_KEY;
    use serde_json::json;

    fn expand(schemas: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        super::expand(schemas, CHUNK_KEY)
    }

    fn table(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn references_are_replaced_by_their_entries() {
        let schemas = table(json!({
            "S_1": {"type": "object", "properties": {"a": {CHUNK_KEY: "S_2"}, "b": [{CHUNK_KEY: "S_2"}]}},
            "S_2": {"type": "string", "enum": [{CHUNK_KEY: "S_3", "other": 1}]},
            "S_3": {"description": "unused"},
        }));
        let out = expand(&schemas).unwrap();
        let s2 = json!({"type": "string", "enum": [{CHUNK_KEY: "S_3", "other": 1}]});
        assert_eq!(
            out["S_1"],
            json!({"type": "object", "properties": {"a": s2, "b": [s2]}})
        );
        assert_eq!(out["S_3"], schemas["S_3"]);
    }

    #[test]
    fn broken_tables_are_errors() {
        let missing = table(json!({"S_1": {"a": {CHUNK_KEY: "S_9"}}}));
        assert!(expand(&missing).unwrap_err().contains("names no entry"));
        let looping = table(json!({
            "S_1": {"a": {CHUNK_KEY: "S_2"}},
            "S_2": {"b": [{CHUNK_KEY: "S_1"}]},
        }));
        assert!(expand(&looping).unwrap_err().contains("refers to itself"));
        let itself = table(json!({"S_1": {CHUNK_KEY: "S_1"}}));
        assert!(expand(&itself).unwrap_err().contains("refers to itself"));
    }

    #[test]
    fn exponential_tables_stop_at_the_value_limit() {
        // Each entry refers to the next twice: 2^60 values in all.
        let mut schemas = Map::new();
        for i in 0..60 {
            let next = json!({CHUNK_KEY: format!("S_{}", i + 1)});
            schemas.insert(format!("S_{i}"), json!([next, next]));
        }
        schemas.insert("S_60".into(), json!(true));
        let err = expand(&schemas).unwrap_err();
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn chains_deeper_than_a_schema_are_errors() {
        let mut schemas = Map::new();
        for i in 0..200 {
            schemas.insert(
                format!("S_{i}"),
                json!({"items": {CHUNK_KEY: format!("S_{}", i + 1)}}),
            );
        }
        schemas.insert("S_200".into(), json!({}));
        let err = expand(&schemas).unwrap_err();
        assert!(err.contains("deeper than"), "{err}");
    }
}
