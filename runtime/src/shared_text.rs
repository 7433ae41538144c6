//! Texts of a catalogue that share their parts.
//!
//! The output and response schemas of a large API repeat the same parts
//! across tools (a shared error body, an object returned everywhere), and
//! so do their TypeScript declarations. A generated crate keeps each such
//! part once, as an entry of its [`SharedTexts`] table, and a text refers
//! to an entry with `{"<key>":"<name>"}` where the part was.
//! [`SharedText::text`] puts the exact text back together.
//!
//! The table has two sources: string literals (the declaration parts, in
//! `src/schemas.rs`; one `static`, so the compiler checks it once: a tree
//! of nested `const`s or `static`s, one per part, tripled the build of
//! Stripe's crate) and the schema texts of `artifacts/schemas.json`,
//! embedded whole, with the length of each of its lines (a table without
//! those is indexed line by line on first use). That file is the one
//! `artifacts/tools.json` refers to, so each schema text is stored once.

use std::borrow::Cow;
use std::sync::OnceLock;

/// Deepest nesting of references followed (the generator's texts nest a
/// few levels; this and [`MAX_BYTES`] only stop a malformed table).
const MAX_DEPTH: usize = 256;

/// Longest text put together; references past it are kept as written
/// (small in tests, which check the bound).
const MAX_BYTES: usize = if cfg!(test) { 1 << 20 } else { 256 << 20 };

/// `(name, text)` pairs.
type Entries = Vec<(&'static str, &'static str)>;

/// What expanding texts needs, made on first use: a searcher for the
/// opening of a reference and, for a document without line lengths
/// (hand-made tables, tests), its entries by name. A server expands every
/// tool's input schema before it listens, so this is on the cold start's
/// path.
#[derive(Debug)]
struct Index {
    /// `{"<key>":"`.
    open: memchr::memmem::Finder<'static>,
    /// The document's entries found by reading its lines (empty when the
    /// table has line lengths).
    lines: std::collections::HashMap<&'static str, &'static str>,
    /// The document after its head line (empty when it has none).
    body: &'static str,
    /// Where each of the body's entry lines starts, summed from the
    /// table's line lengths.
    starts: Vec<usize>,
}

/// Longest entry name read from a document line (the generator's are 18
/// bytes): a start that lands elsewhere is not scanned far.
const MAX_NAME: usize = 256;

/// The shared parts of a crate's texts.
#[derive(Debug)]
pub struct SharedTexts {
    /// The reference key: `x-toolforge-chunk`, unless some text holds that
    /// one itself (then a suffixed key no text holds).
    key: &'static str,
    /// `(name, text)` literal entries, sorted by name.
    entries: &'static [(&'static str, &'static str)],
    /// A generated `schemas.json` document: one entry a line,
    /// `"<name>":<JSON text>` (see [`SharedTexts::index_lines`]).
    document: &'static str,
    /// The length of each entry's line in the document (line break
    /// included), in the document's order (sorted by name), from the line
    /// after its head: written by the generator, so finding an entry reads
    /// a few names instead of indexing every line. Lengths, not starts: a
    /// release that changes one entry changes one number.
    line_lengths: &'static [u32],
    /// Made on first use.
    index: OnceLock<Index>,
}

impl SharedTexts {
    /// A table of literal entries (sorted by name) and the entries of a
    /// `schemas.json` document (`""` for none), found by reading its lines.
    pub const fn new(
        key: &'static str,
        entries: &'static [(&'static str, &'static str)],
        document: &'static str,
    ) -> Self {
        Self::with_line_lengths(key, entries, document, &[])
    }

    /// [`SharedTexts::new`] with the length of each of the document's entry
    /// lines (see the field), as a generated crate writes them. A wrong
    /// length finds nothing: an entry is only read where its own name is
    /// written.
    pub const fn with_line_lengths(
        key: &'static str,
        entries: &'static [(&'static str, &'static str)],
        document: &'static str,
        line_lengths: &'static [u32],
    ) -> Self {
        SharedTexts {
            key,
            entries,
            document,
            line_lengths,
            index: OnceLock::new(),
        }
    }

    /// The entries of a `schemas.json` document: every line that reads
    /// `"<name>":<text>` or `"<name>":<text>,` (the generator writes one
    /// entry a line, compact JSON having no line breaks); the head and
    /// closing lines (which do not start with `"`) and anything else are
    /// skipped.
    fn index_lines(document: &'static str) -> Entries {
        document
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix('"')?;
                let (name, text) = rest.split_once("\":")?;
                let text = text.strip_suffix(',').unwrap_or(text);
                (!name.contains(['"', '\\'])).then_some((name, text))
            })
            .collect()
    }

    /// The reference key of this table.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Entry `name` as stored: its references not replaced (`None` when
    /// the table has no such entry).
    pub fn stored(&self, name: &str) -> Option<&'static str> {
        self.get(name)
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut lines = std::collections::HashMap::new();
            let mut at = 0usize;
            let starts = (self.line_lengths.iter())
                .map(|&len| {
                    let start = at;
                    at = at.saturating_add(len as usize);
                    start
                })
                .collect();
            if self.line_lengths.is_empty() {
                // A name written twice keeps its first text.
                for (name, text) in Self::index_lines(self.document) {
                    lines.entry(name).or_insert(text);
                }
            }
            let open = format!("{{\"{}\":\"", self.key);
            let document = self.document;
            let body =
                memchr::memchr(b'\n', document.as_bytes()).map_or("", |head| &document[head + 1..]);
            Index {
                open: memchr::memmem::Finder::new(open.as_bytes()).into_owned(),
                lines,
                body,
                starts,
            }
        })
    }

    /// The text of entry `name` found through the line lengths, if it has
    /// one.
    fn at_line(&self, name: &str) -> Option<&'static str> {
        if self.line_lengths.is_empty() {
            return None;
        }
        let Index { body, starts, .. } = self.index();
        let i = starts
            .binary_search_by(|&start| name_at(body, start).unwrap_or("").cmp(name))
            .ok()?;
        let start = *starts.get(i)?;
        // `"<name>":<text>` then `,` or nothing before the line break.
        let line = body.get(start + name.len() + 1..)?.strip_prefix("\":")?;
        let end = memchr::memchr(b'\n', line.as_bytes()).unwrap_or(line.len());
        let text = &line[..end];
        Some(text.strip_suffix(',').unwrap_or(text))
    }

    fn get(&self, name: &str) -> Option<&'static str> {
        if let Some(text) = self.at_line(name) {
            return Some(text);
        }
        let literal = self
            .entries
            .binary_search_by(|(n, _)| (*n).cmp(name))
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|(_, text)| *text);
        literal.or_else(|| self.index().lines.get(name).copied())
    }

    /// Appends `text` to `out` with its references replaced by the entries
    /// they name (a reference that names no entry, nests past
    /// [`MAX_DEPTH`] or would grow the text past [`MAX_BYTES`] is kept as
    /// written). The text grows from `out[start..]` (the bound is on that
    /// part). Returns how deep references nested below `text` when no bound
    /// was met (`None` when one was: the expansion then depends on where it
    /// was made, and is not copied from `written`).
    fn push(
        &self,
        index: &Index,
        text: &'static str,
        out: &mut String,
        start: usize,
        depth: usize,
        written: &mut Option<&mut Written>,
    ) -> Option<usize> {
        let open = index.open.needle().len();
        let mut rest = text;
        let mut nest = Some(0usize);
        while let Some(at) = index.open.find(rest.as_bytes()) {
            // The needle is ASCII, so both ends are character boundaries.
            let after = &rest[at + open..];
            // Names are `S_` and hex digits: the reference ends at the next
            // quote, which a `}` follows.
            let close = memchr::memchr(b'"', after.as_bytes())
                .filter(|&end| after.as_bytes().get(end + 1) == Some(&b'}'));
            let Some(end) = close else {
                out.push_str(&rest[..at + open]);
                rest = after;
                continue;
            };
            let name = &after[..end];
            if let Some(w) = written.as_mut() {
                // A name ending in `\\` ended no JSON string: what was taken
                // for a reference was not one (see [`Written::unchecked`]).
                w.check_name(name);
            }
            let room = depth < MAX_DEPTH && out.len() - start < MAX_BYTES;
            // A copy is exactly the expansion: it met no bound where it was
            // made, and meets none here.
            let copy = written
                .as_ref()
                .and_then(|w| w.spans.get(name))
                .filter(|w| {
                    room && depth + 1 + w.nest < MAX_DEPTH
                        && out.len() - start + w.span.len() < MAX_BYTES
                });
            if let Some(w) = copy {
                let (span, inner) = (w.span.clone(), w.nest);
                out.push_str(&rest[..at]);
                out.extend_from_within(span);
                nest = nest.map(|n| n.max(inner + 1));
                rest = &after[end + 2..];
                continue;
            }
            match self.get(name) {
                Some(entry) if room => {
                    out.push_str(&rest[..at]);
                    let from = out.len();
                    let faults = written.as_mut().map(|w| w.check(entry));
                    let inner = self.push(index, entry, out, start, depth + 1, written);
                    if let (Some(inner), Some(w)) = (inner, written.as_mut()) {
                        // Only a part whose JSON was checked is copied
                        // unchecked later.
                        if faults == Some(w.unchecked) {
                            let span = from..out.len();
                            w.spans.insert(name, Span { span, nest: inner });
                        }
                    }
                    nest = nest.zip(inner).map(|(n, i)| n.max(i + 1));
                    rest = &after[end + 2..];
                }
                found => {
                    // Kept as written; a bound makes that depend on where.
                    if found.is_some() {
                        nest = None;
                    }
                    out.push_str(&rest[..at + open]);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        nest
    }

    /// `text` with its references replaced (borrowed when it has none).
    fn expand(&self, text: &'static str) -> Cow<'static, str> {
        let index = self.index();
        if index.open.find(text.as_bytes()).is_none() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() * 4);
        self.push(index, text, &mut out, 0, 0, &mut None);
        Cow::Owned(out)
    }
}

/// Where entries were put together in one output (see
/// [`SharedText::write_into`]); clear it when that output is cut back.
///
/// It also checks, once per part, that each text put together is JSON:
/// when every stored part is a JSON value, a reference `{"<key>":"<name>"}`
/// inside one is a whole object in a value's place (a JSON string cannot
/// hold `{"` unescaped, and a name cannot end in `\\`), so putting values in
/// those places leaves a JSON value. The listing then reads one byte of a
/// tool's schema instead of parsing all of it: the schemas of a large API
/// repeat their parts, and parsing each tool's whole schema was most of the
/// cold start's listing work (docs/benchmarks.md, "Cold start").
#[derive(Debug, Default)]
pub struct Written {
    spans: std::collections::HashMap<&'static str, Span>,
    /// How many texts put together here were not JSON values or held a
    /// name that cannot be a reference: the caller then checks what it
    /// wrote the slow way.
    unchecked: usize,
}

impl Written {
    /// Forgets every part (after the output was cut back).
    pub fn clear(&mut self) {
        self.spans.clear();
    }

    /// How many texts written so far were not known to be JSON values:
    /// unchanged across a [`SharedText::write_into`] means what it wrote
    /// is one JSON value.
    pub fn unchecked(&self) -> usize {
        self.unchecked
    }

    /// Counts `text` as unchecked unless it is one JSON value; returns the
    /// count before.
    fn check(&mut self, text: &str) -> usize {
        let before = self.unchecked;
        if serde_json::from_str::<&serde_json::value::RawValue>(text).is_err() {
            self.unchecked += 1;
        }
        before
    }

    /// Counts a reference name ending in `\\` as unchecked.
    fn check_name(&mut self, name: &str) {
        if name.ends_with('\\') {
            self.unchecked += 1;
        }
    }
}

/// One entry's expansion in an output.
#[derive(Debug)]
struct Span {
    span: std::ops::Range<usize>,
    /// How deep references nested inside it.
    nest: usize,
}

/// The name of the entry whose line starts at `start` of `body` (`None`
/// when no `"` opens a name there, or it is longer than [`MAX_NAME`]).
fn name_at(body: &'static str, start: usize) -> Option<&'static str> {
    let rest = body.get(start..)?.strip_prefix('"')?;
    let head = rest.as_bytes().get(..rest.len().min(MAX_NAME + 1))?;
    // The quote is ASCII, so the cut is a character boundary.
    rest.get(..memchr::memchr(b'"', head)?)
}

/// A text of the catalogue (a schema's JSON, a TypeScript declaration).
#[derive(Debug, Clone, Copy)]
pub enum SharedText {
    /// The whole text, literal.
    Text(&'static str),
    /// The entry of this name in the table.
    Entry(&'static str, &'static SharedTexts),
    /// Literal text that refers to entries of the table.
    Marked(&'static str, &'static SharedTexts),
}

impl SharedText {
    /// The whole text (borrowed when it is one literal). An entry that is
    /// missing from its table (a broken crate) reads as the empty text.
    pub fn text(self) -> Cow<'static, str> {
        match self {
            SharedText::Text(t) => Cow::Borrowed(t),
            SharedText::Entry(name, table) => table
                .get(name)
                .map_or(Cow::Borrowed(""), |t| table.expand(t)),
            SharedText::Marked(text, table) => table.expand(text),
        }
    }

    /// Appends the whole text to `out` (as [`SharedText::text`], without
    /// a buffer of its own: the listing puts every tool's schemas into one).
    /// Parts already put together in `out` and noted in `written` are
    /// copied from there instead of being put together again (tools share
    /// most of their parts); `out` must keep what was written since.
    pub fn write_into(self, out: &mut String, written: Option<&mut Written>) {
        let mut written = written;
        match self {
            SharedText::Text(t) => {
                if let Some(w) = written.as_mut() {
                    w.check(t);
                }
                out.push_str(t);
            }
            SharedText::Entry(name, table) => match table.get(name) {
                Some(t) => {
                    if let Some(w) = written.as_mut() {
                        w.check(t);
                    }
                    table.push(table.index(), t, out, out.len(), 0, &mut written);
                }
                None => {
                    if let Some(w) = written.as_mut() {
                        // The empty text is no JSON value.
                        w.unchecked += 1;
                    }
                }
            },
            SharedText::Marked(text, table) => {
                if let Some(w) = written.as_mut() {
                    w.check(text);
                }
                table.push(table.index(), text, out, out.len(), 0, &mut written);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SharedText, SharedTexts};

    static TABLE: SharedTexts = SharedTexts::new(
        "k",
        &[
            ("A", r#"{"type":"string"}"#),
            ("L", r#"{"a":{"k":"L"}}"#),
            ("W", r#"[{"k":"W"},{"k":"W"}]"#),
        ],
        // `B` comes from the document, and refers to a literal entry.
        "{\"@generated\":\"x\",\"key\":\"k\",\"entries\":{\n\"B\":{\"items\":{\"k\":\"A\"}}\n}}\n",
    );

    /// A document as the generator writes it, with lines that are not
    /// entries among them.
    static DOCUMENT: SharedTexts = SharedTexts::new(
        "k",
        &[],
        concat!(
            "{\"@generated\":\"x\",\"key\":\"k\",\"entries\":{\n",
            "\"C\":[1,{\"k\":\"D\"}],\n",
            "\"A\":{\"a\":\"x\\\":{\"},\n",
            "\"D\":{\"d\":true},\n",
            "not an entry\n",
            "\"F\":{\"f\":1}\n",
            "}}\n"
        ),
    );

    /// A document with its line lengths, as the generator writes them.
    const LENGTHS_DOC: &str = concat!(
        "{\"@generated\":\"x\",\"key\":\"k\",\"entries\":{\n",
        "\"S_0000000000000001\":[1,{\"k\":\"S_00000000000000AB\"}],\n",
        "\"S_00000000000000AB\":{\"d\":true},\n",
        "\"S_00000000000000AC\":{\"e\":\"\\\":\"}\n",
        "}}\n"
    );
    static LENGTHS: SharedTexts = SharedTexts::with_line_lengths(
        "k",
        &[("S_LITERAL", r#"{"k":"S_0000000000000001"}"#)],
        LENGTHS_DOC,
        &[53, 33, 36],
    );

    /// Lengths that are wrong: starts inside a line, out of order, past
    /// the document, on a line that is not an entry, summing past `u32`.
    static BROKEN_LENGTHS: SharedTexts = SharedTexts::with_line_lengths(
        "k",
        &[],
        LENGTHS_DOC,
        &[86, 1, 52, 5000, 34, u32::MAX, u32::MAX, 1],
    );

    #[test]
    fn line_lengths_find_entries_without_reading_lines() {
        assert_eq!(
            SharedText::Entry("S_0000000000000001", &LENGTHS).text(),
            r#"[1,{"d":true}]"#
        );
        assert_eq!(
            SharedText::Entry("S_LITERAL", &LENGTHS).text(),
            r#"[1,{"d":true}]"#
        );
        assert_eq!(
            SharedText::Entry("S_00000000000000AC", &LENGTHS).text(),
            r#"{"e":"\":"}"#
        );
        for missing in ["S_00000000000000AD", "S_1", "", "\"", "}}"] {
            assert_eq!(SharedText::Entry(missing, &LENGTHS).text(), "", "{missing}");
        }
        // The table does not read the document's lines when it has lengths.
        assert!(LENGTHS.index.get().is_some_and(|i| i.lines.is_empty()));
        // A wrong length finds nothing, or the entry written where the
        // sum points: never another entry's text.
        for (name, text) in [
            ("S_0000000000000001", r#"[1,{"d":true}]"#),
            ("S_00000000000000AB", r#"{"d":true}"#),
            ("S_00000000000000AC", r#"{"e":"\":"}"#),
            ("}}", ""),
            ("", ""),
        ] {
            let got = SharedTexts::stored(&BROKEN_LENGTHS, name);
            assert!(got.is_none() || got == Some(text), "{name}: {got:?}");
        }
    }

    /// A chain `C0 → C1 → … → C300` nested past [`super::MAX_DEPTH`].
    static CHAIN: std::sync::LazyLock<SharedTexts> = std::sync::LazyLock::new(|| {
        let entries: Vec<(&'static str, &'static str)> = (0..=300)
            .map(|i| {
                let name: &'static str = Box::leak(format!("C{i:03}").into_boxed_str());
                let text: &'static str = if i == 300 {
                    "{}"
                } else {
                    Box::leak(format!("[{{\"k\":\"C{:03}\"}}]", i + 1).into_boxed_str())
                };
                (name, text)
            })
            .collect();
        SharedTexts::new("k", Box::leak(entries.into_boxed_slice()), "")
    });

    /// Texts written one after another into one output, parts copied from
    /// where they were written before, read exactly as each alone, in any
    /// order, bounds and broken tables included.
    #[test]
    fn copies_of_written_parts_are_the_parts() {
        let chain: &'static SharedTexts = &CHAIN;
        let mut texts = vec![
            SharedText::Entry("A", &TABLE),
            SharedText::Entry("B", &TABLE),
            SharedText::Marked(r#"[{"k":"B"},{"k":"A"},{"k":"Z"}]"#, &TABLE),
            SharedText::Entry("L", &TABLE),
            SharedText::Entry("W", &TABLE),
        ];
        // Deep first, then shallow, then deep again: a part written near
        // the depth bound is not what it is higher up, and back.
        for i in [0, 100, 250, 290, 5, 260, 299, 0] {
            let name: &'static str = Box::leak(format!("C{i:03}").into_boxed_str());
            texts.push(SharedText::Entry(name, chain));
        }
        for round in 0..2 {
            let order: Vec<SharedText> = if round == 0 {
                texts.clone()
            } else {
                texts.iter().rev().copied().collect()
            };
            let mut out = String::new();
            let mut written = super::Written::default();
            let mut expected = String::new();
            for t in &order {
                t.write_into(&mut out, Some(&mut written));
                out.push('\n');
                expected.push_str(&t.text());
                expected.push('\n');
            }
            assert_eq!(out.len(), expected.len());
            assert!(out == expected, "round {round}");
        }
    }

    #[test]
    fn document_lines_are_entries() {
        assert_eq!(
            SharedText::Entry("C", &DOCUMENT).text(),
            r#"[1,{"d":true}]"#
        );
        // A string holding `":` does not end the name early.
        assert_eq!(SharedText::Entry("A", &DOCUMENT).text(), r#"{"a":"x\":{"}"#);
        assert_eq!(SharedText::Entry("F", &DOCUMENT).text(), r#"{"f":1}"#);
        for missing in ["not an entry", "G", "@generated", "entries"] {
            assert_eq!(
                SharedText::Entry(missing, &DOCUMENT).text(),
                "",
                "{missing}"
            );
        }
    }

    #[test]
    fn references_are_replaced_by_their_entries() {
        let root = SharedText::Marked(
            r#"{"a":{"k":"A"},"b":{"k":"B"},"c":{"k":"Z"},"d":"{\"k\":\"A\"}"}"#,
            &TABLE,
        );
        assert_eq!(
            root.text(),
            r#"{"a":{"type":"string"},"b":{"items":{"type":"string"}},"c":{"k":"Z"},"d":"{\"k\":\"A\"}"}"#
        );
        assert_eq!(
            SharedText::Entry("B", &TABLE).text(),
            r#"{"items":{"type":"string"}}"#
        );
        assert!(matches!(
            SharedText::Entry("A", &TABLE).text(),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(SharedText::Entry("missing", &TABLE).text(), "");
        assert_eq!(SharedText::Text("{\"k\":\"A\"}").text(), "{\"k\":\"A\"}");
    }

    #[test]
    fn a_loop_in_a_broken_table_stops() {
        let text = SharedText::Entry("L", &TABLE).text();
        assert!(text.len() < 10_000, "{}", text.len());
        assert!(text.contains(r#"{"k":"L"}"#), "{text}");
        // Two references a level would be 2^256 copies: the size bound stops
        // it (past the bound, each open level still writes out its own text).
        let wide = SharedText::Entry("W", &TABLE).text();
        assert!(wide.len() < super::MAX_BYTES + 64 * 1024, "{}", wide.len());
    }
}
