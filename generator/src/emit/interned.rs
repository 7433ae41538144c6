//! Interned schema texts: output and response schemas repeat across tools
//! (shared error bodies, envelopes, the objects an API returns everywhere),
//! so `artifacts/schemas.json` holds each distinct schema text once, cut
//! into the chunks it shares with other texts (see [`super::chunks`]), and
//! `src/schemas.rs` the TypeScript declaration parts tools share, with that
//! file embedded: one table entry per text, named by its content hash
//! (`S_<16 hex>`), so names stay stable across releases. Input schemas are
//! entries too: Microsoft Graph's bodies repeat the same entities across
//! thousands of tools. The tool statics and `tools.json` name their
//! entries, so no text is written twice.

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::chunks::{Piece, chunk_texts, free_key, marked};
use super::deferred::raw_literal;
use super::typescript::{OutputDeclarations, tool_declaration_parts};
use crate::error::{GenerateError, Result};
use crate::ir::Catalogue;

// Keys are allocation addresses and texts, never iterated into the output
// in hash order: Fx is deterministic and cheap.
use rustc_hash::FxHashMap as HashMap;

/// The interned constants a tool refers to (entry names of
/// [`SchemaTable::entries`]).
#[derive(Debug, Clone, Default)]
pub struct ToolSchemas {
    /// The input schema.
    pub input: Option<String>,
    /// The output schema.
    pub output: Option<String>,
    /// Each response's schema (parallel to `Tool::responses`).
    pub responses: Vec<Option<String>>,
    /// The tool's TypeScript declaration, its parts that other tools
    /// repeat (type aliases, output types) as entries.
    pub declaration: Vec<Piece>,
    /// The reference key of the table (see [`SchemaTable::key`]).
    pub key: Arc<str>,
    /// The `src/defs.rs` items it names.
    pub defs: super::shared_defs::ToolDefs,
}

/// Every interned text, plus which constants each tool uses.
#[derive(Debug, Default)]
pub struct SchemaTable {
    /// Schema texts: entry name → pieces, sorted by name (see
    /// [`super::chunks::Chunked::entries`]); `artifacts/schemas.json`.
    pub entries: BTreeMap<String, Vec<Piece>>,
    /// Declaration parts tools share, sorted by name; `src/schemas.rs`.
    pub parts: BTreeMap<String, Vec<Piece>>,
    /// The key `src/schemas.rs` writes references with: `x-toolforge-chunk`,
    /// unless a schema or declaration holds that itself.
    pub key: Arc<str>,
    /// Per product, per tool (catalogue order).
    pub tools: Vec<Vec<ToolSchemas>>,
    /// The lists and bodies tools share; `src/defs.rs`.
    pub defs: super::shared_defs::SharedDefs,
}

/// `S_` + the first 16 hex digits of the text's sha256.
pub fn const_name(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("S_{}", hex::encode_upper(&digest[..8]))
}

/// Distinct items by allocation, in first-use order: tools share the
/// `Arc` of equal schemas, so each is cut into chunks once.
struct Distinct<'a, T: ?Sized> {
    items: Vec<&'a Arc<T>>,
    index: HashMap<usize, usize>,
}

impl<'a, T: ?Sized> Distinct<'a, T> {
    fn new() -> Self {
        Distinct {
            items: Vec::new(),
            index: HashMap::default(),
        }
    }

    /// The index of `item`, added on first use.
    fn add(&mut self, item: &'a Arc<T>) -> usize {
        let key = Arc::as_ptr(item).cast::<u8>() as usize;
        *self.index.entry(key).or_insert_with(|| {
            self.items.push(item);
            self.items.len() - 1
        })
    }
}

/// Indices of a tool's output schema and of each response's schema.
type Uses = (Option<usize>, Vec<Option<usize>>);

/// Shortest declaration part worth an entry of its own.
const MIN_SHARED_PART: usize = 64;

/// Each tool's declaration (per product, per tool) as pieces, and the
/// entries they name: the parts of at least [`MIN_SHARED_PART`] bytes that
/// more than one tool declares (Stripe's `type Invoice = …` alias lines, an
/// output type many tools return) become entries, the rest stays literal.
fn share_parts(parts: &[Vec<Vec<String>>]) -> Result<SharedParts> {
    let mut counts: HashMap<&str, u32> = HashMap::default();
    for part in parts.iter().flatten().flatten() {
        if part.len() >= MIN_SHARED_PART {
            *counts.entry(part).or_default() += 1;
        }
    }
    let mut entries: BTreeMap<String, Vec<Piece>> = BTreeMap::new();
    let mut names: HashMap<&str, String> = HashMap::default();
    for (&part, _) in counts.iter().filter(|(_, n)| **n > 1) {
        let name = const_name(part);
        let pieces = vec![Piece::Text(part.to_string())];
        match entries.get(&name) {
            Some(existing) if *existing != pieces => return Err(name_clash(&name)),
            Some(_) => {}
            None => {
                entries.insert(name.clone(), pieces);
            }
        }
        names.insert(part, name);
    }
    let declared = parts
        .par_iter()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| {
                    let mut out: Vec<Piece> = Vec::new();
                    for part in tool {
                        match (names.get(part.as_str()), out.last_mut()) {
                            (Some(name), _) => out.push(Piece::Chunk(name.clone())),
                            (None, Some(Piece::Text(last))) => last.push_str(part),
                            (None, _) => out.push(Piece::Text(part.clone())),
                        }
                    }
                    out
                })
                .collect()
        })
        .collect();
    Ok((declared, entries))
}

/// Declarations as pieces (per product, per tool) and the shared parts
/// they name (see [`share_parts`]).
type SharedParts = (Vec<Vec<Vec<Piece>>>, BTreeMap<String, Vec<Piece>>);

/// Two different texts of the table got `name`.
fn name_clash(name: &str) -> GenerateError {
    GenerateError::emit("src/schemas.rs", format!("two texts hash to {name}"))
}

impl SchemaTable {
    /// Interns every input, output and response schema text (in
    /// parallel; the result does not depend on scheduling).
    ///
    /// # Errors
    /// [`GenerateError::Emit`] if two different texts share a name (a
    /// 64-bit hash collision) or a schema does not serialise.
    pub fn build(cat: &Catalogue) -> Result<Self> {
        // Outputs and responses by text allocation: tools share the `Arc`
        // of equal schemas, and an output the policy did not unwrap is its
        // success response's text, so each distinct text is cut once.
        let mut texts = Distinct::<str>::new();
        // Per product, per tool: the output's index and each response's.
        let mut uses: Vec<Vec<Uses>> = Vec::new();
        for product in &cat.products {
            let tools = product
                .tools
                .iter()
                .map(|t| {
                    let output = t.output_schema.as_ref().map(|o| texts.add(&o.text.0));
                    let rs = t
                        .responses
                        .iter()
                        .map(|r| r.schema.as_ref().map(|s| texts.add(&s.0)))
                        .collect();
                    (output, rs)
                })
                .collect();
            uses.push(tools);
        }
        // Input schemas by content (each tool has its own value): equal
        // texts are one root, after the outputs and responses.
        let inputs: Vec<Vec<String>> = cat
            .products
            .par_iter()
            .map(|product| {
                product
                    .tools
                    .iter()
                    .map(|t| crate::json_text::to_string(&t.input_schema))
                    .collect()
            })
            .collect();
        let mut texts: Vec<&str> = texts.items.iter().map(|t| &***t).collect();
        let mut input_index: HashMap<&str, usize> = HashMap::default();
        let input_uses: Vec<Vec<usize>> = inputs
            .iter()
            .map(|tools| {
                tools
                    .iter()
                    .map(|text| {
                        *input_index.entry(text.as_str()).or_insert_with(|| {
                            texts.push(text);
                            texts.len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        // The declarations, their shared parts and the free key are made
        // beside the chunks: each side has steps on one thread, which the
        // other side's parallel steps fill.
        let (chunked, shared) = rayon::join(
            || chunk_texts(&texts),
            || {
                let outputs = OutputDeclarations::build(cat)?;
                let parts: Vec<Vec<Vec<String>>> = cat
                    .products
                    .par_iter()
                    .map(|product| {
                        let parts = |t| tool_declaration_parts(t, outputs.of(t));
                        product.tools.iter().map(parts).collect()
                    })
                    .collect();
                let key: Arc<str> = Arc::from(free_key(
                    super::artifacts::CHUNK_KEY,
                    texts
                        .iter()
                        .copied()
                        .chain(parts.iter().flatten().flatten().map(String::as_str)),
                ));
                Ok((share_parts(&parts)?, key))
            },
        );
        let mut chunked = chunked.map_err(|name| {
            GenerateError::emit("src/schemas.rs", format!("two schema texts hash to {name}"))
        })?;
        let entries = std::mem::take(&mut chunked.entries);
        let ((declared, shared_parts), key) = shared?;
        // Both sources make one table: a name means one text.
        if let Some(name) = shared_parts.keys().find(|name| entries.contains_key(*name)) {
            return Err(name_clash(name));
        }
        let mut declared = declared.into_iter();
        let table_tools = uses
            .into_iter()
            .zip(input_uses)
            .map(|(tools, inputs)| {
                let mut declared = declared.next().unwrap_or_default().into_iter();
                tools
                    .into_iter()
                    .zip(inputs)
                    .map(|((output, rs), input)| ToolSchemas {
                        input: chunked.roots.get(input).cloned(),
                        output: output.and_then(|i| chunked.roots.get(i).cloned()),
                        declaration: declared.next().unwrap_or_default(),
                        key: Arc::clone(&key),
                        defs: Default::default(),
                        responses: rs
                            .into_iter()
                            .map(|i| i.and_then(|i| chunked.roots.get(i).cloned()))
                            .collect(),
                    })
                    .collect()
            })
            .collect();
        let mut table = SchemaTable {
            entries,
            parts: shared_parts,
            key,
            tools: table_tools,
            defs: Default::default(),
        };
        table.defs = super::shared_defs::SharedDefs::share(cat, &mut table)?;
        Ok(table)
    }

    /// The schemas of tool `tool` of product `product`.
    pub fn tool(&self, product: usize, tool: usize) -> Option<&ToolSchemas> {
        self.tools.get(product).and_then(|p| p.get(tool))
    }

    /// The whole text of entry `name` (a schema text or a declaration
    /// part), joined from its chunks.
    #[cfg(any(test, feature = "oracles"))]
    pub fn text(&self, name: &str) -> Option<String> {
        super::chunks::join(&self.entries, name).or_else(|| super::chunks::join(&self.parts, name))
    }

    /// Whether the crate has a table at all (`src/schemas.rs`).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.parts.is_empty()
    }

    /// `src/schemas.rs`: the `ALL` table (a short name, so the tool fields that
    /// name it stay clear of a layout threshold): the declaration parts, one
    /// a line, sorted by name, and `artifacts/schemas.json` embedded
    /// (`toolforge_runtime::catalogue::SharedTexts`). Written directly (no
    /// token round trip).
    pub fn render(&self, header: &str) -> String {
        let size: usize = (self.parts.values())
            .map(|pieces| marked_len(pieces, &self.key))
            .sum::<usize>()
            + self.parts.len() * 32;
        let mut out = String::with_capacity(size + 1024);
        out.push_str(header);
        out.push_str(
            "\n//! The texts tools share: input, output and response schemas as JSON text, each\n//! distinct text once, named by its content hash, in `artifacts/schemas.json`\n//! (also read by `artifacts/tools.json`), and the TypeScript declaration parts\n//! below; a text refers to the parts it shares with `{\"<key>\":\"S_…\"}`\n//! (`SharedText::text` puts it back together).\n\nuse toolforge_runtime::catalogue::SharedTexts;\n\n/// Every shared text.\npub(crate) static ALL: SharedTexts = SharedTexts::with_line_lengths(\n    ",
        );
        out.push_str(&super::string_literal::string_literal(&self.key));
        out.push_str(",\n    &[\n");
        for (name, pieces) in &self.parts {
            out.push_str("        (\"");
            out.push_str(name);
            out.push_str("\", ");
            out.push_str(&raw_literal(&marked(pieces, &self.key)));
            out.push_str("),\n");
        }
        out.push_str("    ],\n");
        if self.entries.is_empty() {
            out.push_str("    \"\",\n");
        } else {
            out.push_str("    include_str!(\"../");
            out.push_str(SCHEMAS_JSON);
            out.push_str("\"),\n");
        }
        match self.line_lengths() {
            Some(lengths) if !lengths.is_empty() => {
                // One a line: a release that changes one entry changes
                // (or moves) one line here.
                out.push_str(
                    "    // The length of each entry's line in that file, line break included.\n    &[\n",
                );
                for len in lengths {
                    out.push_str("        ");
                    out.push_str(&len.to_string());
                    out.push_str(",\n");
                }
                out.push_str("    ],\n");
            }
            _ => out.push_str("    &[],\n"),
        }
        out.push_str(");\n");
        out
    }

    /// The length of each entry's line in `artifacts/schemas.json` (as
    /// [`SchemaTable::schemas_json`] writes it, line break included), in
    /// name order; `None` when a name could not be read back from its
    /// line (a quote, a backslash, longer than 256 bytes) or the file
    /// would pass 4 GiB (the runtime then reads the file's lines).
    pub fn line_lengths(&self) -> Option<Vec<u32>> {
        let mut total = 0usize;
        let mut out = Vec::with_capacity(self.entries.len());
        for (name, pieces) in &self.entries {
            if name.len() > 256 || name.contains(['"', '\\']) {
                return None;
            }
            // `"<name>":` then the text, then `,` (not on the last line)
            // and a line break.
            let len = name.len() + 3 + marked_len(pieces, &self.key) + 2;
            out.push(u32::try_from(len).ok()?);
            total += len;
        }
        u32::try_from(total).ok()?;
        Some(out)
    }

    /// `artifacts/schemas.json`: the schema texts, one entry a line
    /// (`"<name>":<text>`, sorted by name; a chunk written as the reference
    /// `{"<key>":"<name>"}`), under a head naming the reference key. The
    /// runtime reads it line by line, `toolforge diff` as JSON.
    pub fn schemas_json(&self, generated: &str) -> Result<Vec<u8>> {
        let head = serde_json::json!({"@generated": generated, "key": &*self.key});
        let head = serde_json::to_string(&head)
            .map_err(|e| GenerateError::emit_from(SCHEMAS_JSON, "serialising the head", e))?;
        let size: usize = (self.entries.values())
            .map(|pieces| marked_len(pieces, &self.key))
            .sum::<usize>()
            + self.entries.len() * 24;
        let mut out = Vec::with_capacity(size + head.len() + 32);
        out.extend_from_slice(head.strip_suffix('}').unwrap_or(&head).as_bytes());
        out.extend_from_slice(b",\"entries\":{");
        for (i, (name, pieces)) in self.entries.iter().enumerate() {
            out.extend_from_slice(if i == 0 { &b"\n\""[..] } else { &b",\n\""[..] });
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(marked(pieces, &self.key).as_bytes());
        }
        out.extend_from_slice(b"\n}}\n");
        Ok(out)
    }
}

/// The length of [`marked`]`(pieces, key)`, without writing it.
fn marked_len(pieces: &[Piece], key: &str) -> usize {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.len(),
            // `{"<key>":"<name>"}`
            Piece::Chunk(c) => key.len() + c.len() + 7,
        })
        .sum()
}

/// Where the schema texts are written, relative to the crate.
pub const SCHEMAS_JSON: &str = "artifacts/schemas.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_content_hashes() {
        assert_eq!(const_name("{}"), const_name("{}"));
        assert_ne!(const_name("{}"), const_name("{ }"));
        assert_eq!(const_name("{}").len(), 18);
        let table = SchemaTable {
            entries: [
                (
                    "S_A".to_string(),
                    vec![Piece::Text("{\"a\":\"\\n\"}".into())],
                ),
                (
                    "S_B".to_string(),
                    vec![
                        Piece::Text("{\"x\":".into()),
                        Piece::Chunk("S_A".into()),
                        Piece::Text("}".into()),
                    ],
                ),
            ]
            .into(),
            parts: [(
                "S_T".to_string(),
                vec![Piece::Text("type T = \"#\";\n".into())],
            )]
            .into(),
            key: Arc::from("k"),
            tools: Vec::new(),
            defs: Default::default(),
        };
        let text = table.render("// header");
        assert!(
            text.contains("        (\"S_T\", r##\"type T = \"#\";\n\"##),\n"),
            "{text}"
        );
        assert!(
            text.contains("include_str!(\"../artifacts/schemas.json\")"),
            "{text}"
        );
        let json = String::from_utf8(table.schemas_json("note").unwrap()).unwrap();
        assert_eq!(
            json,
            "{\"@generated\":\"note\",\"key\":\"k\",\"entries\":{\n\"S_A\":{\"a\":\"\\n\"},\n\"S_B\":{\"x\":{\"k\":\"S_A\"}}\n}}\n"
        );
        assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
        // The last line has no comma; its length is not read.
        assert_eq!(table.line_lengths(), Some(vec![18, 25]));
        assert!(
            text.contains("    &[\n        18,\n        25,\n    ],\n);"),
            "{text}"
        );
        assert!(text.starts_with("// header\n//! "), "{text}");
        assert_eq!(table.text("S_B").unwrap(), "{\"x\":{\"a\":\"\\n\"}}");
        assert!(syn::parse_file(&text).is_ok());
    }
}
