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
//! embedded whole and indexed on first use. That file is the one
//! `artifacts/tools.json` refers to, so each schema text is stored once.

use std::borrow::Cow;
use std::sync::OnceLock;

/// Deepest nesting of references followed (the generator's texts nest a
/// few levels; this and [`MAX_BYTES`] only stop a malformed table).
const MAX_DEPTH: usize = 256;

/// Longest text put together; references past it are kept as written
/// (small in tests, which check the bound).
const MAX_BYTES: usize = if cfg!(test) { 1 << 20 } else { 256 << 20 };

/// `(name, text)` pairs sorted by name.
type Entries = Vec<(&'static str, &'static str)>;

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
    /// The document's entries, indexed on first use.
    index: OnceLock<Entries>,
}

impl SharedTexts {
    /// A table of literal entries (sorted by name) and the entries of a
    /// `schemas.json` document (`""` for none).
    pub const fn new(
        key: &'static str,
        entries: &'static [(&'static str, &'static str)],
        document: &'static str,
    ) -> Self {
        SharedTexts {
            key,
            entries,
            document,
            index: OnceLock::new(),
        }
    }

    /// The entries of a `schemas.json` document: every line that reads
    /// `"<name>":<text>` or `"<name>":<text>,` (the generator writes one
    /// entry a line, compact JSON having no line breaks); the head and
    /// closing lines (which do not start with `"`) and anything else are
    /// skipped. Sorted by name.
    fn index_lines(document: &'static str) -> Entries {
        let mut entries: Entries = document
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix('"')?;
                let (name, text) = rest.split_once("\":")?;
                let text = text.strip_suffix(',').unwrap_or(text);
                (!name.contains(['"', '\\'])).then_some((name, text))
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        entries
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

    fn get(&self, name: &str) -> Option<&'static str> {
        let find = |entries: &[(&'static str, &'static str)]| {
            entries
                .binary_search_by(|(n, _)| (*n).cmp(name))
                .ok()
                .and_then(|i| entries.get(i))
                .map(|(_, text)| *text)
        };
        find(self.entries).or_else(|| {
            if self.document.is_empty() {
                return None;
            }
            find(self.index.get_or_init(|| Self::index_lines(self.document)))
        })
    }

    /// Appends `text` to `out` with its references replaced by the entries
    /// they name (a reference that names no entry, nests past
    /// [`MAX_DEPTH`] or would grow the text past [`MAX_BYTES`] is kept as
    /// written).
    fn push(&self, open: &str, text: &str, out: &mut String, depth: usize) {
        let mut rest = text;
        while let Some(at) = rest.find(open) {
            let after = &rest[at + open.len()..];
            let target = after.find("\"}").and_then(|end| {
                let found = self
                    .get(&after[..end])
                    .filter(|_| depth < MAX_DEPTH && out.len() < MAX_BYTES);
                found.map(|t| (t, end))
            });
            match target {
                Some((entry, end)) => {
                    out.push_str(&rest[..at]);
                    self.push(open, entry, out, depth + 1);
                    rest = &after[end + 2..];
                }
                None => {
                    out.push_str(&rest[..at + open.len()]);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
    }

    /// `text` with its references replaced (borrowed when it has none).
    fn expand(&self, text: &'static str) -> Cow<'static, str> {
        let open = format!("{{\"{}\":\"", self.key);
        if !text.contains(&open) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() * 4);
        self.push(&open, text, &mut out, 0);
        Cow::Owned(out)
    }
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
