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
        let mut scan = Scan {
            min_bytes: super::MIN_SHARED_BYTES,
            ..Scan::default()
        };
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

/// The places in one memo body that become `$ref`s, as a tree of paths
/// (borrowing the body scan's paths and the targets).
#[derive(Debug, Default)]
pub(super) struct Replaced<'a> {
    /// The `$ref` target put here, if this place is replaced.
    reference: Option<&'a str>,
    keys: HashMap<&'a str, Replaced<'a>>,
    indices: HashMap<usize, Replaced<'a>>,
}

impl<'a> Replaced<'a> {
    /// Marks the place at `path` to become a `$ref` to `reference`.
    pub(super) fn insert(&mut self, path: &'a [OwnedSeg], reference: &'a str) {
        let mut at = self;
        for seg in path {
            at = match seg {
                OwnedSeg::Key(k) => at.keys.entry(k.as_str()).or_default(),
                OwnedSeg::Index(i) => at.indices.entry(*i).or_default(),
            };
        }
        at.reference = Some(reference);
    }

    fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.indices.is_empty()
    }

    fn child(&self, key: Option<&str>, index: usize) -> Option<&Replaced<'a>> {
        match key {
            Some(k) => self.keys.get(k),
            None => self.indices.get(&index),
        }
    }
}

/// A copy of `node` with the places `replaced` marks below it made
/// `$ref`s (the mark on `node` itself is not applied).
pub(super) fn copy_replaced(node: &Value, replaced: Option<&Replaced<'_>>) -> Value {
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

/// Appends the compact JSON text of [`copy_replaced`]`(node, replaced)`
/// and returns its [`nesting`](crate::schema::nesting), without making
/// the copy (most of a copy is the body as it is).
fn write_replaced(out: &mut Vec<u8>, node: &Value, replaced: Option<&Replaced<'_>>) -> usize {
    use crate::json_text::{write_members, write_nested, write_str};
    let Some(replaced) = replaced.filter(|r| !r.is_empty()) else {
        return write_nested(out, node);
    };
    if !(node.is_object() || node.is_array()) {
        return write_nested(out, node);
    }
    write_members(out, node, |out, key, index, value| {
        match replaced.child(key, index) {
            Some(Replaced {
                reference: Some(target),
                ..
            }) => {
                out.extend_from_slice(b"{\"$ref\":");
                write_str(out, target);
                out.push(b'}');
                1
            }
            at => write_replaced(out, value, at),
        }
    })
}

/// `{"$ref": target}`.
pub(super) fn reference(target: &str) -> Value {
    let mut r = Map::new();
    r.insert("$ref".into(), Value::String(target.to_string()));
    Value::Object(r)
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
pub(crate) struct BodyCopies(Mutex<HashMap<CopyKey, Arc<BodyCopy>>>);

/// A copy's body id, root candidate (`u64::MAX`: the whole body) and
/// signature of its places.
type CopyKey = (u64, u64, String);

impl BodyCopies {
    /// The copy of `body` (or of its scan's candidate `root`) with the
    /// `places` below it made `$ref`s (`None` if the candidate is not in
    /// the body).
    pub(super) fn copy(
        &self,
        body: &MemoBody,
        root: Option<usize>,
        places: &[Place<'_>],
    ) -> Option<Arc<BodyCopy>> {
        let key = (
            body.id(),
            root.map_or(u64::MAX, |r| r as u64),
            signature(places),
        );
        if let Some(copy) = self.lock().get(&key) {
            return Some(Arc::clone(copy));
        }
        // Made outside the lock: another thread may make the same copy,
        // and the first one kept wins (they are equal).
        let copy = Arc::new(body_text(body, root, places)?);
        Some(Arc::clone(self.lock().entry(key).or_insert(copy)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CopyKey, Arc<BodyCopy>>> {
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

/// A place in a memo body that becomes a `$ref`: the candidate of the
/// body's scan there, and the target.
pub(super) type Place<'t> = (usize, &'t str);

/// A text that tells apart every two lists of places (each target carries
/// its length): the key of a copy.
fn signature(places: &[Place<'_>]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (candidate, target) in places {
        // Writing to a String cannot fail.
        let _ = write!(out, "{candidate}:{}:{target};", target.len());
    }
    out
}

/// The places of `places` (sorted) strictly inside candidate `root` of
/// `scan`.
pub(super) fn places_under<'t>(
    scan: &BodyScan,
    root: usize,
    places: &[Place<'t>],
) -> Vec<Place<'t>> {
    let inside = |mut at: usize| {
        while let Some(parent) = scan.candidates.get(at).and_then(|c| c.parent) {
            if parent == root {
                return true;
            }
            at = parent;
        }
        false
    };
    places.iter().copied().filter(|&(c, _)| inside(c)).collect()
}

/// The node of `body` at candidate `root` of its scan (the whole body
/// for `None`) and the places of `places` inside it, as a tree (`None`
/// if the candidate is not in the body).
fn replaced_in<'b>(
    body: &'b MemoBody,
    root: Option<usize>,
    places: &[Place<'b>],
) -> Option<(&'b Value, Replaced<'b>)> {
    let scan = body.scan();
    let path = |c: usize| {
        scan.candidates
            .get(c)
            .and_then(|c| scan.paths.get(c.path.0..c.path.1))
    };
    let base = match root {
        Some(root) => path(root)?,
        None => &[],
    };
    let node = super::node_at(body.body(), base)?;
    let mut replaced = Replaced::default();
    for &(candidate, target) in places {
        if let Some(rest) = path(candidate).and_then(|p| p.get(base.len()..)) {
            replaced.insert(rest, target);
        }
    }
    Some((node, replaced))
}

/// A copy of `body` (or of its scan's candidate `root`) with the `places`
/// inside it made `$ref`s (`None` if the candidate is not in the body).
pub(super) fn body_copy(
    body: &MemoBody,
    root: Option<usize>,
    places: &[Place<'_>],
) -> Option<Value> {
    let (node, replaced) = replaced_in(body, root, places)?;
    Some(copy_replaced(node, Some(&replaced)))
}

/// The text and nesting of [`body_copy`]`(body, root, places)`, written
/// straight from the body.
fn body_text(body: &MemoBody, root: Option<usize>, places: &[Place<'_>]) -> Option<BodyCopy> {
    thread_local! {
        // Copies run to hundreds of kilobytes: written into a buffer kept
        // per thread, then copied once into a block of their exact size.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let (node, replaced) = replaced_in(body, root, places)?;
    BUFFER.with_borrow_mut(|buffer| {
        buffer.clear();
        let nesting = write_replaced(buffer, node, Some(&replaced));
        // Only whole UTF-8 strings and ASCII are written.
        let text = std::str::from_utf8(buffer).ok()?;
        Some(BodyCopy {
            text: Box::from(text),
            nesting,
        })
    })
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
        .filter_map(|(name, body)| Some((name.clone(), copies.copy(body, None, &[])?)))
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
    use serde_json::json;

    #[test]
    fn signatures_tell_apart_lists_whose_targets_hold_the_separators() {
        let lists: [&[Place<'_>]; 5] = [
            &[(1, "#/$defs/a;2:10:#/$defs/b")],
            &[(1, "#/$defs/a"), (2, "#/$defs/b")],
            &[(12, "#/$defs/a")],
            &[(1, "2:#/$defs/a")],
            &[],
        ];
        for (i, a) in lists.iter().enumerate() {
            for b in &lists[i + 1..] {
                assert_ne!(signature(a), signature(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn places_under_a_candidate_are_those_nested_in_it() {
        let big = |d: &str| {
            json!({"type": "object", "description": d.repeat(40),
            "properties": {"x": {"type": "string", "description": d.repeat(40)}}})
        };
        let body = json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"inner": big("i")}, "description": "a".repeat(40)},
            "b": big("b")}});
        let scan = BodyScan::of(&body);
        let index = |name: &str| {
            (0..scan.candidates.len())
                .find(|&c| {
                    let p = &scan.paths[scan.candidates[c].path.0..scan.candidates[c].path.1];
                    p.last() == Some(&OwnedSeg::Key(name.to_string()))
                })
                .unwrap()
        };
        let (a, inner, b) = (index("a"), index("inner"), index("b"));
        let mut places = vec![(a, "#/$defs/a"), (inner, "#/$defs/i"), (b, "#/$defs/b")];
        places.sort_unstable();
        assert_eq!(places_under(&scan, a, &places), vec![(inner, "#/$defs/i")]);
        assert!(places_under(&scan, b, &places).is_empty());
        assert!(places_under(&scan, inner, &places).is_empty());
    }

    #[test]
    fn written_copies_read_as_the_copies_and_nest_as_deep() {
        let deep = json!({"type": "array", "items": {"type": "array", "items": {"allOf": [{"x": [[1]]}]}}});
        let body = json!({"type": "object", "properties": {
            "deep": deep, "list": {"oneOf": [{"type": "string"}, deep, {"n": 1.5, "s": "q\"\n"}]},
            "kept": {"enum": [null, true, false, -3]}}});
        let seg = |k: &str| OwnedSeg::Key(k.to_string());
        let paths = [
            vec![seg("properties"), seg("deep")],
            vec![
                seg("properties"),
                seg("list"),
                seg("oneOf"),
                OwnedSeg::Index(1),
            ],
            vec![
                seg("properties"),
                seg("list"),
                seg("oneOf"),
                OwnedSeg::Index(2),
                seg("s"),
            ],
        ];
        let targets = ["#/$defs/d\"eep", "#/$defs/l", "#/$defs/s"];
        // No places, each place alone, and all of them.
        let mut sets: Vec<Vec<usize>> = vec![vec![], vec![0, 1, 2]];
        sets.extend((0..3).map(|i| vec![i]));
        for set in sets {
            let mut replaced = Replaced::default();
            for &i in &set {
                replaced.insert(&paths[i], targets[i]);
            }
            let copy = copy_replaced(&body, Some(&replaced));
            let mut text = Vec::new();
            let nesting = write_replaced(&mut text, &body, Some(&replaced));
            assert_eq!(
                String::from_utf8(text).unwrap(),
                serde_json::to_string(&copy).unwrap(),
                "{set:?}"
            );
            assert_eq!(nesting, crate::schema::nesting(&copy), "{set:?}");
        }
    }
}
