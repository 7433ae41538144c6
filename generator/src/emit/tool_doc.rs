//! The one emitter of a tool's row: its `ToolDef` fields as a [`Doc`].
//! Written without `prettyplease` when the layout is predictable (see
//! [`super::layout`]); otherwise `rust::tool_tokens` turns the same doc into
//! tokens ([`Doc::tokens`]) for `prettyplease`. A new `ToolDef` field is one
//! arm in [`fields`].

use proc_macro2::Literal;

use super::chunks::{Piece, marked};
use super::deferred::{Deferred, raw_literal};
use super::interned::ToolSchemas;
use super::layout::{Doc, tool_row};
use crate::error::Result;
use crate::ir::{BodyArgs, Envelope, Tool};

fn atom(s: impl Into<String>) -> Doc {
    Doc::Atom(s.into())
}

fn boolean(b: bool) -> Doc {
    atom(if b { "true" } else { "false" })
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Doc {
    Doc::Slice(items.into_iter().map(|s| Doc::str(s)).collect())
}

/// Where a tool's schema literals go: each is a placeholder numbered as
/// in the whole module.
pub(super) enum Texts<'a> {
    /// The direct layout: the literal is written in place; `next` numbers
    /// the placeholders `prettyplease` would have seen.
    Direct {
        /// The next placeholder number.
        next: &'a mut usize,
    },
    /// The `prettyplease` layout: the literal waits in `Deferred` and is
    /// substituted after formatting.
    Formatted(&'a mut Deferred),
}

impl Texts<'_> {
    /// The literal of `text`, laid out as its placeholder.
    fn deferred(&mut self, text: &str) -> Doc {
        match self {
            Texts::Direct { next } => {
                let placeholder = Deferred::placeholder(**next);
                **next += 1;
                Doc::Deferred {
                    text: raw_literal(text),
                    placeholder,
                }
            }
            Texts::Formatted(deferred) => Doc::Deferred {
                text: String::new(),
                placeholder: deferred.text(text.to_owned()).to_string(),
            },
        }
    }
}

/// `SharedText::Entry("S_…", &crate::schemas::ALL)`: an interned text.
fn entry(name: &str) -> Doc {
    Doc::Call(
        "SharedText::Entry",
        vec![Doc::str(name), atom("&crate::schemas::ALL")],
    )
}

/// `Some(SharedText::Entry("S_…", &crate::schemas::ALL))`: an interned
/// schema.
fn interned(name: &str) -> Doc {
    Doc::some(entry(name))
}

/// `Some(SharedText::Text(…))`: a schema text written in place.
fn literal_schema(text: Doc) -> Doc {
    Doc::some(Doc::Call(LITERAL_SCHEMA, vec![text]))
}

/// The path of the literal `SharedText` variant, as both layouts write it.
const LITERAL_SCHEMA: &str = "toolforge_runtime::catalogue::SharedText::Text";

/// `SharedText::Text(…)`.
fn text_call(text: Doc) -> Doc {
    Doc::Call("SharedText::Text", vec![text])
}

/// A tool's `ts_declaration`, as `rust::declaration_tokens` writes it.
fn declaration(pieces: &[Piece], key: &str) -> Doc {
    match pieces {
        [] => text_call(Doc::str("")),
        [Piece::Text(t)] => text_call(Doc::str(t)),
        pieces => Doc::Call(
            "SharedText::Marked",
            vec![Doc::str(&marked(pieces, key)), atom("&crate::schemas::ALL")],
        ),
    }
}

/// The tool's `BodyDef` value (`None` when it takes no body).
pub(super) fn body_def(tool: &Tool) -> Option<Doc> {
    let b = tool.body.as_ref()?;
    let kind = format!("BodyKind::{}", b.kind.variant());
    let args = match &b.args {
        BodyArgs::Fields(pairs) => Doc::Call(
            "BodyArgs::Fields",
            vec![Doc::Slice(
                pairs
                    .iter()
                    .map(|(a, p)| Doc::Tuple(vec![Doc::str(a), Doc::str(p)]))
                    .collect(),
            )],
        ),
        BodyArgs::Whole(arg) => Doc::Call("BodyArgs::Whole", vec![Doc::str(arg)]),
    };
    Some(Doc::Struct(
        "BodyDef",
        vec![
            ("content_type", Doc::str(&b.content_type)),
            ("kind", atom(kind)),
            ("required", boolean(b.required)),
            ("args", args),
            ("file_fields", strings(&b.file_fields)),
            (
                "min_fields",
                atom(Literal::u32_suffixed(b.min_fields).to_string()),
            ),
        ],
    ))
}

/// The tool's `Annotations` value.
pub(super) fn annotations(tool: &Tool) -> Doc {
    let a = tool.annotations;
    Doc::Struct(
        "Annotations",
        vec![
            ("read_only", boolean(a.read_only_hint)),
            ("destructive", boolean(a.destructive_hint)),
            ("idempotent", boolean(a.idempotent_hint)),
            ("open_world", boolean(a.open_world_hint)),
        ],
    )
}

/// The tool's security requirement, `&[&[0], &[]]`.
pub(super) fn security(tool: &Tool) -> Doc {
    Doc::Slice(
        tool.security
            .iter()
            .map(|alt| {
                Doc::Slice(
                    alt.iter()
                        .map(|i| atom(Literal::u16_unsuffixed(*i).to_string()))
                        .collect(),
                )
            })
            .collect(),
    )
}

/// The tool's parameter descriptors, `&[ParamDef { … }, …]`.
pub(super) fn params(tool: &Tool) -> Doc {
    Doc::Slice(
        tool.params
            .iter()
            .map(|p| {
                Doc::Struct(
                    "ParamDef",
                    vec![
                        ("arg", Doc::str(&p.arg)),
                        ("name", Doc::str(&p.name)),
                        (
                            "location",
                            atom(format!("ParamLocation::{}", p.location.variant())),
                        ),
                        ("style", atom(format!("ParamStyle::{}", p.style.variant()))),
                        ("explode", boolean(p.explode)),
                        ("required", boolean(p.required)),
                        ("allow_reserved", boolean(p.allow_reserved)),
                    ],
                )
            })
            .collect(),
    )
}

/// The tool's response descriptors, `&[ResponseDef { … }, …]`. A schema
/// that is not interned is written as a literal through `texts`; without
/// `texts` such a list is `None`.
pub(super) fn responses(
    tool: &Tool,
    schemas: Option<&ToolSchemas>,
    mut texts: Option<&mut Texts<'_>>,
) -> Option<Doc> {
    let mut responses = Vec::with_capacity(tool.responses.len());
    for (i, r) in tool.responses.iter().enumerate() {
        let name = schemas
            .and_then(|t| t.responses.get(i))
            .and_then(Option::as_ref);
        let schema = match (&r.schema, name) {
            (Some(_), Some(name)) => interned(name),
            (Some(s), None) => literal_schema(texts.as_mut()?.deferred(s.as_str())),
            (None, _) => atom("None"),
        };
        let content_type = match &r.content_type {
            Some(ct) => Doc::some(Doc::str(ct)),
            None => atom("None"),
        };
        responses.push(Doc::Struct(
            "ResponseDef",
            vec![
                ("status", Doc::str(&r.status)),
                ("content_type", content_type),
                ("schema", schema),
            ],
        ));
    }
    Some(Doc::Slice(responses))
}

/// `&doc`.
fn reference(doc: Doc) -> Doc {
    match doc {
        Doc::Atom(path) => atom(format!("&{path}")),
        other => other,
    }
}

/// A reference to the `src/defs.rs` item `name`, or `inline` when the
/// tool's value is not shared.
fn shared_or(name: Option<&String>, inline: impl FnOnce() -> Doc, wrap: fn(Doc) -> Doc) -> Doc {
    match name {
        Some(name) => wrap(atom(format!("{}{name}", super::shared_defs::PATH))),
        None => inline(),
    }
}

/// The fields of the tool's `ToolDef`, in declaration order: the one
/// place a tool static's fields are written.
pub(super) fn fields(
    tool: &Tool,
    schemas: Option<&ToolSchemas>,
    texts: &mut Texts<'_>,
) -> Result<Vec<(&'static str, Doc)>> {
    let input_schema = match schemas.and_then(|i| i.input.as_ref()) {
        Some(name) => entry(name),
        None => text_call(texts.deferred(&crate::json_text::to_string(&tool.input_schema))),
    };
    let output_schema = match (&tool.output_schema, schemas.and_then(|i| i.output.as_ref())) {
        (Some(_), Some(name)) => interned(name),
        (Some(s), None) => literal_schema(texts.deferred(s.text.as_str())),
        (None, _) => atom("None"),
    };
    let routes = tool
        .routes
        .iter()
        .map(|r| {
            let when = match &r.when {
                Some((arg, value)) => Doc::some(Doc::Tuple(vec![Doc::str(arg), Doc::str(value)])),
                None => atom("None"),
            };
            Doc::Struct(
                "Route",
                vec![("when", when), ("template", Doc::str(&r.template))],
            )
        })
        .collect();
    // Lists and bodies other tools repeat are items of `src/defs.rs`
    // (see `super::shared_defs`).
    let defs = schemas.map(|s| &s.defs);
    let params = shared_or(defs.and_then(|d| d.params.as_ref()), || params(tool), reference);
    let body = shared_or(
        defs.and_then(|d| d.body.as_ref()),
        || body_def(tool).map_or_else(|| atom("None"), Doc::some),
        Doc::some,
    );
    let responses = shared_or(
        defs.and_then(|d| d.responses.as_ref()),
        // With `texts`, every schema has a literal: never `None`.
        || responses(tool, schemas, Some(texts)).unwrap_or_else(|| Doc::Slice(Vec::new())),
        reference,
    );
    let annotations = shared_or(
        defs.and_then(|d| d.annotations.as_ref()),
        || annotations(tool),
        |d| d,
    );
    let security = shared_or(
        defs.and_then(|d| d.security.as_ref()),
        || security(tool),
        |d| d,
    );
    let envelope = match tool.envelope {
        Envelope::None => atom("Envelope::None"),
        Envelope::Wrapped => atom("Envelope::Wrapped"),
        Envelope::Result { list } => Doc::Struct("Envelope::Result", vec![("list", boolean(list))]),
    };
    let ts = match schemas {
        Some(i) => declaration(&i.declaration, &i.key),
        None => text_call(Doc::str(&super::typescript::tool_declaration(tool)?)),
    };
    Ok(vec![
        ("name", Doc::str(&tool.name)),
        ("operation_id", Doc::str(&tool.operation_id)),
        ("product", Doc::str(&tool.product)),
        ("title", Doc::str(&tool.title)),
        ("description", Doc::str(&tool.description)),
        ("input_schema", input_schema),
        ("output_schema", output_schema),
        ("annotations", annotations),
        ("permissions", strings(&tool.permissions)),
        ("method", atom(format!("Method::{}", tool.method.variant()))),
        ("routes", Doc::Slice(routes)),
        ("params", params),
        ("body", body),
        ("responses", responses),
        ("envelope", envelope),
        ("deprecated", boolean(tool.deprecated)),
        ("security", security),
        ("ts_declaration", ts),
    ])
}

/// The tool's row of its module's `ROWS` table as `prettyplease` writes
/// it, with schema literals in place; `Ok(None)` when the layout is not
/// predictable. `next` numbers the schema placeholders the module would
/// have used, and advances past this tool's.
pub fn tool_text(
    tool: &Tool,
    schemas: Option<&ToolSchemas>,
    next: &mut usize,
) -> Result<Option<String>> {
    let fields = fields(tool, schemas, &mut Texts::Direct { next })?;
    Ok(tool_row(&fields))
}

#[cfg(test)]
mod tests {
    use crate::config::{ForgeConfig, PolicyKind};
    use crate::emit::interned::SchemaTable;
    use crate::emit::rust::{product_module, product_module_reference};

    /// Every module of `spec` as written, against `prettyplease`'s layout.
    fn same_as_prettyplease(spec: &[u8], file: &str, policy: PolicyKind) {
        let doc = crate::load::load(spec, file).unwrap();
        let mut config = ForgeConfig::generic("t", std::path::Path::new(file), "0");
        config.policy = policy;
        let cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        let table = SchemaTable::build(&cat).unwrap();
        assert!(!cat.products.is_empty());
        for (i, p) in cat.products.iter().enumerate() {
            for interned in [table.tools.get(i).map(Vec::as_slice), None] {
                let direct = product_module(p, interned, "// h").unwrap();
                let reference = product_module_reference(p, interned, "// h").unwrap();
                assert_eq!(direct, reference, "{file}: {}", p.name);
            }
        }
    }

    /// The one emitter writes every field of the runtime's `ToolDef`, in
    /// its declaration order (read from `runtime/src/catalogue.rs`).
    #[test]
    fn fields_are_the_runtime_tool_defs_in_order() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let source = std::fs::read_to_string(root.join("runtime/src/catalogue.rs")).unwrap();
        let file: syn::File = syn::parse_str(&source).unwrap();
        let declared: Vec<String> = file
            .items
            .iter()
            .find_map(|item| match item {
                syn::Item::Struct(s) if s.ident == "ToolDef" => Some(&s.fields),
                _ => None,
            })
            .unwrap()
            .iter()
            .map(|f| f.ident.as_ref().unwrap().to_string())
            .collect();
        let spec = std::fs::read(root.join("specs/larder.yaml")).unwrap();
        let doc = crate::load::load(&spec, "larder.yaml").unwrap();
        let config = ForgeConfig::generic("t", std::path::Path::new("larder.yaml"), "0");
        let cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        let tool = &cat.products[0].tools[0];
        let mut next = 0;
        let written: Vec<&str> =
            super::fields(tool, None, &mut super::Texts::Direct { next: &mut next })
                .unwrap()
                .into_iter()
                .map(|(name, _)| name)
                .collect();
        assert_eq!(written, declared);
    }

    /// A product module is its `use`s, `TOOLS` and one `ROWS` table with a
    /// row per tool, in name order: no item per tool (rustc's per-item cost
    /// made Graph's crate build 1.4 times slower).
    #[test]
    fn product_modules_hold_one_table_of_rows() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        let spec = std::fs::read(root.join("larder.yaml")).unwrap();
        let doc = crate::load::load(&spec, "larder.yaml").unwrap();
        let config = ForgeConfig::generic("t", std::path::Path::new("larder.yaml"), "0");
        let cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        let table = SchemaTable::build(&cat).unwrap();
        for (i, p) in cat.products.iter().enumerate() {
            let text = product_module(p, table.tools.get(i).map(Vec::as_slice), "// h").unwrap();
            let file: syn::File = syn::parse_str(&text).unwrap();
            let statics: Vec<(String, &syn::Expr)> = file
                .items
                .iter()
                .filter_map(|item| match item {
                    syn::Item::Static(s) => Some((s.ident.to_string(), &*s.expr)),
                    syn::Item::Use(_) => None,
                    _ => panic!("{}: an item other than a use or a static", p.name),
                })
                .collect();
            let names: Vec<&str> = statics.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["TOOLS", "ROWS"], "{}", p.name);
            let syn::Expr::Array(rows) = statics[1].1 else {
                panic!("{}: ROWS is no array", p.name)
            };
            assert_eq!(rows.elems.len(), p.tools.len(), "{}", p.name);
            for (row, tool) in rows.elems.iter().zip(&p.tools) {
                let syn::Expr::Struct(row) = row else {
                    panic!("{}: a row is no struct literal", p.name)
                };
                let name = quote::quote!(#row).to_string();
                assert!(name.contains(&format!("name : \"{}\"", tool.name)), "{name}");
            }
        }
    }

    #[test]
    fn fixture_modules_are_laid_out_as_prettyplease_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        let cloudflare = std::fs::read(root.join("cloudflare-sample.yaml")).unwrap();
        same_as_prettyplease(
            &cloudflare,
            "cloudflare-sample.yaml",
            PolicyKind::Cloudflare,
        );
        let larder = std::fs::read(root.join("larder.yaml")).unwrap();
        same_as_prettyplease(&larder, "larder.yaml", PolicyKind::Generic);
    }

    #[test]
    fn layout_edges_are_laid_out_as_prettyplease_does() {
        // Names and fields around the margin, non-ASCII text, an empty
        // summary, a doc starting with `/`, many and long body fields.
        let mut paths = serde_json::Map::new();
        for n in [1usize, 20, 40, 48, 52, 56, 60, 64, 70, 90] {
            let field = "f".repeat(n);
            let op = serde_json::json!({"post": {
                "operationId": format!("op_{}", "x".repeat(n)),
                "summary": if n % 3 == 0 { String::new() } else { format!("Größe {n} — ünïcode") },
                "parameters": [{"name": format!("p{}", "q".repeat(n)), "in": "query",
                    "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object", "properties": {
                        field.clone(): {"type": "string"},
                        format!("{field}2"): {"type": "string"},
                        "ß": {"type": "string"}}}}}},
                "responses": {"200": {"description": "ok", "content": {
                    format!("application/{}+json", "v".repeat(n)): {"schema": {"type": "object"}}}}},
                "x-api-token-group": [format!("Group {}", "g".repeat(n)), "Other"]}});
            paths.insert(format!("/{}/{{id}}", "p".repeat(n)), op);
        }
        paths.insert(
            "/".into(),
            serde_json::json!({"get": {"summary": "/ root", "responses": {"204": {"description": "no"}}}}),
        );
        let spec = serde_json::json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": paths});
        let bytes = serde_json::to_vec(&spec).unwrap();
        same_as_prettyplease(&bytes, "edges.json", PolicyKind::Generic);
        same_as_prettyplease(&bytes, "edges.json", PolicyKind::Cloudflare);
    }
}
