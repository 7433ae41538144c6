#![allow(clippy::unwrap_used, clippy::panic)]
//! Real MCP clients against the real server binary, with a Prism mock of
//! the sample spec as the upstream (Prism answers 4xx to any request that
//! does not follow the spec, so a successful call is also a correct
//! request):
//!
//! - the TypeScript SDK client over Streamable HTTP (2025-11-25 handshake);
//! - the Python `mcp.Client` over HTTP and stdio (2026-07-28 via `server/discover`);
//! - the Python `ClientSession` over stdio and HTTP (2025-11-25 `initialize`);
//! - the MCP Inspector CLI over HTTP (listing and two calls).
//!
//! Each lists the tools (with output schemas) and calls a GET, a POST with a
//! JSON body, a multipart upload, the merged account/zone tool both ways
//! (and with the account filled from `GET /accounts`); every
//! `structuredContent` must match the tool's output schema and the
//! envelope's `result`/`result_info`, and the upstream credential must
//! appear nowhere in what the client saw or the server logged.
//!
//! Needs `npm ci --prefix tests` and the Python venv (see
//! `toolforge_tests::clients`); `TOOLFORGE_SKIP_NODE=1` /
//! `TOOLFORGE_SKIP_PYTHON=1` skip with a loud line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cloudflare_tools::CATALOGUE;
use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::mcp::clip;
use toolforge_tests::prism::Prism;
use toolforge_tests::sample;
use toolforge_tests::server::{self, Server, ServerConfig};
use toolforge_tests::with_deadline;

/// Client token presented over HTTP.
const CLIENT_TOKEN: &str = "e2e-client-token-6f1d2a";
/// Upstream credential the server holds; must never be shown or logged.
const UPSTREAM_TOKEN: &str = "cf-upstream-secret-Zq81xP0c";
const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";
const ACCOUNT: &str = "01a7362d577a6c3019a474fd6f485823";
/// The account id in Prism's static `GET /accounts` example (one account).
const PRISM_ACCOUNT: &str = "string";
/// Bound on one client run.
const CLIENT_LIMIT: Duration = Duration::from_secs(120);
/// Bound on a whole test.
const TEST_LIMIT: Duration = Duration::from_secs(300);

fn spec() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/cloudflare-sample.yaml")
}

/// The calls every client makes: (tool, arguments, upstream request Prism must log).
fn calls() -> Vec<(&'static str, Value, String)> {
    vec![
        // GET with a query parameter.
        (
            "zones_list",
            json!({"per_page": 5}),
            "get /zones".to_owned(),
        ),
        // POST with a JSON body.
        (
            "dns_records_create",
            json!({
                "zone_id": ZONE,
                "body": {"type": "A", "name": "www.example.com", "content": "192.0.2.1", "ttl": 3600, "proxied": false},
            }),
            format!("post /zones/{ZONE}/dns_records"),
        ),
        // Multipart upload (one file part plus a form field).
        (
            "dns_records_import",
            json!({
                "zone_id": ZONE,
                "file": {"content": "www.example.com. 300 IN A 192.0.2.1\n", "filename": "zone.txt", "content_type": "text/plain"},
                "proxied": "true",
            }),
            format!("post /zones/{ZONE}/dns_records/import"),
        ),
        // Merged account/zone tool: the zone way ...
        (
            "rulesets_list",
            json!({"account_or_zone": "zones", "account_or_zone_id": ZONE}),
            format!("get /zones/{ZONE}/rulesets"),
        ),
        // ... the account way ...
        (
            "rulesets_list",
            json!({"account_or_zone": "accounts", "account_or_zone_id": ACCOUNT}),
            format!("get /accounts/{ACCOUNT}/rulesets"),
        ),
        // ... and the account way with the session's only account filled in.
        (
            "rulesets_list",
            json!({"account_or_zone": "accounts"}),
            format!("get /accounts/{PRISM_ACCOUNT}/rulesets"),
        ),
        // An omitted account_id filled from GET /accounts.
        (
            "storage_kv_namespaces_list",
            json!({}),
            format!("get /accounts/{PRISM_ACCOUNT}/storage/kv/namespaces"),
        ),
    ]
}

fn steps() -> Vec<Value> {
    let mut steps = vec![json!({"op": "list"})];
    steps.extend(
        calls().into_iter().map(
            |(name, arguments, _)| json!({"op": "call", "name": name, "arguments": arguments}),
        ),
    );
    steps
}

/// Checks a client report; returns every problem found.
fn check_report(report: &Value, expect_version: &str, expect_output_schemas: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let client = report["client"].as_str().unwrap_or("?").to_owned();
    if report["protocolVersion"] != expect_version {
        problems.push(format!(
            "{client}: negotiated protocol version {} (expected {expect_version})",
            report["protocolVersion"]
        ));
    }
    let text = report.to_string();
    if text.contains(UPSTREAM_TOKEN) {
        problems.push(format!(
            "{client}: the upstream credential appears in what the client received"
        ));
    }
    let results = report["results"].as_array().cloned().unwrap_or_default();
    let Some(listing) = results.first() else {
        problems.push(format!("{client}: no results"));
        return problems;
    };
    let tools = listing["tools"].as_array().cloned().unwrap_or_default();
    if let Some(error) = listing.get("error") {
        problems.push(format!("{client}: tools/list failed: {error}"));
    }
    let mut listed: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    listed.sort_unstable();
    // The operations, and `whoami` (the profile declares an identity).
    let mut expected: Vec<&str> = CATALOGUE.tools().map(|t| t.name).collect();
    expected.push("whoami");
    expected.sort_unstable();
    if listed != expected {
        problems.push(format!(
            "{client}: listed {} tools, expected the catalogue's {}: {listed:?}",
            listed.len(),
            expected.len()
        ));
    }
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or("?");
        if tool["inputSchema"]["type"] != "object" {
            problems.push(format!(
                "{client}: {name}: inputSchema is not an object schema"
            ));
        }
        let has_output = name == "whoami"
            || CATALOGUE
                .tool(name)
                .is_some_and(|t| t.output_schema.is_some());
        let listed_output = tool.get("outputSchema").is_some();
        if listed_output != (has_output && expect_output_schemas) {
            problems.push(format!(
                "{client}: {name}: outputSchema listed: {listed_output}, expected {}",
                has_output && expect_output_schemas
            ));
        }
    }
    let schema_of = |name: &str| -> Option<Value> {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t.get("outputSchema").cloned())
            .or_else(|| {
                CATALOGUE
                    .tool(name)
                    .and_then(|t| t.output_schema_text())
                    .and_then(|s| serde_json::from_str(&s).ok())
            })
    };
    let calls = calls();
    if results.len() != calls.len() + 1 {
        problems.push(format!(
            "{client}: {} results for {} steps",
            results.len(),
            calls.len() + 1
        ));
    }
    for ((name, arguments, _), outcome) in calls.iter().zip(results.iter().skip(1)) {
        let label = format!("{client}: {name} {arguments}");
        if let Some(error) = outcome.get("error") {
            problems.push(format!("{label}: the call failed: {error}"));
            continue;
        }
        let result = &outcome["result"];
        if result["isError"] == true {
            problems.push(format!(
                "{label}: tool error: {}",
                clip(&result["content"].to_string(), 1500)
            ));
            continue;
        }
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        let body: Value = match serde_json::from_str(text) {
            Ok(body) => body,
            Err(e) => {
                problems.push(format!(
                    "{label}: text is not the upstream JSON ({e}): {}",
                    clip(text, 500)
                ));
                continue;
            }
        };
        if body["success"] != true {
            problems.push(format!("{label}: upstream body is not a success envelope"));
        }
        let Some(schema) = schema_of(name) else {
            problems.push(format!("{label}: the tool has no output schema"));
            continue;
        };
        let Some(structured) = result.get("structuredContent") else {
            problems.push(format!("{label}: no structuredContent"));
            continue;
        };
        let mut expected = json!({"result": body["result"]});
        if let Some(info) = body.get("result_info") {
            expected["result_info"] = info.clone();
        }
        // A paged list also carries the next call's arguments (an object),
        // or `null` on the last page (docs/generated.md "Envelopes and paging").
        if let Some(next) = structured.get("next") {
            if !(next.is_null() || next.is_object()) {
                problems.push(format!(
                    "{label}: `next` is neither arguments nor null: {next}"
                ));
            }
            expected["next"] = next.clone();
        }
        if structured != &expected {
            problems.push(format!(
                "{label}: structuredContent {} is not the envelope's result/result_info {}",
                clip(&structured.to_string(), 600),
                clip(&expected.to_string(), 600)
            ));
        }
        if let Err(errors) = sample::validate(&schema, structured) {
            problems.push(format!(
                "{label}: structuredContent does not match the output schema:\n  {}",
                errors.join("\n  ")
            ));
        }
    }
    problems
}

/// Every upstream request the calls should have made, checked in Prism's log.
fn check_prism_log(log: &str) -> Vec<String> {
    calls()
        .into_iter()
        .filter(|(_, _, request)| !log.contains(&format!("] {request} ")))
        .map(|(name, arguments, request)| {
            format!("{name} {arguments}: Prism never received `{request}`")
        })
        .collect()
}

enum Upstream {
    Http(Server),
    Stdio,
}

/// Starts Prism (and for HTTP the server in front of it), runs the client
/// on the plan `make_plan` builds, and checks everything.
fn run_client(
    test: &str,
    transport: &str,
    expect_version: &str,
    run: fn(&Value, Duration) -> Result<Value, String>,
    make_plan: fn(&str, &Value) -> Value,
) {
    let prism = match Prism::start_or_skip(&spec(), test) {
        Ok(Some(prism)) => prism,
        Ok(None) => return,
        Err(e) => panic!("{test}: {e}"),
    };
    let upstream_url = format!("http://{}", prism.addr());
    let base = ServerConfig::new([
        "--upstream",
        upstream_url.as_str(),
        "--allow-loopback-upstream",
    ]);
    let (mode, target) = if transport == "http" {
        let server = Server::http(&base.clone().token(CLIENT_TOKEN, UPSTREAM_TOKEN))
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        let url = format!("{}?output_schemas=1", server.url());
        (
            Upstream::Http(server),
            json!({"url": url, "token": CLIENT_TOKEN}),
        )
    } else {
        let bin = server::binary().unwrap_or_else(|e| panic!("{test}: {e}"));
        let mut args = vec!["--transport".to_owned(), "stdio".to_owned()];
        args.extend(base.args.iter().cloned());
        args.push("--output-schemas".to_owned());
        (
            Upstream::Stdio,
            json!({
                "command": bin.display().to_string(),
                "args": args,
                "env": {server::TOKEN_ENV: UPSTREAM_TOKEN},
            }),
        )
    };
    let mut plan = make_plan(transport, &target);
    plan["steps"] = json!(steps());
    plan["timeoutMs"] = json!(60_000);
    plan["timeoutSeconds"] = json!(60);
    let outcome = with_deadline(TEST_LIMIT, move || run(&plan, CLIENT_LIMIT));
    let mut problems = match outcome {
        Ok(Ok(report)) => {
            let mut p = check_report(&report, expect_version, true);
            p.extend(check_prism_log(&prism.log()));
            p
        }
        Ok(Err(e)) | Err(e) => vec![e],
    };
    if let Upstream::Http(server) = &mode {
        let log = server.log();
        if log.contains(UPSTREAM_TOKEN) || log.contains(CLIENT_TOKEN) {
            problems.push(format!("a credential appears in the server log:\n{log}"));
        }
        if !problems.is_empty() {
            problems.push(format!(
                "--- server stderr (tail) ---\n{}",
                toolforge_tests::process::tail(&log, 4000)
            ));
        }
    }
    drop(mode);
    if !problems.is_empty() {
        panic!(
            "{test}: {} problem(s):\n\n{}\n\n--- Prism log (tail) ---\n{}",
            problems.len(),
            problems.join("\n\n"),
            toolforge_tests::process::tail(&prism.log(), 3000)
        );
    }
}

fn http_plan(_transport: &str, target: &Value) -> Value {
    json!({"transport": "http", "url": target["url"], "token": target["token"]})
}

fn python_plan(kind: &'static str) -> impl Fn(&str, &Value) -> Value {
    move |transport, target| {
        let mut plan = target.clone();
        plan["client"] = json!(kind);
        plan["transport"] = json!(transport);
        plan
    }
}

fn python_client_plan(transport: &str, target: &Value) -> Value {
    python_plan("client")(transport, target)
}

fn python_session_plan(transport: &str, target: &Value) -> Value {
    python_plan("session")(transport, target)
}

#[test]
fn typescript_sdk_over_http() {
    let test = "typescript_sdk_over_http";
    if !clients::require_node(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    run_client(test, "http", "2025-11-25", clients::run_ts, http_plan);
}

#[test]
fn typescript_sdk_default_listing_has_no_output_schemas() {
    let test = "typescript_sdk_default_listing_has_no_output_schemas";
    if !clients::require_node(test).unwrap_or_else(|e| panic!("{e}")) {
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
    let plan = json!({"url": server.url(), "token": CLIENT_TOKEN, "steps": [{"op": "list"}], "timeoutMs": 60_000});
    let report = clients::run_ts(&plan, CLIENT_LIMIT).unwrap_or_else(|e| panic!("{test}: {e}"));
    let tools = report["results"][0]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // The operations and `whoami`.
    assert_eq!(tools.len(), CATALOGUE.tools().count() + 1, "{report}");
    let with_schema: Vec<&str> = tools
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        with_schema.is_empty(),
        "the default listing carries output schemas for {with_schema:?}"
    );
}

#[test]
fn python_client_over_http() {
    let test = "python_client_over_http";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    run_client(
        test,
        "http",
        "2026-07-28",
        clients::run_python,
        python_client_plan,
    );
}

#[test]
fn python_client_over_stdio() {
    let test = "python_client_over_stdio";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    run_client(
        test,
        "stdio",
        "2026-07-28",
        run_python_stdio,
        python_client_plan,
    );
}

#[test]
fn python_session_over_stdio() {
    let test = "python_session_over_stdio";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    run_client(
        test,
        "stdio",
        "2025-11-25",
        run_python_stdio,
        python_session_plan,
    );
}

#[test]
fn python_session_over_http() {
    let test = "python_session_over_http";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    run_client(
        test,
        "http",
        "2025-11-25",
        clients::run_python,
        python_session_plan,
    );
}

/// Runs the Python driver on a stdio plan; the server's stderr comes back on
/// the driver's stderr and must not hold the credential.
fn run_python_stdio(plan: &Value, limit: Duration) -> Result<Value, String> {
    let (mut report, done) = clients::run_driver_full(clients::python_command(), plan, limit)?;
    if done.stderr.contains(UPSTREAM_TOKEN) {
        return Err(format!(
            "the upstream credential appears in the stdio server's stderr:\n{}",
            done.stderr
        ));
    }
    report["stderr"] = json!(toolforge_tests::process::tail(&done.stderr, 2000));
    Ok(report)
}

#[test]
fn inspector_cli_over_http() {
    let test = "inspector_cli_over_http";
    if !clients::require_node(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let prism = match Prism::start_or_skip(&spec(), test) {
        Ok(Some(prism)) => prism,
        Ok(None) => return,
        Err(e) => panic!("{test}: {e}"),
    };
    let upstream_url = format!("http://{}", prism.addr());
    let config = ServerConfig::new([
        "--upstream",
        upstream_url.as_str(),
        "--allow-loopback-upstream",
        "--output-schemas",
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{test}: {e}"));
    let base = vec![
        server.url(),
        "--transport".to_owned(),
        "http".to_owned(),
        "--header".to_owned(),
        format!("Authorization: Bearer {CLIENT_TOKEN}"),
    ];
    let run = |extra: &[&str]| {
        let mut args = base.clone();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        clients::run_inspector(&args, CLIENT_LIMIT).unwrap_or_else(|e| panic!("{test}: {e}"))
    };
    let listing = run(&["--method", "tools/list"]);
    let tools = listing["tools"].as_array().cloned().unwrap_or_default();
    // The operations and `whoami`.
    assert_eq!(
        tools.len(),
        CATALOGUE.tools().count() + 1,
        "{test}: {listing}"
    );
    let zone_arg = format!("zone_id={ZONE}");
    let ruleset_zone = format!("account_or_zone_id={ZONE}");
    let calls: Vec<(&str, Vec<&str>, String)> = vec![
        (
            "rulesets_list",
            vec!["account_or_zone=zones", ruleset_zone.as_str()],
            format!("get /zones/{ZONE}/rulesets"),
        ),
        (
            "dns_records_create",
            vec![
                zone_arg.as_str(),
                r#"body={"type":"TXT","name":"t.example.com","content":"hello"}"#,
            ],
            format!("post /zones/{ZONE}/dns_records"),
        ),
    ];
    for (tool, tool_args, request) in calls {
        let mut extra = vec!["--method", "tools/call", "--tool-name", tool, "--tool-arg"];
        extra.extend(tool_args.iter().copied());
        let result = run(&extra);
        assert_ne!(result["isError"], true, "{test}: {tool}: {result}");
        let schema = tools
            .iter()
            .find(|t| t["name"] == tool)
            .and_then(|t| t.get("outputSchema"))
            .cloned()
            .unwrap_or_else(|| panic!("{test}: {tool} is listed without an output schema"));
        if let Err(errors) = sample::validate(&schema, &result["structuredContent"]) {
            panic!(
                "{test}: {tool}: structuredContent does not match its output schema: {errors:?}"
            );
        }
        assert!(
            prism.log().contains(&format!("] {request} ")),
            "{test}: Prism never received `{request}`"
        );
        assert!(
            !result.to_string().contains(UPSTREAM_TOKEN),
            "{test}: the credential leaked"
        );
    }
    assert!(
        !server.log().contains(UPSTREAM_TOKEN),
        "{test}: the credential is in the log"
    );
}

#[test]
fn a_multipart_worker_upload_reaches_the_upstream_as_parts() {
    use toolforge_tests::mock::multipart_parts;
    use toolforge_tests::upstream::{Reply, Upstream};
    let test = "a_multipart_worker_upload_reaches_the_upstream_as_parts";
    if !clients::require_node(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    // Prism accepts only single-part uploads, so this one goes to a loopback
    // upstream that records the request.
    let upstream = Upstream::start(|_| {
        Reply::envelope(
            json!({"id": "hello-worker", "etag": "e1", "created_on": "2026-11-30T00:00:00Z"}),
        )
    })
    .unwrap();
    let config = ServerConfig::new([
        "--upstream".to_owned(),
        upstream.url(),
        "--allow-loopback-upstream".to_owned(),
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{test}: {e}"));
    let script = "export default { fetch() { return new Response('hi') } }\n";
    let wasm: &[u8] = b"\0asm\x01\0\0\0";
    let metadata = json!({"main_module": "worker.js", "compatibility_date": "2026-11-01"});
    let arguments = json!({
        "account_id": ACCOUNT,
        "script_name": "hello-worker",
        "metadata": metadata,
        "files": [
            {"content": script, "filename": "worker.js", "content_type": "application/javascript+module"},
            {"content": "AGFzbQEAAAA=", "encoding": "base64", "filename": "add.wasm", "content_type": "application/wasm"},
        ],
    });
    let plan = json!({
        "url": server.url(),
        "token": CLIENT_TOKEN,
        "timeoutMs": 60_000,
        "steps": [{"op": "call", "name": "workers_scripts_update", "arguments": arguments}],
    });
    let report = clients::run_ts(&plan, CLIENT_LIMIT).unwrap_or_else(|e| panic!("{test}: {e}"));
    let result = &report["results"][0]["result"];
    assert_ne!(result["isError"], true, "{test}: {report}");
    let requests = upstream.requests();
    let upload = requests
        .iter()
        .find(|r| r.method == "PUT")
        .unwrap_or_else(|| panic!("{test}: no PUT reached the upstream: {requests:?}"));
    assert_eq!(
        upload.path(),
        format!("/accounts/{ACCOUNT}/workers/scripts/hello-worker"),
        "{test}"
    );
    let content_type = upload.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("multipart/form-data"),
        "{test}: {content_type}"
    );
    let parts =
        multipart_parts(content_type, &upload.body).unwrap_or_else(|e| panic!("{test}: {e}"));
    let meta = parts
        .iter()
        .find(|p| p.name == "metadata")
        .unwrap_or_else(|| panic!("{test}: no metadata part: {parts:?}"));
    assert!(
        meta.content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/json")),
        "{test}: metadata part content type {:?}",
        meta.content_type
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&meta.data).unwrap(),
        metadata,
        "{test}"
    );
    let files: Vec<_> = parts.iter().filter(|p| p.name == "files").collect();
    assert_eq!(files.len(), 2, "{test}: {parts:?}");
    assert_eq!(files[0].filename.as_deref(), Some("worker.js"), "{test}");
    assert_eq!(files[0].data, script.as_bytes(), "{test}");
    assert_eq!(files[1].filename.as_deref(), Some("add.wasm"), "{test}");
    assert_eq!(
        files[1].data, wasm,
        "{test}: base64 content must be decoded"
    );
    assert_eq!(
        upload.header("authorization"),
        Some(format!("Bearer {UPSTREAM_TOKEN}").as_str()),
        "{test}"
    );
    assert!(
        !report.to_string().contains(UPSTREAM_TOKEN),
        "{test}: the credential leaked"
    );
}
