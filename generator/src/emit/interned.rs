//! Interned schema texts: output and response schemas repeat across tools
//! (shared error bodies, envelopes), so each distinct JSON text is emitted
//! once in `src/schemas.rs` as a `const` named by its content hash
//! (`S_<16 hex>`); names therefore stay stable across releases. Input
//! schemas stay inline in the tool statics, where a reviewer reads them.

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::deferred::raw_literal;
use crate::error::{GenerateError, Result};
use crate::ir::{Catalogue, Tool};

/// The interned constants a tool refers to.
#[derive(Debug, Clone, Default)]
pub struct ToolSchemas {
    /// Constant holding the output schema.
    pub output: Option<String>,
    /// Constant holding each response's schema (parallel to `Tool::responses`).
    pub responses: Vec<Option<String>>,
}

/// Every interned text, plus which constants each tool uses.
#[derive(Debug, Default)]
pub struct SchemaTable {
    /// Constant name → JSON text, sorted by name.
    pub texts: BTreeMap<String, Arc<str>>,
    /// Per product, per tool (catalogue order).
    pub tools: Vec<Vec<ToolSchemas>>,
}

/// `S_` + the first 16 hex digits of the text's sha256.
pub fn const_name(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("S_{}", hex::encode_upper(&digest[..8]))
}

fn json_text(v: &serde_json::Value) -> Result<String> {
    serde_json::to_string(v).map_err(|e| GenerateError::Emit {
        file: "src/schemas.rs".into(),
        message: e.to_string(),
    })
}

/// `(name, text)` pairs of one tool, and its [`ToolSchemas`].
type ToolTexts = (ToolSchemas, Vec<(String, Arc<str>)>);

fn tool_texts(tool: &Tool) -> Result<ToolTexts> {
    let mut texts = Vec::new();
    let mut intern = |text: Arc<str>| -> String {
        let name = const_name(&text);
        texts.push((name.clone(), text));
        name
    };
    let output = match &tool.output_schema {
        Some(v) => Some(intern(Arc::from(json_text(v)?))),
        None => None,
    };
    let responses = tool
        .responses
        .iter()
        .map(|r| r.schema.as_ref().map(|t| intern(Arc::clone(&t.0))))
        .collect();
    Ok((ToolSchemas { output, responses }, texts))
}

impl SchemaTable {
    /// Serialises and interns every output and response schema (in
    /// parallel; the result does not depend on scheduling).
    ///
    /// # Errors
    /// [`GenerateError::Emit`] if two different texts share a name (a
    /// 64-bit hash collision) or a schema does not serialise.
    pub fn build(cat: &Catalogue) -> Result<Self> {
        let per_product: Vec<Vec<ToolTexts>> = cat
            .products
            .par_iter()
            .map(|p| p.tools.iter().map(tool_texts).collect::<Result<Vec<_>>>())
            .collect::<Result<Vec<_>>>()?;
        let mut table = SchemaTable::default();
        for product in per_product {
            let mut tools = Vec::with_capacity(product.len());
            for (schemas, texts) in product {
                for (name, text) in texts {
                    match table.texts.get(&name) {
                        Some(existing) if *existing != text => {
                            return Err(GenerateError::Emit {
                                file: "src/schemas.rs".into(),
                                message: format!("two schema texts hash to {name}"),
                            });
                        }
                        Some(_) => {}
                        None => {
                            table.texts.insert(name, text);
                        }
                    }
                }
                tools.push(schemas);
            }
            table.tools.push(tools);
        }
        Ok(table)
    }

    /// The schemas of tool `tool` of product `product`.
    pub fn tool(&self, product: usize, tool: usize) -> Option<&ToolSchemas> {
        self.tools.get(product).and_then(|p| p.get(tool))
    }

    /// `src/schemas.rs`: one `pub(crate) const` per text. Written directly
    /// (no token round trip): it is the bulk of the crate's source.
    pub fn render(&self, header: &str) -> String {
        let size: usize = self.texts.values().map(|t| t.len() + 64).sum();
        let mut out = String::with_capacity(size + 512);
        out.push_str(header);
        out.push_str(
            "\n//! Output and response schemas as JSON text, shared by the tool modules:\n//! each distinct text once, named by its content hash.\n\n",
        );
        for (name, text) in &self.texts {
            out.push_str("pub(crate) const ");
            out.push_str(name);
            out.push_str(": &str = ");
            out.push_str(&raw_literal(text));
            out.push_str(";\n");
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
            tools: Vec::new(),
        };
        let text = table.render("// header");
        assert!(text.starts_with("// header\n//! "), "{text}");
        assert!(
            text.contains("pub(crate) const S_A: &str = r#\"{\"a\":\"\\n\"}\"#;"),
            "{text}"
        );
        assert!(syn::parse_file(&text).is_ok());
    }
}
