#![allow(clippy::unwrap_used, clippy::panic)]
//! Upstream faults against a loopback upstream each test scripts: 401 and
//! 403 (explained from the tool's permissions), 429, 500, a hang past the
//! upstream timeout, a 50 MB body (with and without `Content-Length`), a
//! redirect to another host, malformed JSON, and an upstream that echoes the
//! credential back. Each must give a clear tool error (`isError`), the
//! server must answer the next call normally, and the upstream credential
//! must appear in no result, no error and no line the server logged (at
//! `RUST_LOG=debug`). Also the Cloudflare account behaviours: an omitted
//! `account_id` filled from the only account, several accounts listed in
//! the error, an empty list flagged.

use std::time::{Duration, Instant};

use cloudflare_tools::CATALOGUE;
use serde_json::{Value, json};
use toolforge_tests::mcp::{RawClient, clip, result_text};
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Recorded, Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "fault-client-token-93be71";
const UPSTREAM_TOKEN: &str = "cf-fault-upstream-secret-Xk2v9QwR";
/// A zone every fault-free call uses.
const HEALTHY_ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
const ACCOUNT_A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const ACCOUNT_B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
/// `--upstream-timeout-secs` of the server under test.
const UPSTREAM_TIMEOUT_SECS: u64 = 2;
/// `--max-upstream-bytes` of the server under test.
const MAX_UPSTREAM_BYTES: usize = 1024 * 1024;
/// The big body: 50 MB.
const HUGE: usize = 50 * 1024 * 1024;
/// Bound on a whole test.
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// The healthy answer for `GET /zones/{HEALTHY_ZONE}`.
fn healthy_zone() -> Value {
    json!({"id": HEALTHY_ZONE, "name": "example.com", "status": "active"})
}

/// Starts a server in front of `upstream` with small limits and debug logs.
fn start_server(upstream: &Upstream) -> Server {
    let config = ServerConfig::new([
        "--upstream".to_owned(),
        upstream.url(),
        "--allow-loopback-upstream".to_owned(),
        "--upstream-timeout-secs".to_owned(),
        UPSTREAM_TIMEOUT_SECS.to_string(),
        "--max-upstream-bytes".to_owned(),
        MAX_UPSTREAM_BYTES.to_string(),
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN)
    .env("RUST_LOG", "debug");
    Server::http(&config).unwrap_or_else(|e| panic!("{e}"))
}

/// An upstream whose `GET /zones/{HEALTHY_ZONE}` succeeds and whose other
/// paths are answered by `fault`.
fn upstream_with<F>(fault: F) -> Upstream
where
    F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
{
    Upstream::start(move |req| {
        if req.path() == format!("/zones/{HEALTHY_ZONE}") {
            Reply::envelope(healthy_zone())
        } else {
            fault(req)
        }
    })
    .unwrap()
}

/// What one fault test saw.
struct Seen {
    /// The `CallToolResult` of the faulty call.
    result: Value,
    /// Its text content.
    text: String,
    /// How long the faulty call took.
    elapsed: Duration,
}

/// Calls `tool` with `arguments` (expected to fail upstream), then a healthy
/// call; checks the error is a tool error, the server still serves, the
/// upstream got the credential, and the credential is nowhere in results or
/// logs. Returns the faulty call's result for the test's own checks.
fn fault_call(test: &str, fault: Upstream, tool: &str, arguments: Value) -> (Seen, Upstream) {
    let server = start_server(&fault);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let tool_name = tool.to_owned();
    let outcome = with_deadline(TEST_LIMIT, move || {
        client.initialize()?;
        let started = Instant::now();
        let reply = client.call_tool_raw(&tool_name, arguments)?;
        let elapsed = started.elapsed();
        let healthy = client.call_tool("zones_get", json!({"zone_id": HEALTHY_ZONE}))?;
        Ok::<_, String>((reply, elapsed, healthy))
    });
    let (reply, elapsed, healthy) = match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) | Err(e) => panic!(
            "{test}: {e}\n--- server stderr ---\n{}",
            toolforge_tests::process::tail(&server.log(), 4000)
        ),
    };
    let log = server.log();
    let mut problems = Vec::new();
    let result = match reply.get("result") {
        Some(result) => result.clone(),
        None => {
            problems.push(format!(
                "the faulty call gave a JSON-RPC error, not a tool error: {reply}"
            ));
            Value::Null
        }
    };
    if result["isError"] != true {
        problems.push(format!(
            "the faulty call is not a tool error (isError != true): {}",
            clip(&result.to_string(), 1500)
        ));
    }
    if healthy["isError"] == true || healthy["structuredContent"]["result"]["id"] != HEALTHY_ZONE {
        problems.push(format!(
            "the next (healthy) call did not succeed: {}",
            clip(&healthy.to_string(), 1500)
        ));
    }
    let sent_credential = fault
        .requests()
        .iter()
        .any(|r| r.header("authorization") == Some(format!("Bearer {UPSTREAM_TOKEN}").as_str()));
    if !sent_credential {
        problems.push(
            "the upstream never received `Authorization: Bearer <upstream token>`".to_owned(),
        );
    }
    problems.extend(credential_leaks(&[
        ("the faulty call's JSON-RPC response", &reply.to_string()),
        ("the healthy call's result", &healthy.to_string()),
        ("the server log", &log),
    ]));
    if !problems.is_empty() {
        panic!(
            "{test}: {} problem(s):\n  {}\n--- server stderr (tail) ---\n{}",
            problems.len(),
            problems.join("\n  "),
            toolforge_tests::process::tail(&log, 6000)
        );
    }
    let text = result_text(&result);
    drop(server);
    (
        Seen {
            result,
            text,
            elapsed,
        },
        fault,
    )
}

/// Every place a credential (upstream or client token) shows up.
fn credential_leaks(places: &[(&str, &str)]) -> Vec<String> {
    let mut leaks = Vec::new();
    for (what, text) in places {
        for (name, secret) in [
            ("upstream credential", UPSTREAM_TOKEN),
            ("client token", CLIENT_TOKEN),
        ] {
            for line in text.lines().filter(|l| l.contains(secret)) {
                leaks.push(format!("the {name} appears in {what}: {}", clip(line, 400)));
            }
        }
    }
    leaks
}

/// Asserts `text` contains every needle (case-insensitive).
fn assert_mentions(test: &str, text: &str, needles: &[&str]) {
    let lower = text.to_lowercase();
    let missing: Vec<&&str> = needles
        .iter()
        .filter(|n| !lower.contains(&n.to_lowercase()))
        .collect();
    assert!(
        missing.is_empty(),
        "{test}: the tool error does not mention {missing:?}:\n{text}"
    );
}

fn zone_args(zone: &str) -> Value {
    json!({"zone_id": zone})
}

fn permissions(tool: &str) -> Vec<&'static str> {
    CATALOGUE.tool(tool).unwrap().permissions.to_vec()
}

#[test]
fn unauthorized_is_explained_from_the_tools_permissions() {
    let test = "unauthorized_is_explained_from_the_tools_permissions";
    let zone = "40140140140140140140140140140140";
    let upstream = upstream_with(|_| Reply::cf_error(401, 10000, "Authentication error"));
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    let mut needles = vec![
        "GET",
        "/zones/",
        zone,
        "401",
        "Authentication error",
        "10000",
    ];
    let perms = permissions("zones_get");
    assert!(!perms.is_empty(), "zones_get should document permissions");
    needles.extend(perms.iter().copied());
    assert_mentions(test, &seen.text, &needles);
}

#[test]
fn forbidden_is_explained_from_the_tools_permissions() {
    let test = "forbidden_is_explained_from_the_tools_permissions";
    let zone = "40340340340340340340340340340340";
    let upstream =
        upstream_with(|_| Reply::cf_error(403, 9109, "Unauthorized to access requested resource"));
    let (seen, _) = fault_call(
        test,
        upstream,
        "dns_records_create",
        json!({"zone_id": zone, "body": {"type": "A", "name": "a.example.com", "content": "192.0.2.7"}}),
    );
    let mut needles = vec![
        "POST",
        &*format!("/zones/{zone}/dns_records"),
        "403",
        "Unauthorized to access requested resource",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect::<Vec<_>>();
    needles.extend(
        permissions("dns_records_create")
            .iter()
            .map(|p| (*p).to_owned()),
    );
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    assert_mentions(test, &seen.text, &needles);
}

#[test]
fn rate_limiting_is_a_clear_error() {
    let test = "rate_limiting_is_a_clear_error";
    let zone = "42942942942942942942942942942942";
    let upstream = upstream_with(|_| {
        Reply::cf_error(
            429,
            971,
            "Please wait and consider throttling your request speed",
        )
        .with_header("Retry-After", "30")
    });
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(
        test,
        &seen.text,
        &["GET", zone, "429", "throttling your request speed", "30"],
    );
}

#[test]
fn a_server_error_is_a_clear_error() {
    let test = "a_server_error_is_a_clear_error";
    let zone = "50050050050050050050050050050050";
    let upstream = upstream_with(|_| Reply::cf_error(500, 10001, "Internal service failure"));
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(
        test,
        &seen.text,
        &["GET", zone, "500", "Internal service failure"],
    );
}

#[test]
fn a_non_json_error_body_is_shown_as_text() {
    let test = "a_non_json_error_body_is_shown_as_text";
    let zone = "50250250250250250250250250250250";
    let upstream = upstream_with(|_| {
        Reply::text(
            502,
            "text/html",
            "<html><body>Bad gateway from the edge</body></html>",
        )
    });
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(
        test,
        &seen.text,
        &["GET", zone, "502", "Bad gateway from the edge"],
    );
}

#[test]
fn an_upstream_that_hangs_times_out() {
    let test = "an_upstream_that_hangs_times_out";
    let zone = "70707070707070707070707070707070";
    let upstream = upstream_with(|_| Reply::Hang);
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(test, &seen.text, &["GET", zone]);
    let lower = seen.text.to_lowercase();
    assert!(
        lower.contains("timed out") || lower.contains("timeout"),
        "{test}: the error does not say it timed out:\n{}",
        seen.text
    );
    // The timeout is 2 s; anything near the client's own limits means it was not applied.
    assert!(
        seen.elapsed < Duration::from_secs(UPSTREAM_TIMEOUT_SECS + 15),
        "{test}: the call took {:?} with --upstream-timeout-secs {UPSTREAM_TIMEOUT_SECS}",
        seen.elapsed
    );
}

fn huge_body(test: &str, chunked: bool) {
    let zone = if chunked {
        "50505050505050505050505050505051"
    } else {
        "50505050505050505050505050505050"
    };
    let upstream = upstream_with(move |_| Reply::Huge {
        total: HUGE,
        chunked,
    });
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(test, &seen.text, &["GET", zone]);
    let lower = seen.text.to_lowercase();
    assert!(
        lower.contains("limit") || lower.contains("too large") || lower.contains("larger than"),
        "{test}: the error does not say the body is over the limit:\n{}",
        clip(&seen.text, 2000)
    );
    assert!(
        seen.text.len() < 64 * 1024,
        "{test}: the error carries {} bytes of the body",
        seen.text.len()
    );
    assert!(
        seen.result.get("structuredContent").is_none()
            || seen.result["structuredContent"].is_null()
    );
}

#[test]
fn a_50_mb_body_is_refused_at_the_size_limit() {
    huge_body("a_50_mb_body_is_refused_at_the_size_limit", false);
}

#[test]
fn a_50_mb_chunked_body_is_refused_at_the_size_limit() {
    huge_body("a_50_mb_chunked_body_is_refused_at_the_size_limit", true);
}

#[test]
fn redirects_to_another_host_are_not_followed() {
    let test = "redirects_to_another_host_are_not_followed";
    // "Another host": a second loopback address.
    let other =
        Upstream::start_on("127.0.0.2:0", |_| Reply::envelope(json!({"stolen": true}))).unwrap();
    let location = format!("{}/zones/stolen", other.url());
    for status in [301u16, 302, 307, 308] {
        let zone = format!("{status}{}", "0".repeat(29));
        let location = location.clone();
        let upstream = upstream_with(move |_| Reply::Respond {
            status,
            headers: vec![("Location".to_owned(), location.clone())],
            body: Vec::new(),
        });
        let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(&zone));
        assert_mentions(
            test,
            &seen.text,
            &["GET", &zone, &status.to_string(), "redirect"],
        );
    }
    assert!(
        other.requests().is_empty(),
        "{test}: the other host was contacted: {:?}",
        other.requests()
    );
}

#[test]
fn malformed_json_is_a_clear_error() {
    let test = "malformed_json_is_a_clear_error";
    let zone = "3a1f3a1f3a1f3a1f3a1f3a1f3a1f3a1f";
    let upstream = upstream_with(|_| {
        Reply::text(
            200,
            "application/json",
            r#"{"success":true,"result":{"id":"#,
        )
    });
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(test, &seen.text, &["GET", zone, "JSON"]);
}

#[test]
fn an_upstream_echoing_the_credential_never_shows_it() {
    let test = "an_upstream_echoing_the_credential_never_shows_it";
    let zone = "ec40ec40ec40ec40ec40ec40ec40ec40";
    // An error body that quotes the Authorization header it got.
    let upstream = upstream_with(|req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        Reply::cf_error(400, 6003, &format!("Invalid request headers: {auth}"))
    });
    let (seen, _) = fault_call(test, upstream, "zones_get", zone_args(zone));
    assert_mentions(
        test,
        &seen.text,
        &["GET", zone, "400", "Invalid request headers"],
    );

    // And a success body that carries it.
    let zone = "ec41ec41ec41ec41ec41ec41ec41ec41";
    let upstream = Upstream::start(|req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        Reply::envelope(json!({"id": HEALTHY_ZONE, "name": auth, "status": "active"}))
    })
    .unwrap();
    let server = start_server(&upstream);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let reply = with_deadline(TEST_LIMIT, move || {
        client.call_tool_raw("zones_get", zone_args(zone))
    })
    .unwrap()
    .unwrap();
    let leaks = credential_leaks(&[
        ("a success result", &reply.to_string()),
        ("the server log", &server.log()),
    ]);
    assert!(leaks.is_empty(), "{test}:\n{}", leaks.join("\n"));
}

#[test]
fn an_unreachable_upstream_is_a_clear_error() {
    let test = "an_unreachable_upstream_is_a_clear_error";
    // Bind and release a port: nothing listens there afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = ServerConfig::new([
        "--upstream".to_owned(),
        format!("http://127.0.0.1:{port}"),
        "--allow-loopback-upstream".to_owned(),
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN)
    .env("RUST_LOG", "debug");
    let server = Server::http(&config).unwrap();
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let zone = HEALTHY_ZONE;
    let result = with_deadline(TEST_LIMIT, move || {
        client.call_tool("zones_get", zone_args(zone))
    })
    .unwrap()
    .unwrap();
    assert_eq!(result["isError"], true, "{test}: {result}");
    assert_mentions(test, &result_text(&result), &["GET", zone]);
    let leaks = credential_leaks(&[
        ("the result", &result.to_string()),
        ("the server log", &server.log()),
    ]);
    assert!(leaks.is_empty(), "{test}:\n{}", leaks.join("\n"));
}

// --- Cloudflare account behaviours -------------------------------------------

fn accounts_upstream(accounts: Value) -> Upstream {
    Upstream::start(move |req| match req.path() {
        "/accounts" => Reply::json(
            200,
            &json!({
                "success": true, "errors": [], "messages": [],
                "result": accounts,
                "result_info": {"page": 1, "per_page": 20, "count": accounts.as_array().map_or(0, Vec::len), "total_count": accounts.as_array().map_or(0, Vec::len), "total_pages": 1},
            }),
        ),
        p if p.ends_with("/storage/kv/namespaces") => Reply::json(
            200,
            &json!({
                "success": true, "errors": [], "messages": [],
                "result": [{"id": "0f2ac74b498b48028cb68387c421e279", "title": "cache"}],
                "result_info": {"page": 1, "per_page": 20, "count": 1, "total_count": 1, "total_pages": 1},
            }),
        ),
        _ => Reply::cf_error(404, 7003, "Could not route"),
    })
    .unwrap()
}

#[test]
fn the_only_account_fills_an_omitted_account_id() {
    let test = "the_only_account_fills_an_omitted_account_id";
    let upstream = accounts_upstream(json!([{"id": ACCOUNT_A, "name": "Main"}]));
    let server = start_server(&upstream);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let (first, second) = with_deadline(TEST_LIMIT, move || {
        let first = client.call_tool("storage_kv_namespaces_list", json!({}))?;
        let second = client.call_tool("storage_kv_namespaces_list", json!({"per_page": 10}))?;
        Ok::<_, String>((first, second))
    })
    .unwrap()
    .unwrap();
    for result in [&first, &second] {
        assert_ne!(result["isError"], true, "{test}: {result}");
        assert_eq!(
            result["structuredContent"]["result"][0]["title"], "cache",
            "{test}: {result}"
        );
    }
    let paths: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.path().to_owned())
        .collect();
    let listed = paths.iter().filter(|p| *p == "/accounts").count();
    assert_eq!(
        listed, 1,
        "{test}: GET /accounts is asked once and cached: {paths:?}"
    );
    assert_eq!(
        paths
            .iter()
            .filter(|p| **p == format!("/accounts/{ACCOUNT_A}/storage/kv/namespaces"))
            .count(),
        2,
        "{test}: {paths:?}"
    );
    let leaks = credential_leaks(&[("the server log", &server.log())]);
    assert!(leaks.is_empty(), "{test}:\n{}", leaks.join("\n"));
}

#[test]
fn several_accounts_are_listed_in_the_error() {
    let test = "several_accounts_are_listed_in_the_error";
    let upstream = accounts_upstream(json!([
        {"id": ACCOUNT_A, "name": "Main"},
        {"id": ACCOUNT_B, "name": "Staging"},
    ]));
    let server = start_server(&upstream);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let reply = with_deadline(TEST_LIMIT, move || {
        client.call_tool_raw("storage_kv_namespaces_list", json!({}))
    })
    .unwrap()
    .unwrap();
    // A tool error or a JSON-RPC error, but it must name both accounts.
    let text = match reply.get("result") {
        Some(result) => {
            assert_eq!(result["isError"], true, "{test}: {reply}");
            result_text(result)
        }
        None => reply["error"].to_string(),
    };
    assert_mentions(test, &text, &[ACCOUNT_A, ACCOUNT_B, "account_id"]);
    assert!(
        !upstream
            .requests()
            .iter()
            .any(|r| r.path().ends_with("/storage/kv/namespaces")),
        "{test}: the call went upstream without an account: {:?}",
        upstream.requests()
    );
}

#[test]
fn an_empty_list_is_flagged_with_the_permission() {
    let test = "an_empty_list_is_flagged_with_the_permission";
    let upstream = Upstream::start(|_| {
        Reply::json(
            200,
            &json!({"success": true, "errors": [], "messages": [], "result": [],
                    "result_info": {"page": 1, "per_page": 20, "count": 0, "total_count": 0, "total_pages": 0}}),
        )
    })
    .unwrap();
    let server = start_server(&upstream);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let result = with_deadline(TEST_LIMIT, move || {
        client.call_tool(
            "storage_kv_namespaces_list",
            json!({"account_id": ACCOUNT_A}),
        )
    })
    .unwrap()
    .unwrap();
    assert_ne!(
        result["isError"], true,
        "{test}: an empty list is not an error: {result}"
    );
    assert_eq!(
        result["structuredContent"]["result"],
        json!([]),
        "{test}: {result}"
    );
    let perms = permissions("storage_kv_namespaces_list");
    let text = result_text(&result);
    assert_mentions(test, &text, &perms);
}
