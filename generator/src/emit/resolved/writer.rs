//! The resolved document written straight to JSON bytes, without building
//! the (much larger) inlined value tree first.
//!
//! Same rules as [`resolve_document`](super::resolve_document): every local
//! `$ref` inlined, `$circular` markers on the current branch, memoised
//! expansions (here: the byte range where an expansion was first written,
//! so a repeated target costs a copy within the output and no memory).
//! Layout: compact JSON with one line per root member, per path item and per
//! component entry, so a regenerated artifact diffs line by line.

use rustc_hash::FxHashMap as HashMap;

use serde_json::{Map, Value};

use super::{DEPTH_FACTOR, NODES_FACTOR, push_token};
use crate::error::{GenerateError, Result};
use crate::ir::{MergedPath, MergedPaths};
use crate::json_text::write_str;
use crate::load::Document;
use crate::refs::{Ctx, child_ctx, deref, invalid, resolve_ref};
use crate::schema::{Cycles, Limits};
use crate::small_map;

mod defer;
mod members;

use defer::Deferral;
pub use defer::INLINE_REFS_KEY;
#[cfg(any(test, feature = "oracles"))]
pub use defer::{INLINE_MARKER, INLINE_MIN_NODES};
use members::object_members;

/// Root key naming the generator and release.
pub const GENERATED_KEY: &str = "x-toolforge-generated";
/// Root key present when large shared schemas were kept as references.
pub const SHARED_REFS_KEY: &str = "x-toolforge-shared-refs";
/// Largest target (estimated values) still inlined when a document is too
/// large to inline whole; bigger ones stay `$ref`s into `components`.
pub const SHARED_INLINE_MAX: usize = 256;

/// Deepest value the written document may hold (the root is at 0): JSON
/// readers bound nesting, serde_json (the runtime's, when it narrows the
/// spec to the exposed operations) at 127 arrays and objects, so values
/// stay at depth 126 or less. Found by the `generate` fuzz target: a YAML
/// spec may nest 128 levels, and inlining puts a referenced node deeper
/// than it was written, so the artifact could not be read back.
pub const READABLE_DEPTH: usize = 126;

/// One memoised expansion: where it was written in the output (the output
/// only grows, except when [`Writer::truncate`] cuts it, which drops the
/// memos past the cut), so a repeat is a copy within the buffer.
#[derive(Clone, Copy)]
struct Memo {
    start: usize,
    end: usize,
    nodes: usize,
    height: usize,
    /// The expansion holds a reference kept because inlining it was too deep.
    kept: bool,
}

/// Writes the resolved document of `doc` as JSON: `$ref`s inlined, merged
/// paths split by `policy` (Cloudflare `/{account_or_zone}/…` become the two
/// real paths), and `"x-toolforge-generated": generated` as the last root
/// member. Bounds as in [`resolve_document`](super::resolve_document), and
/// nesting at most [`READABLE_DEPTH`] so that the output can be read back.
///
/// DAG-shaped specs (Stripe, Microsoft Graph, …) would grow to billions of
/// values fully inlined. When the estimate
/// ([`Cycles::unfolded_document_size`]), or a first attempt, exceeds a
/// quarter of the node bound, references to
/// recursive targets and to targets larger than [`SHARED_INLINE_MAX`]
/// values stay `$ref`s (every `components` entry is written, itself
/// resolved the same way) and the root says so under [`SHARED_REFS_KEY`].
///
/// Fully inlined, a document still repeats every expansion of a shared
/// component at each reference (the full Cloudflare release: 23.7 MB from a
/// 4.2 MB spec). So a reference whose expansion is the same wherever it
/// appears (a `components` entry outside any reference cycle, expanding to
/// at least [`INLINE_MIN_NODES`] values, read in the entry's own context,
/// with no keys beside the `$ref`) is written as `{INLINE_MARKER: ref}`,
/// and the root says so under [`INLINE_REFS_KEY`]: the runtime's spec
/// index reads such a marker as that entry, so `search` sees exactly the
/// fully inlined document. Bounds and depth decisions are those of full
/// inlining. A spec that itself holds the marker key is inlined in full.
/// With shared references, the targets still inlined are deferred the same
/// way (Microsoft Graph v1.0: 49 → 21 MB; the kept `$ref`s stay).
///
/// # Errors
/// [`GenerateError::TooDeep`] / [`GenerateError::TooLarge`] past the bounds
/// and the reference errors of [`resolve_ref`].
pub fn write_document(
    doc: &Document,
    cycles: &Cycles,
    limits: &Limits,
    merged: &MergedPaths,
    generated: &str,
) -> Result<Vec<u8>> {
    let max_nodes = limits.max_nodes.saturating_mul(NODES_FACTOR);
    let quarter = max_nodes / 4;
    // The estimates cannot see every blow-up inside reference cycles: a
    // full attempt is capped, and a capped failure falls back to shared
    // refs. One that the unfolded estimate foresees is not made (Stripe:
    // 49 ms of one core, 7% of its CPU, written and thrown away).
    if cycles.unfolded_document_size() <= quarter {
        for defer in [true, false] {
            match write_with(doc, cycles, limits, merged, generated, true, defer, quarter) {
                Err(GenerateError::TooLarge { limit, .. }) if limit == quarter => break,
                // The spec holds the marker key itself: inline in full.
                Ok(None) => continue,
                Ok(Some(bytes)) => return Ok(bytes),
                Err(e) => return Err(e),
            }
        }
    }
    for defer in [true, false] {
        if let Some(bytes) = write_with(
            doc, cycles, limits, merged, generated, false, defer, max_nodes,
        )? {
            return Ok(bytes);
        }
    }
    // Unreachable: without deferral there is no clash.
    Ok(Vec::new())
}

/// `Ok(None)`: deferral was asked for and the spec holds [`INLINE_MARKER`].
#[allow(clippy::too_many_arguments)]
fn write_with(
    doc: &Document,
    cycles: &Cycles,
    limits: &Limits,
    merged: &MergedPaths,
    generated: &str,
    inline_all: bool,
    defer: bool,
    max_nodes: usize,
) -> Result<Option<Vec<u8>>> {
    let mut w = Writer {
        doc,
        cycles,
        inline_all,
        deferral: Deferral::new(defer),
        max_depth: limits
            .max_depth
            .saturating_mul(DEPTH_FACTOR)
            .min(READABLE_DEPTH),
        max_nodes,
        nodes: 0,
        branch: Vec::new(),
        open_sccs: vec![0; cycles.scc_count()],
        cache: HashMap::default(),
        memo_log: Vec::new(),
        out: Vec::with_capacity(doc_size_hint(doc)),
        expanding: 0,
    };
    let mut pointer = String::new();
    match &doc.root {
        Value::Object(root) if !small_map::has(root, "$ref") => {
            w.write_root(root, &mut pointer, merged, generated)?;
        }
        other => {
            w.walk(other, &mut pointer, Ctx::Root, 0)?;
        }
    }
    if w.deferral.clashed() {
        return Ok(None);
    }
    w.out.push(b'\n');
    Ok(Some(w.out))
}

/// A generous starting capacity (48 KiB per path, at most 4 GiB): capacity
/// that is never written costs no memory, while growing a buffer of tens
/// of megabytes copies it and briefly holds both.
fn doc_size_hint(doc: &Document) -> usize {
    doc.root
        .get("paths")
        .and_then(Value::as_object)
        .map_or(0, |p| p.len())
        .saturating_mul(48 * 1024)
        .saturating_add(1 << 20)
        .min(1 << 32)
}

struct Writer<'a> {
    doc: &'a Document,
    cycles: &'a Cycles,
    /// Inline every reference (else only small targets, see [`SHARED_INLINE_MAX`]).
    inline_all: bool,
    /// References written as [`INLINE_MARKER`]s (full inlining only).
    deferral: Deferral,
    max_depth: usize,
    max_nodes: usize,
    nodes: usize,
    /// Targets being inlined on the current branch.
    branch: Vec<String>,
    /// Members of each SCC on the branch.
    open_sccs: Vec<u32>,
    cache: HashMap<(String, Ctx), Memo>,
    /// Cache keys in insertion order (their `end`s only grow).
    memo_log: Vec<(String, Ctx)>,
    out: Vec<u8>,
    /// How many expansions enclose the current position (no line breaks inside).
    expanding: usize,
}

impl Writer<'_> {
    /// Cuts the output back to `len` and forgets memos that pointed past it.
    fn truncate(&mut self, len: usize) {
        self.out.truncate(len);
        while let Some(key) = self.memo_log.last() {
            match self.cache.get(key) {
                Some(memo) if memo.end > len => {
                    self.cache.remove(key);
                    self.memo_log.pop();
                }
                Some(_) => break,
                None => {
                    self.memo_log.pop();
                }
            }
        }
    }

    /// The bytes written since `start`, removed from the output.
    fn take_from(&mut self, start: usize) -> Vec<u8> {
        let bytes = self.out[start..].to_vec();
        self.truncate(start);
        bytes
    }

    fn too_deep(&self, pointer: &str) -> GenerateError {
        GenerateError::TooDeep {
            file: self.doc.file.clone(),
            pointer: pointer.to_string(),
            limit: self.max_depth,
        }
    }

    /// Accounts for an expansion of `nodes` values and `height` levels
    /// placed at `depth` without walking it (a copy or a marker), as
    /// walking it would: too deep, or past the node bound, fails alike.
    fn charge(&mut self, pointer: &str, depth: usize, nodes: usize, height: usize) -> Result<()> {
        if depth + height > self.max_depth {
            return Err(self.too_deep(pointer));
        }
        self.count(nodes, pointer)
    }

    fn count(&mut self, n: usize, pointer: &str) -> Result<()> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.max_nodes {
            return Err(GenerateError::TooLarge {
                file: self.doc.file.clone(),
                pointer: pointer.to_string(),
                limit: self.max_nodes,
            });
        }
        Ok(())
    }

    /// Whether the members of the object at `pointer` go on their own lines.
    fn lines_at(&self, pointer: &str) -> bool {
        if self.expanding > 0 {
            return false;
        }
        pointer == "/paths"
            || pointer == "/components"
            || pointer
                .strip_prefix("/components/")
                .is_some_and(|kind| !kind.contains('/'))
    }

    fn write_root(
        &mut self,
        root: &Map<String, Value>,
        pointer: &mut String,
        merged: &MergedPaths,
        generated: &str,
    ) -> Result<()> {
        self.count(1, pointer)?;
        self.deferral.check_root(root);
        self.out.push(b'{');
        let mut first = true;
        for (key, child) in root {
            if key == GENERATED_KEY {
                continue;
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.out.push(b'\n');
            write_str(&mut self.out, key);
            self.out.push(b':');
            let len = pointer.len();
            push_token(pointer, key);
            let c = child_ctx(Ctx::Root, Some(key));
            let walked = match child {
                Value::Object(paths) if key == "paths" => self.write_paths(paths, pointer, merged),
                _ => self.walk(child, pointer, c, 1).map(|_| ()),
            };
            pointer.truncate(len);
            walked?;
        }
        if !first {
            self.out.push(b',');
        }
        if !self.inline_all {
            self.out.push(b'\n');
            write_str(&mut self.out, SHARED_REFS_KEY);
            self.out.push(b':');
            write_str(
                &mut self.out,
                &format!(
                    "references to schemas of more than {SHARED_INLINE_MAX} values are kept (into components): inlined whole, this document would hold about {} values",
                    self.cycles.document_size()
                ),
            );
            self.out.push(b',');
        }
        let markers = self.deferral.markers_in(&self.out);
        if markers > 0 {
            self.out.push(b'\n');
            write_str(&mut self.out, INLINE_REFS_KEY);
            self.out.push(b':');
            write_str(&mut self.out, &defer::root_note(markers));
            self.out.push(b',');
        }
        self.out.push(b'\n');
        write_str(&mut self.out, GENERATED_KEY);
        self.out.push(b':');
        write_str(&mut self.out, generated);
        self.out.extend_from_slice(b"\n}");
        Ok(())
    }

    /// The `paths` object with merged paths split into their real paths.
    fn write_paths(
        &mut self,
        paths: &Map<String, Value>,
        pointer: &mut String,
        merged: &MergedPaths,
    ) -> Result<()> {
        if self.max_depth < 1 {
            return Err(self.too_deep(pointer));
        }
        self.count(1, pointer)?;
        self.deferral.check(paths);
        // Later entries for the same concrete path replace earlier ones in place.
        let mut entries: indexmap_like::OrderedMap<'_> = indexmap_like::OrderedMap::default();
        for (path, item) in paths {
            match merged.get(path) {
                None => entries.insert(path.clone(), (path.as_str(), item, None)),
                Some(m) => {
                    for i in 0..m.variants.len() {
                        let concrete = m.variants[i].path.clone();
                        entries.insert(concrete, (path.as_str(), item, Some((m, i))));
                    }
                }
            }
        }
        self.out.push(b'{');
        let n = entries.len();
        for (i, (key, (source_path, item, variant))) in entries.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.push(b'\n');
            write_str(&mut self.out, &key);
            self.out.push(b':');
            let len = pointer.len();
            push_token(pointer, source_path);
            let walked = match variant {
                None => self.walk(item, pointer, Ctx::Node, 2),
                Some((m, idx)) => self.write_variant(item, pointer, m, idx),
            };
            pointer.truncate(len);
            walked?;
        }
        if n > 0 {
            self.out.push(b'\n');
        }
        self.out.push(b'}');
        Ok(())
    }

    /// One concrete variant of a merged path item: the selector parameter
    /// removed, the id parameter renamed to the real one.
    fn write_variant(
        &mut self,
        item: &Value,
        pointer: &mut String,
        m: &MergedPath,
        idx: usize,
    ) -> Result<usize> {
        let (item, _) = deref(self.doc, item, pointer)?;
        let mut item = item.clone();
        let variant = &m.variants[idx];
        let (real_id, scope) = (variant.id.as_str(), variant.noun.as_str());
        if let Value::Object(obj) = &mut item {
            for (key, entry) in obj.iter_mut() {
                let params = if key == "parameters" {
                    Some(entry)
                } else {
                    entry.get_mut("parameters")
                };
                if let Some(Value::Array(list)) = params {
                    self.rewrite_params(list, pointer, m, real_id, scope)?;
                }
            }
        }
        self.walk(&item, pointer, Ctx::Node, 2)
    }

    fn rewrite_params(
        &self,
        list: &mut Vec<Value>,
        pointer: &str,
        m: &MergedPath,
        real_id: &str,
        scope: &str,
    ) -> Result<()> {
        for p in list.iter_mut() {
            if p.get("$ref").is_some() {
                let (target, _) = deref(self.doc, p, pointer)?;
                *p = target.clone();
            }
        }
        let in_path = |p: &Value, name: &str| {
            p.get("in").and_then(Value::as_str) == Some("path")
                && p.get("name").and_then(Value::as_str) == Some(name)
        };
        list.retain(|p| !in_path(p, &m.selector));
        for p in list.iter_mut() {
            if in_path(p, &m.id_param) {
                p["name"] = Value::String(real_id.to_string());
                p["description"] = Value::String(format!("The {scope} identifier."));
            }
        }
        Ok(())
    }

    /// Writes `value` (at `pointer`, in context `ctx`) with refs inlined and
    /// returns its height. `pointer` is restored on return.
    fn walk(
        &mut self,
        value: &Value,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<usize> {
        if depth > self.max_depth {
            return Err(self.too_deep(pointer));
        }
        self.count(1, pointer)?;
        match value {
            Value::Object(map) => {
                self.deferral.check(map);
                if ctx.holds_refs() && small_map::has(map, "$ref") {
                    return self.walk_ref(map, pointer, ctx, depth);
                }
                let lines = self.lines_at(pointer);
                self.out.push(b'{');
                let mut height = 0;
                for (i, (key, child)) in map.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    if lines {
                        self.out.push(b'\n');
                    }
                    write_str(&mut self.out, key);
                    self.out.push(b':');
                    let len = pointer.len();
                    push_token(pointer, key);
                    let c = child_ctx(ctx, Some(key));
                    let walked = if ctx == Ctx::Components && c != Ctx::Data {
                        self.walk_components(child, pointer, c, depth + 1)
                    } else {
                        self.walk(child, pointer, c, depth + 1)
                    };
                    pointer.truncate(len);
                    height = height.max(walked? + 1);
                }
                if lines && !map.is_empty() {
                    self.out.push(b'\n');
                }
                self.out.push(b'}');
                Ok(height)
            }
            Value::Array(items) => {
                let c = child_ctx(ctx, None);
                self.out.push(b'[');
                let mut height = 0;
                for (i, child) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    let len = pointer.len();
                    push_token(pointer, &i.to_string());
                    let walked = self.walk(child, pointer, c, depth + 1);
                    pointer.truncate(len);
                    height = height.max(walked? + 1);
                }
                self.out.push(b']');
                Ok(height)
            }
            scalar => {
                crate::json_text::write_value(&mut self.out, scalar);
                Ok(0)
            }
        }
    }

    /// One `components/<kind>` map: each entry is expanded as a target.
    fn walk_components(
        &mut self,
        value: &Value,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<usize> {
        let Value::Object(entries) = value else {
            return self.walk(value, pointer, ctx, depth);
        };
        if depth > self.max_depth {
            return Err(self.too_deep(pointer));
        }
        self.count(1, pointer)?;
        self.deferral.check(entries);
        let entry_ctx = match ctx {
            Ctx::SchemaMap => Ctx::Schema,
            Ctx::Examples => Ctx::ExampleObj,
            _ => Ctx::Node,
        };
        let lines = self.lines_at(pointer);
        self.out.push(b'{');
        let mut height = 0;
        for (i, (name, entry)) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            if lines {
                self.out.push(b'\n');
            }
            write_str(&mut self.out, name);
            self.out.push(b':');
            let mut target_pointer = pointer.clone();
            push_token(&mut target_pointer, name);
            let h = self.expand(entry, target_pointer, entry_ctx, depth + 1)?;
            height = height.max(h + 1);
        }
        if lines && !entries.is_empty() {
            self.out.push(b'\n');
        }
        self.out.push(b'}');
        Ok(height)
    }

    fn walk_ref(
        &mut self,
        map: &Map<String, Value>,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<usize> {
        let Some(reference) = small_map::get(map, "$ref").and_then(Value::as_str) else {
            return Err(invalid(&self.doc.file, pointer, "`$ref` must be a string"));
        };
        let doc = self.doc;
        let (target, target_pointer) = resolve_ref(doc, reference, pointer)?;
        if !self.inline_all
            && (self.cycles.is_recursive(&target_pointer)
                || self
                    .cycles
                    .expanded_size(&target_pointer)
                    .is_none_or(|n| n > SHARED_INLINE_MAX))
        {
            return self.keep_ref(map, pointer, ctx, depth);
        }
        let start = self.out.len();
        let mut height = if self.branch.contains(&target_pointer) {
            self.out.extend_from_slice(b"{\"$circular\":");
            write_str(&mut self.out, &format!("#{target_pointer}"));
            self.out.push(b'}');
            1
        } else {
            let target_ctx = match ctx {
                Ctx::Schema | Ctx::ExampleObj => ctx,
                _ => Ctx::Node,
            };
            let expanded = if map.len() == 1 {
                self.expand_or_defer(target, target_pointer, target_ctx, depth + 1)
            } else {
                self.expand(target, target_pointer, target_ctx, depth + 1)
            };
            match expanded {
                // Inlined, the target would nest deeper than a reader
                // accepts: this reference stays a `$ref` into `components`
                // (written in full, and kept by the runtime's narrowing), so
                // one deep corner does not cost the whole document.
                Err(GenerateError::TooDeep { .. }) if depth < self.max_depth => {
                    self.truncate(start);
                    // Kept for depth: where it sits decides, so nothing
                    // enclosing it is deferred (`Deferral::kept`).
                    self.deferral.kept += 1;
                    return self.keep_ref(map, pointer, ctx, depth);
                }
                other => other?,
            }
        };
        if map.len() == 1 || self.out.get(start) != Some(&b'{') {
            return Ok(height);
        }
        // Keys next to the `$ref` override the target's (in place) or are appended.
        let expansion = self.take_from(start);
        let mut siblings: Vec<(&String, Vec<u8>)> = Vec::with_capacity(map.len() - 1);
        for (key, child) in map {
            if key == "$ref" {
                continue;
            }
            let len = pointer.len();
            push_token(pointer, key);
            let at = self.out.len();
            let walked = self.walk(child, pointer, child_ctx(ctx, Some(key)), depth + 1);
            pointer.truncate(len);
            height = height.max(walked? + 1);
            siblings.push((key, self.take_from(at)));
        }
        let members = object_members(&expansion).ok_or_else(|| {
            GenerateError::emit(
                "artifacts/spec.json",
                format!("{pointer}: internal error: inlined target is not an object"),
            )
        })?;
        self.out.push(b'{');
        let mut first = true;
        let mut used = vec![false; siblings.len()];
        for (key_bytes, value_bytes) in members {
            let key: String = serde_json::from_slice(key_bytes).unwrap_or_default();
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.out.extend_from_slice(key_bytes);
            self.out.push(b':');
            match siblings.iter().position(|(k, _)| **k == key) {
                Some(i) => {
                    used[i] = true;
                    self.out.extend_from_slice(&siblings[i].1);
                }
                None => self.out.extend_from_slice(value_bytes),
            }
        }
        for (i, (key, bytes)) in siblings.iter().enumerate() {
            if used[i] {
                continue;
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            write_str(&mut self.out, key);
            self.out.push(b':');
            self.out.extend_from_slice(bytes);
        }
        self.out.push(b'}');
        Ok(height)
    }

    /// Writes a reference object as it is (its siblings resolved).
    fn keep_ref(
        &mut self,
        map: &Map<String, Value>,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<usize> {
        self.out.push(b'{');
        let mut height = 1;
        for (i, (key, child)) in map.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write_str(&mut self.out, key);
            self.out.push(b':');
            if key == "$ref" {
                crate::json_text::write_value(&mut self.out, child);
                continue;
            }
            let len = pointer.len();
            push_token(pointer, key);
            let walked = self.walk(child, pointer, child_ctx(ctx, Some(key)), depth + 1);
            pointer.truncate(len);
            height = height.max(walked? + 1);
        }
        self.out.push(b'}');
        Ok(height)
    }

    /// Writes a reference target inlined (memoised when its SCC is not open)
    /// and returns its height.
    fn expand(
        &mut self,
        target: &Value,
        target_pointer: String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<usize> {
        let scc = self.cycles.scc_of(&target_pointer);
        let cacheable = scc.is_some_and(|s| self.open_sccs.get(s) == Some(&0));
        let key = (target_pointer, ctx);
        if cacheable && let Some(hit) = self.cache.get(&key).copied() {
            self.charge(&key.0, depth, hit.nodes, hit.height)?;
            self.deferral.kept += usize::from(hit.kept);
            self.out.extend_from_within(hit.start..hit.end);
            return Ok(hit.height);
        }
        if let Some(height) = self.write_pending(&key, depth, cacheable)? {
            return Ok(height);
        }
        let (before, kept) = (self.nodes, self.deferral.kept);
        let start = self.out.len();
        self.branch.push(key.0.clone());
        if let Some(open) = scc.and_then(|s| self.open_sccs.get_mut(s)) {
            *open += 1;
        }
        self.expanding += 1;
        let mut pointer = key.0.clone();
        let walked = self.walk(target, &mut pointer, ctx, depth);
        self.expanding -= 1;
        if let Some(open) = scc.and_then(|s| self.open_sccs.get_mut(s)) {
            *open -= 1;
        }
        self.branch.pop();
        let height = walked?;
        if cacheable {
            let memo = Memo {
                start,
                end: self.out.len(),
                nodes: self.nodes - before,
                height,
                kept: self.deferral.kept != kept,
            };
            self.memo_log.push(key.clone());
            self.cache.insert(key, memo);
        }
        Ok(height)
    }
}

/// A tiny insertion-ordered map where re-inserting a key replaces the value
/// in place (the semantics of `serde_json::Map` with `preserve_order`).
mod indexmap_like {
    use std::collections::HashMap;

    use crate::ir::MergedPath;
    use serde_json::Value;

    type Entry<'a> = (&'a str, &'a Value, Option<(&'a MergedPath, usize)>);

    #[derive(Default)]
    pub(super) struct OrderedMap<'a> {
        index: HashMap<String, usize>,
        entries: Vec<(String, Entry<'a>)>,
    }

    impl<'a> OrderedMap<'a> {
        pub(super) fn insert(&mut self, key: String, value: Entry<'a>) {
            match self.index.get(&key) {
                Some(&i) => self.entries[i].1 = value,
                None => {
                    self.index.insert(key.clone(), self.entries.len());
                    self.entries.push((key, value));
                }
            }
        }

        pub(super) fn len(&self) -> usize {
            self.entries.len()
        }

        pub(super) fn into_iter(self) -> impl Iterator<Item = (String, Entry<'a>)> {
            self.entries.into_iter()
        }
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
