#![allow(clippy::unwrap_used, clippy::panic)]
//! A generic API's tool texts and arguments as `toolforge generate` writes
//! them: titles from `summary` or the name, HTML descriptions as
//! Markdown, no `body` argument for an empty body on GET/DELETE, and only
//! declared numeric bounds in schemas.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// A Stripe-shaped spec in miniature.
fn spec() -> Value {
    let empty_form = json!({"required": false, "content": {
        "application/x-www-form-urlencoded": {"schema": {
            "type": "object", "properties": {}, "additionalProperties": false}}}});
    let ok = json!({"200": {"description": "ok", "content": {"application/json": {
        "schema": {"type": "object"}}}}});
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Shop", "version": "1"},
        "servers": [{"url": "https://shop.example.com"}],
        "paths": {
            "/v1/customers": {
                "get": {
                    "operationId": "GetCustomers",
                    "description": "<p>Returns a list of your <code>customers</code>.</p>",
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {
                            "type": "integer", "minimum": 1, "maximum": 100},
                         "description": "Between 1 and 100."},
                        {"name": "page_size", "in": "query", "schema": {"type": "integer"},
                         "description": "Can range between 1 and 100."}
                    ],
                    "requestBody": empty_form,
                    "responses": ok
                },
                "post": {
                    "operationId": "PostCustomers",
                    "summary": "Create a customer",
                    "description": "Plain text with a <uuid> placeholder<br/>and a break.",
                    "requestBody": empty_form,
                    "responses": ok
                }
            },
            "/v1/customers/{customer}": {
                "parameters": [{"name": "customer", "in": "path", "required": true,
                    "schema": {"type": "string"}}],
                "delete": {"operationId": "DeleteCustomersCustomer",
                    "requestBody": empty_form, "responses": ok}
            }
        }
    })
}

fn generate(dir: &Path) -> (Vec<Value>, Value) {
    std::fs::write(dir.join("spec.json"), spec().to_string()).unwrap();
    let forge = json!({
        "api": "shop",
        "spec": {"release": "shop-1", "path": "spec.json", "sha256": "0".repeat(64)},
        "policy": "generic",
        "crate": {"package": "shop-tools", "binary": "shop-mcp"},
        "output": "out"
    });
    std::fs::write(dir.join("forge.json"), forge.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_toolforge"))
        .args(["generate", "--spec", "spec.json", "--out", "out"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read = |f: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join("out/artifacts").join(f)).unwrap()).unwrap()
    };
    let tools = read("tools.json")["tools"].as_array().unwrap().clone();
    (tools, read("schemas.json")["entries"].clone())
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn titles_descriptions_bodies_and_bounds_read_like_the_api() {
    let tmp = tempfile::tempdir().unwrap();
    let (tools, schemas) = generate(tmp.path());

    let list = tool(&tools, "customers_list");
    // No summary: a readable form of the name.
    assert_eq!(list["title"], "Customers list");
    // HTML (a closing tag) becomes Markdown.
    assert_eq!(list["description"], "Returns a list of your `customers`.");
    // Stripe's empty form body on a GET gives no `body` argument.
    assert!(list.get("body").is_none(), "{list}");
    let input = &schemas[list["input_schema"].as_str().unwrap()];
    assert!(input["properties"].get("body").is_none(), "{input}");
    // Declared bounds are kept; a range stated only in prose is not
    // turned into one.
    assert_eq!(input["properties"]["limit"]["minimum"], 1, "{input}");
    assert_eq!(input["properties"]["limit"]["maximum"], 100, "{input}");
    let page_size = &input["properties"]["page_size"];
    assert!(page_size.get("minimum").is_none() && page_size.get("maximum").is_none());

    let delete = tool(&tools, "customers_delete");
    assert!(delete.get("body").is_none(), "{delete}");
    assert_eq!(delete["title"], "Customers delete");

    // A summary is the title; text without a closing tag is not HTML and
    // stays as written; a POST keeps its (empty) body argument.
    let create = tool(&tools, "customers_create");
    assert_eq!(create["title"], "Create a customer");
    assert_eq!(
        create["description"],
        "Plain text with a <uuid> placeholder<br/>and a break."
    );
    assert!(create.get("body").is_some(), "{create}");
}
