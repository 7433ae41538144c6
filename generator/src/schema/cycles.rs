//! Reference cycles: which schemas (and other `$ref` targets) can reach
//! themselves through `$ref`s, computed once per document with an iterative
//! Tarjan SCC pass (no recursion, so deep reference chains are safe).
//!
//! Graph nodes are the components (`/components/<kind>/<name>`) plus every
//! other pointer some `$ref` targets (e.g. `/paths/...` or the inside of a
//! component); the edges of a node are the `$ref`s found in its subtree,
//! i.e. exactly what inlining it would follow.

use rustc_hash::FxHashMap as HashMap;

use rayon::prelude::*;

use serde_json::{Map, Value};

use crate::error::escape_token;
use crate::load::Document;
use crate::refs::{Ctx, child_ctx, resolve_ref};

/// The reference graph's cycle structure for one document.
#[derive(Debug, Clone, Default)]
pub struct Cycles {
    /// Graph node of each node pointer (component root or other target).
    index: HashMap<String, usize>,
    /// Node pointers, by node.
    names: Vec<String>,
    /// Strongly connected component of each node.
    scc: Vec<usize>,
    /// Whether each node is in a cycle (SCC of two or more, or a self-loop).
    recursive: Vec<bool>,
    /// Number of strongly connected components.
    scc_count: usize,
    /// Estimated size (values) of each node fully inlined; a reference
    /// inside its own cycle counts one.
    expanded: Vec<usize>,
    /// Estimated size of the whole document with every reference inlined.
    document_size: usize,
    /// [`Self::document_size`] with each reference inside a cycle unfolded
    /// one level (see [`Cycles::unfolded_document_size`]).
    unfolded_document_size: usize,
}

impl Cycles {
    /// Builds the reference graph of `doc` and finds its cycles. Dangling or
    /// remote references are skipped here (conversion reports them).
    pub fn compute(doc: &Document) -> Self {
        let mut builder = Builder {
            doc,
            index: HashMap::default(),
            nodes: Vec::new(),
            edges: Vec::new(),
            local: Vec::new(),
            root_local: 0,
            root_edges: Vec::new(),
            resolved: rustc_hash::FxHashMap::default(),
        };
        if let Some(components) = doc.root.get("components").and_then(Value::as_object) {
            for (kind, entries) in components {
                if kind.starts_with("x-") {
                    continue;
                }
                let ctx = match kind.as_str() {
                    "schemas" => Ctx::Schema,
                    "examples" => Ctx::ExampleObj,
                    _ => Ctx::Node,
                };
                for (name, value) in entries.as_object().into_iter().flatten() {
                    let pointer =
                        format!("/components/{}/{}", escape_token(kind), escape_token(name));
                    builder.add_node(pointer, value, ctx);
                }
            }
        }
        // The subtrees of the components are walked on the rayon pool
        // (what a walk finds does not depend on the graph built so far);
        // their references are then added in the order one walk after
        // another would add them, so the graph is the same.
        let walked: Vec<Walked<'_>> = builder
            .nodes
            .par_iter()
            .map(|&(_, value, ctx)| walk(value, ctx))
            .collect();
        let root = walk_split(&doc.root, Ctx::Root, 2);
        builder.add_refs(root, None);
        let mut walked = walked.into_iter();
        let mut next = 0;
        while next < builder.nodes.len() {
            let found = match walked.next() {
                Some(found) => found,
                None => {
                    let (_, value, ctx) = builder.nodes[next];
                    walk(value, ctx)
                }
            };
            builder.add_refs(found, Some(next));
            next += 1;
        }
        let (scc, scc_count) = tarjan(&builder.edges);
        let mut sizes = vec![0usize; scc_count];
        for &c in &scc {
            sizes[c] += 1;
        }
        let recursive = (0..scc.len())
            .map(|n| sizes[scc[n]] > 1 || builder.edges[n].contains(&n))
            .collect();
        // Tarjan numbers SCCs in reverse topological order: references
        // leaving an SCC point to lower numbers, already sized.
        let mut order: Vec<usize> = (0..scc.len()).collect();
        order.sort_by_key(|&n| scc[n]);
        let mut expanded = vec![0usize; scc.len()];
        for &n in &order {
            let mut size = builder.local[n];
            for &e in &builder.edges[n] {
                let add = if scc[e] == scc[n] { 1 } else { expanded[e] };
                size = size.saturating_add(add);
            }
            expanded[n] = size;
        }
        // Inlined from outside its cycle, a member expands every other
        // member it references (none of them is on the branch yet), each
        // counting at least its estimate.
        let mut unfolded = vec![0usize; scc.len()];
        for &n in &order {
            let mut size = builder.local[n];
            for &e in &builder.edges[n] {
                let add = if e == n {
                    1
                } else if scc[e] == scc[n] {
                    expanded[e]
                } else {
                    unfolded[e]
                };
                size = size.saturating_add(add);
            }
            unfolded[n] = size;
        }
        let document_size = document_total(&builder, &expanded);
        let unfolded_document_size = document_total(&builder, &unfolded);
        Cycles {
            index: builder.index,
            names: builder.nodes.into_iter().map(|(p, _, _)| p).collect(),
            scc,
            recursive,
            scc_count,
            expanded,
            document_size,
            unfolded_document_size,
        }
    }

    /// Whether the schema at `target_pointer` (a canonical pointer such as
    /// `/components/schemas/Node`, as returned by
    /// [`resolve_ref`](crate::refs::resolve_ref)) takes part in a cycle.
    pub fn is_recursive(&self, target_pointer: &str) -> bool {
        self.index
            .get(target_pointer)
            .is_some_and(|&n| self.recursive[n])
    }

    /// Pointers of every node in a cycle, sorted.
    pub fn recursive_pointers(&self) -> Vec<&str> {
        let mut out: Vec<&str> = (0..self.names.len())
            .filter(|&n| self.recursive[n])
            .map(|n| self.names[n].as_str())
            .collect();
        out.sort_unstable();
        out
    }

    /// The strongly connected component of the node at `target_pointer`.
    pub(crate) fn scc_of(&self, target_pointer: &str) -> Option<usize> {
        self.index.get(target_pointer).map(|&n| self.scc[n])
    }

    /// Number of strongly connected components.
    pub(crate) fn scc_count(&self) -> usize {
        self.scc_count
    }

    /// Estimated number of values the target at `target_pointer` becomes
    /// when fully inlined (references within its own cycle count one).
    pub fn expanded_size(&self, target_pointer: &str) -> Option<usize> {
        self.index.get(target_pointer).map(|&n| self.expanded[n])
    }

    /// Estimated number of values of the whole document fully inlined
    /// (saturating: DAG-shaped specs can be astronomically large).
    pub fn document_size(&self) -> usize {
        self.document_size
    }

    /// [`Self::document_size`] with each reference inside a cycle unfolded
    /// one level: a member inlined from outside its cycle counts every
    /// other member it references at that member's estimate, not as one.
    /// Full inlining expands those members too (only the branch's own
    /// targets stay `$circular`), so a document whose cycles multiply its
    /// size (Stripe's 65 mutually reachable objects: 1.6 M estimated, 8.2 M
    /// unfolded) is seen to be too large without writing it. Still an
    /// estimate, not a bound: a reference kept for depth counts less. Over
    /// the 2,639 specs of the corpus it exceeds the full-inlining cap only
    /// where the full attempt failed at that cap too (Stripe alone).
    pub fn unfolded_document_size(&self) -> usize {
        self.unfolded_document_size
    }
}

/// The document outside `components` plus every component, each counted
/// at its `sizes` entry.
fn document_total(builder: &Builder<'_>, sizes: &[usize]) -> usize {
    let mut total = builder.root_local;
    for &e in &builder.root_edges {
        total = total.saturating_add(sizes[e]);
    }
    for (n, (pointer, _, _)) in builder.nodes.iter().enumerate() {
        if pointer.starts_with("/components/") && pointer.matches('/').count() == 3 {
            total = total.saturating_add(sizes[n]);
        }
    }
    total
}

struct Builder<'a> {
    doc: &'a Document,
    index: HashMap<String, usize>,
    nodes: Vec<(String, &'a Value, Ctx)>,
    edges: Vec<Vec<usize>>,
    /// Values in each node's subtree, references not followed.
    local: Vec<usize>,
    /// The same for the document outside `components`, and its references.
    root_local: usize,
    root_edges: Vec<usize>,
    /// The node of each reference string met so far (a reference resolves
    /// alike wherever it is written: the base pointer only names errors).
    resolved: rustc_hash::FxHashMap<&'a str, Option<usize>>,
}

impl<'a> Builder<'a> {
    fn add_node(&mut self, pointer: String, value: &'a Value, ctx: Ctx) -> usize {
        if let Some(&n) = self.index.get(&pointer) {
            return n;
        }
        let n = self.nodes.len();
        self.index.insert(pointer.clone(), n);
        self.nodes.push((pointer, value, ctx));
        self.edges.push(Vec::new());
        self.local.push(0);
        n
    }

    /// Adds the references a walk found as edges from `from` (the
    /// document outside `components` when `None`), and its value count.
    fn add_refs(&mut self, walked: Walked<'a>, from: Option<usize>) {
        for (reference, target_ctx) in walked.refs {
            // Met again, a reference gives the node it gave: `add_node`
            // keeps a node's first context whatever context asks again.
            let node = match self.resolved.get(reference) {
                Some(&node) => node,
                None => {
                    let node = resolve_ref(self.doc, reference, "")
                        .ok()
                        .map(|(target, pointer)| self.add_node(pointer, target, target_ctx));
                    self.resolved.insert(reference, node);
                    node
                }
            };
            let Some(node) = node else {
                continue;
            };
            match from {
                Some(from) => self.edges[from].push(node),
                None => self.root_edges.push(node),
            }
        }
        match from {
            Some(n) => self.local[n] = self.local[n].saturating_add(walked.count),
            None => self.root_local = self.root_local.saturating_add(walked.count),
        }
    }
}

/// What a walk of one subtree finds: its references in the order met,
/// each with the context of its target, and its value count.
struct Walked<'a> {
    refs: Vec<(&'a str, Ctx)>,
    count: usize,
}

/// [`walk`], with the members of an object (and theirs, `levels` deep)
/// walked on the rayon pool. The walk takes an object's members from a
/// stack, so it finishes the last member's subtree before the one before
/// it: the parts are joined last member first.
fn walk_split(value: &Value, ctx: Ctx, levels: usize) -> Walked<'_> {
    let Value::Object(map) = value else {
        return walk(value, ctx);
    };
    if levels == 0 {
        return walk(value, ctx);
    }
    let mut refs = Vec::new();
    let mut count = 1 + map.len();
    let mut members = Vec::new();
    object_members(map, ctx, &mut refs, &mut count, &mut members);
    let parts: Vec<Walked<'_>> = members
        .par_iter()
        .map(|&(c, child)| walk_split(child, c, levels - 1))
        .collect();
    for part in parts.into_iter().rev() {
        refs.extend(part.refs);
        // A member's own value is counted with its object's members.
        count = count.saturating_add(part.count - 1);
    }
    Walked { refs, count }
}

/// The context of the target of a `$ref` met in `ctx`.
fn target_ctx(ctx: Ctx) -> Ctx {
    match ctx {
        Ctx::Schema | Ctx::ExampleObj => ctx,
        _ => Ctx::Node,
    }
}

/// Walks `value`'s subtree (references not followed). At the root,
/// `components` is skipped (its entries are nodes).
fn walk(value: &Value, ctx: Ctx) -> Walked<'_> {
    let mut refs = Vec::new();
    let mut stack: Vec<(Ctx, &Value)> = vec![(ctx, value)];
    let mut count = 1usize;
    while let Some((ctx, node)) = stack.pop() {
        match node {
            Value::Object(map) => count += map.len(),
            Value::Array(items) => count += items.len(),
            _ => {}
        }
        match node {
            Value::Object(map) => object_members(map, ctx, &mut refs, &mut count, &mut stack),
            Value::Array(items) => {
                let c = child_ctx(ctx, None);
                if c != Ctx::Data {
                    stack.extend(items.iter().map(|i| (c, i)));
                }
            }
            _ => {}
        }
    }
    Walked { refs, count }
}

/// One object met by a walk in `ctx`: its reference (if any) to `refs`,
/// the values of its literal data to `count`, and the members to walk to
/// `members`. At the root, `components` is skipped (its entries are nodes).
fn object_members<'v>(
    map: &'v Map<String, Value>,
    ctx: Ctx,
    refs: &mut Vec<(&'v str, Ctx)>,
    count: &mut usize,
    members: &mut Vec<(Ctx, &'v Value)>,
) {
    if ctx.holds_refs()
        && let Some(Value::String(reference)) = crate::small_map::get(map, "$ref")
    {
        refs.push((reference.as_str(), target_ctx(ctx)));
    }
    for (key, child) in map {
        if ctx == Ctx::Root && key == "components" {
            continue;
        }
        let c = child_ctx(ctx, Some(key));
        if c != Ctx::Data {
            members.push((c, child));
        } else if child.is_object() || child.is_array() {
            // Literal data is copied whole (Graph's discriminator mappings
            // list thousands of types).
            *count = count.saturating_add(values_in(child) - 1);
        }
    }
}

/// Number of values in `value` (itself included), without recursion.
fn values_in(value: &Value) -> usize {
    let mut count = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        count += 1;
        match v {
            Value::Object(map) => stack.extend(map.values()),
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    count
}

/// Iterative Tarjan: the SCC id of every node, and the number of SCCs.
pub(crate) fn tarjan(edges: &[Vec<usize>]) -> (Vec<usize>, usize) {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![0usize; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut counter = 0usize;
    let mut count = 0usize;
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        index[start] = counter;
        low[start] = counter;
        counter += 1;
        stack.push(start);
        on_stack[start] = true;
        calls.push((start, 0));
        while let Some(&(v, pos)) = calls.last() {
            if let Some(&w) = edges[v].get(pos) {
                if let Some(top) = calls.last_mut() {
                    top.1 += 1;
                }
                if index[w] == UNSEEN {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = count;
                    if w == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    (comp, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(root: Value) -> Document {
        Document {
            root,
            file: "spec.json".into(),
            openapi_version: "3.0.3".into(),
        }
    }

    #[test]
    fn finds_self_and_mutual_recursion() {
        let d = doc(json!({
            "paths": {"/x": {"get": {"responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}}}}}},
            "components": {"schemas": {
                "Tree": {"properties": {"children": {"items": {"$ref": "#/components/schemas/Tree"}}}},
                "A": {"properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {"allOf": [{"$ref": "#/components/schemas/A"}]},
                "C": {"properties": {"a": {"$ref": "#/components/schemas/A"}, "e": {"example": {"$ref": "#/components/schemas/C"}}}},
                "Leaf": {"type": "string"},
                "Inner": {"properties": {"x": {"$ref": "#/components/schemas/Inner/properties/y"}, "y": {"type": "string"}}},
                "Dangling": {"$ref": "#/nope"}
            }}
        }));
        let c = Cycles::compute(&d);
        assert_eq!(
            c.recursive_pointers(),
            vec![
                "/components/schemas/A",
                "/components/schemas/B",
                "/components/schemas/Tree"
            ]
        );
        assert!(c.is_recursive("/components/schemas/Tree"));
        assert!(!c.is_recursive("/components/schemas/C"));
        assert!(!c.is_recursive("/components/schemas/Leaf"));
        assert!(!c.is_recursive("/components/schemas/Inner/properties/y"));
        assert_eq!(
            c.scc_of("/components/schemas/A"),
            c.scc_of("/components/schemas/B")
        );
        assert_ne!(
            c.scc_of("/components/schemas/A"),
            c.scc_of("/components/schemas/C")
        );
        assert!(c.scc_count() >= 6);
    }

    #[test]
    fn non_component_targets_are_nodes() {
        let d = doc(json!({
            "paths": {"/x": {"post": {"requestBody": {"content": {"application/json": {"schema": {
                "properties": {"again": {"$ref": "#/paths/~1x/post/requestBody/content/application~1json/schema"}}
            }}}}}}}
        }));
        let c = Cycles::compute(&d);
        assert!(c.is_recursive("/paths/~1x/post/requestBody/content/application~1json/schema"));
    }

    #[test]
    fn unfolded_sizes_expand_other_cycle_members_once() {
        // A (4 values) and B (6) reference each other; Tree only itself.
        let d = doc(json!({"components": {"schemas": {
            "A": {"properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "B": {"properties": {"a": {"$ref": "#/components/schemas/A"}, "pad": {"type": "string"}}},
        }}}));
        let c = Cycles::compute(&d);
        // Estimated, each counts the other's reference as one value.
        assert_eq!(c.expanded_size("/components/schemas/A"), Some(5));
        assert_eq!(c.expanded_size("/components/schemas/B"), Some(7));
        // Unfolded, each holds the other's estimate.
        assert_eq!(c.document_size() + 4 + 6, c.unfolded_document_size());
        let d = doc(json!({"components": {"schemas": {
            "Tree": {"properties": {"kids": {"items": {"$ref": "#/components/schemas/Tree"}}}},
        }}}));
        let c = Cycles::compute(&d);
        assert_eq!(c.document_size(), c.unfolded_document_size());
        // Outside any cycle both are the inlined size.
        let d = doc(json!({"components": {"schemas": {
            "P": {"properties": {"q": {"$ref": "#/components/schemas/Q"}}},
            "Q": {"type": "string"},
        }}}));
        let c = Cycles::compute(&d);
        assert_eq!(c.document_size(), c.unfolded_document_size());
    }

    #[test]
    fn long_chains_do_not_recurse() {
        let mut schemas = serde_json::Map::new();
        for i in 0..20_000 {
            schemas.insert(
                format!("S{i}"),
                json!({"$ref": format!("#/components/schemas/S{}", (i + 1) % 20_000)}),
            );
        }
        let c = Cycles::compute(&doc(json!({"components": {"schemas": schemas}})));
        assert_eq!(c.recursive_pointers().len(), 20_000);
        assert_eq!(c.scc_count(), 1);
    }
}
