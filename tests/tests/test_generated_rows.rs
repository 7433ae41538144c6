//! The committed generated crates' public API after tool statics became
//! rows of one `ROWS` table per product: `TOOLS` is the rows themselves, in
//! name order, the catalogue lists the same definitions, and the by-name
//! request builder (`<crate>::request`) builds what
//! `toolforge_runtime::request::build_request` builds from the definition.
#![allow(clippy::unwrap_used, clippy::panic)]

use serde_json::{Map, Value, json};
use toolforge_runtime::catalogue::{Catalogue, ToolDef};
use toolforge_runtime::request::{Args, BuildError, HttpRequest, build_request};

type ByName = fn(&str, &Args) -> Option<Result<HttpRequest, BuildError>>;

/// Every tool of `catalogue` built by name and from its definition, with no
/// arguments and with a value for each argument the schema names.
fn by_name_matches_definition(catalogue: &'static Catalogue, by_name: ByName) {
    let mut tools = 0;
    for tool in catalogue.tools() {
        for args in [Map::new(), filled(tool)] {
            let named = by_name(tool.name, &args).expect("the tool is found by name");
            let direct = build_request(tool, &args);
            match (named, direct) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", tool.name),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}", tool.name),
                (a, b) => panic!("{}: by name {a:?}, from the definition {b:?}", tool.name),
            }
        }
        tools += 1;
    }
    assert!(tools > 0);
    assert!(by_name("no_such_tool", &Map::new()).is_none());
    assert!(by_name("", &Map::new()).is_none());
}

/// A string for every property of the tool's input schema.
fn filled(tool: &ToolDef) -> Args {
    let schema: Value = serde_json::from_str(&tool.input_schema_text()).unwrap();
    let mut args = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for name in props.keys() {
            args.insert(name.clone(), json!("x1"));
        }
    }
    args
}

/// Each product's tools are its rows, one each, in name order.
fn tools_are_the_rows(catalogue: &Catalogue, rows: &[(&str, &'static [ToolDef])]) {
    assert_eq!(catalogue.products.len(), rows.len());
    for (product, (name, rows)) in catalogue.products.iter().zip(rows) {
        assert_eq!(product.name, *name);
        assert_eq!(product.tools.len(), rows.len(), "{name}");
        for (tool, row) in product.tools.iter().zip(rows.iter()) {
            assert!(std::ptr::eq(tool, row), "{name}: {}", tool.name);
            assert_eq!(tool.product, *name);
        }
        let names: Vec<&str> = rows.iter().map(|t| t.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "{name}");
    }
}

#[test]
fn larder_requests_by_name_match_the_definitions() {
    by_name_matches_definition(&larder_tools::CATALOGUE, larder_tools::request);
}

#[test]
fn cloudflare_requests_by_name_match_the_definitions() {
    by_name_matches_definition(&cloudflare_tools::CATALOGUE, cloudflare_tools::request);
}

#[test]
fn till_requests_by_name_match_the_definitions() {
    by_name_matches_definition(&till_tools::CATALOGUE, till_tools::request);
}

#[test]
fn product_tools_are_their_rows() {
    use larder_tools as l;
    tools_are_the_rows(
        &l::CATALOGUE,
        &[
            ("auth", &l::auth::ROWS),
            ("items", &l::items::ROWS),
            ("orders", &l::orders::ROWS),
            ("pantries", &l::pantries::ROWS),
            ("reports", &l::reports::ROWS),
            ("stock", &l::stock::ROWS),
            ("suppliers", &l::suppliers::ROWS),
            ("webhooks", &l::webhooks::ROWS),
        ],
    );
    use till_tools as t;
    tools_are_the_rows(
        &t::CATALOGUE,
        &[
            ("account", &t::account::ROWS),
            ("customers", &t::customers::ROWS),
            ("invoices", &t::invoices::ROWS),
            ("products", &t::products::ROWS),
        ],
    );
}
