#![allow(clippy::unwrap_used, clippy::panic)]
//! The MCP conformance suite (`@modelcontextprotocol/conformance`,
//! `conformance server --url …`, default "active" suite) against the HTTP
//! server. Every scenario must pass except those listed, each with its
//! reason, in `tests/conformance-expected-failures.txt`; an unexpected
//! failure fails this test, and so does a listed scenario that now passes.
//!
//! The suite's client sends no `Authorization` header, so it talks to the
//! server through [`AuthProxy`], which adds the bearer token and forwards
//! everything else (including `Host` and `Origin`, which the
//! dns-rebinding-protection scenario sets) byte for byte. The proxy's
//! address is what the suite sees, so the server is told to allow it as a
//! Host and an Origin, as an operator would for its public address.
//!
//! Needs `npm ci --prefix tests`; the test applies the Node 20 patch
//! (`tests/js/patch-conformance.mjs`, idempotent) itself.
//! `TOOLFORGE_SKIP_NODE=1` skips with a loud line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use toolforge_tests::clients;
use toolforge_tests::process;
use toolforge_tests::proxy::AuthProxy;
use toolforge_tests::server::{ScratchDir, Server, ServerConfig};

const CLIENT_TOKEN: &str = "conformance-client-token-5d0b7c";
const UPSTREAM_TOKEN: &str = "cf-conformance-upstream-secret-P3nd";
/// Bound on the whole suite run.
const SUITE_LIMIT: Duration = Duration::from_secs(600);

fn tests_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `scenario → reason` from the expected-failures file.
fn expected_failures() -> BTreeMap<String, String> {
    let path = tests_dir().join("conformance-expected-failures.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    parse_expected(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses `scenario: reason` lines (blank lines and `#` comments skipped).
fn parse_expected(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (scenario, reason) = line
            .split_once(':')
            .ok_or_else(|| format!("line {}: expected `scenario: reason`", n + 1))?;
        let (scenario, reason) = (scenario.trim(), reason.trim());
        if scenario.is_empty() || reason.is_empty() || scenario.contains(char::is_whitespace) {
            return Err(format!(
                "line {}: expected `scenario: reason` with a reason",
                n + 1
            ));
        }
        if out.insert(scenario.to_owned(), reason.to_owned()).is_some() {
            return Err(format!("line {}: `{scenario}` is listed twice", n + 1));
        }
    }
    Ok(out)
}

/// Outcome of one scenario: `Ok(passed checks)` or `Err(failure lines)`.
type Outcome = Result<usize, Vec<String>>;

/// Reads `OUT/server-<scenario>-<timestamp>/checks.json` for every scenario.
/// A scenario fails when any check is a FAILURE or a WARNING (the suite's
/// own baseline rule).
fn read_results(out: &Path) -> Result<BTreeMap<String, Outcome>, String> {
    let mut results = BTreeMap::new();
    let entries = std::fs::read_dir(out).map_err(|e| format!("reading {}: {e}", out.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = scenario_of(&name) else {
            continue;
        };
        let checks_path = entry.path().join("checks.json");
        let text = std::fs::read_to_string(&checks_path)
            .map_err(|e| format!("reading {}: {e}", checks_path.display()))?;
        let checks: Vec<Value> = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a JSON array: {e}", checks_path.display()))?;
        let failures: Vec<String> = checks
            .iter()
            .filter(|c| c["status"] == "FAILURE" || c["status"] == "WARNING")
            .map(|c| {
                format!(
                    "{} {}: {}",
                    c["status"].as_str().unwrap_or("?"),
                    c["id"].as_str().unwrap_or("?"),
                    c["errorMessage"].as_str().unwrap_or("")
                )
            })
            .collect();
        let passed = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
        let outcome = if failures.is_empty() {
            Ok(passed)
        } else {
            Err(failures)
        };
        results.insert(scenario, outcome);
    }
    Ok(results)
}

/// `server-tools-list-2026-11-30T05-29-54-482Z` → `tools-list`.
fn scenario_of(dir_name: &str) -> Option<String> {
    let rest = dir_name.strip_prefix("server-")?;
    // The timestamp suffix is `-YYYY-MM-DDTHH-MM-SS-mmmZ` (25 characters).
    let cut = rest.len().checked_sub(25)?;
    let (scenario, stamp) = rest.split_at(cut);
    (stamp.starts_with('-') && stamp.ends_with('Z') && stamp.as_bytes().get(11) == Some(&b'T'))
        .then(|| scenario.to_owned())
}

fn conformance_cli() -> PathBuf {
    tests_dir().join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

fn patch_conformance() {
    let mut patch = Command::new("node");
    patch
        .arg(tests_dir().join("js/patch-conformance.mjs"))
        .current_dir(tests_dir());
    let done = process::run(patch, b"", Duration::from_secs(60)).unwrap();
    assert!(
        done.success(),
        "tests/js/patch-conformance.mjs failed:\n{}",
        done.describe()
    );
}

#[test]
fn conformance_suite_passes_every_scenario_that_applies() {
    let test = "conformance_suite_passes_every_scenario_that_applies";
    if !clients::require_node(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let expected = expected_failures();
    patch_conformance();

    let listener = AuthProxy::bind().unwrap();
    let front = listener.addr();
    let config = ServerConfig::new([
        "--upstream".to_owned(),
        "http://127.0.0.1:9".to_owned(),
        "--allow-loopback-upstream".to_owned(),
        "--allowed-host".to_owned(),
        front.to_string(),
        "--allowed-origin".to_owned(),
        format!("http://{front}"),
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{test}: {e}"));
    let proxy = listener.forward_to(server.addr(), CLIENT_TOKEN);

    let scratch = ScratchDir::new().unwrap();
    let out = scratch.path().join("results");
    let baseline = scratch.path().join("expected-failures.yaml");
    let yaml: String = std::iter::once("server:\n".to_owned())
        .chain(expected.keys().map(|s| format!("  - {s}\n")))
        .collect();
    std::fs::write(&baseline, yaml).unwrap();

    let mut command = Command::new("node");
    command
        .arg(conformance_cli())
        .args(["server", "--url", &format!("http://{front}/mcp")])
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("-o")
        .arg(&out)
        .current_dir(tests_dir())
        .env("NO_COLOR", "1");
    let done = process::run(command, b"", SUITE_LIMIT).unwrap();
    let results = read_results(&out).unwrap_or_else(|e| {
        panic!(
            "{test}: no results ({e})\n{}\n--- server stderr ---\n{}",
            done.describe(),
            process::tail(&server.log(), 3000)
        )
    });

    let mut table = String::new();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for (scenario, outcome) in &results {
        match (outcome, expected.get(scenario)) {
            (Ok(n), None) => {
                table.push_str(&format!("  pass            {scenario} ({n} checks)\n"))
            }
            (Ok(n), Some(_)) => {
                table.push_str(&format!("  PASS (listed!)  {scenario} ({n} checks)\n"));
                stale.push(scenario.clone());
            }
            (Err(_), Some(reason)) => {
                table.push_str(&format!("  expected fail   {scenario}: {reason}\n"));
            }
            (Err(lines), None) => {
                table.push_str(&format!("  FAIL            {scenario}\n"));
                unexpected.push(format!("{scenario}:\n      {}", lines.join("\n      ")));
            }
        }
    }
    let missing: Vec<&String> = expected
        .keys()
        .filter(|s| !results.contains_key(*s))
        .collect();
    eprintln!(
        "conformance results ({} scenarios):\n{table}",
        results.len()
    );

    let mut problems = Vec::new();
    if !unexpected.is_empty() {
        problems.push(format!(
            "unexpected failures (fix the server, or list the scenario with its reason in tests/conformance-expected-failures.txt):\n    {}",
            unexpected.join("\n    ")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "listed as expected failures but passing now (remove them from tests/conformance-expected-failures.txt): {stale:?}"
        ));
    }
    if !missing.is_empty() {
        problems.push(format!(
            "listed scenarios the suite no longer runs (remove them): {missing:?}"
        ));
    }
    for must in [
        "server-initialize",
        "tools-list",
        "ping",
        "dns-rebinding-protection",
    ] {
        if !matches!(results.get(must), Some(Ok(_))) {
            problems.push(format!("the core scenario `{must}` did not pass"));
        }
    }
    if proxy.forwarded() == 0 {
        problems.push("the suite never reached the server through the proxy".to_owned());
    }
    // The suite's own baseline verdict must agree (exit 0 only when every
    // failure is listed and no listed scenario passes).
    if problems.is_empty() && !done.success() {
        problems.push(format!(
            "the conformance CLI failed although the results match the baseline:\n{}",
            done.describe()
        ));
    }
    let log = server.log();
    if log.contains(CLIENT_TOKEN) || log.contains(UPSTREAM_TOKEN) {
        problems.push("a token appears in the server log".to_owned());
    }
    assert!(
        problems.is_empty(),
        "{test}:\n  {}\n\nresults:\n{table}\n--- conformance output (tail) ---\n{}\n--- server stderr (tail) ---\n{}",
        problems.join("\n  "),
        process::tail(&done.stdout, 4000),
        process::tail(&log, 3000)
    );
}

#[test]
fn expected_failures_file_is_well_formed() {
    let expected = expected_failures();
    assert!(!expected.is_empty());
    assert!(parse_expected("a b: reason").is_err());
    assert!(parse_expected("scenario:").is_err());
    assert!(parse_expected("x: 1\nx: 2").is_err());
    assert_eq!(
        parse_expected("# c\n\nping: why\n").unwrap(),
        BTreeMap::from([("ping".to_owned(), "why".to_owned())])
    );
    assert_eq!(
        scenario_of("server-tools-list-2026-11-30T05-29-54-482Z").as_deref(),
        Some("tools-list")
    );
    assert_eq!(
        scenario_of("server-server-initialize-2026-11-30T05-29-54-345Z").as_deref(),
        Some("server-initialize")
    );
    assert_eq!(scenario_of("checks.json"), None);
}
