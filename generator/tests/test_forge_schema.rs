//! `generator/forge.schema.json` is the schema derived from the config types
//! (checked in, like prost-build's generated code, and kept up to date here),
//! the repository's `forge.json` names it and validates against it, and the
//! schema refuses what the parser refuses.

// Helpers outside `#[test]` functions count as non-test code for clippy.
#![allow(clippy::panic, clippy::unwrap_used)]

use std::path::Path;

use serde_json::{Value, json};
use toolforge_generator::config::{ForgeConfig, json_schema};

mod common;

const SCHEMA_FILE: &str = "forge.schema.json";

fn committed_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_FILE);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(&committed_text()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("does not compile: {e}"))
}

fn repo_forge_json() -> Value {
    let path = common::repo().join("forge.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn committed_schema_is_up_to_date() {
    let fresh = json_schema();
    assert!(
        fresh == committed_text(),
        "generator/{SCHEMA_FILE} is out of date with the config types; run \
         `cargo run -p toolforge-generator --bin toolforge -- schema --out generator/{SCHEMA_FILE}` \
         and commit the result"
    );
    // Deterministic: the same text on every derivation.
    assert_eq!(fresh, json_schema());
}

#[test]
fn committed_schema_is_valid_2020_12() {
    let schema: Value = serde_json::from_str(&committed_text()).unwrap();
    if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
        panic!("not a valid 2020-12 schema: {e}");
    }
}

#[test]
fn repo_forge_json_names_and_satisfies_the_schema() {
    let config = repo_forge_json();
    assert_eq!(config["$schema"], "generator/forge.schema.json");
    // The `$schema` path is relative to the repository root, where it resolves.
    assert!(common::repo().join("generator").join(SCHEMA_FILE).is_file());
    let v = validator();
    let errors: Vec<String> = v
        .iter_errors(&config)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "forge.json: {errors:#?}");
    // And the parser reads it, keeping the key.
    let parsed = common::config();
    assert_eq!(
        parsed.schema.as_deref(),
        Some("generator/forge.schema.json")
    );
}

#[test]
fn schema_and_parser_agree_on_refusals() {
    let v = validator();
    let base = repo_forge_json();
    let mut cases: Vec<(&str, Value)> = Vec::new();
    let mut top = base.clone();
    top["polcy"] = json!("generic");
    cases.push(("unknown top-level field", top));
    let mut nested = base.clone();
    nested["options"]["naem_lock"] = json!({});
    cases.push(("unknown option", nested));
    let mut pin = base.clone();
    pin["spec"]["sha"] = json!("00");
    cases.push(("unknown pin field", pin));
    let mut policy = base.clone();
    policy["policy"] = json!("aws");
    cases.push(("unknown policy", policy));
    let mut missing = base.clone();
    missing.as_object_mut().unwrap().remove("crate");
    cases.push(("missing crate", missing));
    for (what, config) in cases {
        assert!(!v.is_valid(&config), "schema accepts {what}");
        let text = serde_json::to_string_pretty(&config).unwrap();
        assert!(
            ForgeConfig::parse(&text, Path::new("forge.json")).is_err(),
            "parser accepts {what}"
        );
    }
    // Defaults: a minimal file is accepted by both.
    let minimal = json!({
        "api": "x",
        "spec": {"release": "r", "path": "a.yaml", "sha256": "0".repeat(64)},
        "policy": "generic",
        "crate": {"package": "x-tools", "binary": "x-mcp"}
    });
    assert!(v.is_valid(&minimal));
    ForgeConfig::parse(&minimal.to_string(), Path::new("forge.json")).unwrap();
}

/// The policy enum of the schema, forge.json's accepted values and the
/// CLI's `--policy` values are all the policy registry's names.
#[test]
fn policy_values_come_from_the_registry() {
    use toolforge_generator::config::PolicyKind;
    use toolforge_generator::policy::REGISTRY;
    let names: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
    let schema: Value = serde_json::from_str(&committed_text()).unwrap();
    let consts: Vec<&str> = schema["$defs"]["PolicyKind"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["const"].as_str().unwrap())
        .collect();
    assert_eq!(consts, names);
    for name in &names {
        let kind = PolicyKind::from_name(name).unwrap();
        assert_eq!(kind.name(), *name);
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            json!(name),
            "serialised as its name"
        );
    }
    // An unregistered name is refused, naming the registered ones.
    let mut forge = repo_forge_json();
    forge["policy"] = json!("stripe-ish");
    let path = Path::new("forge.json");
    let err = ForgeConfig::parse(&forge.to_string(), path)
        .unwrap_err()
        .to_string();
    for name in &names {
        assert!(err.contains(&format!("`{name}`")), "{err}");
    }
    assert!(!validator().is_valid(&forge));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolforge"))
        .args(["generate", "--policy", "stripe-ish"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("[possible values: {}]", names.join(", "))),
        "{stderr}"
    );
}
