//! The output schema texts of a catalogue read for the declaration pass,
//! each root `$defs` body parsed once across all of them: sharing writes
//! the same definitions (Stripe's memo bodies) into hundreds of output
//! texts, and parsing each text whole made the pass a third of Stripe's
//! generate.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::schema::written_refs;

/// An object's members as written, values unparsed.
struct Members<'t>(Vec<(String, &'t RawValue)>);

impl<'de: 't, 't> Deserialize<'de> for Members<'t> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Each)
    }
}

/// One output text read: its root without the `$defs` entry (parsed when
/// asked, so that a catalogue's roots are not all held at once), and each
/// root definition by name with its body's index in [`OutputTexts::bodies`].
#[derive(Debug)]
pub(crate) struct OutputText<'t> {
    root: Root<'t>,
    /// The root definitions in order: name and body index.
    pub defs: Vec<(String, usize)>,
}

/// The output texts of a catalogue, read with each distinct definition
/// body (by its text) parsed once.
#[derive(Debug)]
pub(crate) struct OutputTexts<'t> {
    /// One per text given, in order.
    pub outputs: Vec<OutputText<'t>>,
    /// The distinct definition bodies.
    pub bodies: Vec<Value>,
    /// The `$defs` names each body's `$ref`s name, by body.
    pub refs: Vec<Vec<String>>,
}

/// A root schema's text: its members but `$defs`, or the whole text.
#[derive(Debug)]
enum Root<'t> {
    Members(Vec<(String, &'t RawValue)>),
    Whole(&'t str),
}

impl OutputText<'_> {
    /// The root schema, `$defs` left out (the renderer never reads it).
    ///
    /// # Errors
    /// When a member is not JSON (never: [`OutputTexts::read`] delimited it).
    pub fn root(&self) -> serde_json::Result<Value> {
        match &self.root {
            Root::Whole(text) => serde_json::from_str(text),
            Root::Members(members) => {
                let mut root = Map::with_capacity(members.len());
                for (key, raw) in members {
                    root.insert(key.clone(), serde_json::from_str(raw.get())?);
                }
                Ok(Value::Object(root))
            }
        }
    }
}

/// A text split at its root `$defs`, all still text.
struct Split<'t> {
    root: Root<'t>,
    defs: Vec<(String, &'t str)>,
}

impl<'de: 't, 't> Deserialize<'de> for Split<'t> {
    /// In one pass: the root's members and the `$defs` object's bodies
    /// only delimited (a `$defs` that is no object fails, and
    /// [`split`] reads the text whole).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Split<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut root = Vec::new();
                let mut defs = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "$defs" && defs.is_empty() {
                        let Members(entries) = map.next_value()?;
                        defs = entries.into_iter().map(|(k, v)| (k, v.get())).collect();
                    } else {
                        root.push((key, map.next_value()?));
                    }
                }
                Ok(Split {
                    root: Root::Members(root),
                    defs,
                })
            }
        }
        d.deserialize_map(Each)
    }
}

/// Splits `text` at its root `$defs` (a text that is no object, or whose
/// `$defs` is none, is the root whole).
fn split(text: &str) -> serde_json::Result<Split<'_>> {
    match serde_json::from_str::<Split<'_>>(text) {
        Ok(split) => Ok(split),
        Err(_) => Ok(Split {
            root: Root::Whole(serde_json::from_str::<&RawValue>(text)?.get()),
            defs: Vec::new(),
        }),
    }
}

impl<'t> OutputTexts<'t> {
    /// Reads `texts` (in parallel), each distinct definition body once.
    ///
    /// # Errors
    /// When a text is not JSON.
    pub fn read(texts: &[&'t str]) -> serde_json::Result<Self> {
        let split: Vec<Split<'t>> = texts
            .par_iter()
            .map(|t| split(t))
            .collect::<serde_json::Result<_>>()?;
        let mut index: HashMap<&'t str, usize> = HashMap::default();
        let mut distinct: Vec<&'t str> = Vec::new();
        let mut outputs = Vec::with_capacity(split.len());
        for Split { root, defs } in split {
            let defs = defs
                .into_iter()
                .map(|(name, body)| {
                    let next = distinct.len();
                    let i = *index.entry(body).or_insert(next);
                    if i == next {
                        distinct.push(body);
                    }
                    (name, i)
                })
                .collect();
            outputs.push(OutputText { root, defs });
        }
        let (bodies, refs) = distinct
            .par_iter()
            .map(|b| {
                let body: Value = serde_json::from_str(b)?;
                let refs = written_refs(&body).into_iter().map(|(n, _)| n).collect();
                Ok((body, refs))
            })
            .collect::<serde_json::Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        Ok(OutputTexts {
            outputs,
            bodies,
            refs,
        })
    }
}

/// The types of kept definitions across a catalogue's outputs: a
/// definition's type depends only on its body and on the entries its
/// `$ref`s reach, so outputs that share those (Stripe's outputs expand the
/// same memo bodies under the same names) render it once, whatever else
/// each output shares. By the kept body's index in
/// [`OutputTexts::bodies`] and what it reaches (see [`Reach`]).
#[derive(Debug, Default)]
pub(crate) struct KeptTypes(Mutex<HashMap<(usize, Reach), Arc<str>>>);

/// The names a body's `$ref`s reach through the entries read in place,
/// sorted, each with the body read in its place, or `usize::MAX` where the
/// name is read as a type name (kept, or not defined).
pub(crate) type Reach = Box<[(Box<str>, usize)]>;

/// Marks a name read as a type name in a [`Reach`].
const NAMED: usize = usize::MAX;

impl KeptTypes {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<(usize, Reach), Arc<str>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many types it keeps.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// [`Reach`] of body `start` in an output whose entries are `by_name`
/// (`None` for those not read in place), body references in `refs`.
pub(crate) fn reach(start: usize, by_name: &HashMap<&str, Option<usize>>, refs: &[Vec<String>]) -> Reach {
    let mut found: Vec<(Box<str>, usize)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut todo = vec![start];
    while let Some(body) = todo.pop() {
        for name in refs.get(body).into_iter().flatten() {
            if seen.contains(&name.as_str()) {
                continue;
            }
            seen.push(name);
            match by_name.get(name.as_str()).copied().flatten() {
                Some(i) => {
                    found.push((Box::from(name.as_str()), i));
                    todo.push(i);
                }
                None => found.push((Box::from(name.as_str()), NAMED)),
            }
        }
    }
    found.sort_unstable();
    found.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_bodies_are_parsed_once() {
        let body = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        let a = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/p"}},
            "$defs": {"p": body, "q": {"type": "integer"}}})
        .to_string();
        let b = json!({"$defs": {"other": body}, "$ref": "#/$defs/other"}).to_string();
        let read = OutputTexts::read(&[&a, &b, "true", "{\"$defs\": 3}"]).unwrap();
        assert_eq!(read.bodies.len(), 2);
        assert_eq!(read.bodies[0], body);
        assert_eq!(read.refs, [Vec::<String>::new(), Vec::new()]);
        let [x, y, t, odd] = &read.outputs[..] else {
            panic!("four outputs")
        };
        assert_eq!(x.defs, [("p".to_owned(), 0), ("q".to_owned(), 1)]);
        assert_eq!(y.defs, [("other".to_owned(), 0)]);
        let root = |o: &OutputText<'_>| o.root().unwrap();
        let x_root = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/p"}}});
        assert_eq!(root(x), x_root);
        assert_eq!(root(y), json!({"$ref": "#/$defs/other"}));
        assert_eq!((root(t), t.defs.len()), (json!(true), 0));
        // A `$defs` that is no object stays in the root as written.
        assert_eq!((root(odd), odd.defs.len()), (json!({"$defs": 3}), 0));
        assert!(OutputTexts::read(&["{\"a\": }"]).is_err());
    }
}
