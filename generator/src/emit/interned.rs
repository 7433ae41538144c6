//! Interned schema texts: output and response schemas repeat across tools
//! (shared error bodies, envelopes), so each distinct JSON text is emitted
//! once in `src/schemas.rs` as a `const` named by its content hash
//! (`S_<16 hex>`); names therefore stay stable across releases. A schema
//! with a root `$defs` is split (see [`super::split`]): its root and each
//! definition are interned on their own, and the `(name, constant)` list
//! of its definitions is an `L_<16 hex>` constant, so a definition that a
//! hundred tools repeat is written once. Input schemas stay inline in the
//! tool statics, where a reviewer reads them.

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::deferred::raw_literal;
use super::typescript::{OutputDeclaration, output_declaration};
use crate::error::{GenerateError, Result};
use crate::ir::Catalogue;

// Keys are allocation addresses: Fx is deterministic and cheap.
use rustc_hash::FxHashMap as HashMap;

/// The constants of one interned schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRef {
    /// Constant holding the text (its root without `$defs` when split).
    pub root: String,
    /// `L_` constant listing the root `$defs` entries, when split.
    pub defs: Option<String>,
}

/// The interned constants a tool refers to.
#[derive(Debug, Clone, Default)]
pub struct ToolSchemas {
    /// The output schema.
    pub output: Option<SchemaRef>,
    /// Each response's schema (parallel to `Tool::responses`).
    pub responses: Vec<Option<SchemaRef>>,
    /// The TypeScript declaration part of the output schema, made once
    /// for all tools sharing it.
    pub output_declaration: Option<Arc<OutputDeclaration>>,
}

/// `(name, S_ constant)` entries of a split schema's root `$defs`.
pub type DefList = Vec<(String, String)>;

/// Every interned text, plus which constants each tool uses.
#[derive(Debug, Default)]
pub struct SchemaTable {
    /// Constant name → JSON text, sorted by name.
    pub texts: BTreeMap<String, Arc<str>>,
    /// `L_` constant name → the definitions it lists, sorted by name.
    pub lists: BTreeMap<String, DefList>,
    /// Per product, per tool (catalogue order).
    pub tools: Vec<Vec<ToolSchemas>>,
}

/// `S_` + the first 16 hex digits of the text's sha256.
pub fn const_name(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("S_{}", hex::encode_upper(&digest[..8]))
}

/// `L_` + the first 16 hex digits of the sha256 of a definition list.
fn list_name(defs: &DefList) -> String {
    let mut h = Sha256::new();
    for (name, text) in defs {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.update([b'\n']);
    }
    format!("L_{}", hex::encode_upper(&h.finalize()[..8]))
}

fn json_text(v: &serde_json::Value) -> Result<String> {
    serde_json::to_string(v).map_err(|e| GenerateError::Emit {
        file: "src/schemas.rs".into(),
        message: e.to_string(),
    })
}

/// The constants of distinct schemas: each one's [`SchemaRef`], with the
/// `(name, text)` constants and `(name, list)` definition lists it uses.
#[derive(Default)]
struct Interned {
    refs: Vec<SchemaRef>,
    texts: Vec<(String, Arc<str>)>,
    lists: Vec<(String, DefList)>,
}

impl Interned {
    fn text(&mut self, text: Arc<str>) -> String {
        let name = const_name(&text);
        self.texts.push((name.clone(), text));
        name
    }

    /// Interns `text`, split at its root `$defs` when it has one.
    fn schema(&mut self, text: &Arc<str>) -> SchemaRef {
        let Some(split) = super::split::split_defs(text) else {
            return SchemaRef {
                root: self.text(Arc::clone(text)),
                defs: None,
            };
        };
        let root = self.text(Arc::from(split.root));
        let defs: DefList = split
            .defs
            .into_iter()
            .map(|(name, def)| (name, self.text(Arc::from(def))))
            .collect();
        let list = list_name(&defs);
        self.lists.push((list.clone(), defs));
        SchemaRef {
            root,
            defs: Some(list),
        }
    }
}

/// Distinct items by allocation, in first-use order: tools share the
/// `Arc` of equal schemas, so each is serialised and hashed once.
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

/// Interns `items` in parallel chunks (the result does not depend on
/// scheduling: constants are named by content).
fn intern_all<T: ?Sized + Sync + Send>(
    items: &[&Arc<T>],
    text: impl Fn(&Arc<T>) -> Result<Arc<str>> + Sync,
) -> Result<Interned> {
    let parts: Vec<Interned> = items
        .par_chunks(64)
        .map(|chunk| {
            let mut out = Interned::default();
            for item in chunk {
                let t = text(item)?;
                let r = out.schema(&t);
                out.refs.push(r);
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut all = Interned::default();
    for part in parts {
        all.refs.extend(part.refs);
        all.texts.extend(part.texts);
        all.lists.extend(part.lists);
    }
    Ok(all)
}

/// Inserts `(name, value)` into `map`, refusing a different value under
/// the same name (a 64-bit hash collision).
fn insert_unique<V: PartialEq>(
    map: &mut BTreeMap<String, V>,
    name: String,
    value: V,
) -> Result<()> {
    match map.get(&name) {
        Some(existing) if *existing != value => Err(GenerateError::Emit {
            file: "src/schemas.rs".into(),
            message: format!("two schema texts hash to {name}"),
        }),
        Some(_) => Ok(()),
        None => {
            map.insert(name, value);
            Ok(())
        }
    }
}

impl SchemaTable {
    /// Serialises and interns every output and response schema (in
    /// parallel; the result does not depend on scheduling).
    ///
    /// # Errors
    /// [`GenerateError::Emit`] if two different texts share a name (a
    /// 64-bit hash collision) or a schema does not serialise.
    pub fn build(cat: &Catalogue) -> Result<Self> {
        let mut outputs = Distinct::<serde_json::Value>::new();
        let mut responses = Distinct::<str>::new();
        // Per product, per tool: the output's index and each response's.
        let mut uses: Vec<Vec<Uses>> = Vec::new();
        for product in &cat.products {
            let tools = product
                .tools
                .iter()
                .map(|t| {
                    let output = t.output_schema.as_ref().map(|v| outputs.add(v));
                    let rs = t
                        .responses
                        .iter()
                        .map(|r| r.schema.as_ref().map(|s| responses.add(&s.0)))
                        .collect();
                    (output, rs)
                })
                .collect();
            uses.push(tools);
        }
        let declarations: Vec<Arc<OutputDeclaration>> = outputs
            .items
            .par_iter()
            .map(|v| Arc::new(output_declaration(v)))
            .collect();
        let outputs = intern_all(&outputs.items, |v| json_text(v).map(Arc::from))?;
        let responses = intern_all(&responses.items, |t| Ok(Arc::clone(t)))?;
        let mut table = SchemaTable::default();
        for (name, text) in outputs.texts.into_iter().chain(responses.texts) {
            insert_unique(&mut table.texts, name, text)?;
        }
        for (name, list) in outputs.lists.into_iter().chain(responses.lists) {
            insert_unique(&mut table.lists, name, list)?;
        }
        table.tools = uses
            .into_iter()
            .map(|tools| {
                tools
                    .into_iter()
                    .map(|(output, rs)| ToolSchemas {
                        output: output.and_then(|i| outputs.refs.get(i).cloned()),
                        output_declaration: output.and_then(|i| declarations.get(i).cloned()),
                        responses: rs
                            .into_iter()
                            .map(|i| i.and_then(|i| responses.refs.get(i).cloned()))
                            .collect(),
                    })
                    .collect()
            })
            .collect();
        Ok(table)
    }

    /// The schemas of tool `tool` of product `product`.
    pub fn tool(&self, product: usize, tool: usize) -> Option<&ToolSchemas> {
        self.tools.get(product).and_then(|p| p.get(tool))
    }

    /// `src/schemas.rs`: one `pub(crate) const` per text, then one per
    /// definition list (one entry a line). Written directly (no token
    /// round trip): it is the bulk of the crate's source.
    pub fn render(&self, header: &str) -> String {
        let size: usize = self.texts.values().map(|t| t.len() + 64).sum::<usize>()
            + self
                .lists
                .values()
                .map(|l| l.iter().map(|(n, _)| n.len() + 40).sum::<usize>() + 64)
                .sum::<usize>();
        let mut out = String::with_capacity(size + 512);
        out.push_str(header);
        out.push_str(
            "\n//! Output and response schemas as JSON text, shared by the tool modules:\n//! each distinct text once, named by its content hash. A schema with root\n//! `$defs` is its root text plus an `L_` list of `(name, definition)`\n//! pairs, which `toolforge_runtime::catalogue::assemble_schema` joins.\n\n",
        );
        for (name, text) in &self.texts {
            out.push_str("pub(crate) const ");
            out.push_str(name);
            out.push_str(": &str = ");
            out.push_str(&raw_literal(text));
            out.push_str(";\n");
        }
        for (name, list) in &self.lists {
            out.push_str("pub(crate) const ");
            out.push_str(name);
            out.push_str(": &[(&str, &str)] = &[\n");
            for (def, text) in list {
                out.push_str("    (");
                out.push_str(&proc_macro2::Literal::string(def).to_string());
                out.push_str(", ");
                out.push_str(text);
                out.push_str("),\n");
            }
            out.push_str("];\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_content_hashes() {
        assert_eq!(const_name("{}"), const_name("{}"));
        assert_ne!(const_name("{}"), const_name("{ }"));
        assert_eq!(const_name("{}").len(), 18);
        let table = SchemaTable {
            texts: [("S_A".to_string(), Arc::from("{\"a\":\"\\n\"}"))].into(),
            lists: [(
                "L_B".to_string(),
                vec![("n\"x".to_string(), "S_A".to_string())],
            )]
            .into(),
            tools: Vec::new(),
        };
        let text = table.render("// header");
        assert!(text.starts_with("// header\n//! "), "{text}");
        assert!(
            text.contains("pub(crate) const S_A: &str = r#\"{\"a\":\"\\n\"}\"#;"),
            "{text}"
        );
        assert!(
            text.contains("pub(crate) const L_B: &[(&str, &str)] = &[\n    (\"n\\\"x\", S_A),\n];"),
            "{text}"
        );
        assert!(syn::parse_file(&text).is_ok());
    }
}
