#![allow(clippy::unwrap_used, clippy::panic)]
//! Paging an agent can follow, through a real MCP client: the official
//! Python SDK drives the generated `till-mcp` server (the Stripe-shaped
//! sample, convention "cursor from the last item's id") over stdio against
//! a loopback fake Till holding seven customers. The client calls
//! `get_customers` with `limit: 3`, then again with each result's
//! `structuredContent.next` until it is `null` (driver op `follow`): it
//! must read every customer exactly once, in three calls, and the last
//! result must say it is the last page. A failing page stops the walk
//! with the items read so far and the API's error.
//!
//! Code Mode on the same server (`--mode codemode`): `api.paginate`
//! returns all seven, stops at `maxPages` with the next query, returns the
//! items so far and the error (with `status` and the API's `code`) when a
//! page fails; a thrown API error carries `status` and `code`; the
//! `search`/`execute` descriptions quote this API's paths, not another's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::upstream::{Reply, Upstream};

const KEY: &str = "sk_test_paging_Jd93kQ";
const CUSTOMERS: usize = 7;
const LIMIT: Duration = Duration::from_secs(120);

/// `cargo build -p till-tools --bin till-mcp` (a no-op when up to date).
fn till_binary() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["build", "--quiet", "-p", "till-tools", "--bin", "till-mcp"])
        .current_dir(workspace)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target.join("debug").join("till-mcp")
}

/// The query parameter `name` of a request target.
fn query<'a>(target: &'a str, name: &str) -> Option<&'a str> {
    let (_, query) = target.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// A fake Till listing `cus_1` … `cus_7` newest last, paged by `limit` and
/// `starting_after`; `fail_after` makes the page after that id a 500.
fn fake_till(fail_after: Option<&'static str>) -> Upstream {
    Upstream::start(move |req| {
        if req.header("authorization") != Some(format!("Bearer {KEY}").as_str()) {
            return Reply::json(401, &json!({"error": {"type": "invalid_request_error", "message": "Invalid API key"}}));
        }
        if req.path() != "/customers" {
            return Reply::json(
                404,
                &json!({"error": {"type": "invalid_request_error", "code": "resource_missing", "message": "No such customer"}}),
            );
        }
        let after = query(&req.target, "starting_after");
        if after.is_some() && after == fail_after {
            return Reply::json(
                500,
                &json!({"error": {"type": "api_error", "code": "lock_timeout", "message": "Try again later"}}),
            );
        }
        let limit: usize = query(&req.target, "limit").and_then(|l| l.parse().ok()).unwrap_or(10);
        let all: Vec<String> = (1..=CUSTOMERS).map(|i| format!("cus_{i}")).collect();
        let start = after
            .and_then(|a| all.iter().position(|id| id == a))
            .map_or(0, |i| i + 1);
        let page: Vec<Value> = all
            .iter()
            .skip(start)
            .take(limit)
            .map(|id| json!({"id": id, "object": "customer", "created": 1}))
            .collect();
        let has_more = start + page.len() < all.len();
        Reply::json(
            200,
            &json!({"object": "list", "url": "/v1/customers", "has_more": has_more, "data": page}),
        )
    })
    .unwrap()
}

fn plan(upstream: &Upstream) -> Value {
    let steps = json!([{"op": "follow", "name": "get_customers", "arguments": {"limit": 3}, "maxCalls": 10}]);
    plan_with(upstream, "direct", steps)
}

fn plan_with(upstream: &Upstream, mode: &str, steps: Value) -> Value {
    json!({
        "client": "client",
        "transport": "stdio",
        "command": till_binary().display().to_string(),
        "args": ["--transport", "stdio", "--mode", mode, "--upstream", upstream.url(),
                 "--allow-loopback-upstream", "--output-schemas"],
        "env": {"TILL_BEARER_AUTH": KEY},
        "timeoutSeconds": 60,
        "steps": steps
    })
}

/// An `execute` step running `code`.
fn execute(code: &str) -> Value {
    json!({"op": "call", "name": "execute", "arguments": {"code": code}})
}

/// The value an `execute` step returned (its first text block, JSON).
fn returned(step: &Value) -> Value {
    let text = step["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("null");
    serde_json::from_str(text).unwrap_or_else(|_| panic!("not JSON: {step}"))
}

/// The calls of the report's one `follow` step, and its error if any.
fn follow(report: &Value) -> (Vec<Value>, Option<Value>) {
    let step = &report["results"][0];
    assert_eq!(step["op"], "follow", "{report}");
    let calls = step["calls"].as_array().cloned().unwrap_or_default();
    (calls, step.get("error").cloned())
}

fn ids(call: &Value) -> Vec<String> {
    call["result"]["structuredContent"]["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn texts(call: &Value) -> String {
    call["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn an_agent_following_next_reads_every_item_exactly_once() {
    let test = "an_agent_following_next_reads_every_item_exactly_once";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let upstream = fake_till(None);
    let report = clients::run_python(&plan(&upstream), LIMIT).unwrap();
    let (calls, error) = follow(&report);
    assert_eq!(error, None, "{report}");
    assert_eq!(calls.len(), 3, "{report}");
    let read: Vec<String> = calls.iter().flat_map(ids).collect();
    let want: Vec<String> = (1..=CUSTOMERS).map(|i| format!("cus_{i}")).collect();
    assert_eq!(read, want, "{report}");
    assert_eq!(
        calls[1]["arguments"],
        json!({"limit": 3, "starting_after": "cus_3"}),
        "{report}"
    );
    assert!(
        texts(&calls[0])
            .contains(r#"call `get_customers` with {"limit":3,"starting_after":"cus_3"}"#),
        "{report}"
    );
    let last = calls.last().unwrap();
    assert_eq!(
        last["result"]["structuredContent"]["next"],
        Value::Null,
        "{report}"
    );
    assert!(texts(last).contains("This is the last page."), "{report}");
    assert!(!report.to_string().contains(KEY), "{report}");
}

#[test]
fn a_failing_page_stops_with_the_items_so_far_and_the_error() {
    let test = "a_failing_page_stops_with_the_items_so_far_and_the_error";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let upstream = fake_till(Some("cus_3"));
    let report = clients::run_python(&plan(&upstream), LIMIT).unwrap();
    let (calls, _) = follow(&report);
    assert_eq!(calls.len(), 2, "{report}");
    assert_eq!(ids(&calls[0]), ["cus_1", "cus_2", "cus_3"], "{report}");
    let failed = &calls[1]["result"];
    assert_eq!(failed["isError"], true, "{report}");
    assert!(
        texts(&calls[1]).contains("code lock_timeout: Try again later"),
        "{report}"
    );
}

const PAGINATE: &str = r#"async () => { const r = await api.paginate({ method: "GET", path: "/customers", query: { limit: 3 } }, MAX); return { ids: r.items.map(c => c.id), pages: r.pages, next: r.next, error: r.error, status: r.status, code: r.code }; }"#;

#[test]
fn code_mode_paginates_and_errors_carry_status_and_code() {
    let test = "code_mode_paginates_and_errors_carry_status_and_code";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let upstream = fake_till(None);
    let steps = json!([
        {"op": "list"},
        execute(&PAGINATE.replace("MAX", "{ maxPages: 10 }")),
        execute(&PAGINATE.replace("MAX", "{ maxPages: 2 }")),
        execute(r#"async () => { try { await api.request({ method: "GET", path: "/customers/cus_404" }); } catch (e) { return { status: e.status, code: e.code, says: e.message.includes("No such customer") }; } }"#),
    ]);
    let report = clients::run_python(&plan_with(&upstream, "codemode", steps), LIMIT).unwrap();
    let results = report["results"].as_array().unwrap();
    let all: Vec<String> = (1..=CUSTOMERS).map(|i| format!("cus_{i}")).collect();
    assert_eq!(
        returned(&results[1]),
        json!({"ids": all, "pages": 3, "next": null}),
        "{report}"
    );
    assert_eq!(
        returned(&results[2]),
        json!({"ids": all[..6], "pages": 2, "next": {"limit": 3, "starting_after": "cus_6"}}),
        "{report}"
    );
    assert_eq!(
        returned(&results[3]),
        json!({"status": 404, "code": "resource_missing", "says": true}),
        "{report}"
    );
    // The descriptions quote this API, not another one.
    let tools = results[0]["tools"].as_array().unwrap();
    let described: String = tools
        .iter()
        .filter_map(|t| t["description"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(described.contains("/customers"), "{described}");
    assert!(described.contains("api.paginate"), "{described}");
    for foreign in ["dns", "zones"] {
        assert!(!described.contains(foreign), "{foreign} in {described}");
    }
}

#[test]
fn code_mode_paginate_stops_at_a_failing_page_with_the_items_so_far() {
    let test = "code_mode_paginate_stops_at_a_failing_page_with_the_items_so_far";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let upstream = fake_till(Some("cus_3"));
    let steps = json!([execute(&PAGINATE.replace("MAX", "{ maxPages: 10 }"))]);
    let report = clients::run_python(&plan_with(&upstream, "codemode", steps), LIMIT).unwrap();
    let got = returned(&report["results"][0]);
    assert_eq!(got["ids"], json!(["cus_1", "cus_2", "cus_3"]), "{report}");
    assert_eq!(got["pages"], 1, "{report}");
    assert_eq!(
        (got["status"].clone(), got["code"].clone()),
        (json!(500), json!("lock_timeout")),
        "{report}"
    );
    assert!(
        got["error"]
            .as_str()
            .unwrap_or("")
            .contains("Try again later"),
        "{report}"
    );
    assert_eq!(
        got["next"],
        json!({"limit": 3, "starting_after": "cus_3"}),
        "{report}"
    );
}
