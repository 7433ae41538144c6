#![allow(clippy::unwrap_used, clippy::panic)]
//! `resource_action` names for path-mashup operationIds, end to end
//! through the CLI: a fresh project gets them, and a project generated
//! before the rule keeps its old names through `toolforge diff
//! --write-lock`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn toolforge(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolforge"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn op(id: &str) -> Value {
    json!({"operationId": id, "responses": {"200": {"description": "ok",
        "content": {"application/json": {"schema": {"type": "object"}}}}}})
}

/// A Stripe-shaped spec: mashup ids, and one good id that stays.
fn spec() -> Value {
    let id = json!([{"name": "customer", "in": "path", "required": true,
        "schema": {"type": "string"}}]);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Shop", "version": "1"},
        "servers": [{"url": "https://shop.example.com"}],
        "paths": {
            "/v1/customers": {"get": op("GetCustomers"), "post": op("PostCustomers")},
            "/v1/customers/{customer}": {
                "parameters": id,
                "get": op("GetCustomersCustomer"),
                "post": op("post_customers_customer"),
                "delete": op("DeleteCustomersCustomer")
            },
            "/v1/customers/{customer}/sources": {
                "parameters": id, "get": op("get_customers_customer_sources")
            },
            "/v1/balance": {"get": op("retrieveBalance")}
        }
    })
}

/// Names by `METHOD path` in a generated `artifacts/tools.json`.
fn names(tools_json: &Path) -> BTreeMap<String, String> {
    let v: Value = serde_json::from_slice(&std::fs::read(tools_json).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for t in v["tools"].as_array().unwrap() {
        let key = format!(
            "{} {}",
            t["method"].as_str().unwrap(),
            t["path"].as_str().unwrap()
        );
        out.insert(key, t["name"].as_str().unwrap().to_string());
    }
    out
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn mashup_ids_give_resource_action_names_and_the_lock_keeps_old_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spec.json"), serde_json::to_vec(&spec()).unwrap()).unwrap();
    let forge = json!({
        "api": "shop",
        "spec": {"release": "shop-1", "path": "spec.json", "sha256": "0".repeat(64)},
        "policy": "generic",
        "crate": {"package": "shop-tools", "binary": "shop-mcp"},
        "output": "out"
    });
    std::fs::write(dir.join("forge.json"), forge.to_string()).unwrap();

    ok(&toolforge(
        dir,
        &["generate", "--spec", "spec.json", "--out", "new"],
    ));
    let fresh = names(&dir.join("new/artifacts/tools.json"));
    assert_eq!(
        fresh,
        expected(&[
            ("DELETE /v1/customers/{customer}", "customers_delete"),
            ("GET /v1/balance", "retrieve_balance"),
            ("GET /v1/customers", "customers_list"),
            ("GET /v1/customers/{customer}", "customers_get"),
            (
                "GET /v1/customers/{customer}/sources",
                "customers_sources_list"
            ),
            ("POST /v1/customers", "customers_create"),
            ("POST /v1/customers/{customer}", "customers_update"),
        ])
    );

    // The tools.json of a project generated before the rule: the same
    // tools under their operationIds' snake names.
    let old_names = expected(&[
        (
            "DELETE /v1/customers/{customer}",
            "delete_customers_customer",
        ),
        ("GET /v1/balance", "retrieve_balance"),
        ("GET /v1/customers", "get_customers"),
        ("GET /v1/customers/{customer}", "get_customers_customer"),
        (
            "GET /v1/customers/{customer}/sources",
            "get_customers_customer_sources",
        ),
        ("POST /v1/customers", "post_customers"),
        ("POST /v1/customers/{customer}", "post_customers_customer"),
    ]);
    let tools = dir.join("new/artifacts/tools.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&tools).unwrap()).unwrap();
    for t in v["tools"].as_array_mut().unwrap() {
        let key = format!(
            "{} {}",
            t["method"].as_str().unwrap(),
            t["path"].as_str().unwrap()
        );
        t["name"] = json!(old_names[&key]);
    }
    std::fs::write(&tools, serde_json::to_vec(&v).unwrap()).unwrap();

    let diff = [
        "diff",
        "--old",
        "new/artifacts/tools.json",
        "--new",
        "spec.json",
        "--config",
        "forge.json",
        "--write-lock",
    ];
    ok(&toolforge(dir, &diff));
    let config: Value =
        serde_json::from_slice(&std::fs::read(dir.join("forge.json")).unwrap()).unwrap();
    let lock: BTreeMap<String, String> =
        serde_json::from_value(config["options"]["name_lock"].clone()).unwrap();
    let mut renamed = old_names.clone();
    renamed.remove("GET /v1/balance");
    assert_eq!(lock, renamed, "one entry per renamed tool");

    ok(&toolforge(
        dir,
        &["generate", "--spec", "spec.json", "--out", "kept"],
    ));
    assert_eq!(names(&dir.join("kept/artifacts/tools.json")), old_names);
}
