#![allow(clippy::unwrap_used, clippy::panic)]
//! Schemas per client (issue 42 item 4): one server, both profiles.
//!
//! - The run-time strict profile is the generator's. Both sides call the
//!   one `toolforge_model::strict::strict_input_schema` (no other definition:
//!   `test_layering.rs::the_strict_profile_is_defined_only_in_the_model`);
//!   what this checks is the inputs: for every tool of the Cloudflare sample
//!   and Larder, the runtime's strict form of the committed (full, shared)
//!   input schema equals the schema the generator writes with
//!   `schema_profile: strict` (made from the unshared schema), so sharing
//!   repeated parts through `$defs` never changes what a strict client sees.
//! - End to end, against one HTTP server at once: the TypeScript SDK
//!   announcing `claude-code` is listed the full schemas; the Python
//!   `mcp.Client` announcing `gemini-cli` (2026-07-28: `clientInfo` in each
//!   request's `_meta`) the strict ones; the TypeScript SDK announcing
//!   `codex-mcp-client` (User-Agent too) but asking `?schema_profile=full`
//!   the full ones; and the Python `ClientSession` (2025-11-25, its default
//!   name) with `?schema_profile=strict` the strict ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolforge_generator::config::{ForgeConfig, SchemaProfile};
use toolforge_generator::{CrateLayout, generate};
use toolforge_runtime::catalogue::{Catalogue, SharedText, SharedTexts};
use toolforge_runtime::schema_profile::strict_input_schema;
use toolforge_tests::clients;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "profiles-client-token-91c2";
const UPSTREAM_TOKEN: &str = "profiles-upstream-secret-7Qe";
const CLIENT_LIMIT: Duration = Duration::from_secs(120);
const TEST_LIMIT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Each tool's input schema as the generator writes it with
/// `schema_profile: strict`, by tool name.
fn generated_strict(config_file: &str) -> BTreeMap<String, Value> {
    generated_inputs(config_file, None, SchemaProfile::Strict)
}

/// Each tool's input schema as the generator writes it for `config_file`
/// (with `spec` in place of the pinned one) in `profile`, by tool name.
fn generated_inputs(
    config_file: &str,
    spec: Option<&Path>,
    profile: SchemaProfile,
) -> BTreeMap<String, Value> {
    let path = repo().join(config_file);
    let mut config = ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    config.options.schema_profile = profile;
    let spec_path = spec.map_or_else(|| repo().join(&config.spec.path), Path::to_path_buf);
    let spec = std::fs::read(&spec_path).unwrap();
    let name = spec_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let layout = CrateLayout {
        runtime_path: None,
        standalone: false,
    };
    let generated = generate(&spec, &name, &config, &layout).unwrap();
    let file = |p: &str| {
        let f = generated.files.iter().find(|f| f.path == p).unwrap();
        String::from_utf8(f.contents.clone()).unwrap()
    };
    let schemas: &'static str = Box::leak(file("artifacts/schemas.json").into_boxed_str());
    let head: Value = serde_json::from_str(&format!("{}}}}}", schemas.lines().next().unwrap()))
        .unwrap_or_else(|_| json!({"key": "x-toolforge-chunk"}));
    let key: &'static str = Box::leak(
        head["key"]
            .as_str()
            .unwrap_or("x-toolforge-chunk")
            .to_owned()
            .into_boxed_str(),
    );
    let table: &'static SharedTexts = Box::leak(Box::new(SharedTexts::new(key, &[], schemas)));
    let tools: Value = serde_json::from_str(&file("artifacts/tools.json")).unwrap();
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let entry: &'static str = Box::leak(
                t["input_schema"]
                    .as_str()
                    .unwrap()
                    .to_owned()
                    .into_boxed_str(),
            );
            let text = SharedText::Entry(entry, table).text();
            let schema = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{entry}: {e}"));
            (t["name"].as_str().unwrap().to_owned(), schema)
        })
        .collect()
}

fn runtime_strict_matches_generated(catalogue: &Catalogue, config_file: &str) {
    let expected = generated_strict(config_file);
    let mut changed = 0;
    for tool in catalogue.tools() {
        let full: Value = serde_json::from_str(&tool.input_schema_text()).unwrap();
        let strict = strict_input_schema(&full);
        assert_eq!(
            Some(&strict),
            expected.get(tool.name),
            "{config_file}: {}",
            tool.name
        );
        changed += usize::from(strict != full);
    }
    assert_eq!(expected.len(), catalogue.tools().count());
    assert!(
        changed > 0,
        "{config_file}: no tool's strict schema differs"
    );
}

#[test]
fn the_run_time_strict_profile_is_the_generators() {
    runtime_strict_matches_generated(&cloudflare_tools::CATALOGUE, "forge.json");
    runtime_strict_matches_generated(&larder_tools::CATALOGUE, "forge.larder.json");
}

/// The same on the full Cloudflare release (1,533 tools; `../shared`):
/// the run-time strict form of each full (shared) schema is the
/// generator's strict schema. Prints what the strict forms cost.
#[test]
fn the_run_time_strict_profile_is_the_generators_on_the_full_release() {
    let test = "the_run_time_strict_profile_is_the_generators_on_the_full_release";
    let Some(shared) = clients::shared_dir(test, "specs/cloudflare/openapi.json")
        .unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    let spec = shared.join("specs/cloudflare/openapi.json");
    let full = generated_inputs("forge.json", Some(&spec), SchemaProfile::Full);
    let strict = generated_inputs("forge.json", Some(&spec), SchemaProfile::Strict);
    assert_eq!(full.len(), strict.len());
    let started = std::time::Instant::now();
    let made: BTreeMap<&String, Value> = full
        .iter()
        .map(|(name, schema)| (name, strict_input_schema(schema)))
        .collect();
    let took = started.elapsed();
    for (name, schema) in &made {
        assert_eq!(Some(schema), strict.get(*name), "{name}");
    }
    let bytes = |m: &mut dyn Iterator<Item = &Value>| {
        m.map(|v| serde_json::to_string(v).unwrap().len())
            .sum::<usize>()
    };
    eprintln!(
        "{test}: {} tools; input schemas full {} bytes, strict {} bytes; strict forms made in {took:?} (this build)",
        full.len(),
        bytes(&mut full.values()),
        bytes(&mut made.values())
    );
}

/// The expected listing of each tool's input schema in `profile`.
fn expected_inputs(strict: bool) -> BTreeMap<String, Value> {
    cloudflare_tools::CATALOGUE
        .tools()
        .map(|t| {
            let full: Value = serde_json::from_str(&t.input_schema_text()).unwrap();
            let schema = if strict {
                strict_input_schema(&full)
            } else {
                full
            };
            (t.name.to_owned(), schema)
        })
        .collect()
}

/// The input schemas a client's report lists, by tool name (`whoami`, not
/// in the catalogue, left out).
fn listed_inputs(report: &Value) -> BTreeMap<String, Value> {
    let tools = report["results"][0]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no listing: {report}"));
    tools
        .iter()
        .filter(|t| {
            cloudflare_tools::CATALOGUE
                .tool(t["name"].as_str().unwrap())
                .is_some()
        })
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

#[test]
fn clients_announcing_different_names_get_their_own_profile_at_once() {
    let test = "clients_announcing_different_names_get_their_own_profile_at_once";
    let node = clients::require_node(test).unwrap_or_else(|e| panic!("{e}"));
    let python = clients::require_python(test).unwrap_or_else(|e| panic!("{e}"));
    if !node || !python {
        return;
    }
    // No upstream call is made: a loopback address nobody listens on is enough.
    let config = ServerConfig::new([
        "--upstream",
        "http://127.0.0.1:9",
        "--allow-loopback-upstream",
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{test}: {e}"));
    let url = server.url();
    let list = json!([{"op": "list"}]);
    let plans = [
        (
            "typescript claude-code",
            json!({"url": url, "token": CLIENT_TOKEN, "steps": list, "timeoutMs": 60_000,
                "clientName": "claude-code", "userAgent": "claude-code/2.0.0"}),
            false,
        ),
        (
            "python gemini-cli (2026-07-28)",
            json!({"client": "client", "transport": "http", "url": url, "token": CLIENT_TOKEN,
                "steps": list, "timeoutSeconds": 60, "clientName": "gemini-cli"}),
            true,
        ),
        (
            "typescript codex-mcp-client ?schema_profile=full",
            json!({"url": format!("{url}?schema_profile=full"), "token": CLIENT_TOKEN,
                "steps": list, "timeoutMs": 60_000, "clientName": "codex-mcp-client",
                "userAgent": "codex-mcp-client/0.44.0"}),
            false,
        ),
        (
            "python session ?schema_profile=strict",
            json!({"client": "session", "transport": "http",
                "url": format!("{url}?schema_profile=strict"), "token": CLIENT_TOKEN,
                "steps": list, "timeoutSeconds": 60}),
            true,
        ),
    ];
    let reports = with_deadline(TEST_LIMIT, move || {
        let handles: Vec<_> = plans
            .into_iter()
            .map(|(who, plan, strict)| {
                std::thread::spawn(move || {
                    let run = if plan.get("client").is_some() {
                        clients::run_python
                    } else {
                        clients::run_ts
                    };
                    (who, run(&plan, CLIENT_LIMIT), strict)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    })
    .unwrap_or_else(|e| panic!("{test}: {e}"));
    let (full, strict) = (expected_inputs(false), expected_inputs(true));
    assert_ne!(full, strict, "the sample must have schemas strict changes");
    for (who, report, wants_strict) in reports {
        let report = report.unwrap_or_else(|e| panic!("{who}: {e}\n{}", server.log()));
        let listed = listed_inputs(&report);
        let expected = if wants_strict { &strict } else { &full };
        let differing: Vec<&String> = expected
            .iter()
            .filter(|(name, schema)| listed.get(*name) != Some(*schema))
            .map(|(name, _)| name)
            .collect();
        assert!(
            differing.is_empty() && listed.len() == expected.len(),
            "{who} (strict: {wants_strict}, protocol {}): {} tools differ, e.g. {:?}",
            report["protocolVersion"],
            differing.len(),
            differing.first()
        );
    }
}
