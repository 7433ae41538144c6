//! Rust emission: one module per product with each tool's static data and
//! request builder, `lib.rs` with the catalogue, `main.rs` for the binary.
//! Tokens via `quote`, formatted via `prettyplease`.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

use super::deferred::Deferred;
use super::interned::ToolSchemas;
use super::tool_doc::Texts;
use crate::error::{GenerateError, Result};
use crate::ir::{BodyEnvelope, Catalogue, Pagination, Product, Profile, Scheme, SchemeKind, Tool};
use crate::naming::module_ident;

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn lit(s: &str) -> Literal {
    Literal::string(s)
}

/// A requirement as a `&[&[..]]` slice expression.
pub fn requirement(req: &[Vec<u16>]) -> TokenStream {
    let alternatives = req.iter().map(|alt| {
        let indices = alt.iter().map(|i| Literal::u16_unsuffixed(*i));
        quote!(&[#(#indices),*])
    });
    quote!(&[#(#alternatives),*])
}

/// The `schemes` slice expression and whether it names `KeyLocation`.
fn schemes_expr(schemes: &[Scheme]) -> (TokenStream, bool) {
    let mut key_location = false;
    let items = schemes.iter().map(|s| {
        let name = lit(&s.name);
        let kind = match &s.kind {
            SchemeKind::ApiKey { location, name } => {
                key_location = true;
                let loc = ident(location.variant());
                let name = lit(name);
                quote!(SchemeKind::ApiKey { location: KeyLocation::#loc, name: #name })
            }
            SchemeKind::Bearer => quote!(SchemeKind::Bearer),
            SchemeKind::Basic => quote!(SchemeKind::Basic),
            SchemeKind::ClientCredentials { token_url, scopes } => {
                let url = lit(token_url);
                let scopes = scopes.iter().map(|s| lit(s));
                quote!(SchemeKind::ClientCredentials { token_url: #url, scopes: &[#(#scopes),*] })
            }
            SchemeKind::Unsupported { what } => {
                let what = lit(what);
                quote!(SchemeKind::Unsupported { what: #what })
            }
        };
        let env = s.env.iter().map(|e| lit(e));
        quote!(SecurityScheme { name: #name, kind: #kind, env: &[#(#env),*] })
    });
    let expr = quote!(&[#(#items),*]);
    (expr, key_location)
}

/// The tool's row (`ToolDef { … }`) as tokens, for `prettyplease`: the
/// fields are [`super::tool_doc::fields`]' doc, so both layouts write the
/// same value.
fn tool_tokens(
    tool: &Tool,
    interned: Option<&ToolSchemas>,
    deferred: &mut Deferred,
    file: &str,
) -> Result<TokenStream> {
    let fields = super::tool_doc::fields(tool, interned, &mut Texts::Formatted(deferred))?;
    let names = fields.iter().map(|(n, _)| ident(n));
    let values = fields
        .iter()
        .map(|(_, d)| d.tokens())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| GenerateError::emit(file, format!("writing a tool row as tokens: {e}")))?;
    Ok(quote!(ToolDef { #(#names: #values),* }))
}

/// The `ROWS` table of `rows` (each a `ToolDef` literal) as tokens.
fn rows_tokens(rows: &[TokenStream]) -> TokenStream {
    let count = Literal::usize_unsuffixed(rows.len());
    quote! {
        #[doc = #ROWS_DOC]
        pub static ROWS: [ToolDef; #count] = [#(#rows),*];
    }
}

/// The doc comment of a module's `ROWS` table.
const ROWS_DOC: &str = " The definitions of this product's tools, in name order. A tool's upstream \
     request: `toolforge_runtime::request::build_request(tool, args)` for a tool of \
     [`TOOLS`], or `crate::request(name, args)` by name.";

pub(crate) fn format_file(tokens: TokenStream, file: &str, header: &str) -> Result<String> {
    let parsed: syn::File = syn::parse2(tokens)
        .map_err(|e| GenerateError::emit_from(file, "parsing the generated tokens", e))?;
    Ok(format!("{header}\n{}", prettyplease::unparse(&parsed)))
}

/// The module of one product. `interned` (one entry per tool) names the
/// `crate::schemas` constants holding output and response schemas; without
/// it those schemas are written inline.
pub fn product_module(
    product: &Product,
    interned: Option<&[ToolSchemas]>,
    header: &str,
) -> Result<String> {
    let file = format!("src/{}.rs", module_ident(&product.name));
    let mut out = format_file(module_head(product, interned), &file, header)?;
    if product.tools.is_empty() {
        out.push_str(&format_items(rows_tokens(&[]), &file)?);
        return Ok(out);
    }
    // The table's head and end as `prettyplease` writes them around rows
    // that never fit on one line.
    let head = format_items(rows_tokens(&[quote!(ToolDef { name: "" })]), &file)?;
    let open = head.find("= [").map(|at| at + "= [".len());
    let Some(open) = open else {
        return Err(GenerateError::emit(&file, "laying out the ROWS table's head"));
    };
    let count = product.tools.len();
    out.push_str(&head[..open].replacen("[ToolDef; 1]", &format!("[ToolDef; {count}]"), 1));
    out.push('\n');
    let mut next = 0;
    for (i, t) in product.tools.iter().enumerate() {
        let schemas = interned.and_then(|s| s.get(i));
        let first = next;
        if let Some(text) = super::tool_doc::tool_text(t, schemas, &mut next)? {
            out.push_str(&text);
            continue;
        }
        // Not predictable: `prettyplease` lays this row out (as the only
        // row of a table), placeholders numbered as in the whole module.
        let mut deferred = Deferred::starting_at(first);
        let tokens = tool_tokens(t, schemas, &mut deferred, &file)?;
        next = first + deferred.len();
        let text = format_items(rows_tokens(&[tokens]), &file)?;
        let row = one_row(&text).ok_or_else(|| {
            GenerateError::emit(&file, "a tool row was not laid out on lines of its own")
        })?;
        out.push_str(&substituted(&deferred, row, &file)?);
    }
    out.push_str("];\n");
    Ok(out)
}

/// The row of a one-row `ROWS` table as `prettyplease` wrote it: the
/// lines between the table's head and its closing `];`.
fn one_row(table: &str) -> Option<&str> {
    let start = table.find("= [\n")? + "= [\n".len();
    let end = table.rfind("];\n")?;
    table.get(start..end)
}

/// [`product_module`] laid out entirely by `prettyplease`: the reference
/// the direct layout of tool rows is checked against.
#[doc(hidden)]
#[cfg(any(test, feature = "oracles"))]
pub fn product_module_reference(
    product: &Product,
    interned: Option<&[ToolSchemas]>,
    header: &str,
) -> Result<String> {
    let file = format!("src/{}.rs", module_ident(&product.name));
    let mut tokens = module_head(product, interned);
    let mut deferred = Deferred::default();
    let mut rows = Vec::with_capacity(product.tools.len());
    for (i, t) in product.tools.iter().enumerate() {
        rows.push(tool_tokens(
            t,
            interned.and_then(|s| s.get(i)),
            &mut deferred,
            &file,
        )?);
    }
    tokens.extend(rows_tokens(&rows));
    let formatted = format_file(tokens, &file, header)?;
    substituted(&deferred, &formatted, &file)
}

/// `formatted` with `deferred`'s literals in place of their placeholders.
fn substituted(deferred: &Deferred, formatted: &str, file: &str) -> Result<String> {
    deferred.substitute(formatted).ok_or_else(|| {
        GenerateError::emit(file, "a deferred schema literal was lost in formatting")
    })
}

/// A product module's items before its tools: its doc, `use`s and `TOOLS`.
fn module_head(product: &Product, interned: Option<&[ToolSchemas]>) -> TokenStream {
    // What a tool writes in place, not as a `crate::defs` item.
    let defs = |i: usize| interned.and_then(|s| s.get(i)).map(|s| &s.defs);
    let inline = |shared: fn(&super::shared_defs::ToolDefs) -> bool, has: fn(&Tool) -> bool| {
        (product.tools.iter().enumerate()).any(|(i, t)| has(t) && !defs(i).is_some_and(shared))
    };
    let doc = format!(" Tools of the `{}` product.", product.name);
    let count = product.tools.len();
    let tools_doc = format!(" The {count} tools of this product, by name (the rows of [`ROWS`]).");
    let uses_annotations = inline(|d| d.annotations.is_some(), |_| true);
    let annotations_use = if uses_annotations {
        quote!(Annotations,)
    } else {
        quote!()
    };
    let uses_body = inline(|d| d.body.is_some(), |t| t.body.is_some());
    let body_use = if uses_body {
        quote!(BodyArgs, BodyDef, BodyKind,)
    } else {
        quote!()
    };
    let uses_params = inline(|d| d.params.is_some(), |t| !t.params.is_empty());
    let param_use = if uses_params {
        quote!(ParamDef, ParamLocation, ParamStyle,)
    } else {
        quote!()
    };
    let uses_resp = inline(|d| d.responses.is_some(), |t| !t.responses.is_empty());
    let resp_use = if uses_resp {
        quote!(ResponseDef,)
    } else {
        quote!()
    };
    quote! {
        #![doc = #doc]
        use toolforge_runtime::catalogue::{
            #annotations_use #body_use Envelope, Method, #param_use #resp_use Route, SharedText, ToolDef,
        };

        #[doc = #tools_doc]
        pub static TOOLS: &[ToolDef] = &ROWS;
    }
}

/// Items formatted by `prettyplease`, as they appear inside a file.
fn format_items(tokens: TokenStream, file: &str) -> Result<String> {
    let parsed: syn::File = syn::parse2(tokens)
        .map_err(|e| GenerateError::emit_from(file, "parsing the generated tokens", e))?;
    Ok(prettyplease::unparse(&parsed))
}

fn opt_lit(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => {
            let l = lit(s);
            quote!(Some(#l))
        }
        None => quote!(None),
    }
}

/// The profile's `BodyEnvelope` value: the fields that differ from
/// `BodyEnvelope::BARE`, in declaration order, the rest from it; `None`
/// for bare bodies.
fn envelope_expr(e: &BodyEnvelope) -> Option<TokenStream> {
    let bare = BodyEnvelope::bare();
    let text = |s: &str| {
        let l = lit(s);
        quote!(#l)
    };
    let optional = |s: &Option<String>| opt_lit(s.as_deref());
    let candidates = [
        ("payload", e.payload != bare.payload, text(&e.payload)),
        (
            "failure_flag",
            e.failure_flag != bare.failure_flag,
            optional(&e.failure_flag),
        ),
        ("errors", e.errors != bare.errors, text(&e.errors)),
        (
            "error_message",
            e.error_message != bare.error_message,
            text(&e.error_message),
        ),
        (
            "error_code",
            e.error_code != bare.error_code,
            text(&e.error_code),
        ),
        ("page", e.page != bare.page, optional(&e.page)),
        ("items", e.items != bare.items, optional(&e.items)),
    ];
    let fields: Vec<TokenStream> = candidates
        .into_iter()
        .filter(|(_, differs, _)| *differs)
        .map(|(name, _, value)| {
            let name = Ident::new(name, Span::call_site());
            quote!(#name: #value)
        })
        .collect();
    (!fields.is_empty()).then(|| quote!(BodyEnvelope { #(#fields,)* ..BodyEnvelope::BARE }))
}

/// The profile's `Pagination` value; `None` when lists are not paged.
fn pagination_expr(p: &Pagination) -> Option<TokenStream> {
    let l = |s: &String| lit(s);
    Some(match p {
        Pagination::None => return None,
        Pagination::LastItemId { param, more, id } => {
            let (param, more, id) = (l(param), l(more), l(id));
            quote!(Pagination::LastItemId { param: #param, more: #more, id: #id })
        }
        Pagination::CursorField { param, cursor } => {
            let (param, cursor) = (l(param), l(cursor));
            quote!(Pagination::CursorField { param: #param, cursor: #cursor })
        }
        Pagination::NextUrl { next } => {
            let next = l(next);
            quote!(Pagination::NextUrl { next: #next })
        }
        Pagination::LinkHeader => quote!(Pagination::LinkHeader),
        Pagination::PageNumber {
            param,
            page,
            total_pages,
        } => {
            let (param, page, total_pages) = (l(param), l(page), l(total_pages));
            quote!(Pagination::PageNumber { param: #param, page: #page, total_pages: #total_pages })
        }
    })
}

/// The catalogue's `profile` expression (the fields the policy set, the
/// rest from `Profile::generic`) and the items it needs: the `use` of the
/// `toolforge_runtime::profile` and `::security` names, and the `SCHEMES`
/// constant.
fn profile_expr(p: &Profile) -> (TokenStream, TokenStream) {
    let mut used = vec!["Profile"];
    let mut fields = Vec::new();
    if let Some(url) = &p.base_url {
        let url = lit(url);
        fields.push(quote!(base_url: Some(#url)));
    }
    if !p.server_vars.is_empty() {
        used.push("ServerVar");
        let vars = p.server_vars.iter().map(|v| {
            let (name, default) = (lit(&v.name), lit(&v.default));
            let allowed = v.allowed.iter().map(|a| lit(a));
            quote!(ServerVar { name: #name, default: #default, allowed: &[#(#allowed),*] })
        });
        fields.push(quote!(server_vars: &[#(#vars),*]));
    }
    if let Some(envelope) = envelope_expr(&p.envelope) {
        used.push("BodyEnvelope");
        fields.push(quote!(envelope: #envelope));
    }
    if let Some(pagination) = pagination_expr(&p.pagination) {
        used.push("Pagination");
        fields.push(quote!(pagination: #pagination));
    }
    if let Some(r) = &p.refusals {
        used.push("Refusals");
        let (grant, unknown) = (lit(&r.grant), lit(&r.unknown));
        let empty_list = opt_lit(r.empty_list.as_deref());
        fields.push(quote!(refusals: Refusals {
            grant: #grant,
            unknown: #unknown,
            empty_list: #empty_list,
        }));
    }
    if let Some(a) = &p.accounts {
        used.extend(["AccountFill", "AccountList"]);
        let args = a.args.iter().map(|s| lit(s));
        let (path, items) = (lit(&a.path), lit(&a.items));
        let (id_field, name_field) = (lit(&a.id_field), lit(&a.name_field));
        let total = opt_lit(a.total.as_deref());
        let permission = opt_lit(a.permission.as_deref());
        fields.push(quote!(accounts: AccountFill::FromList(AccountList {
            args: &[#(#args),*],
            path: #path,
            items: #items,
            id_field: #id_field,
            name_field: #name_field,
            total: #total,
            permission: #permission,
        })));
    }
    if let Some(m) = &p.merged {
        used.extend(["MergedSelector", "MergedVariant"]);
        let (arg, id_arg) = (lit(&m.arg), lit(&m.id_arg));
        let variants = m.variants.iter().map(|v| {
            let (value, id, noun) = (lit(&v.value), lit(&v.id), lit(&v.noun));
            quote!(MergedVariant { value: #value, id: #id, noun: #noun })
        });
        fields.push(quote!(merged: Some(MergedSelector {
            arg: #arg,
            id_arg: #id_arg,
            variants: &[#(#variants),*],
        })));
    }
    if let Some(example) = &p.execute_example {
        let example = lit(example);
        fields.push(quote!(execute_example: #example));
    }
    let mut identity_item = quote!();
    if let Some(identity) = &p.identity {
        used.extend(["Identity", "IdentityProbe"]);
        let probes = identity.probes.iter().map(|probe| {
            let (path, id, prefix) = (lit(&probe.path), lit(&probe.id), lit(&probe.prefix));
            let (only, name) = (opt_lit(probe.only.as_deref()), opt_lit(probe.name.as_deref()));
            quote!(IdentityProbe { path: #path, only: #only, id: #id, name: #name, prefix: #prefix })
        });
        // Its own item for the same reason as `SCHEMES` below.
        identity_item = quote! {
            /// How `whoami` finds the credential's identity: probes tried in order.
            #[rustfmt::skip]
            const IDENTITY_PROBES: &[IdentityProbe] = &[#(#probes),*];
        };
        fields.push(quote!(identity: Some(Identity { probes: IDENTITY_PROBES })));
    }
    let mut security_used = Vec::new();
    let mut schemes_item = quote!();
    if !p.schemes.is_empty() {
        let (schemes, key_location) = schemes_expr(&p.schemes);
        security_used.extend(["SchemeKind", "SecurityScheme"]);
        if key_location {
            security_used.push("KeyLocation");
        }
        // Its own item, kept as emitted: rustfmt and prettyplease lay out
        // a one-element slice of structs differently.
        schemes_item = quote! {
            /// The API's credential schemes, sorted by name (indices of the
            /// tools' `security` point into this order).
            #[rustfmt::skip]
            const SCHEMES: &[SecurityScheme] = #schemes;
        };
        fields.push(quote!(schemes: SCHEMES));
    }
    if !p.security.is_empty() {
        let security = requirement(&p.security);
        fields.push(quote!(security: #security));
    }
    if let Some(primary) = p.primary {
        let primary = Literal::u16_unsuffixed(primary);
        fields.push(quote!(primary: Some(#primary)));
    }
    if !p.scopes.is_empty() {
        security_used.push("OperationScopes");
        let entries = p.scopes.iter().map(|s| {
            let operation = lit(&s.operation);
            let scheme = Literal::u16_unsuffixed(s.scheme);
            let scopes = s.scopes.iter().map(|x| lit(x));
            quote!(OperationScopes { operation: #operation, scheme: #scheme, scopes: &[#(#scopes),*] })
        });
        fields.push(quote!(scopes: &[#(#entries),*]));
    }
    if !p.scoped_paths.is_empty() {
        used.push("ScopedPath");
        let paths = p.scoped_paths.iter().map(|s| {
            let (template, check) = (lit(&s.template), opt_lit(s.check.as_deref()));
            quote!(ScopedPath { template: #template, check: #check })
        });
        fields.push(quote!(scoped_paths: &[#(#paths),*]));
    }
    if !p.skill_groups.is_empty() {
        used.push("SkillGroup");
        let groups = p.skill_groups.iter().map(|g| {
            let name = lit(&g.name);
            let tools = g.tools.iter().map(|t| lit(t));
            quote!(SkillGroup { name: #name, tools: &[#(#tools),*] })
        });
        fields.push(quote!(skill_groups: &[#(#groups),*]));
    }
    let token_env = lit(&p.token_env);
    let expr = if fields.is_empty() {
        quote!(Profile::generic(#token_env))
    } else {
        quote!(Profile { #(#fields,)* ..Profile::generic(#token_env) })
    };
    used.sort_unstable();
    // One `use` per name: prettyplease and rustfmt wrap a long `{…}` list
    // differently, and `cargo fmt` must leave `lib.rs` as emitted.
    security_used.sort_unstable();
    let names = used.into_iter().map(ident);
    let security_names = security_used.into_iter().map(ident);
    (
        expr,
        quote! {
            #(use toolforge_runtime::profile::#names;)*
            #(use toolforge_runtime::security::#security_names;)*
            #identity_item
            #schemes_item
        },
    )
}

/// `lib.rs`: module declarations and the catalogue; `interned` declares
/// the private `schemas` module of shared schema texts, `skills` the
/// `skills` module of embedded skills.
pub fn lib_rs(
    cat: &Catalogue,
    interned: bool,
    defs: bool,
    spec: bool,
    skills: bool,
    header: &str,
) -> Result<String> {
    let spec_expr = if spec {
        quote!(include_str!("../artifacts/spec.json"))
    } else {
        quote!("")
    };
    let mods: Vec<Ident> = cat
        .products
        .iter()
        .map(|p| ident(&module_ident(&p.name)))
        .collect();
    let names = cat.products.iter().map(|p| lit(&p.name));
    let api = lit(&cat.api);
    let (profile, profile_use) = profile_expr(&cat.profile);
    let mod_docs = cat
        .products
        .iter()
        .map(|p| format!(" The `{}` product ({} tools).", p.name, p.tools.len()));
    let doc = format!(
        " MCP tools generated by toolforge for the `{}` API: {} tools in {} products.",
        cat.api,
        cat.tools().count(),
        cat.products.len()
    );
    let schemas_mod = if interned {
        quote! {
            /// Output and response schemas shared by the product modules.
            #[rustfmt::skip]
            mod schemas;
        }
    } else {
        quote!()
    };
    let defs_mod = if defs {
        quote! {
            /// Parameter lists, response lists and bodies shared by the product modules.
            #[rustfmt::skip]
            mod defs;
        }
    } else {
        quote!()
    };
    let (skills_mod, skills_expr) = if skills {
        (
            quote! {
                /// The skills served over MCP, with their files embedded.
                #[rustfmt::skip]
                mod skills;
            },
            quote!(skills::SKILLS),
        )
    } else {
        (quote!(), quote!(&[]))
    };
    let tokens = quote! {
        #![doc = #doc]
        // Product modules are emitted by prettyplease; rustfmt must not reflow them
        // or `toolforge check` would see drift.
        #(#[doc = #mod_docs] #[rustfmt::skip] pub mod #mods;)*
        #schemas_mod
        #defs_mod
        #skills_mod

        pub use toolforge_runtime;
        use toolforge_runtime::catalogue::{Catalogue, Product};
        #profile_use
        use toolforge_runtime::request::{Args, BuildError, HttpRequest};

        /// `source.json`: the release this crate was generated from.
        pub const SOURCE: &str = include_str!("../source.json");

        /// Every product with its tools.
        pub static CATALOGUE: Catalogue = Catalogue {
            api: #api,
            profile: #profile,
            products: &[#(Product { name: #names, tools: #mods::TOOLS }),*],
            source: SOURCE,
            spec: #spec_expr,
            skills: #skills_expr,
        };

        /// Builds the upstream request of the tool `name` from its validated
        /// arguments; `None` when no tool has that name. (A tool's
        /// definition is `CATALOGUE.tool(name)`, or a row of its product's
        /// `ROWS`.)
        pub fn request(name: &str, args: &Args) -> Option<Result<HttpRequest, BuildError>> {
            let tool = CATALOGUE.tool(name)?;
            Some(toolforge_runtime::request::build_request(tool, args))
        }
    };
    format_file(tokens, "src/lib.rs", header)
}

/// `main.rs` of the binary.
pub fn main_rs(package: &str, header: &str) -> Result<String> {
    let krate = ident(&package.replace('-', "_"));
    let tokens = quote! {
        //! The MCP server binary of this generated catalogue.
        fn main() -> std::process::ExitCode {
            toolforge_runtime::cli::main(&#krate::CATALOGUE)
        }
    };
    format_file(tokens, "src/main.rs", header)
}
