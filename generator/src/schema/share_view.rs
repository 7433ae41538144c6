//! Reading a shared schema as if its shared parts were inlined again:
//! [`inline_shared`] undoes [`share_repeated`](super::share_repeated), and
//! [`SharedView`] reads the `$defs` it would inline without building the
//! (far larger) expansion.

use std::borrow::Cow;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::{Map, Value};

use crate::schema::MemoBody;
use crate::schema::cycles::tarjan;
use crate::small_map;

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

/// The `$defs` names `$ref`s in a value name, each with whether a
/// `$ref`-only object names it, once each (what the walks of a view find
/// in a definition, kept with a memo body).
pub(crate) fn written_refs(v: &Value) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    borrowed_refs(v, &mut found);
    found
        .into_iter()
        .map(|(n, pure)| (n.to_string(), pure))
        .collect()
}

/// [`written_refs`], borrowed and added to `out`.
fn borrowed_refs<'v>(v: &'v Value, out: &mut Vec<(&'v str, bool)>) {
    fn walk<'v>(v: &'v Value, out: &mut Vec<(&'v str, bool)>) {
        match v {
            Value::Object(m) => {
                if let Some(name) = def_ref(m) {
                    out.push((name, m.len() == 1));
                }
                m.values().for_each(|c| walk(c, out));
            }
            Value::Array(items) => items.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    walk(v, out);
    out.sort_unstable();
    out.dedup();
}

/// A body standing in a root `$defs` entry that holds a placeholder, with
/// the references written in it when they are known already.
#[derive(Debug, Clone, Copy)]
pub struct DefBody<'a> {
    /// The entry's name.
    pub name: &'a str,
    /// The body.
    pub body: &'a Value,
    /// Its [`written_refs`], if known.
    pub refs: Option<&'a [(String, bool)]>,
}

/// A schema's root `$defs` entries in order, by name.
type Defs<'a> = [(&'a str, &'a Value)];

/// The root `$defs` entries of `defs` as a list.
fn listed(defs: &Map<String, Value>) -> Vec<(&str, &Value)> {
    defs.iter().map(|(k, v)| (k.as_str(), v)).collect()
}

/// Names of `$defs` entries that reach themselves through `$ref`s: those
/// in a strongly connected component of two or more, or referring to
/// themselves (references to names not in `defs` lead nowhere); `refs`
/// are each entry's written references.
fn recursive_defs<'a>(defs: &Defs<'a>, refs: &[Vec<(&str, bool)>]) -> HashSet<&'a str> {
    let position: HashMap<&str, usize> =
        defs.iter().enumerate().map(|(i, (k, _))| (*k, i)).collect();
    let edges: Vec<Vec<usize>> = refs
        .iter()
        .map(|names| {
            let mut to: Vec<usize> = names
                .iter()
                .filter_map(|(n, _)| position.get(n).copied())
                .collect();
            to.sort_unstable();
            to.dedup();
            to
        })
        .collect();
    let (scc, count) = tarjan(&edges);
    let mut sizes = vec![0usize; count];
    for &c in &scc {
        sizes[c] += 1;
    }
    defs.iter()
        .enumerate()
        .filter(|&(i, _)| sizes[scc[i]] > 1 || edges[i].binary_search(&i).is_ok())
        .map(|(_, (k, _))| *k)
        .collect()
}

/// Each of `defs`' written references (see [`written_refs`]).
fn refs_of<'a>(defs: &Defs<'a>) -> Vec<Vec<(&'a str, bool)>> {
    defs.iter()
        .map(|(_, v)| {
            let mut found = Vec::new();
            borrowed_refs(v, &mut found);
            found
        })
        .collect()
}

/// The names of the `defs` entries that reach themselves, and the other
/// entries by name (those [`inline_shared`] puts in place of a `$ref`).
fn by_recursion<'a>(
    defs: &Defs<'a>,
    refs: &[Vec<(&str, bool)>],
) -> (HashSet<&'a str>, HashMap<&'a str, &'a Value>) {
    let recursive = recursive_defs(defs, refs);
    let expandable = defs
        .iter()
        .filter(|(k, _)| !recursive.contains(k))
        .copied()
        .collect();
    (recursive, expandable)
}

/// `schema` with every `$ref` to a non-recursive root `$defs` entry
/// replaced by that entry (and those entries dropped): the inverse of
/// [`share_repeated`](super::share_repeated). Recursive definitions stay as they are.
pub fn inline_shared(schema: &Value) -> Cow<'_, Value> {
    let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
        return Cow::Borrowed(schema);
    };
    let listed = listed(defs);
    let (recursive, expandable) = by_recursion(&listed, &refs_of(&listed));
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
        d.retain(|k, _| recursive.contains(k.as_str()) || still.contains(k));
        if d.is_empty()
            && let Value::Object(root) = &mut out
        {
            root.shift_remove("$defs");
        }
    }
    Cow::Owned(out)
}

/// The root `$defs` entries of `root` that stay named when it is read
/// inlined (recursive ones, and those a `$ref` with siblings names), in
/// order, each with whether a `$ref` alone still reads it in place (it is
/// not recursive), `bodies` standing in their placeholders: what the
/// TypeScript declaration of an output names as types, decided on the
/// schema before sharing, so a shared part on a circle is not named per
/// tool. Read back by [`SharedView::keeping`] on the shared schema.
pub fn kept_defs(root: &Value, bodies: &[(String, MemoBody)]) -> Vec<(String, bool)> {
    let placed: Vec<DefBody<'_>> = bodies.iter().map(|(n, b)| b.def_body(n)).collect();
    if let Some(view) = SharedView::with_bodies(root, &placed) {
        return view
            .kept
            .iter()
            .map(|(k, _)| ((*k).to_owned(), view.expandable.contains_key(k)))
            .collect();
    }
    let mut whole = root.clone();
    super::fill_memo_bodies(&mut whole, bodies);
    let Some(Value::Object(defs)) = whole.get("$defs") else {
        return Vec::new();
    };
    let listed = listed(defs);
    let (recursive, _) = by_recursion(&listed, &refs_of(&listed));
    match inline_shared(&whole).get("$defs") {
        Some(Value::Object(kept)) => kept
            .keys()
            .map(|k| (k.clone(), !recursive.contains(k.as_str())))
            .collect(),
        _ => Vec::new(),
    }
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
        Self::build(schema, &[], true)
    }

    /// The view of `root` whose root `$defs` entries named in `bodies`
    /// are placeholders for those bodies (as a converter leaves memo
    /// bodies): read as if each body stood in its place.
    pub fn with_bodies(root: &'a Value, bodies: &[DefBody<'a>]) -> Option<Self> {
        Self::build(root, bodies, true)
    }

    /// The view of `schema` that keeps the root `$defs` entries in `kept`
    /// (in that order; those marked `true` are still read in place of a
    /// `$ref` alone) and expands every other: a shared schema read as its
    /// unshared form was, with what that form kept (see [`kept_defs`]).
    /// Sharing makes no circle of its own (a repeated part holds no copy
    /// of itself), so every circle passes an entry not read in place and
    /// reading stops there.
    #[cfg(test)]
    pub fn keeping(schema: &'a Value, kept: &[(String, bool)]) -> Self {
        match schema.get("$defs") {
            Some(Value::Object(defs)) => {
                Self::keeping_defs(defs.iter().map(|(k, v)| (k.as_str(), v)), kept)
            }
            _ => SharedView::none(),
        }
    }

    /// [`SharedView::keeping`] of a schema whose root `$defs` entries are
    /// `defs` (read apart from the root, so that equal bodies of many
    /// schemas are one value).
    pub fn keeping_defs(
        defs: impl IntoIterator<Item = (&'a str, &'a Value)>,
        kept: &[(String, bool)],
    ) -> Self {
        let all: HashMap<&'a str, &'a Value> = defs.into_iter().collect();
        let stays = |k: &str| kept.iter().any(|(name, in_place)| name == k && !in_place);
        SharedView {
            kept: kept
                .iter()
                .filter_map(|(k, _)| all.get_key_value(k.as_str()))
                .map(|(&k, &v)| (k, v))
                .collect(),
            expandable: all.into_iter().filter(|(k, _)| !stays(k)).collect(),
        }
    }

    /// [`SharedView::with_bodies`], finding the kept entries by walking
    /// the expansion (`expanded`) or the text as written (when that gives
    /// the same).
    fn build(schema: &'a Value, bodies: &[DefBody<'a>], written: bool) -> Option<Self> {
        let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
            return Some(SharedView {
                expandable: HashMap::default(),
                kept: Vec::new(),
            });
        };
        let placed = |k: &str| bodies.iter().find(|b| b.name == k);
        let defs: Vec<(&str, &Value)> = defs
            .iter()
            .map(|(k, v)| (k.as_str(), placed(k).map_or(v, |b| b.body)))
            .collect();
        // The references in each entry: a body's are known already.
        let refs: Vec<Vec<(&str, bool)>> = defs
            .iter()
            .map(|&(k, v)| match placed(k).and_then(|b| b.refs) {
                Some(known) => known.iter().map(|(n, pure)| (n.as_str(), *pure)).collect(),
                None => {
                    let mut found = Vec::new();
                    borrowed_refs(v, &mut found);
                    found
                }
            })
            .collect();
        let (recursive, expandable) = by_recursion(&defs, &refs);
        let mut view = SharedView {
            expandable,
            kept: Vec::new(),
        };
        if view.expandable.is_empty() {
            // Nothing expands: the schema is read as it is, `$defs` whole.
            view.kept = defs;
            return Some(view);
        }
        let mut still: HashSet<&str> = HashSet::default();
        if written && view.longest_expansion(&defs, &refs) + 2 < MAX_EXPANSIONS {
            // Every `$defs` body is also read in place (as part of the
            // root), so the references left after expansion are the
            // unexpanded ones written anywhere in the schema: one walk of
            // the text as it is, not of its (far larger) expansion. The
            // bodies of placeholders are read from their references.
            view.unexpanded_refs(schema, &mut still, &mut Vec::new());
            for (i, &(k, _)) in defs.iter().enumerate() {
                if placed(k).is_some() {
                    let unexpanded = refs[i]
                        .iter()
                        .filter(|&&(n, pure)| !(pure && view.expandable.contains_key(n)));
                    still.extend(unexpanded.map(|&(n, _)| n));
                }
            }
        } else {
            let walked = std::iter::once(schema).chain(bodies.iter().map(|b| b.body));
            for v in walked {
                view.refs_after_expansion(v, 0, &mut still)?;
            }
        }
        view.kept = defs
            .into_iter()
            .filter(|(k, _)| recursive.contains(k) || still.contains(k))
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
    fn longest_expansion(&self, defs: &Defs<'a>, refs: &[Vec<(&'a str, bool)>]) -> usize {
        // Each expandable def's expandable references (the graph is
        // acyclic: expandable defs do not reach themselves).
        let mut edges: HashMap<&str, Vec<&str>> = HashMap::default();
        for (&(name, _), written) in defs.iter().zip(refs) {
            if self.expandable.contains_key(name) {
                let mut pure: Vec<&str> = written
                    .iter()
                    .filter(|&&(n, pure)| pure && self.expandable.contains_key(n))
                    .map(|&(n, _)| n)
                    .collect();
                pure.dedup();
                edges.insert(name, pure);
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
pub(super) fn view_by_expansion(schema: &Value) -> Option<SharedView<'_>> {
    SharedView::build(schema, &[], false)
}
