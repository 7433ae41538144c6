#![allow(clippy::unwrap_used, clippy::panic)]
//! Paging an agent can follow, through a real MCP client: the official
//! Python SDK drives the generated `till-mcp` server (the Stripe-shaped
//! sample, convention "cursor from the last item's id") over stdio against
//! a loopback fake Till holding seven customers. The client calls
//! `customers_list` with `limit: 3`, then again with each result's
//! `structuredContent.next` until it is `null` (driver op `follow`): it
//! must read every customer exactly once, in three calls, and the last
//! result must say it is the last page. A failing page stops the walk
//! with the items read so far and the API's error. The same walk reads
//! every item once on `cloudflare-mcp` (convention "page number":
//! `page` up to `result_info.total_pages`) and `larder-mcp` ("cursor
//! field": `cursor` = `next_cursor` until null).
//!
//! Code Mode on the same server (`--mode codemode`): `api.paginate`
//! returns all seven, stops at `maxPages` with the next query, returns the
//! items so far and the error (with `status` and the API's `code`) when a
//! page fails; a thrown API error carries `status` and `code`; the
//! `search`/`execute` descriptions quote this API's paths, not another's.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::paging::{binary, execute, ids_at, query, returned, texts};
use toolforge_tests::upstream::{Reply, Upstream};

const KEY: &str = "sk_test_paging_Jd93kQ";
const CUSTOMERS: usize = 7;
const LIMIT: Duration = Duration::from_secs(120);

/// `cargo build -p till-tools --bin till-mcp` (a no-op when up to date).
fn till_binary() -> PathBuf {
    binary("till-tools", "till-mcp").unwrap()
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
    let steps = json!([{"op": "follow", "name": "customers_list", "arguments": {"limit": 3}, "maxCalls": 10}]);
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
            .contains(r#"call `customers_list` with {"limit":3,"starting_after":"cus_3"}"#),
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

/// Follows `tool` from `arguments` on `bin` (of `package`) against
/// `upstream` with the Python SDK; returns the calls.
fn follow_on(
    (package, bin): (&str, &str),
    env: Value,
    upstream: &Upstream,
    tool: &str,
    arguments: Value,
) -> Vec<Value> {
    let plan = json!({
        "client": "client",
        "transport": "stdio",
        "command": binary(package, bin).unwrap().display().to_string(),
        "args": ["--transport", "stdio", "--upstream", upstream.url(),
                 "--allow-loopback-upstream", "--output-schemas"],
        "env": env,
        "timeoutSeconds": 60,
        "steps": [{"op": "follow", "name": tool, "arguments": arguments, "maxCalls": 10}]
    });
    let report = clients::run_python(&plan, LIMIT).unwrap();
    let (calls, error) = follow(&report);
    assert_eq!(error, None, "{report}");
    calls
}

#[test]
fn page_numbers_are_followed_to_the_last_page() {
    let test = "page_numbers_are_followed_to_the_last_page";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    // Eleven accounts, five per page, in the `{success, result, result_info}` envelope.
    let upstream = Upstream::start(|req| {
        let page: usize = query(&req.target, "page").and_then(|p| p.parse().ok()).unwrap_or(1);
        let per: usize = query(&req.target, "per_page").and_then(|p| p.parse().ok()).unwrap_or(20);
        let all: Vec<Value> = (1..=11).map(|i| json!({"id": format!("acc_{i}"), "name": format!("Account {i}")})).collect();
        let chunk: Vec<Value> = all.iter().skip((page - 1) * per).take(per).cloned().collect();
        Reply::json(200, &json!({"success": true, "errors": [], "messages": [], "result": chunk,
            "result_info": {"page": page, "per_page": per, "count": 5, "total_count": 11, "total_pages": 11usize.div_ceil(per)}}))
    })
    .unwrap();
    let calls = follow_on(
        ("cloudflare-tools", "cloudflare-mcp"),
        json!({"CLOUDFLARE_API_TOKEN": KEY}),
        &upstream,
        "accounts_list",
        json!({"per_page": 5}),
    );
    assert_eq!(calls.len(), 3, "{calls:?}");
    let want: Vec<String> = (1..=11).map(|i| format!("acc_{i}")).collect();
    assert_eq!(ids_at(&calls, "/result"), want);
    assert_eq!(calls[2]["arguments"], json!({"per_page": 5, "page": 3}));
    assert_eq!(calls[2]["result"]["structuredContent"]["next"], Value::Null);
}

#[test]
fn a_cursor_field_is_followed_until_it_is_null() {
    let test = "a_cursor_field_is_followed_until_it_is_null";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    // Larder's adjustments: `{data, next_cursor}`, three per page, seven in all.
    let upstream = Upstream::start(|req| {
        let start: usize = query(&req.target, "cursor").and_then(|c| c.strip_prefix("c")?.parse().ok()).unwrap_or(0);
        let data: Vec<Value> = (start..(start + 3).min(7))
            .map(|i| json!({"id": format!("adj_{i:08}"), "item_id": "itm_ab12cd34", "delta": 1, "reason": "used", "at": "2026-03-02T19:12:00Z"}))
            .collect();
        let next = if start + 3 < 7 { json!(format!("c{}", start + 3)) } else { Value::Null };
        Reply::json(200, &json!({"data": data, "next_cursor": next}))
    })
    .unwrap();
    let calls = follow_on(
        ("larder-tools", "larder-mcp"),
        json!({"LARDER_BEARER_AUTH": KEY}),
        &upstream,
        "list_stock_adjustments",
        json!({"pantryId": "pan_00000001", "limit": 3}),
    );
    assert_eq!(calls.len(), 3, "{calls:?}");
    let want: Vec<String> = (0..7).map(|i| format!("adj_{i:08}")).collect();
    assert_eq!(ids_at(&calls, "/data"), want);
    assert_eq!(
        calls[1]["arguments"],
        json!({"pantryId": "pan_00000001", "limit": 3, "cursor": "c3"})
    );
}
