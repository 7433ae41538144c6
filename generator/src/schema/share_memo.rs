//! Sharing in schemas whose root `$defs` hold bodies of the def memo.
//!
//! A converter leaves a body it takes from the [`DefMemo`](super::super::DefMemo)
//! as a `null` placeholder in its `$defs` and names it (see
//! [`MemoBody`]). What sharing learns by walking such a body (its
//! candidates, and which of their pairs are equal) is learnt once per
//! catalogue and kept with the memo entry; and the body is copied into the
//! schema only once sharing has chosen what it replaces in it, without the
//! parts that become `$ref`s.

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
