#![allow(clippy::unwrap_used, clippy::panic)]
//! Code Mode with real MCP clients against the real server binary
//! (`cloudflare-mcp --mode codemode` over Streamable HTTP):
//!
//! - the TypeScript SDK client and the Python `mcp.Client` each search the
//!   sample spec, then execute code built from the search result against a
//!   Prism mock of the sample spec (Prism answers 4xx to any request that
//!   does not follow the spec): list zones, list the first zone's DNS
//!   records, create one, and catch the error for a path outside the
//!   catalogue;
//! - both clients search the full Cloudflare release (generated into a
//!   temporary directory by `toolforge generate`, passed to the sample
//!   binary with `--spec-artifact`); needs `TOOLFORGE_SHARED`, skipped
//!   loudly without it.
//!
//! The upstream credential must appear nowhere in what the clients saw or
//! the server logged. Needs `npm ci --prefix tests` and the Python venv
//! (see `toolforge_tests::clients`); `TOOLFORGE_SKIP_NODE=1` /
//! `TOOLFORGE_SKIP_PYTHON=1` skip with a loud line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::mcp::clip;
use toolforge_tests::prism::Prism;
use toolforge_tests::server::{ScratchDir, Server, ServerConfig};
use toolforge_tests::with_deadline;

/// Client token presented over HTTP.
const CLIENT_TOKEN: &str = "codemode-client-token-5c2e";
/// Upstream credential the server holds; must never be shown or logged.
const UPSTREAM_TOKEN: &str = "cf-codemode-upstream-Kx72pQ";
/// Bound on one client run.
const CLIENT_LIMIT: Duration = Duration::from_secs(150);
/// Bound on a whole test body.
const TEST_LIMIT: Duration = Duration::from_secs(400);

fn tests_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sample_spec() -> PathBuf {
    tests_dir().join("../specs/cloudflare-sample.yaml")
}

#[derive(Clone, Copy, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

impl Sdk {
    /// Whether the client is installed (`false` after a loud SKIPPED line).
    fn available(self, test: &str) -> bool {
        let ready = match self {
            Sdk::TypeScript => clients::require_node(test),
            Sdk::Python => clients::require_python(test),
        };
        ready.unwrap_or_else(|e| panic!("{e}"))
    }

    fn command(self) -> Command {
        match self {
            Sdk::TypeScript => {
                let mut c = Command::new("node");
                c.arg(tests_dir().join("js/codemode.mjs"))
                    .current_dir(tests_dir());
                c
            }
            Sdk::Python => {
                let mut c = Command::new(clients::python());
                c.arg(tests_dir().join("py/codemode.py"))
                    .current_dir(tests_dir().join("py"))
                    .env("PYTHONUNBUFFERED", "1")
                    .env("PYTHONDONTWRITEBYTECODE", "1");
                c
            }
        }
    }

    /// Runs the flow against `server`; returns the report.
    fn run(self, server: &Server, flow: &str) -> Result<Value, String> {
        let plan = json!({
            "url": server.url(),
            "token": CLIENT_TOKEN,
            "flow": flow,
            "timeoutMs": 90_000,
            "timeoutSeconds": 90,
        });
        let command = self.command();
        with_deadline(TEST_LIMIT, move || {
            clients::run_driver_full(command, &plan, CLIENT_LIMIT)
        })?
        .map(|(report, _)| report)
    }
}

/// The value of a Code Mode result (its first text block), or a problem.
fn value_of(step: &Value) -> Result<Value, String> {
    let result = &step["result"];
    if result["isError"] == true || step.get("error").is_some() {
        return Err(format!(
            "{} failed: {}",
            step["tool"],
            clip(&step.to_string(), 2000)
        ));
    }
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text)
        .map_err(|e| format!("{} result is not JSON ({e}): {text}", step["tool"]))
}

/// Checks the listing: exactly `search`, `execute` and `whoami`, with the
/// TypeScript declarations in their descriptions.
fn check_tools(report: &Value, problems: &mut Vec<String>) {
    let tools = report["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    if names != ["search", "execute", "whoami"] {
        problems.push(format!(
            "listed {names:?}, expected [search, execute, whoami]"
        ));
    }
    let all = serde_json::to_string(&tools).unwrap_or_default();
    for needle in [
        "spec: the OpenAPI document",
        "declare const api",
        "Example:",
    ] {
        if !all.contains(needle) {
            problems.push(format!("the tool descriptions lack `{needle}`"));
        }
    }
}

fn check_secrets(report: &Value, server: &Server, problems: &mut Vec<String>) {
    if report.to_string().contains(UPSTREAM_TOKEN) {
        problems.push("the upstream credential appears in what the client received".into());
    }
    let log = server.log();
    if log.contains(UPSTREAM_TOKEN) || log.contains(CLIENT_TOKEN) {
        problems.push(format!("a credential appears in the server log:\n{log}"));
    }
}

fn start_server(args: &[&str]) -> Server {
    let config = args
        .iter()
        .fold(ServerConfig::new(["--mode", "codemode"]), |c, a| c.arg(*a))
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    Server::http(&config).unwrap_or_else(|e| panic!("the server did not start: {e}"))
}

fn fail(test: &str, problems: &[String], server: &Server, extra: &str) {
    if !problems.is_empty() {
        panic!(
            "{test}: {} problem(s):\n\n{}\n\n--- server stderr (tail) ---\n{}{extra}",
            problems.len(),
            problems.join("\n\n"),
            toolforge_tests::process::tail(&server.log(), 4000)
        );
    }
}

/// Search the sample spec, then execute code built from the result against Prism.
fn search_then_execute(sdk: Sdk, test: &str) {
    if !sdk.available(test) {
        return;
    }
    let prism = match Prism::start_or_skip(&sample_spec(), test) {
        Ok(Some(prism)) => prism,
        Ok(None) => return,
        Err(e) => panic!("{test}: {e}"),
    };
    let upstream = format!("http://{}", prism.addr());
    let server = start_server(&["--upstream", &upstream, "--allow-loopback-upstream"]);
    let mut problems = Vec::new();
    match sdk.run(&server, "prism") {
        Err(e) => problems.push(e),
        Ok(report) => {
            check_tools(&report, &mut problems);
            check_secrets(&report, &server, &mut problems);
            let steps = report["steps"].as_array().cloned().unwrap_or_default();
            match steps.first().map(value_of) {
                Some(Ok(found)) => {
                    if found[0]["path"] != "/zones/{zone_id}/dns_records" {
                        problems.push(format!("search found {found}"));
                    }
                }
                Some(Err(e)) => problems.push(e),
                None => problems.push("no search step".into()),
            }
            match steps.get(1).map(value_of) {
                Some(Ok(done)) => check_execute(&done, &steps[1], &prism.log(), &mut problems),
                Some(Err(e)) => problems.push(e),
                None => problems.push("no execute step".into()),
            }
        }
    }
    let prism_log = format!(
        "\n--- Prism output (tail) ---\n{}",
        toolforge_tests::process::tail(&prism.log(), 3000)
    );
    fail(test, &problems, &server, &prism_log);
}

fn check_execute(done: &Value, step: &Value, prism_log: &str, problems: &mut Vec<String>) {
    for key in ["zonesStatus", "recordsStatus", "createdStatus"] {
        if done[key] != 200 {
            problems.push(format!("execute: {key} is {} in {done}", done[key]));
        }
    }
    if done["records"] != true {
        problems.push(format!("execute: the records result is not a list: {done}"));
    }
    let outside = done["outside"].as_str().unwrap_or_default();
    if !outside.contains("is not an operation of this API") || !outside.contains("close matches") {
        problems.push(format!(
            "execute: the outside-the-catalogue error is {outside:?}"
        ));
    }
    let zone = done["zone"].as_str().unwrap_or_default();
    let logs = step["result"]["content"][1]["text"]
        .as_str()
        .unwrap_or_default();
    if !logs.contains(&format!("console output:\nzone {zone}")) {
        problems.push(format!("execute: console output missing: {logs:?}"));
    }
    // Prism logs each request it accepted as `] METHOD PATH `; the outside
    // path never reached it.
    let encoded: String = zone
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._~".contains(c) {
                c.to_string()
            } else {
                format!("%{:02X}", c as u32)
            }
        })
        .collect();
    for request in [
        "get /zones ".to_owned(),
        format!("get /zones/{encoded}/dns_records "),
        format!("post /zones/{encoded}/dns_records "),
    ] {
        if !prism_log.contains(&format!("] {request}")) {
            problems.push(format!("Prism never received `{request}`"));
        }
    }
    if prism_log.contains("not_an_endpoint") {
        problems.push("a path outside the catalogue reached Prism".into());
    }
}

#[test]
fn typescript_sdk_searches_then_executes_against_prism() {
    search_then_execute(
        Sdk::TypeScript,
        "typescript_sdk_searches_then_executes_against_prism",
    );
}

#[test]
fn python_sdk_searches_then_executes_against_prism() {
    search_then_execute(
        Sdk::Python,
        "python_sdk_searches_then_executes_against_prism",
    );
}

/// The full Cloudflare release's `artifacts/spec.json`, generated once per
/// test process, or `None` (after a loud SKIPPED line) without `TOOLFORGE_SHARED`.
fn full_release_spec(test: &str) -> Option<PathBuf> {
    static GENERATED: OnceLock<Result<(ScratchDir, PathBuf), String>> = OnceLock::new();
    let shared = clients::shared_dir(test, "specs/cloudflare/openapi.json")
        .unwrap_or_else(|e| panic!("{e}"))?;
    let generated = GENERATED.get_or_init(|| {
        let release = shared.join("specs/cloudflare/openapi.json");
        let dir = ScratchDir::new()?;
        let toolforge = toolforge_binary()?;
        let output = Command::new(&toolforge)
            .arg("generate")
            .arg("--spec")
            .arg(&release)
            .arg("--out")
            .arg(dir.path())
            .current_dir(tests_dir().join(".."))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", toolforge.display()))?;
        if !output.status.success() {
            return Err(format!(
                "`toolforge generate --spec {}` failed ({}):\n{}",
                release.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let spec = dir.path().join("artifacts/spec.json");
        if spec.is_file() {
            Ok((dir, spec))
        } else {
            Err(format!("{} was not generated", spec.display()))
        }
    });
    match generated {
        Ok((_, spec)) => Some(spec.clone()),
        Err(e) => panic!("{test}: {e}"),
    }
}

/// `target/debug/toolforge`, built (a no-op when up to date).
fn toolforge_binary() -> Result<PathBuf, String> {
    let workspace = tests_dir().join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "toolforge-generator",
            "--bin",
            "toolforge",
        ])
        .current_dir(&workspace)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{cargo} build`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building toolforge failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let path = target.join("debug/toolforge");
    path.is_file()
        .then_some(path)
        .ok_or_else(|| "target/debug/toolforge is missing after the build".to_owned())
}

/// Search the full Cloudflare release through the sample binary.
fn search_full_release(sdk: Sdk, test: &str) {
    if !sdk.available(test) {
        return;
    }
    let Some(spec) = full_release_spec(test) else {
        return;
    };
    let spec = spec.display().to_string();
    let server = start_server(&["--spec-artifact", &spec]);
    let mut problems = Vec::new();
    match sdk.run(&server, "spec") {
        Err(e) => problems.push(e),
        Ok(report) => {
            check_tools(&report, &mut problems);
            check_secrets(&report, &server, &mut problems);
            let steps = report["steps"].as_array().cloned().unwrap_or_default();
            match steps.first().map(value_of) {
                Some(Ok(found)) => {
                    let ops = found["operations"].as_u64().unwrap_or(0);
                    let paths = found["paths"].as_u64().unwrap_or(0);
                    if ops < 1_500 || paths < 900 {
                        problems.push(format!(
                            "the full release has {ops} operations in {paths} paths? {found}"
                        ));
                    }
                    if found["dnsListSummary"] != "List DNS Records" || found["split"] != true {
                        problems.push(format!("unexpected search result {found}"));
                    }
                }
                Some(Err(e)) => problems.push(e),
                None => problems.push("no search step".into()),
            }
        }
    }
    fail(test, &problems, &server, "");
}

#[test]
fn typescript_sdk_searches_the_full_cloudflare_release() {
    search_full_release(
        Sdk::TypeScript,
        "typescript_sdk_searches_the_full_cloudflare_release",
    );
}

#[test]
fn python_sdk_searches_the_full_cloudflare_release() {
    search_full_release(
        Sdk::Python,
        "python_sdk_searches_the_full_cloudflare_release",
    );
}
