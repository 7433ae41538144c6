//! Repeated subschemas of one tool schema, moved into `$defs`.
//!
//! Large APIs inline the same component many times inside one operation
//! (Cloudflare's Access application bodies repeat their rule schemas dozens
//! of times), and every client downloads each tool schema on `tools/list`.
//! [`share_repeated`] keeps one copy of each repeated subschema of at least
//! [`MIN_SHARED_BYTES`] in the root's `$defs` and points the occurrences at
//! it with `$ref`, when that makes the schema smaller. Only schema
//! positions are shared (`properties/*`, `items`, `oneOf/*`, …), never data
//! (`enum`, `default`, `const`, `examples`). [`inline_shared`] undoes it
//! for consumers that compare or render whole schemas.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

// Fx hashing: deterministic, and far cheaper than SipHash on the many
// small keys and subtree hashes of a walk (no map here is iterated in an
// order that reaches the output).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet, FxHasher};

use serde_json::Value;

use super::MemoBody;
// Encoded length of a JSON string (quotes and escapes included), with no
// allocation: it runs for every key and string of every schema.
use crate::json_text::str_len as string_len;
use crate::naming::snake;
use crate::refs::{Ctx, schema_child_ctx};
use crate::small_map;

#[path = "share_memo.rs"]
mod memo;
#[path = "share_view.rs"]
mod view;
pub(crate) use memo::fill_defs;
pub use memo::fill_memo_bodies;
pub(crate) use memo::{BodyCopies, Placed, nesting_placed, place_memo_bodies};
pub(crate) use memo::{BodyScan, EqualPairs};
use memo::{Origin, Place, body_copy, places_under, reference};
#[cfg(test)]
use view::view_by_expansion;
pub(crate) use view::written_refs;
pub use view::{DefBody, SharedView, inline_shared, kept_defs};

/// Smallest encoded subschema worth sharing, in bytes.
pub const MIN_SHARED_BYTES: usize = 128;

/// Smallest encoded subschema of an input schema worth sharing: below
/// this a `$ref` (`{"$ref":"#/$defs/x"}`, 20 bytes) cannot be shorter.
/// Input schemas are listed to every client, so every byte shared counts
/// (on the Cloudflare release, ~20 KB of repeated small subschemas);
/// output schemas keep [`MIN_SHARED_BYTES`], which their memo bodies are
/// scanned with.
pub const MIN_INPUT_SHARED_BYTES: usize = 20;

/// Longest `$defs` name derived from a title or property name.
const MAX_NAME_CHARS: usize = 48;

/// One step of a path from the root to a subschema (borrowing the key:
/// the scan records a path for every sizeable subschema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// A [`Seg`] that outlives the borrow of the schema (to replace it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum OwnedSeg {
    Key(String),
    Index(usize),
}

impl OwnedSeg {
    fn as_seg(&self) -> Seg<'_> {
        match self {
            OwnedSeg::Key(k) => Seg::Key(k),
            OwnedSeg::Index(i) => Seg::Index(*i),
        }
    }
}

fn owned(path: &[Seg<'_>]) -> Vec<OwnedSeg> {
    path.iter()
        .map(|s| match s {
            Seg::Key(k) => OwnedSeg::Key((*k).to_string()),
            Seg::Index(i) => OwnedSeg::Index(*i),
        })
        .collect()
}

/// A subschema that may be replaced by a `$ref`; its position in the
/// scan's list is its place in document order (post-order).
#[derive(Debug)]
struct Candidate<'a> {
    /// The subschema (`None`: found by its path, see [`Scan::node`]).
    node: Option<&'a Value>,
    /// Its path: `Scan::paths[path.0..path.1]`, then `rest`.
    path: (usize, usize),
    /// For one taken from a memo body's scan, its path in the body (the
    /// body's `$defs` entry is `path`, written once per body, not once
    /// per candidate); empty otherwise.
    rest: &'a [OwnedSeg],
    size: usize,
    hash: u64,
    /// The nearest candidate enclosing it.
    parent: Option<usize>,
    /// For one taken from a memo body's scan: the body's id and its
    /// index there (see [`EqualPairs`]).
    origin: Option<Origin>,
}

/// What a value is, for the walk: a subschema (replaceable by a `$ref` or
/// not), a map or list of subschemas, or data.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Schema { replaceable: bool },
    Named { replaceable: bool },
    List,
    Data,
}

impl Kind {
    /// The kind of `value` under keyword `key` of a value of this kind.
    fn of_member(self, key: &str, value: &Value) -> Kind {
        match self {
            Kind::Schema { .. } => match (schema_child_ctx(key), value) {
                (Ctx::Schema, _) => Kind::Schema { replaceable: true },
                (Ctx::SchemaList, Value::Array(_)) => Kind::List,
                // A `$defs` entry is a definition, not an occurrence.
                (Ctx::SchemaMap, Value::Object(_)) => Kind::Named {
                    replaceable: key != "$defs",
                },
                _ => Kind::Data,
            },
            Kind::Named { replaceable } => Kind::Schema { replaceable },
            Kind::List | Kind::Data => Kind::Data,
        }
    }

    /// The kind of the items of an array of this kind.
    fn of_item(self) -> Kind {
        match self {
            Kind::List => Kind::Schema { replaceable: true },
            _ => Kind::Data,
        }
    }
}

/// Walks a schema, computing each node's encoded size and a structural
/// hash bottom-up (one pass), and collects the replaceable subschemas.
#[derive(Default)]
struct Scan<'a> {
    /// The schema walked (where [`Scan::node`] looks candidates up).
    root: Option<&'a Value>,
    /// Root `$defs` entries that are memo bodies, by name: their scan, id
    /// and body (the schema holds a placeholder). Their candidates are
    /// copied from the scan instead of walked.
    bodies: HashMap<&'a str, (&'a BodyScan, u64, &'a Value)>,
    candidates: Vec<Candidate<'a>>,
    /// The path of the node being visited.
    path: Vec<Seg<'a>>,
    /// Every candidate's path, one after another (one allocation, not
    /// one per candidate).
    paths: Vec<Seg<'a>>,
    /// Candidates whose enclosing candidate is not known yet, in order.
    open: Vec<usize>,
    /// Smallest encoded subschema recorded as a candidate.
    min_bytes: usize,
}

/// Feeds the text of a scalar to a hasher and counts its bytes (no
/// allocation: a number is formatted straight into it).
struct ScalarText<'h> {
    hasher: &'h mut FxHasher,
    len: usize,
}

impl std::fmt::Write for ScalarText<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.hasher.write(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

impl<'a> Scan<'a> {
    /// `(hash, encoded size)` of `v`, recording it as a candidate when it is
    /// a replaceable subschema worth sharing.
    fn visit(&mut self, v: &'a Value, kind: Kind) -> (u64, usize) {
        if !self.bodies.is_empty()
            && matches!(kind, Kind::Schema { replaceable: false })
            && let [Seg::Key("$defs"), Seg::Key(name)] = self.path[..]
            && let Some(&(body, id, _)) = self.bodies.get(name)
        {
            return self.splice(body, id);
        }
        let first = self.candidates.len();
        let mut h = FxHasher::default();
        let size = match v {
            Value::Object(map) => {
                5u8.hash(&mut h);
                let mut size = 2 + map.len().saturating_sub(1);
                for (k, child) in map {
                    k.hash(&mut h);
                    self.path.push(Seg::Key(k));
                    let (ch, cs) = self.visit(child, kind.of_member(k, child));
                    self.path.pop();
                    ch.hash(&mut h);
                    size += string_len(k) + 1 + cs;
                }
                size
            }
            Value::Array(items) => {
                4u8.hash(&mut h);
                let mut size = 2 + items.len().saturating_sub(1);
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(i));
                    let (ch, cs) = self.visit(item, kind.of_item());
                    self.path.pop();
                    ch.hash(&mut h);
                    size += cs;
                }
                size
            }
            Value::String(text) => {
                3u8.hash(&mut h);
                text.hash(&mut h);
                string_len(text)
            }
            leaf => {
                let mut text = ScalarText {
                    hasher: &mut h,
                    len: 0,
                };
                // Writing to `ScalarText` cannot fail.
                let _ = std::fmt::Write::write_fmt(&mut text, format_args!("{leaf}"));
                text.len
            }
        };
        let hash = h.finish();
        if matches!(kind, Kind::Schema { replaceable: true })
            && v.is_object()
            && size >= self.min_bytes
        {
            let index = self.candidates.len();
            // Candidates found inside this one and not yet placed are its
            // children (post-order: they are the last ones opened).
            while let Some(&child) = self.open.last()
                && child >= first
            {
                self.candidates[child].parent = Some(index);
                self.open.pop();
            }
            self.open.push(index);
            let start = self.paths.len();
            self.paths.extend_from_slice(&self.path);
            self.candidates.push(Candidate {
                node: Some(v),
                path: (start, self.paths.len()),
                rest: &[],
                size,
                hash,
                parent: None,
                origin: None,
            });
        }
        (hash, size)
    }

    /// Takes the candidates of a root `$defs` entry from the scan of the
    /// memo body it holds a placeholder for: walking the body would find
    /// the same ones. Those at the top of the body stay without a parent
    /// (nothing encloses a root `$defs` entry), as the walk leaves them.
    fn splice(&mut self, body: &'a BodyScan, id: u64) -> (u64, usize) {
        let base = self.candidates.len();
        let start = self.paths.len();
        self.paths.extend_from_slice(&self.path);
        let entry = (start, self.paths.len());
        for (i, c) in body.candidates.iter().enumerate() {
            self.candidates.push(Candidate {
                node: None,
                path: entry,
                rest: body.paths.get(c.path.0..c.path.1).unwrap_or_default(),
                size: c.size,
                hash: c.hash,
                parent: c.parent.map(|p| base + p),
                origin: Some((id, i)),
            });
        }
        (body.hash, body.size)
    }

    /// The subschema of `candidate` (in its memo body for one copied from
    /// a body's scan: the schema holds a placeholder there).
    fn node(&self, candidate: usize) -> Option<&'a Value> {
        if let Some(node) = self.candidates[candidate].node {
            return Some(node);
        }
        let (start, path) = match self.path(candidate) {
            [Seg::Key("$defs"), Seg::Key(name), rest @ ..] => (self.bodies.get(name)?.2, rest),
            path => (self.root?, path),
        };
        let at = path.iter().try_fold(start, |v, seg| match (seg, v) {
            (Seg::Key(k), Value::Object(map)) => small_map::get(map, k),
            (Seg::Index(i), Value::Array(items)) => items.get(*i),
            _ => None,
        })?;
        node_at(at, self.candidates[candidate].rest)
    }

    /// The path of `candidate`, without its `rest` in a memo body.
    fn path(&self, candidate: usize) -> &[Seg<'a>] {
        let (start, end) = self.candidates[candidate].path;
        &self.paths[start..end]
    }

    /// The whole path of `candidate` from the root.
    fn full_path(&self, candidate: usize) -> Vec<Seg<'a>> {
        let rest = self.candidates[candidate].rest.iter().map(OwnedSeg::as_seg);
        self.path(candidate).iter().copied().chain(rest).collect()
    }

    /// Whether `candidate` or a candidate enclosing it is `removed`.
    fn within(&self, candidate: usize, removed: &[bool]) -> bool {
        let mut at = Some(candidate);
        while let Some(c) = at {
            if removed[c] {
                return true;
            }
            at = self.candidates[c].parent;
        }
        false
    }
}

fn node_mut<'v>(root: &'v mut Value, path: &[OwnedSeg]) -> Option<&'v mut Value> {
    path.iter().try_fold(root, |v, seg| match seg {
        OwnedSeg::Key(k) => match v {
            Value::Object(map) => small_map::get_mut(map, k),
            _ => None,
        },
        OwnedSeg::Index(i) => v.get_mut(*i),
    })
}

/// A `$defs` name for a subschema: its title, else the nearest property
/// (or definition) name on its path, as lower-case `[a-z0-9_]`.
fn base_name(schema: &Value, path: &[Seg<'_>]) -> String {
    let from_path = || {
        path.windows(2).rev().find_map(|w| match w {
            [Seg::Key(kw), Seg::Key(name)]
                if matches!(*kw, "properties" | "$defs" | "patternProperties") =>
            {
                Some(*name)
            }
            _ => None,
        })
    };
    let raw = schema
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty() && t.chars().count() <= MAX_NAME_CHARS)
        .or_else(from_path)
        .unwrap_or("schema");
    let mut name = snake(raw);
    // Cut at a char boundary (snake output is ASCII) without a trailing `_`.
    name.truncate(MAX_NAME_CHARS);
    let name = name.trim_end_matches('_');
    if name.is_empty() {
        "schema".to_string()
    } else {
        name.to_string()
    }
}

/// A chosen subschema: its `$defs` name and every occurrence to replace.
struct Shared {
    name: String,
    size: usize,
    /// Every occurrence; the first one's content becomes the definition.
    occurrences: Vec<Occurrence>,
}

/// Where an occurrence of a chosen subschema is.
enum Occurrence {
    /// In the schema itself, at this path.
    Root(Vec<OwnedSeg>),
    /// In memo body `body` (its index in the bodies), at candidate
    /// `candidate` of the body's scan.
    Body { body: usize, candidate: usize },
}

/// The repeated subschemas of `schema` worth sharing, each with every
/// occurrence to replace; `bodies` are the memo bodies of root `$defs`
/// placeholders.
fn choose(schema: &Value, bodies: &[(String, MemoBody)], min_bytes: usize) -> Vec<Shared> {
    let mut scan = Scan {
        root: Some(schema),
        min_bytes,
        bodies: bodies
            .iter()
            .map(|(n, b)| (n.as_str(), (b.scan(), b.id(), b.body())))
            .collect(),
        ..Scan::default()
    };
    scan.visit(schema, Kind::Schema { replaceable: false });
    let pairs = bodies.first().map(|(_, b)| b.equal_pairs());
    let body_index: HashMap<u64, usize> = bodies
        .iter()
        .enumerate()
        .map(|(i, (_, b))| (b.id(), i))
        .collect();
    let candidates = &scan.candidates;
    let mut groups: HashMap<(u64, usize), Vec<usize>> = HashMap::default();
    for (i, c) in candidates.iter().enumerate() {
        groups.entry((c.hash, c.size)).or_default().push(i);
    }
    // Each group is in document order already (candidates are).
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() >= 2).collect();
    // Largest first, then document order of the first occurrence: stable.
    groups.sort_by_key(|g| (std::cmp::Reverse(candidates[g[0]].size), g[0]));

    let mut used: HashSet<String> = schema
        .get("$defs")
        .and_then(Value::as_object)
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default();
    // Occurrences that disappear (all but the kept copy of each choice).
    let mut removed = vec![false; candidates.len()];
    let mut chosen: Vec<Shared> = Vec::new();
    for group in &groups {
        let Some(first) = scan.node(group[0]) else {
            continue;
        };
        // Equal hashes are checked for equal content (once per pair of memo
        // body subschemas).
        let first_origin = candidates[group[0]].origin;
        let live: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&c| !scan.within(c, &removed))
            .filter(|&c| {
                let pair = pairs.zip(first_origin).zip(candidates[c].origin);
                if let Some(((pairs, a), b)) = pair
                    && (a == b || pairs.known(a, b))
                {
                    return true;
                }
                let equal = scan
                    .node(c)
                    .is_some_and(|n| std::ptr::eq(n, first) || crate::small_map::equal(n, first));
                if equal && let Some(((pairs, a), b)) = pair {
                    pairs.record(a, b);
                }
                equal
            })
            .collect();
        if live.len() < 2 {
            continue;
        }
        let base = base_name(first, &scan.full_path(group[0]));
        let mut name = base.clone();
        let mut n = 2;
        while used.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        let reference = string_len(&format!("#/$defs/{name}")) + 10;
        let entry = string_len(&name) + 2;
        let size = candidates[group[0]].size;
        let gain = (live.len() - 1) * size;
        let cost = live.len() * reference + entry;
        if gain <= cost {
            continue;
        }
        used.insert(name.clone());
        for &c in live.iter().skip(1) {
            removed[c] = true;
        }
        chosen.push(Shared {
            name,
            size,
            occurrences: live
                .iter()
                .map(|&c| match candidates[c].origin {
                    Some((id, candidate)) if let Some(&body) = body_index.get(&id) => {
                        Occurrence::Body { body, candidate }
                    }
                    _ => Occurrence::Root(owned(&scan.full_path(c))),
                })
                .collect(),
        });
    }
    chosen
}

/// Moves subschemas repeated within `schema` into its root `$defs` when it
/// makes the encoded schema smaller; returns how many definitions it added.
/// The result validates exactly the same instances.
pub fn share_repeated(schema: &mut Value) -> usize {
    share_repeated_with(schema, &[])
}

/// [`share_repeated`] for a tool's input schema: subschemas down to
/// [`MIN_INPUT_SHARED_BYTES`] are shared.
pub fn share_repeated_input(schema: &mut Value) -> usize {
    share(schema, &[], None, MIN_INPUT_SHARED_BYTES).0
}

/// [`share_repeated`] of a schema whose root `$defs` entries named in
/// `bodies` are placeholders for those memo bodies (as a converter's
/// [`into_defs_and_memo_bodies`](super::SchemaConverter::into_defs_and_memo_bodies)
/// leaves them): what is in them is learnt from the memo, not walked again,
/// and each is copied in without the parts that become `$ref`s.
pub fn share_repeated_with(schema: &mut Value, bodies: &[(String, MemoBody)]) -> usize {
    share(schema, bodies, None, MIN_SHARED_BYTES).0
}

/// [`share_repeated_with`] that leaves the placeholders of the memo bodies
/// in place, and gives each body's copy (as it would have filled it in)
/// from `copies`: the schema is then written with
/// [`write_placed`](crate::json_text::write_placed).
pub(crate) fn share_repeated_placed(
    schema: &mut Value,
    bodies: &[(String, MemoBody)],
    copies: &BodyCopies,
) -> Placed {
    share(schema, bodies, Some(copies), MIN_SHARED_BYTES).1
}

/// [`share_repeated_with`], the bodies filled in (`copies` is `None`) or
/// placed; returns the definitions added and the bodies placed.
fn share(
    schema: &mut Value,
    bodies: &[(String, MemoBody)],
    copies: Option<&BodyCopies>,
    min_bytes: usize,
) -> (usize, Placed) {
    let mut placed = Placed::new();
    debug_assert!(
        bodies.iter().all(|(name, _)| {
            schema.get("$defs").and_then(|d| d.get(name)) == Some(&Value::Null)
        })
    );
    if !schema.is_object() {
        return (0, placed);
    }
    let mut chosen = choose(schema, bodies, min_bytes);
    // Smallest first: a larger definition then holds the `$ref`s of the
    // smaller ones nested in it, and no path in use has been replaced yet.
    chosen.sort_by_key(|s| s.size);
    let targets: Vec<String> = chosen
        .iter()
        .map(|s| format!("#/$defs/{}", s.name))
        .collect();
    // The places of each memo body that become `$ref`s: (candidate of its
    // scan, target).
    let mut places: Vec<Vec<Place<'_>>> = vec![Vec::new(); bodies.len()];
    // Each definition's content: moved out of the schema, or a place in a
    // memo body (copied once every replacement is known).
    enum Content {
        Moved(Value),
        InBody(usize, usize),
    }
    let mut contents: Vec<(&str, Content)> = Vec::new();
    for (s, target) in chosen.iter().zip(&targets) {
        let mut content = None;
        for occurrence in &s.occurrences {
            match occurrence {
                &Occurrence::Body { body, candidate } => {
                    places[body].push((candidate, target));
                    content.get_or_insert(Content::InBody(body, candidate));
                }
                Occurrence::Root(path) => {
                    if let Some(slot) = node_mut(schema, path) {
                        // The first occurrence becomes the definition
                        // (moved, not copied: the others are equal).
                        let was = std::mem::replace(slot, reference(target));
                        content.get_or_insert(Content::Moved(was));
                    }
                }
            }
        }
        if let Some(content) = content {
            contents.push((s.name.as_str(), content));
        }
    }
    for body in &mut places {
        body.sort_unstable();
    }
    let mut defs: BTreeMap<String, Value> = BTreeMap::new();
    for (name, content) in contents {
        let value = match content {
            Content::Moved(value) => value,
            Content::InBody(b, candidate) => {
                let body = &bodies[b].1;
                let under = places_under(body.scan(), candidate, &places[b]);
                match copies {
                    Some(copies) => match copies.copy(body, Some(candidate), &under) {
                        Some(copy) => {
                            placed.push((name.to_string(), copy));
                            Value::Null
                        }
                        None => continue,
                    },
                    None => match body_copy(body, Some(candidate), &under) {
                        Some(value) => value,
                        None => continue,
                    },
                }
            }
        };
        defs.insert(name.to_string(), value);
    }
    let added = defs.len();
    if let Value::Object(root) = schema
        && (added > 0 || !bodies.is_empty())
    {
        let mut all: BTreeMap<String, Value> = match root.shift_remove("$defs") {
            Some(Value::Object(existing)) => existing.into_iter().collect(),
            _ => BTreeMap::new(),
        };
        for ((name, body), places) in bodies.iter().zip(&places) {
            if let Some(slot) = all.get_mut(name) {
                match copies {
                    Some(copies) => placed.extend(
                        copies
                            .copy(body, None, places)
                            .map(|copy| (name.clone(), copy)),
                    ),
                    None => *slot = body_copy(body, None, places).unwrap_or(Value::Null),
                }
            }
        }
        all.extend(defs);
        root.insert("$defs".into(), Value::Object(all.into_iter().collect()));
    }
    (added, placed)
}

/// The value at `path` under `node`.
fn node_at<'v>(node: &'v Value, path: &[OwnedSeg]) -> Option<&'v Value> {
    path.iter().try_fold(node, |v, seg| match (seg, v) {
        (OwnedSeg::Key(k), Value::Object(map)) => small_map::get(map, k),
        (OwnedSeg::Index(i), Value::Array(items)) => items.get(*i),
        _ => None,
    })
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
