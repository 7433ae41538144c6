//! Subtrees shared across schema texts, emitted once.
//!
//! The output and response schemas of a large API repeat the same parts
//! across tools: Stripe's `invoice` properties sit in sixty tools' output
//! schemas, each time under other `$defs` names; Cloudflare's error
//! envelope closes almost every response. [`chunk_texts`] cuts each distinct
//! compact JSON text into pieces: literal text, and references to *chunks*,
//! JSON objects or arrays of at least [`MIN_CHUNK_BYTES`] that occur in
//! more than one place, each cut the same way. Joining the pieces gives back
//! the exact text (`toolforge_runtime::catalogue::SharedText::text` does it
//! in the server), so the split is a matter of storage only: every served
//! schema stays byte for byte what it was.
//!
//! Entries are named by content (`S_` + 16 hex digits of a sha256), so a
//! release that changes one shared part renames the entries on its path to
//! the roots and no others. A text that needs no chunk is named by the
//! digest of its text alone.

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::sync::OnceLock;

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHasher};
use sha2::{Digest, Sha256};

use crate::quoted::quoted_end;

/// Smallest object or array (encoded bytes) stored as a chunk of its own.
pub const MIN_CHUNK_BYTES: usize = 128;

/// Nesting past which a subtree is kept whole (not searched for chunks):
/// bounds the recursion of the scan.
const MAX_SCAN_DEPTH: usize = 256;

/// One piece of an entry's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal JSON text (not necessarily a whole value).
    Text(String),
    /// The whole text of the named entry.
    Chunk(String),
}

/// Every entry the texts are made of.
#[derive(Debug, Default)]
pub struct Chunked {
    /// Entry name → its pieces (never empty), sorted by name: each input
    /// text's root and each shared chunk.
    pub entries: BTreeMap<String, Vec<Piece>>,
    /// The entry name of each input text, in input order.
    pub roots: Vec<String>,
}

impl Chunked {
    /// The whole text of entry `name`, joined from its pieces (`None` if
    /// it names no entry).
    #[cfg(any(test, feature = "oracles"))]
    pub fn text(&self, name: &str) -> Option<String> {
        join(&self.entries, name)
    }
}

/// `pieces` as one text, each chunk written as the reference
/// `{"<key>":"<name>"}` (as `toolforge_runtime::catalogue::SharedTexts`
/// and `toolforge diff` read it).
pub fn marked(pieces: &[Piece], key: &str) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Chunk(c) => {
                out.push_str("{\"");
                out.push_str(key);
                out.push_str("\":\"");
                out.push_str(c);
                out.push_str("\"}");
            }
        }
    }
    out
}

/// The first reference key, `base` then `base-2`, `base-3`, …, that none of
/// `texts` holds (so no text can read as a reference).
pub fn free_key<'t>(base: &str, texts: impl Iterator<Item = &'t str> + Clone) -> String {
    let mut key = base.to_string();
    let mut n = 2;
    // One searcher per key, not one per text (thousands of texts).
    while {
        let finder = memchr::memmem::Finder::new(key.as_bytes());
        texts.clone().any(|t| finder.find(t.as_bytes()).is_some())
    } {
        key = format!("{base}-{n}");
        n += 1;
    }
    key
}

/// The whole text of entry `name` of `entries`, joined from its pieces
/// (`None` if it or an entry it refers to is missing).
#[cfg(any(test, feature = "oracles"))]
pub fn join(entries: &BTreeMap<String, Vec<Piece>>, name: &str) -> Option<String> {
    fn push(entries: &BTreeMap<String, Vec<Piece>>, name: &str, out: &mut String) -> Option<()> {
        for piece in entries.get(name)? {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Chunk(c) => push(entries, c, out)?,
            }
        }
        Some(())
    }
    let mut out = String::new();
    push(entries, name, &mut out)?;
    Some(out)
}

/// A scanned subtree's part: literal text or a stored node.
#[derive(Debug)]
enum Part {
    Text(Box<str>),
    Node(usize),
}

/// A distinct subtree of at least [`MIN_CHUNK_BYTES`] (or a root).
#[derive(Debug)]
struct Node {
    parts: Vec<Part>,
    /// Occurrences in the parts of stored nodes.
    refs: u32,
}

/// A nested node met by the scan: `(start, end, node)`.
type Kid = (usize, usize, usize);

#[derive(Debug, Default)]
struct Table {
    nodes: Vec<Node>,
    /// Content hash → nodes with it (equal content is compared, so a
    /// 64-bit collision only costs a comparison).
    index: HashMap<u64, Vec<usize>>,
}

/// A part of a subtree before it is stored: literal text (borrowed from
/// the text being scanned, or from a table being merged), or a node.
#[derive(Debug, Clone, Copy)]
enum Span<'t> {
    Literal(&'t str),
    Node(usize),
}

/// The parts of `text[start..end]` around its `kids`, in order, without
/// copying.
fn layout<'t>(text: &'t str, start: usize, end: usize, kids: &[Kid]) -> Vec<Span<'t>> {
    let mut out = Vec::with_capacity(kids.len() * 2 + 1);
    let mut at = start;
    for &(s, e, node) in kids {
        if at < s {
            out.push(Span::Literal(&text[at..s]));
        }
        out.push(Span::Node(node));
        at = e;
    }
    if at < end {
        out.push(Span::Literal(&text[at..end]));
    }
    out
}

impl Table {
    /// The node made of `spans`, stored on first sight.
    fn intern(&mut self, spans: &[Span<'_>]) -> usize {
        let mut h = FxHasher::default();
        for span in spans {
            match *span {
                Span::Literal(t) => {
                    h.write_usize(t.len());
                    h.write(t.as_bytes());
                }
                Span::Node(node) => {
                    h.write_u8(0xff);
                    h.write_usize(node);
                }
            }
        }
        let hash = h.finish();
        let same = |node: &Node| {
            node.parts.len() == spans.len()
                && node.parts.iter().zip(spans).all(|(a, b)| match (a, b) {
                    (Part::Text(t), Span::Literal(u)) => **t == **u,
                    (Part::Node(x), Span::Node(y)) => x == y,
                    _ => false,
                })
        };
        if let Some(found) = self
            .index
            .get(&hash)
            .and_then(|ids| ids.iter().copied().find(|&id| same(&self.nodes[id])))
        {
            return found;
        }
        let id = self.nodes.len();
        let parts = spans
            .iter()
            .map(|span| match *span {
                Span::Literal(t) => Part::Text(t.into()),
                Span::Node(node) => {
                    let refs = &mut self.nodes[node].refs;
                    *refs = refs.saturating_add(1);
                    Part::Node(node)
                }
            })
            .collect();
        self.nodes.push(Node { parts, refs: 0 });
        self.index.entry(hash).or_default().push(id);
        id
    }

    /// Stores every node of `other` here; returns each one's id here.
    /// (A node's parts only name nodes stored before it, so one pass in
    /// order finds each child already mapped.)
    fn absorb(&mut self, other: &Table) -> Vec<usize> {
        let mut map = Vec::with_capacity(other.nodes.len());
        let mut spans = Vec::new();
        for node in &other.nodes {
            spans.clear();
            spans.extend(node.parts.iter().map(|part| match part {
                Part::Text(t) => Span::Literal(t),
                Part::Node(n) => Span::Node(map[*n]),
            }));
            map.push(self.intern(&spans));
        }
        map
    }
}

/// The texts scanned by one worker: its table and `(input index, root)`
/// of each text.
#[derive(Debug, Default)]
struct Batch<'t> {
    table: Table,
    roots: Vec<(usize, usize)>,
    known: Known<'t>,
}

/// Bytes of a subtree's start that key [`Known`].
const KNOWN_PREFIX: usize = 32;

/// Candidates kept per key of [`Known`] (a miss compares each).
const KNOWN_PER_PREFIX: usize = 8;

/// The nodes a worker's scan stored, by a hash of their first
/// [`KNOWN_PREFIX`] bytes: each with its whole text (where it was first
/// met) and its nesting height. A subtree whose bytes equal a known node's
/// text is that node, whatever it is made of, so the scan takes it without
/// reading it (Stripe's output texts repeat the same bodies: 28 MB of text
/// hold 3.9 MB of distinct parts).
#[derive(Debug, Default)]
struct Known<'t> {
    by_prefix: HashMap<u64, Vec<(&'t str, usize, usize)>>,
}

impl<'t> Known<'t> {
    fn key(bytes: &[u8]) -> Option<u64> {
        let prefix = bytes.get(..KNOWN_PREFIX)?;
        let mut h = FxHasher::default();
        h.write(prefix);
        Some(h.finish())
    }

    /// `(end, node, height)` of the known node `text` holds at `start`,
    /// if any may stand there (nesting `depth`).
    fn find(&self, text: &str, start: usize, depth: usize) -> Option<(usize, usize, usize)> {
        let rest = &text.as_bytes()[start..];
        let candidates = self.by_prefix.get(&Self::key(rest)?)?;
        candidates.iter().find_map(|&(whole, node, height)| {
            (depth + height <= MAX_SCAN_DEPTH && rest.starts_with(whole.as_bytes())).then_some((
                start + whole.len(),
                node,
                height,
            ))
        })
    }

    fn add(&mut self, whole: &'t str, node: usize, height: usize) {
        if let Some(key) = Self::key(whole.as_bytes()) {
            let candidates = self.by_prefix.entry(key).or_default();
            if candidates.len() < KNOWN_PER_PREFIX {
                candidates.push((whole, node, height));
            }
        }
    }
}

impl<'t> Batch<'t> {
    fn scan(mut self, index: usize, text: &'t str) -> Self {
        let root = Scan {
            text,
            table: &mut self.table,
            known: &mut self.known,
            kids: Vec::new(),
            deepest: 0,
        }
        .root();
        self.roots.push((index, root));
        self
    }

    /// Both batches in one table (the larger one absorbs the other).
    fn merge(self, other: Batch<'t>) -> Batch<'t> {
        let (mut big, small) = if self.table.nodes.len() >= other.table.nodes.len() {
            (self, other)
        } else {
            (other, self)
        };
        let map = big.table.absorb(&small.table);
        big.roots
            .extend(small.roots.into_iter().map(|(i, root)| (i, map[root])));
        big
    }
}

/// A scan of one compact JSON text (as `serde_json::to_string` writes it:
/// no whitespace), interning its sizeable objects and arrays.
struct Scan<'a, 'b> {
    text: &'a str,
    table: &'b mut Table,
    known: &'b mut Known<'a>,
    /// Nodes found and not yet taken into an enclosing node.
    kids: Vec<Kid>,
    /// The deepest object or array met so far.
    deepest: usize,
}

impl Scan<'_, '_> {
    /// Index just past the value at `start`; `None` if the text is not
    /// compact JSON there.
    fn value(&mut self, start: usize, depth: usize) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let close = match bytes.get(start)? {
            b'"' => return quoted_end(bytes, start),
            b'{' => b'}',
            b'[' => b']',
            _ => {
                let len = bytes[start..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']'))
                    .unwrap_or(bytes.len() - start);
                return (len > 0).then_some(start + len);
            }
        };
        if depth > MAX_SCAN_DEPTH {
            return None;
        }
        if let Some((end, node, height)) = self.known.find(self.text, start, depth) {
            self.kids.push((start, end, node));
            self.deepest = self.deepest.max(depth + height);
            return Some(end);
        }
        let outer = std::mem::replace(&mut self.deepest, depth);
        let mark = self.kids.len();
        let mut i = start + 1;
        if bytes.get(i) == Some(&close) {
            self.deepest = outer.max(depth);
            return Some(i + 1);
        }
        loop {
            if close == b'}' {
                if bytes.get(i) != Some(&b'"') {
                    return None;
                }
                i = quoted_end(bytes, i)?;
                if bytes.get(i) != Some(&b':') {
                    return None;
                }
                i += 1;
            }
            i = self.value(i, depth + 1)?;
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(&c) if c == close => break,
                _ => return None,
            }
        }
        let end = i + 1;
        let height = self.deepest - depth;
        self.deepest = self.deepest.max(outer);
        if end - start >= MIN_CHUNK_BYTES {
            let stored = self.table.nodes.len();
            let node = self
                .table
                .intern(&layout(self.text, start, end, &self.kids[mark..]));
            if node == stored {
                self.known.add(&self.text[start..end], node, height);
            }
            self.kids.truncate(mark);
            self.kids.push((start, end, node));
        }
        Some(end)
    }

    /// The root node of the whole text (a whole-text literal when the
    /// text is not compact JSON or nests too deep).
    fn root(mut self) -> usize {
        let len = self.text.len();
        match self.value(0, 0) {
            Some(end) if end == len => {
                if let [(0, e, node)] = self.kids[..]
                    && e == len
                {
                    return node;
                }
                let kids = std::mem::take(&mut self.kids);
                self.table.intern(&layout(self.text, 0, len, &kids))
            }
            _ => self.table.intern(&[Span::Literal(self.text)]),
        }
    }
}

/// Cuts `texts` (compact JSON, as `serde_json::to_string` writes it) into
/// shared entries (see the module docs). A text that is not compact JSON
/// is one literal entry.
///
/// # Errors
/// The name two different entries share (a 64-bit digest collision).
pub fn chunk_texts(texts: &[&str]) -> Result<Chunked, String> {
    // Scanned in parallel into per-worker tables, then merged: the merge
    // costs the distinct content, the scan every byte. Entries depend only
    // on content, never on how the texts were split.
    let batch = texts
        .par_iter()
        .enumerate()
        .fold(Batch::default, |batch, (i, text)| batch.scan(i, text))
        .reduce(Batch::default, Batch::merge);
    name_all(batch, texts.len())
}

/// The entries of `batch`, which scanned `count` texts.
fn name_all(batch: Batch, count: usize) -> Result<Chunked, String> {
    let table = batch.table;
    let mut roots = vec![0; count];
    let mut is_root = vec![false; table.nodes.len()];
    for (i, root) in batch.roots {
        roots[i] = root;
        is_root[root] = true;
    }
    let namer = Namer {
        names: std::iter::repeat_with(OnceLock::new)
            .take(table.nodes.len())
            .collect(),
        table: &table,
        is_root: &is_root,
    };
    // The texts are named on the pool: a name depends on content alone, so
    // which thread names a shared node first changes no name.
    let mut named: Vec<(String, Vec<Piece>)> = roots
        .par_iter()
        .fold(Vec::new, |mut named, &root| {
            namer.name(root, &mut named);
            named
        })
        .reduce(Vec::new, |mut a, mut b| {
            a.append(&mut b);
            a
        });
    named.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Two nodes with one name and other pieces: a digest clash.
    if let Some(pair) = named
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1)
    {
        return Err(pair[0].0.clone());
    }
    let roots = roots
        .iter()
        .map(|&root| namer.names[root].get().cloned().unwrap_or_default())
        .collect();
    Ok(Chunked {
        entries: named.into_iter().collect(),
        roots,
    })
}

/// Names kept nodes by the digest of their pieces.
struct Namer<'a> {
    table: &'a Table,
    is_root: &'a [bool],
    names: Vec<OnceLock<String>>,
}

impl Namer<'_> {
    /// Whether node `id` is an entry of its own: a root, or met more than
    /// once.
    fn kept(&self, id: usize) -> bool {
        self.is_root[id] || self.table.nodes[id].refs > 1
    }

    /// The name of kept node `id`, naming it and the kept nodes it refers
    /// to on first use and pushing each one named here to `named`.
    fn name(&self, id: usize, named: &mut Vec<(String, Vec<Piece>)>) -> String {
        if let Some(name) = self.names[id].get() {
            return name.clone();
        }
        let mut pieces = Vec::new();
        self.flatten(id, &mut pieces, named);
        let mut digest = Sha256::new();
        for piece in &pieces {
            match piece {
                Piece::Text(t) => digest.update(t.as_bytes()),
                // NUL never occurs in JSON text: a chunk cannot read as text.
                Piece::Chunk(c) => {
                    digest.update([0]);
                    digest.update(c.as_bytes());
                    digest.update([0]);
                }
            }
        }
        let name = format!("S_{}", hex::encode_upper(&digest.finalize()[..8]));
        // Another thread may have named the node meanwhile: it found the
        // same name, and only the first to set it records the entry.
        if self.names[id].set(name.clone()).is_ok() {
            named.push((name.clone(), pieces));
        }
        name
    }

    /// Appends the pieces of node `id` to `out`: the parts of nodes met
    /// once are taken in, kept nodes become chunk references.
    fn flatten(&self, id: usize, out: &mut Vec<Piece>, named: &mut Vec<(String, Vec<Piece>)>) {
        for part in &self.table.nodes[id].parts {
            match part {
                Part::Text(t) => match out.last_mut() {
                    Some(Piece::Text(last)) => last.push_str(t),
                    _ => out.push(Piece::Text(t.to_string())),
                },
                Part::Node(n) if self.kept(*n) => {
                    out.push(Piece::Chunk(self.name(*n, named)));
                }
                Part::Node(n) => self.flatten(*n, out, named),
            }
        }
    }
}

#[cfg(test)]
#[path = "chunks_tests.rs"]
mod tests;
