//! Parameters, responses, bodies, annotations and security requirements
//! of the tools, each distinct value written once as an item of
//! `src/defs.rs`, which the tool statics name (`params: &crate::defs::P_…`).
//!
//! rustc type-checks, lowers to MIR and const-evaluates every expression of
//! a static's initializer, so a generated crate's build time follows the
//! number of struct literals it holds, not its bytes (`-Z time-passes` on
//! Microsoft Graph v1.0's crate: `type_check_crate` was 46 of 85 s, with
//! dropping the per-tool functions or the TypeScript literals each moving
//! it by under 10 %). Graph's 11,422 tools hold 48,207 `ParamDef`s in
//! 3,611 distinct lists, 981 distinct response lists and 700 distinct
//! bodies; each is now checked once. Names are content hashes, so an item
//! keeps its name across releases and two crates' items never mix up.

use std::collections::BTreeMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};

use super::interned::{SchemaTable, ToolSchemas};
use super::layout::Doc;
use crate::error::{GenerateError, Result};
use crate::ir::{Catalogue, Tool};

/// The path tool statics name the items by.
pub const PATH: &str = "crate::defs::";

/// The file the items are written to.
pub const FILE: &str = "src/defs.rs";

/// The `src/defs.rs` items one tool refers to (`None`: written in place).
#[derive(Debug, Clone, Default)]
pub struct ToolDefs {
    /// Its parameter list (a `static [ParamDef; N]`), when not empty.
    pub params: Option<String>,
    /// Its response list (a `static [ResponseDef; N]`), when not empty and
    /// every schema in it is interned.
    pub responses: Option<String>,
    /// Its body (a `const BodyDef`), when it takes one.
    pub body: Option<String>,
    /// Its annotations (a `const Annotations`).
    pub annotations: Option<String>,
    /// Its security requirement (a `const Requirement`), when not empty.
    pub security: Option<String>,
}

/// What an item holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// A `ParamDef` (a `const`: a list of them is checked as cheaply as
    /// a list of paths).
    Param,
    /// A list of [`Kind::Param`]s.
    Params,
    /// A `ResponseDef`.
    Response,
    /// A list of [`Kind::Response`]s.
    Responses,
    Body,
    Annotations,
    Security,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Param => "Q_",
            Kind::Params => "P_",
            Kind::Response => "E_",
            Kind::Responses => "R_",
            Kind::Body => "B_",
            Kind::Annotations => "A_",
            Kind::Security => "K_",
        }
    }

    fn is_list(self) -> bool {
        matches!(self, Kind::Params | Kind::Responses)
    }

    /// The item's keyword and type, for `len` elements.
    fn declaration(self, len: usize) -> String {
        match self {
            Kind::Param => "const {}: ParamDef".into(),
            Kind::Params => format!("static {{}}: [ParamDef; {len}]"),
            Kind::Response => "const {}: ResponseDef".into(),
            Kind::Responses => format!("static {{}}: [ResponseDef; {len}]"),
            Kind::Body => "const {}: BodyDef".into(),
            Kind::Annotations => "const {}: Annotations".into(),
            Kind::Security => "const {}: Requirement".into(),
        }
    }
}

/// One item: its kind, element count and one-line value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    kind: Kind,
    len: usize,
    /// The value as [`Doc::flat`] writes it (a slice starts with `&[`).
    value: String,
}

/// Every shared item, by name.
#[derive(Debug, Default)]
pub struct SharedDefs {
    items: BTreeMap<String, Item>,
}

/// The one-line text of `doc`.
fn flat(doc: &Doc) -> String {
    let mut value = String::new();
    doc.flat(&mut value);
    value
}

/// One tool's values as one-line texts, before they are named: made in
/// parallel, named in one pass that hashes each distinct value once.
struct Values {
    /// Each parameter (empty: none, written in place as `&[]`).
    params: Vec<String>,
    /// Each response (`None`: none, or a schema that is not interned).
    responses: Option<Vec<String>>,
    body: Option<String>,
    annotations: String,
    /// `None` for the empty requirement.
    security: Option<String>,
}

fn tool_values(tool: &Tool, schemas: &ToolSchemas) -> Values {
    let elements = |doc: Doc| match doc {
        Doc::Slice(items) => items.iter().map(flat).collect(),
        other => vec![flat(&other)],
    };
    let responses = (!tool.responses.is_empty())
        .then(|| super::tool_doc::responses(tool, Some(schemas), None))
        .flatten();
    Values {
        params: elements(super::tool_doc::params(tool)),
        responses: responses.map(elements),
        body: super::tool_doc::body_def(tool).map(|b| flat(&b)),
        annotations: flat(&super::tool_doc::annotations(tool)),
        security: (!tool.security.is_empty()).then(|| flat(&super::tool_doc::security(tool))),
    }
}

/// Names values by content hash, each distinct value hashed once.
#[derive(Default)]
struct Namer {
    names: HashMap<(Kind, String), String>,
    items: BTreeMap<String, Item>,
}

impl Namer {
    fn name(&mut self, kind: Kind, value: String, len: usize) -> Result<String> {
        let entry = match self.names.entry((kind, value)) {
            Entry::Occupied(known) => return Ok(known.get().clone()),
            Entry::Vacant(entry) => entry,
        };
        let value = &entry.key().1;
        let digest = Sha256::digest(value.as_bytes());
        let name = format!("{}{}", kind.prefix(), hex::encode_upper(&digest[..8]));
        let item = Item {
            kind,
            len,
            value: value.clone(),
        };
        if self.items.insert(name.clone(), item).is_some() {
            return Err(GenerateError::emit(
                FILE,
                format!("two shared definitions hash to {name}"),
            ));
        }
        Ok(entry.insert(name).clone())
    }

    /// A list of elements named as `element` items: `&[Q_…, Q_…]`.
    fn list(&mut self, element: Kind, kind: Kind, values: Vec<String>) -> Result<String> {
        let len = values.len();
        let names = (values.into_iter())
            .map(|v| self.name(element, v, 1))
            .collect::<Result<Vec<_>>>()?;
        self.name(kind, format!("&[{}]", names.join(", ")), len)
    }

    fn tool(&mut self, values: Values) -> Result<ToolDefs> {
        let params = match values.params {
            params if params.is_empty() => None,
            params => Some(self.list(Kind::Param, Kind::Params, params)?),
        };
        let responses = match values.responses {
            Some(responses) if !responses.is_empty() => {
                Some(self.list(Kind::Response, Kind::Responses, responses)?)
            }
            _ => None,
        };
        Ok(ToolDefs {
            params,
            responses,
            body: (values.body)
                .map(|b| self.name(Kind::Body, b, 1))
                .transpose()?,
            annotations: Some(self.name(Kind::Annotations, values.annotations, 1)?),
            security: (values.security)
                .map(|s| self.name(Kind::Security, s, 1))
                .transpose()?,
        })
    }
}

impl SharedDefs {
    /// Shares the lists and bodies of every tool of `cat` that `table`
    /// interns the schemas of, noting each tool's names in `table`.
    ///
    /// # Errors
    /// [`GenerateError::Emit`] if two different values hash to one name
    /// (a 64-bit collision).
    pub fn share(cat: &Catalogue, table: &mut SchemaTable) -> Result<SharedDefs> {
        let values: Vec<Vec<Values>> = (cat.products.par_iter())
            .zip(table.tools.par_iter())
            .map(|(product, schemas)| {
                (product.tools.iter().zip(schemas))
                    .map(|(tool, schemas)| tool_values(tool, schemas))
                    .collect()
            })
            .collect();
        let mut namer = Namer::default();
        for (product, values) in table.tools.iter_mut().zip(values) {
            for (schemas, values) in product.iter_mut().zip(values) {
                schemas.defs = namer.tool(values)?;
            }
        }
        Ok(SharedDefs { items: namer.items })
    }

    /// Whether there is no item (then there is no `src/defs.rs`).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `src/defs.rs`: one item a line, sorted by name, behind `#[rustfmt::skip]`
    /// (so the layout is the generator's).
    pub fn render(&self, header: &str) -> String {
        let size: usize = self.items.values().map(|i| i.value.len() + 64).sum();
        let mut out = String::with_capacity(size + 1024);
        out.push_str(header);
        out.push_str(
            "\n//! The tools' parameters, responses, bodies, annotations and security\n//! requirements: each distinct value once, named by its content hash (the\n//! compiler checks each value once instead of once per tool that repeats it).\n\n",
        );
        let has = |kind| self.items.values().any(|i| i.kind == kind);
        let mut used = Vec::new();
        if has(Kind::Annotations) {
            used.push("Annotations");
        }
        if has(Kind::Body) {
            used.extend(["BodyArgs", "BodyDef", "BodyKind"]);
        }
        if has(Kind::Param) {
            used.extend(["ParamDef", "ParamLocation", "ParamStyle"]);
        }
        if has(Kind::Response) {
            used.push("ResponseDef");
            if (self.items.values()).any(|i| i.kind == Kind::Response && i.value.contains("SharedText::"))
            {
                used.push("SharedText");
            }
        }
        if !used.is_empty() {
            let _ = writeln!(out, "use toolforge_runtime::catalogue::{{{}}};", used.join(", "));
        }
        if has(Kind::Security) {
            out.push_str("use toolforge_runtime::security::Requirement;\n");
        }
        out.push('\n');
        for (name, item) in &self.items {
            // `&[…]` of a tool field is `[…]` here.
            let value = item.value.strip_prefix('&').filter(|_| item.kind.is_list());
            let value = value.unwrap_or(&item.value);
            let declaration = item.kind.declaration(item.len).replace("{}", name);
            let _ = writeln!(out, "pub(crate) {declaration} = {value};");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::SharedDefs;
    use crate::config::ForgeConfig;
    use crate::emit::interned::SchemaTable;

    fn larder() -> (crate::ir::Catalogue, SchemaTable, SharedDefs) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        let spec = std::fs::read(root.join("larder.yaml")).unwrap();
        let doc = crate::load::load(&spec, "larder.yaml").unwrap();
        let config = ForgeConfig::generic("t", std::path::Path::new("larder.yaml"), "0");
        let cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        let mut table = SchemaTable::build(&cat).unwrap();
        let defs = std::mem::take(&mut table.defs);
        (cat, table, defs)
    }

    /// A list item's value with its elements' names replaced by their values.
    fn expanded(defs: &SharedDefs, name: &str) -> String {
        let value = &defs.items[name].value;
        let inner = value.strip_prefix("&[").unwrap().strip_suffix(']').unwrap();
        let elements: Vec<&str> = inner
            .split(", ")
            .map(|e| defs.items[e].value.as_str())
            .collect();
        format!("&[{}]", elements.join(", "))
    }

    /// Equal lists are one item; every tool with parameters, responses or
    /// a body names one, and each named item holds exactly that tool's value.
    #[test]
    fn equal_values_are_one_item_that_each_tool_names() {
        let (cat, table, defs) = larder();
        let mut named = 0;
        for (product, schemas) in cat.products.iter().zip(&table.tools) {
            for (tool, s) in product.tools.iter().zip(schemas) {
                assert_eq!(s.defs.params.is_some(), !tool.params.is_empty(), "{}", tool.name);
                assert_eq!(s.defs.body.is_some(), tool.body.is_some(), "{}", tool.name);
                assert_eq!(s.defs.responses.is_some(), !tool.responses.is_empty());
                if let Some(name) = &s.defs.params {
                    let mut flat = String::new();
                    super::super::tool_doc::params(tool).flat(&mut flat);
                    assert_eq!(expanded(&defs, name), flat, "{}", tool.name);
                    named += 1;
                }
                let mut flat = String::new();
                super::super::tool_doc::annotations(tool).flat(&mut flat);
                let annotations = s.defs.annotations.as_ref().unwrap();
                assert_eq!(defs.items[annotations].value, flat);
            }
        }
        let distinct = (defs.items.values())
            .filter(|i| i.kind == super::Kind::Params)
            .count();
        assert!(distinct < named, "{distinct} of {named}: nothing shared");
        // The product modules hold no copy of a shared value (the build
        // time this saves follows the number of literals).
        let mut table = table;
        table.defs = defs;
        for (i, product) in cat.products.iter().enumerate() {
            let interned = table.tools.get(i).map(Vec::as_slice);
            let module = crate::emit::rust::product_module(product, interned, "// h").unwrap();
            for literal in ["ParamDef {", "ResponseDef {", "BodyDef {", "Annotations {"] {
                assert!(!module.contains(literal), "{}: {literal}", product.name);
            }
            assert!(module.contains("crate::defs::A_"), "{}", product.name);
        }
        let defs = table.defs;
        let text = defs.render("// h");
        assert_eq!(text.lines().filter(|l| l.starts_with("pub(crate) ")).count(), defs.items.len());
        // Sorted by name, one a line: a release that changes one list
        // changes its lines only.
        let names: Vec<&str> = (text.lines())
            .filter(|l| l.starts_with("pub(crate) "))
            .filter_map(|l| l.split_whitespace().nth(2))
            .map(|n| n.trim_end_matches(':'))
            .collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
    }
}
