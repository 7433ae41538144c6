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

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

// Fx hashing: deterministic, and far cheaper than SipHash on the many
// small keys and subtree hashes of a walk (no map here is iterated in an
// order that reaches the output).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet, FxHasher};

use serde_json::{Map, Value};

use super::MemoBody;
use crate::naming::snake;
use crate::refs::{Ctx, schema_child_ctx};
use crate::small_map;

/// Smallest encoded subschema worth sharing, in bytes.
pub const MIN_SHARED_BYTES: usize = 128;

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
    /// Its path: `Scan::paths[path.0..path.1]`.
    path: (usize, usize),
    size: usize,
    hash: u64,
    /// The nearest candidate enclosing it.
    parent: Option<usize>,
    /// For one taken from a memo body's scan: the body's id and its
    /// index there (see [`EqualPairs`]).
    origin: Option<Origin>,
}

/// A candidate of a memo body: the body's id in its memo and the
/// candidate's index in the body's scan.
type Origin = (u64, usize);

/// Pairs of memo body subschemas found equal, kept with the memo: the same
/// bodies meet in many schemas of a catalogue, and their subschemas are
/// compared in full once, not once per schema.
#[derive(Debug, Default)]
pub(crate) struct EqualPairs(std::sync::Mutex<HashSet<(Origin, Origin)>>);

impl EqualPairs {
    fn key(a: Origin, b: Origin) -> (Origin, Origin) {
        if a <= b { (a, b) } else { (b, a) }
    }

    fn known(&self, a: Origin, b: Origin) -> bool {
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

    fn record(&self, a: Origin, b: Origin) {
        let mut pairs = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pairs.insert(Self::key(a, b));
    }
}

/// Encoded length of a JSON string (quotes and escapes included).
/// (No allocation: this runs for every key and string of every schema.)
fn string_len(s: &str) -> usize {
    let escapes: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 1,
            0..0x20 => 5,
            _ => 0,
        })
        .sum();
    s.len() + 2 + escapes
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
    /// Scans of root `$defs` entries known to equal a memo body, by name:
    /// their candidates are copied from there instead of walked.
    bodies: HashMap<&'a str, (&'a BodyScan, u64)>,
    candidates: Vec<Candidate<'a>>,
    /// The path of the node being visited.
    path: Vec<Seg<'a>>,
    /// Every candidate's path, one after another (one allocation, not
    /// one per candidate).
    paths: Vec<Seg<'a>>,
    /// Candidates whose enclosing candidate is not known yet, in order.
    open: Vec<usize>,
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
            && let Some(&(body, id)) = self.bodies.get(name)
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
            && size >= MIN_SHARED_BYTES
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
                size,
                hash,
                parent: None,
                origin: None,
            });
        }
        (hash, size)
    }

    /// Takes the candidates of a root `$defs` entry from the scan of the
    /// memo body it equals: the walk would find the same ones. Those at
    /// the top of the body stay without a parent (nothing encloses a root
    /// `$defs` entry), as the walk leaves them.
    fn splice(&mut self, body: &'a BodyScan, id: u64) -> (u64, usize) {
        let base = self.candidates.len();
        for (i, c) in body.candidates.iter().enumerate() {
            let start = self.paths.len();
            self.paths.extend_from_slice(&self.path);
            self.paths
                .extend(body.paths[c.path.0..c.path.1].iter().map(OwnedSeg::as_seg));
            self.candidates.push(Candidate {
                node: None,
                path: (start, self.paths.len()),
                size: c.size,
                hash: c.hash,
                parent: c.parent.map(|p| base + p),
                origin: Some((id, i)),
            });
        }
        (body.hash, body.size)
    }

    /// The subschema of `candidate`.
    fn node(&self, candidate: usize) -> Option<&'a Value> {
        if let Some(node) = self.candidates[candidate].node {
            return Some(node);
        }
        self.path(candidate)
            .iter()
            .try_fold(self.root?, |v, seg| match (seg, v) {
                (Seg::Key(k), Value::Object(map)) => small_map::get(map, k),
                (Seg::Index(i), Value::Array(items)) => items.get(*i),
                _ => None,
            })
    }

    fn path(&self, candidate: usize) -> &[Seg<'a>] {
        let (start, end) = self.candidates[candidate].path;
        &self.paths[start..end]
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
    occurrences: Vec<Vec<OwnedSeg>>,
}

/// What the walk of a `$defs` body finds, kept with a body that many
/// schemas hold (see [`MemoBody`]).
#[derive(Debug)]
pub(crate) struct BodyScan {
    hash: u64,
    size: usize,
    /// Candidates in the body, in walk order; parents index this list.
    candidates: Vec<BodyCandidate>,
    /// Candidate paths from the body, one after another.
    paths: Vec<OwnedSeg>,
}

#[derive(Debug)]
struct BodyCandidate {
    path: (usize, usize),
    size: usize,
    hash: u64,
    parent: Option<usize>,
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

/// The repeated subschemas of `schema` worth sharing, each with every
/// occurrence to replace; `bodies` are root `$defs` entries known to equal
/// a memo body.
fn choose(schema: &Value, bodies: &[(String, MemoBody)]) -> Vec<Shared> {
    let mut scan = Scan {
        root: Some(schema),
        bodies: bodies
            .iter()
            .map(|(n, b)| (n.as_str(), (b.scan(), b.id())))
            .collect(),
        ..Scan::default()
    };
    scan.visit(schema, Kind::Schema { replaceable: false });
    let pairs = bodies.first().map(|(_, b)| b.equal_pairs());
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
                    .is_some_and(|n| std::ptr::eq(n, first) || n == first);
                if equal && let Some(((pairs, a), b)) = pair {
                    pairs.record(a, b);
                }
                equal
            })
            .collect();
        if live.len() < 2 {
            continue;
        }
        let base = base_name(first, scan.path(group[0]));
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
            occurrences: live.iter().map(|&c| owned(scan.path(c))).collect(),
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

/// [`share_repeated`] of a schema whose root `$defs` entries named in
/// `bodies` equal those memo bodies (as a converter's
/// [`into_defs_and_memo_bodies`](super::SchemaConverter::into_defs_and_memo_bodies)
/// reports them): what is in them is learnt from the memo, not walked again.
pub fn share_repeated_with(schema: &mut Value, bodies: &[(String, MemoBody)]) -> usize {
    if !schema.is_object() {
        return 0;
    }
    debug_assert!(bodies.iter().all(|(name, body)| {
        schema.get("$defs").and_then(|d| d.get(name)) == Some(body.body())
    }));
    let mut chosen = choose(schema, bodies);
    if chosen.is_empty() {
        return 0;
    }
    // Smallest first: a larger definition then copies the `$ref`s of the
    // smaller ones nested in it, and no path in use has been replaced yet.
    chosen.sort_by_key(|s| s.size);
    let mut defs: BTreeMap<String, Value> = BTreeMap::new();
    for s in &chosen {
        let reference = Value::String(format!("#/$defs/{}", s.name));
        let mut body = None;
        for path in &s.occurrences {
            if let Some(slot) = node_mut(schema, path) {
                let mut r = Map::new();
                r.insert("$ref".into(), reference.clone());
                // The first occurrence becomes the definition (moved, not
                // copied: the others are equal).
                let was = std::mem::replace(slot, Value::Object(r));
                body.get_or_insert(was);
            }
        }
        if let Some(body) = body {
            defs.insert(s.name.clone(), body);
        }
    }
    let added = defs.len();
    if let Value::Object(root) = schema {
        let mut all: BTreeMap<String, Value> = match root.shift_remove("$defs") {
            Some(Value::Object(existing)) => existing.into_iter().collect(),
            _ => BTreeMap::new(),
        };
        all.extend(defs);
        root.insert("$defs".into(), Value::Object(all.into_iter().collect()));
    }
    added
}

/// The definition a `$ref` names, when it is `#/$defs/<name>`.
fn def_ref(v: &Map<String, Value>) -> Option<&str> {
    small_map::get(v, "$ref")?
        .as_str()?
        .strip_prefix("#/$defs/")
}

/// Adds the `$defs` names that `v` references to `out`.
fn collect_refs(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(name) = def_ref(m) {
                out.insert(name.to_string());
            }
            m.values().for_each(|c| collect_refs(c, out));
        }
        Value::Array(items) => items.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

/// Names of `$defs` entries that reach themselves through `$ref`s.
fn recursive_defs(defs: &Map<String, Value>) -> HashSet<String> {
    let edges: HashMap<&str, Vec<String>> = defs
        .iter()
        .map(|(k, v)| {
            let mut out = HashSet::default();
            collect_refs(v, &mut out);
            let mut out: Vec<String> = out.into_iter().collect();
            out.sort();
            (k.as_str(), out)
        })
        .collect();
    let mut recursive = HashSet::default();
    for start in defs.keys() {
        let mut seen: HashSet<&str> = HashSet::default();
        let mut stack: Vec<&str> = edges
            .get(start.as_str())
            .map(|e| e.iter().map(String::as_str).collect())
            .unwrap_or_default();
        while let Some(n) = stack.pop() {
            if n == start {
                recursive.insert(start.clone());
                break;
            }
            if seen.insert(n)
                && let Some(next) = edges.get(n)
            {
                stack.extend(next.iter().map(String::as_str));
            }
        }
    }
    recursive
}

/// The names of the `defs` entries that reach themselves, and the other
/// entries by name (those [`inline_shared`] puts in place of a `$ref`).
fn by_recursion(defs: &Map<String, Value>) -> (HashSet<String>, HashMap<&str, &Value>) {
    let recursive = recursive_defs(defs);
    let expandable = defs
        .iter()
        .filter(|(k, _)| !recursive.contains(*k))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    (recursive, expandable)
}

/// `schema` with every `$ref` to a non-recursive root `$defs` entry
/// replaced by that entry (and those entries dropped): the inverse of
/// [`share_repeated`]. Recursive definitions stay as they are.
pub fn inline_shared(schema: &Value) -> Cow<'_, Value> {
    let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
        return Cow::Borrowed(schema);
    };
    let (recursive, expandable) = by_recursion(defs);
    if expandable.is_empty() {
        return Cow::Borrowed(schema);
    }
    fn expand(v: &Value, defs: &HashMap<&str, &Value>, depth: usize) -> Value {
        match v {
            Value::Object(m) => {
                if depth < MAX_EXPANSIONS
                    && m.len() == 1
                    && let Some(body) = def_ref(m).and_then(|n| defs.get(n))
                {
                    return expand(body, defs, depth + 1);
                }
                Value::Object(
                    m.iter()
                        .map(|(k, c)| (k.clone(), expand(c, defs, depth)))
                        .collect(),
                )
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|c| expand(c, defs, depth)).collect())
            }
            other => other.clone(),
        }
    }
    let mut out = expand(schema, &expandable, 0);
    // A `$ref` with sibling keywords is not expanded: keep what it names.
    let mut still: HashSet<String> = HashSet::default();
    collect_refs(&out, &mut still);
    if let Some(Value::Object(d)) = out.get_mut("$defs") {
        d.retain(|k, _| recursive.contains(k) || still.contains(k));
        if d.is_empty()
            && let Value::Object(root) = &mut out
        {
            root.shift_remove("$defs");
        }
    }
    Cow::Owned(out)
}

/// The longest chain of expansions starting at `name` (itself included),
/// capped at [`MAX_EXPANSIONS`] (memoised in `longest`).
fn chain<'a>(
    name: &'a str,
    edges: &HashMap<&'a str, Vec<&'a str>>,
    longest: &mut HashMap<&'a str, usize>,
    depth: usize,
) -> usize {
    if let Some(&n) = longest.get(name) {
        return n;
    }
    if depth >= MAX_EXPANSIONS {
        return MAX_EXPANSIONS;
    }
    let mut n = 1;
    for next in edges.get(name).into_iter().flatten() {
        n = n.max(1 + chain(next, edges, longest, depth + 1));
    }
    let n = n.min(MAX_EXPANSIONS);
    longest.insert(name, n);
    n
}

/// Most nested expansions [`inline_shared`] performs on one path.
const MAX_EXPANSIONS: usize = 256;

/// [`inline_shared`] without building the inlined schema: which root
/// `$defs` entries a `$ref` stands for (to be read in its place), and
/// which entries the inlined schema keeps. A consumer that reads only part
/// of a schema (the TypeScript declarations read four levels) follows
/// references through it instead of copying every definition into place.
#[derive(Debug)]
pub struct SharedView<'a> {
    expandable: HashMap<&'a str, &'a Value>,
    /// The root `$defs` entries the inlined schema keeps, in order.
    pub kept: Vec<(&'a str, &'a Value)>,
}

impl<'a> SharedView<'a> {
    /// A view that expands nothing (a schema read as it is).
    pub fn none() -> Self {
        SharedView {
            expandable: HashMap::default(),
            kept: Vec::new(),
        }
    }

    /// The view of `schema`; `None` when a path nests expansions so deep
    /// that [`inline_shared`] stops expanding (read that one inlined).
    pub fn new(schema: &'a Value) -> Option<Self> {
        Self::build(schema, true)
    }

    /// [`SharedView::new`], finding the kept entries by walking the
    /// expansion (`expanded`) or the text as written (when that gives the
    /// same).
    fn build(schema: &'a Value, written: bool) -> Option<Self> {
        let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
            return Some(SharedView {
                expandable: HashMap::default(),
                kept: Vec::new(),
            });
        };
        let (recursive, expandable) = by_recursion(defs);
        let mut view = SharedView {
            expandable,
            kept: Vec::new(),
        };
        if view.expandable.is_empty() {
            // Nothing expands: the schema is read as it is, `$defs` whole.
            view.kept = defs.iter().map(|(k, v)| (k.as_str(), v)).collect();
            return Some(view);
        }
        let mut still: HashSet<&str> = HashSet::default();
        if written && view.longest_expansion(defs) + 2 < MAX_EXPANSIONS {
            // Every `$defs` body is also read in place (as part of the
            // root), so the references left after expansion are the
            // unexpanded ones written anywhere in the schema: one walk of
            // the text as it is, not of its (far larger) expansion.
            view.unexpanded_refs(schema, &mut still, &mut Vec::new());
        } else {
            view.refs_after_expansion(schema, 0, &mut still)?;
        }
        view.kept = defs
            .iter()
            .filter(|(k, _)| recursive.contains(*k) || still.contains(k.as_str()))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        Some(view)
    }

    /// The definition a `$ref`-only object at `expansions` nested
    /// expansions stands for, as [`inline_shared`] replaces it.
    pub fn expansion(&self, v: &Map<String, Value>, expansions: usize) -> Option<&'a Value> {
        if expansions < MAX_EXPANSIONS && v.len() == 1 {
            def_ref(v).and_then(|n| self.expandable.get(n).copied())
        } else {
            None
        }
    }

    /// Adds to `still` the `$defs` names that `v` refers to without being
    /// expanded, and to `pure` the expandable ones it refers to (each
    /// occurrence).
    fn unexpanded_refs(&self, v: &'a Value, still: &mut HashSet<&'a str>, pure: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(name) = def_ref(m) {
                    if m.len() == 1 && self.expandable.contains_key(name) {
                        pure.push(name);
                        return;
                    }
                    still.insert(name);
                }
                m.values()
                    .for_each(|c| self.unexpanded_refs(c, still, pure));
            }
            Value::Array(items) => items
                .iter()
                .for_each(|c| self.unexpanded_refs(c, still, pure)),
            _ => {}
        }
    }

    /// The most expansions nested on one path from any def (an upper
    /// bound of those from the root, whose references are defs' too),
    /// capped at [`MAX_EXPANSIONS`].
    fn longest_expansion(&self, defs: &'a Map<String, Value>) -> usize {
        // Each expandable def's expandable references (the graph is
        // acyclic: expandable defs do not reach themselves).
        let mut edges: HashMap<&str, Vec<&str>> = HashMap::default();
        let mut ignored = HashSet::default();
        for (name, body) in defs {
            if self.expandable.contains_key(name.as_str()) {
                let mut pure = Vec::new();
                self.unexpanded_refs(body, &mut ignored, &mut pure);
                pure.sort_unstable();
                pure.dedup();
                edges.insert(name.as_str(), pure);
            }
        }
        let mut longest: HashMap<&str, usize> = HashMap::default();
        let mut most = 0;
        for start in edges.keys() {
            most = most.max(chain(start, &edges, &mut longest, 0));
        }
        most
    }

    /// Adds the `$defs` names referenced in `v` once expanded to `out`;
    /// `None` past [`MAX_EXPANSIONS`].
    fn refs_after_expansion(
        &self,
        v: &'a Value,
        expansions: usize,
        out: &mut HashSet<&'a str>,
    ) -> Option<()> {
        match v {
            Value::Object(m) => {
                if let Some(body) = self.expansion(m, expansions) {
                    return self.refs_after_expansion(body, expansions + 1, out);
                }
                if expansions + 1 >= MAX_EXPANSIONS && def_ref(m).is_some() {
                    return None;
                }
                if let Some(name) = def_ref(m) {
                    out.insert(name);
                }
                m.values()
                    .try_for_each(|c| self.refs_after_expansion(c, expansions, out))
            }
            Value::Array(items) => items
                .iter()
                .try_for_each(|c| self.refs_after_expansion(c, expansions, out)),
            _ => Some(()),
        }
    }
}

/// [`SharedView::new`] walking the whole expansion (the reference the
/// faster walk of the written text is tested against).
#[cfg(test)]
fn view_by_expansion(schema: &Value) -> Option<SharedView<'_>> {
    SharedView::build(schema, false)
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
