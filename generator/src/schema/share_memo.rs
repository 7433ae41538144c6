//! Sharing in schemas whose root `$defs` hold bodies of the def memo.
//!
//! A converter leaves a body it takes from the [`DefMemo`](super::super::DefMemo)
//! as a `null` placeholder in its `$defs` and names it (see
//! [`MemoBody`]). What sharing learns by walking such a body (its
//! candidates, and which of their pairs are equal) is learnt once per
//! catalogue and kept with the memo entry; and the body is copied into the
//! schema only once sharing has chosen what it replaces in it, without the
//! parts that become `$ref`s.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};

use super::{HashSet, Kind, OwnedSeg, Scan, owned};
use crate::schema::MemoBody;

/// A candidate of a memo body: the body's id in its memo and the
/// candidate's index in the body's scan.
pub(super) type Origin = (u64, usize);

/// Pairs of memo body subschemas found equal, kept with the memo: the same
/// bodies meet in many schemas of a catalogue, and their subschemas are
/// compared in full once, not once per schema.
#[derive(Debug, Default)]
pub(crate) struct EqualPairs(std::sync::Mutex<HashSet<(Origin, Origin)>>);

impl EqualPairs {
    fn key(a: Origin, b: Origin) -> (Origin, Origin) {
        if a <= b { (a, b) } else { (b, a) }
    }

    /// Whether `a` and `b` were found equal.
    pub(super) fn known(&self, a: Origin, b: Origin) -> bool {
        let pairs = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pairs.contains(&Self::key(a, b))
    }

    /// How many pairs it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Remembers that `a` and `b` are equal.
    pub(super) fn record(&self, a: Origin, b: Origin) {
        let mut pairs = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pairs.insert(Self::key(a, b));
    }
}

/// What the walk of a `$defs` body finds, kept with a body that many
/// schemas hold (see [`MemoBody`]).
#[derive(Debug)]
pub(crate) struct BodyScan {
    pub(super) hash: u64,
    pub(super) size: usize,
    /// Candidates in the body, in walk order; parents index this list.
    pub(super) candidates: Vec<BodyCandidate>,
    /// Candidate paths from the body, one after another.
    pub(super) paths: Vec<OwnedSeg>,
}

/// One candidate of a [`BodyScan`].
#[derive(Debug)]
pub(super) struct BodyCandidate {
    pub(super) path: (usize, usize),
    pub(super) size: usize,
    pub(super) hash: u64,
    pub(super) parent: Option<usize>,
}

impl BodyScan {
    /// Walks `body` as a root `$defs` entry is walked.
    pub(crate) fn of(body: &Value) -> Self {
        let mut scan = Scan::default();
        let (hash, size) = scan.visit(body, Kind::Schema { replaceable: false });
        BodyScan {
            hash,
            size,
            candidates: scan
                .candidates
                .iter()
                .map(|c| BodyCandidate {
                    path: c.path,
                    size: c.size,
                    hash: c.hash,
                    parent: c.parent,
                })
                .collect(),
            paths: owned(&scan.paths),
        }
    }
}

/// The places in one memo body that become `$ref`s, as a tree of paths.
#[derive(Debug, Default)]
pub(super) struct Replaced {
    /// The `$ref` target put here, if this place is replaced.
    reference: Option<String>,
    keys: HashMap<String, Replaced>,
    indices: HashMap<usize, Replaced>,
}

impl Replaced {
    /// Marks the place at `path` to become a `$ref` to `reference`.
    pub(super) fn insert(&mut self, path: &[OwnedSeg], reference: &str) {
        let mut at = self;
        for seg in path {
            at = match seg {
                OwnedSeg::Key(k) => at.keys.entry(k.clone()).or_default(),
                OwnedSeg::Index(i) => at.indices.entry(*i).or_default(),
            };
        }
        at.reference = Some(reference.to_string());
    }

    /// The places under `path`.
    pub(super) fn under(&self, path: &[OwnedSeg]) -> Option<&Replaced> {
        path.iter().try_fold(self, |at, seg| match seg {
            OwnedSeg::Key(k) => at.keys.get(k.as_str()),
            OwnedSeg::Index(i) => at.indices.get(i),
        })
    }

    /// Appends a text that tells apart every two different trees (names
    /// carry their length, places are sorted): the key of a body's copy.
    fn signature(&self, out: &mut String) {
        use std::fmt::Write;
        if let Some(target) = &self.reference {
            // Writing to a String cannot fail.
            let _ = write!(out, "={}:{target}", target.len());
        }
        let mut keys: Vec<(&String, &Replaced)> = self.keys.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| *k);
        for (key, at) in keys {
            let _ = write!(out, "k{}:{key}(", key.len());
            at.signature(out);
            out.push(')');
        }
        let mut indices: Vec<(&usize, &Replaced)> = self.indices.iter().collect();
        indices.sort_unstable_by_key(|(i, _)| **i);
        for (index, at) in indices {
            let _ = write!(out, "i{index}(");
            at.signature(out);
            out.push(')');
        }
    }

    fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.indices.is_empty()
    }

    fn child<'r>(&'r self, key: Option<&str>, index: usize) -> Option<&'r Replaced> {
        match key {
            Some(k) => self.keys.get(k),
            None => self.indices.get(&index),
        }
    }
}

/// A copy of `node` with the places `replaced` marks below it made
/// `$ref`s (the mark on `node` itself is not applied).
pub(super) fn copy_replaced(node: &Value, replaced: Option<&Replaced>) -> Value {
    let Some(replaced) = replaced.filter(|r| !r.is_empty()) else {
        return node.clone();
    };
    let child = |key: Option<&str>, index: usize, value: &Value| match replaced.child(key, index) {
        Some(Replaced {
            reference: Some(target),
            ..
        }) => reference(target),
        at => copy_replaced(value, at),
    };
    match node {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), child(Some(k), 0, v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| child(None, i, v))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `{"$ref": target}`.
pub(super) fn reference(target: &str) -> Value {
    let mut r = Map::new();
    r.insert("$ref".into(), Value::String(target.to_string()));
    Value::Object(r)
}

/// The memo body and path inside it of a path from the root, when it
/// leads into a root `$defs` entry named in `bodies`.
pub(super) fn in_body<'p>(
    path: &'p [OwnedSeg],
    bodies: &HashMap<&str, &MemoBody>,
) -> Option<(&'p str, &'p [OwnedSeg])> {
    match path {
        [OwnedSeg::Key(defs), OwnedSeg::Key(name), rest @ ..]
            if defs == "$defs" && bodies.contains_key(name.as_str()) =>
        {
            Some((name.as_str(), rest))
        }
        _ => None,
    }
}

/// Puts a copy of every memo body named in `bodies` in place of its
/// placeholder in `schema`'s root `$defs` (for a schema that is not shared,
/// or one taken apart by a policy).
pub fn fill_memo_bodies(schema: &mut Value, bodies: &[(String, MemoBody)]) {
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        fill_defs(defs, bodies);
    }
}

/// Puts a copy of every memo body named in `bodies` in place of its
/// placeholder in `defs`.
pub(crate) fn fill_defs(defs: &mut Map<String, Value>, bodies: &[(String, MemoBody)]) {
    for (name, body) in bodies {
        if let Some(slot) = defs.get_mut(name) {
            *slot = body.body().clone();
        }
    }
}

/// A memo body as one schema holds it (the places sharing chose in it made
/// `$ref`s), kept as text: schemas that hold a body with the same places
/// replaced hold the same copy (Stripe: some 3,100 bodies in its output
/// schemas, 730 distinct copies), so each is made and written once.
#[derive(Debug)]
pub(crate) struct BodyCopy {
    /// Its compact JSON text.
    pub(crate) text: Box<str>,
    /// Arrays and objects nested in it.
    pub(crate) nesting: usize,
}

/// The memo bodies a shared schema holds by name, whose `$defs` entries
/// stay placeholders (see [`share_repeated_placed`](super::share_repeated_placed)).
pub(crate) type Placed = Vec<(String, Arc<BodyCopy>)>;

/// Every [`BodyCopy`] made for one catalogue, by body id and the places
/// replaced in it.
#[derive(Debug, Default)]
pub(crate) struct BodyCopies(Mutex<HashMap<(u64, String), Arc<BodyCopy>>>);

impl BodyCopies {
    /// The copy of `body` with the places `replaced` marks made `$ref`s.
    pub(super) fn copy(&self, body: &MemoBody, replaced: Option<&Replaced>) -> Arc<BodyCopy> {
        let mut signature = String::new();
        if let Some(replaced) = replaced {
            replaced.signature(&mut signature);
        }
        let key = (body.id(), signature);
        if let Some(copy) = self.lock().get(&key) {
            return Arc::clone(copy);
        }
        // Made outside the lock: another thread may make the same copy,
        // and the first one kept wins (they are equal).
        let value = copy_replaced(body.body(), replaced);
        let copy = Arc::new(BodyCopy {
            text: crate::json_text::to_string(&value).into_boxed_str(),
            nesting: crate::schema::nesting(&value),
        });
        drop(value);
        Arc::clone(self.lock().entry(key).or_insert(copy))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(u64, String), Arc<BodyCopy>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many distinct copies it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The memo bodies named in `bodies` as `schema` holds them unshared,
/// their placeholders left in place.
pub(crate) fn place_memo_bodies(
    schema: &Value,
    bodies: &[(String, MemoBody)],
    copies: &BodyCopies,
) -> Placed {
    let defs = schema.get("$defs").and_then(Value::as_object);
    bodies
        .iter()
        .filter(|(name, _)| defs.is_some_and(|d| d.get(name) == Some(&Value::Null)))
        .map(|(name, body)| (name.clone(), copies.copy(body, None)))
        .collect()
}

/// [`nesting`](crate::schema::nesting) of `schema` with its placed bodies
/// in their `$defs` entries.
pub(crate) fn nesting_placed(schema: &Value, placed: &Placed) -> usize {
    let bodies = placed.iter().map(|(_, copy)| 2 + copy.nesting);
    bodies.fold(crate::schema::nesting(schema), usize::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> OwnedSeg {
        OwnedSeg::Key(s.to_string())
    }

    fn signature(places: &[(&[OwnedSeg], &str)]) -> String {
        let mut replaced = Replaced::default();
        for (path, target) in places {
            replaced.insert(path, target);
        }
        let mut out = String::new();
        replaced.signature(&mut out);
        out
    }

    #[test]
    fn signatures_tell_apart_trees_whose_names_hold_the_separators() {
        let a = signature(&[(&[key("a(k1:b")], "#/$defs/x")]);
        let b = signature(&[(&[key("a"), key("b")], "#/$defs/x")]);
        let c = signature(&[(&[key("a")], "#/$defs/x)k1:b(")]);
        let d = signature(&[(&[key("0")], "#/$defs/x")]);
        let e = signature(&[(&[OwnedSeg::Index(0)], "#/$defs/x")]);
        let all = [&a, &b, &c, &d, &e];
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
        // The order places were marked in does not matter.
        let one = signature(&[(&[key("p")], "#/$defs/p"), (&[key("q")], "#/$defs/q")]);
        let two = signature(&[(&[key("q")], "#/$defs/q"), (&[key("p")], "#/$defs/p")]);
        assert_eq!(one, two);
    }
}
