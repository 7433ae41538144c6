//! Deferred expansions: a reference to a shared `components` entry written
//! as a marker the runtime's spec index reads as that entry, instead of a
//! copy of its expansion at every reference.
//!
//! Only an expansion that is the same wherever it appears is deferred: the
//! target is a whole `components/<kind>/<name>` entry outside every
//! reference cycle (so no `$circular` marker inside it depends on the
//! branch), read in the context its entry is written in, and its first
//! expansion kept no reference for depth. Nodes and height still count as
//! if the expansion were written, so every bound and depth decision is the
//! one of full inlining.

use rustc_hash::FxHashMap as HashMap;

use serde_json::{Map, Value};

use super::{Memo, Writer};
use crate::error::Result;
use crate::json_text::write_str;
use crate::refs::{Ctx, child_ctx};

/// Root key present when references were written as [`INLINE_MARKER`]s.
pub const INLINE_REFS_KEY: &str = "x-toolforge-inline-refs";
/// The key of a deferred reference: `{"x-toolforge-inline": "#/components/…"}`.
pub const INLINE_MARKER: &str = "x-toolforge-inline";
/// Smallest expansion (in values) written as a marker: a marker is about
/// 50 bytes, and small targets read better inlined.
pub const INLINE_MIN_NODES: usize = 8;

/// The root's note under [`INLINE_REFS_KEY`].
pub(super) fn root_note(markers: usize) -> String {
    format!(
        "{markers} objects {{\"{INLINE_MARKER}\": \"#/components/<kind>/<name>\"}} stand for that components entry, written once; read them as the entry (the toolforge runtime does) and this is the fully inlined document"
    )
}

/// What the first expansion of a deferrable target measured.
#[derive(Clone, Copy)]
pub(super) struct Measured {
    nodes: usize,
    height: usize,
}

type Key = (String, Ctx);

/// Deferral state of one write.
#[derive(Default)]
pub(super) struct Deferral {
    enabled: bool,
    /// `None`: expanded in place wherever referenced (small, or kept a ref).
    decided: HashMap<Key, Option<Measured>>,
    /// Expansions taken out of a reference site, for the entry itself.
    pending: HashMap<Key, Vec<u8>>,
    /// References kept (too deep to inline) so far; an expansion that
    /// raised this is not deferred.
    pub(super) kept: usize,
    clash: bool,
}

impl Deferral {
    pub(super) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// Notes a source object holding the marker key: the write is then void.
    pub(super) fn check(&mut self, map: &Map<String, Value>) {
        if self.enabled && map.contains_key(INLINE_MARKER) {
            self.clash = true;
        }
    }

    /// As [`check`](Self::check), plus the root key.
    pub(super) fn check_root(&mut self, root: &Map<String, Value>) {
        self.check(root);
        if self.enabled && root.contains_key(INLINE_REFS_KEY) {
            self.clash = true;
        }
    }

    pub(super) fn clashed(&self) -> bool {
        self.clash
    }

    /// Markers in `out`. Exact: the spec holds no marker key (else the
    /// write is void), and inside a JSON string a quote is escaped.
    pub(super) fn markers_in(&self, out: &[u8]) -> usize {
        if !self.enabled {
            return 0;
        }
        let needle = format!("{{\"{INLINE_MARKER}\":");
        memchr::memmem::find_iter(out, needle.as_bytes()).count()
    }
}

/// The context a `components/<kind>/<name>` entry is written in, if the
/// pointer names one whose kind is expanded (not literal `x-` data).
fn entry_ctx(pointer: &str) -> Option<Ctx> {
    let rest = pointer.strip_prefix("/components/")?;
    let (kind, name) = rest.split_once('/')?;
    if name.contains('/') || kind.contains('~') {
        return None;
    }
    match child_ctx(Ctx::Components, Some(kind)) {
        Ctx::Data => None,
        Ctx::SchemaMap => Some(Ctx::Schema),
        Ctx::Examples => Some(Ctx::ExampleObj),
        _ => Some(Ctx::Node),
    }
}

impl Writer<'_> {
    /// Expands `target` as [`expand`](Self::expand) does, or writes a marker
    /// for it when its expansion is deferrable (module doc).
    pub(super) fn expand_or_defer(
        &mut self,
        target: &Value,
        target_pointer: String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<usize> {
        let deferrable = self.deferral.enabled
            && entry_ctx(&target_pointer) == Some(ctx)
            && self.cycles.scc_of(&target_pointer).is_some()
            && !self.cycles.is_recursive(&target_pointer);
        if !deferrable {
            return self.expand(target, target_pointer, ctx, depth);
        }
        let key = (target_pointer, ctx);
        match self.deferral.decided.get(&key).copied() {
            Some(Some(m)) => {
                self.charge(&key.0, depth, m.nodes, m.height)?;
                self.write_marker(&key.0);
                return Ok(m.height);
            }
            Some(None) => return self.expand(target, key.0, ctx, depth),
            None => {}
        }
        let (start, nodes, kept) = (self.out.len(), self.nodes, self.deferral.kept);
        let height = self.expand(target, key.0.clone(), ctx, depth)?;
        let nodes = self.nodes - nodes;
        if nodes < INLINE_MIN_NODES || self.deferral.kept != kept {
            self.deferral.decided.insert(key, None);
            return Ok(height);
        }
        let bytes = self.take_from(start);
        self.write_marker(&key.0);
        self.deferral
            .decided
            .insert(key.clone(), Some(Measured { nodes, height }));
        self.deferral.pending.entry(key).or_insert(bytes);
        Ok(height)
    }

    fn write_marker(&mut self, target_pointer: &str) {
        self.out.extend_from_slice(b"{\"");
        self.out.extend_from_slice(INLINE_MARKER.as_bytes());
        self.out.extend_from_slice(b"\":");
        write_str(&mut self.out, &format!("#{target_pointer}"));
        self.out.push(b'}');
    }

    /// Writes the expansion a reference site took out, when `key` is that
    /// target's own entry (memoised again, so later copies need no walk).
    pub(super) fn write_pending(
        &mut self,
        key: &Key,
        depth: usize,
        cacheable: bool,
    ) -> Result<Option<usize>> {
        let Some(bytes) = self.deferral.pending.remove(key) else {
            return Ok(None);
        };
        let Some(Some(m)) = self.deferral.decided.get(key).copied() else {
            return Ok(None);
        };
        self.charge(&key.0, depth, m.nodes, m.height)?;
        let start = self.out.len();
        self.out.extend_from_slice(&bytes);
        if cacheable {
            let memo = Memo {
                start,
                end: self.out.len(),
                nodes: m.nodes,
                height: m.height,
                kept: false,
            };
            self.memo_log.push(key.clone());
            self.cache.insert(key.clone(), memo);
        }
        Ok(Some(m.height))
    }
}
