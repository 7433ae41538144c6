//! The pinned sample spec: invariants every tool must satisfy, golden
//! snapshots of the interesting cases, determinism, and byte equality of
//! the committed `generated/` crate with an in-memory regeneration.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use toolforge_generator::ir::{BodyArgs, Tool};

fn tool<'a>(g: &'a toolforge_generator::Generated, name: &str) -> &'a Tool {
    g.catalogue
        .tools()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[test]
fn every_tool_satisfies_the_mcp_rules() {
    let g = common::generate_sample();
    let tools: Vec<&Tool> = g.catalogue.tools().collect();
    assert!(tools.len() >= 40, "only {} tools", tools.len());
    assert!(g.catalogue.products.len() >= 6);
    let mut names = BTreeSet::new();
    for t in &tools {
        assert!(
            !t.name.is_empty()
                && t.name.len() <= 64
                && t.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "bad name {}",
            t.name
        );
        assert!(names.insert(t.name.clone()), "duplicate name {}", t.name);
        let schema = &t.input_schema;
        assert_eq!(schema["type"], "object", "{}", t.name);
        for k in ["oneOf", "anyOf", "allOf", "not", "if", "then", "else"] {
            assert!(schema.get(k).is_none(), "{} has top-level {k}", t.name);
        }
        assert!(
            jsonschema::meta::is_valid(schema),
            "{}: input schema is not valid 2020-12",
            t.name
        );
        jsonschema::draft202012::new(schema).unwrap_or_else(|e| panic!("{}: {e}", t.name));
        if let Some(out) = &t.output_value() {
            assert_eq!(out["type"], "object", "{}", t.name);
            assert!(
                jsonschema::meta::is_valid(out),
                "{}: output schema invalid",
                t.name
            );
        }
        let text = schema.to_string();
        for banned in [
            "\"nullable\"",
            "\"discriminator\"",
            "\"example\"",
            "\"x-",
            "\"xml\"",
        ] {
            assert!(
                !text.contains(banned),
                "{} input schema keeps {banned}",
                t.name
            );
        }
    }
    // All four annotations are emitted for every tool in the catalogue artifact.
    let tools_json: Value = serde_json::from_slice(&file(&g, "artifacts/tools.json")).unwrap();
    for t in tools_json["tools"].as_array().unwrap() {
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(
                t["annotations"][hint].is_boolean(),
                "{} lacks {hint}",
                t["name"]
            );
        }
    }
}

fn file(g: &toolforge_generator::Generated, path: &str) -> Vec<u8> {
    g.files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no {path}"))
        .contents
        .clone()
}

#[test]
fn generation_is_deterministic() {
    let a = common::generate_sample();
    let b = common::generate_sample();
    assert_eq!(a.files, b.files);
}

#[test]
fn committed_generated_crate_is_up_to_date() {
    let g = common::generate_sample();
    let out = common::repo().join("generated");
    let mut stale = Vec::new();
    for f in &g.files {
        if std::fs::read(out.join(&f.path)).ok().as_deref() != Some(&f.contents[..]) {
            stale.push(f.path.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "generated/ is stale ({stale:?}); run `cargo run -p toolforge-generator --bin toolforge -- generate`"
    );
}

#[test]
fn merged_account_zone_paths_split_and_route() {
    let g = common::generate_sample();
    let spec: Value = serde_json::from_slice(&file(&g, "artifacts/spec.json")).unwrap();
    let paths: Vec<&String> = spec["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|p| p.contains("rulesets"))
        .collect();
    assert!(
        paths.iter().all(|p| !p.contains("account_or_zone")),
        "{paths:?}"
    );
    let account = &spec["paths"]["/accounts/{account_id}/rulesets"]["get"];
    let zone = &spec["paths"]["/zones/{zone_id}/rulesets"]["get"];
    let param_names = |op: &Value| -> Vec<String> {
        op["parameters"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|p| p["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    insta::assert_json_snapshot!(
        "merged_split_spec",
        json!({
            "paths": paths,
            "account_list_params": param_names(account),
            "zone_list_params": param_names(zone),
        })
    );
    let t = tool(&g, "rulesets_list");
    insta::assert_json_snapshot!(
        "merged_tool_routing",
        json!({
            "routes": t.routes,
            "params": t.params,
            "input_required": t.input_schema["required"],
            "selector": t.input_schema["properties"]["account_or_zone"],
        })
    );
}

#[test]
fn recursive_schemas_become_defs() {
    let g = common::generate_sample();
    let t = tool(&g, "rulesets_create");
    let defs = t.input_schema["$defs"]
        .as_object()
        .expect("recursive input has $defs");
    insta::assert_json_snapshot!(
        "recursive_defs",
        json!({
            "def_names": defs.keys().collect::<Vec<_>>(),
            "defs": defs,
        })
    );
    let out = tool(&g, "rulesets_get").output_value().unwrap();
    assert!(
        out.get("$defs").is_some(),
        "recursive output keeps $defs: {out}"
    );
}

#[test]
fn name_collisions_get_location_suffixes() {
    let g = common::generate_sample();
    let t = g
        .catalogue
        .tools()
        .find(|t| t.operation_id == "workers-kv-namespace-rename-a-namespace")
        .unwrap();
    let body_fields = match &t.body.as_ref().unwrap().args {
        BodyArgs::Fields(f) => f.clone(),
        BodyArgs::Whole(w) => vec![(w.clone(), String::new())],
    };
    insta::assert_json_snapshot!(
        "collision",
        json!({
            "name": t.name,
            "params": t.params,
            "body_fields": body_fields,
            "properties": t.input_schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>(),
        })
    );
}

fn find_nullable(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            let nullable_type = m
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|a| a.contains(&json!("null")));
            let nullable_any = m
                .get("anyOf")
                .and_then(Value::as_array)
                .is_some_and(|a| a.contains(&json!({"type": "null"})));
            if nullable_type || nullable_any {
                out.push(v.clone());
            }
            m.values().for_each(|c| find_nullable(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| find_nullable(c, out)),
        _ => {}
    }
}

#[test]
fn nullable_becomes_a_null_union() {
    let g = common::generate_sample();
    let mut found = Vec::new();
    find_nullable(&tool(&g, "zones_edit").input_schema, &mut found);
    find_nullable(&tool(&g, "zones_get").output_value().unwrap(), &mut found);
    find_nullable(&tool(&g, "r2_buckets_create").input_schema, &mut found);
    insta::assert_json_snapshot!("nullable", found);
}

#[test]
fn read_only_fields_leave_inputs_but_stay_in_outputs() {
    let g = common::generate_sample();
    let create = tool(&g, "dns_records_create");
    let text = create.input_schema.to_string();
    for field in ["\"created_on\"", "\"modified_on\"", "\"readOnly\""] {
        assert!(!text.contains(field), "input keeps {field}");
    }
    let out = create.output_value().unwrap().to_string();
    assert!(out.contains("\"created_on\""), "output lost created_on");
    let ns = tool(&g, "storage_kv_namespaces_create");
    insta::assert_json_snapshot!(
        "read_only",
        json!({
            "kv_namespace_create_input": ns.input_schema,
        })
    );
}

#[test]
fn multipart_uploads_take_files() {
    let g = common::generate_sample();
    let t = g
        .catalogue
        .tools()
        .find(|t| t.operation_id == "worker-script-upload-worker-module")
        .unwrap();
    let import = g
        .catalogue
        .tools()
        .find(|t| t.operation_id == "dns-records-for-a-zone-import-dns-records")
        .unwrap();
    insta::assert_json_snapshot!(
        "multipart",
        json!({
            "worker_upload": {"name": t.name, "body": t.body, "input": t.input_schema},
            "dns_import": {"name": import.name, "body": import.body, "input": import.input_schema},
        })
    );
}

#[test]
fn envelope_output_schema_is_result_and_result_info() {
    let g = common::generate_sample();
    let list = tool(&g, "dns_records_list");
    let get = tool(&g, "dns_records_get");
    insta::assert_json_snapshot!(
        "envelope",
        json!({
            "list": {"envelope": list.envelope, "output": list.output_schema},
            "get": {"envelope": get.envelope, "output_keys": get.output_value().unwrap()["properties"].as_object().unwrap().keys().collect::<Vec<_>>()},
        })
    );
}

#[test]
fn skipped_operations_are_listed_with_reasons() {
    let g = common::generate_sample();
    insta::assert_json_snapshot!("skipped", g.catalogue.skipped);
    let readme = String::from_utf8(file(&g, "README.md")).unwrap();
    for s in &g.catalogue.skipped {
        assert!(
            readme.contains(&s.operation_id),
            "README misses {}",
            s.operation_id
        );
    }
}

#[test]
fn non_json_and_deprecated_operations() {
    let g = common::generate_sample();
    let export = g
        .catalogue
        .tools()
        .find(|t| t.operation_id == "dns-records-for-a-zone-export-dns-records")
        .unwrap();
    assert!(
        export.output_schema.is_none(),
        "text/plain export has no output schema"
    );
    assert_eq!(
        export.responses[0].content_type.as_deref(),
        Some("text/plain")
    );
    let dep = g
        .catalogue
        .tools()
        .find(|t| t.deprecated)
        .expect("a deprecated tool");
    assert!(
        dep.description.starts_with("Deprecated"),
        "{}",
        dep.description
    );
}
