//! Zone-scoped URLs (`/mcp/accounts/{account_id}/zones/{zone_id}`) with
//! `--auth oauth`: the first-use check (`GET /zones/Z`, once per grant)
//! also confirms that the zone belongs to the URL's account, from the same
//! answer; a zone of another account (or an answer naming no account) is
//! 403 and no tool call reaches the upstream.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::scoped::ZONE_SCOPED;
use oauth_support::*;
use serde_json::json;

async fn zone_harness(zone_accounts: &[(&str, &str)]) -> Harness {
    let h = start(Options {
        catalogue: Some(&ZONE_SCOPED),
        ..Options::default()
    })
    .await;
    h.provider.lock().unwrap().zone_accounts = zone_accounts
        .iter()
        .map(|(z, a)| ((*z).to_owned(), (*a).to_owned()))
        .collect();
    h
}

fn call_records() -> serde_json::Value {
    json!({"name": "dns_records_list", "arguments": {}})
}

#[tokio::test]
async fn a_zone_of_the_account_is_checked_once_and_served() {
    let h = zone_harness(&[("z1", "a1")]).await;
    let path = "/mcp/accounts/a1/zones/z1";
    let (_, tokens) = h.tokens_for(&format!("{}{path}", h.origin)).await;
    let access = tokens["access_token"].as_str().unwrap();
    for _ in 0..2 {
        let a = h.rpc_at(path, access, "tools/call", call_records()).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_ne!(a.body["result"]["isError"], true, "{}", a.body);
    }
    let p = h.provider.lock().unwrap();
    assert_eq!(p.api_requests, ["GET /zones/z1"], "one check for two calls");
    assert_eq!(p.api_tokens.len(), 2, "both calls reached the API");
}

#[tokio::test]
async fn a_zone_of_another_account_is_forbidden_before_any_tool_call() {
    let h = zone_harness(&[("z2", "a2")]).await;
    let path = "/mcp/accounts/a1/zones/z2";
    let (_, tokens) = h.tokens_for(&format!("{}{path}", h.origin)).await;
    let access = tokens["access_token"].as_str().unwrap();
    for method in ["tools/call", "tools/list"] {
        let params = if method == "tools/call" {
            call_records()
        } else {
            json!({})
        };
        let a = h.rpc_at(path, access, method, params).await;
        assert_eq!(a.status, 403, "{method}: {}", a.body);
        assert!(
            a.body["error_description"]
                .as_str()
                .unwrap()
                .contains("/mcp/accounts/a1/zones/z2"),
            "{}",
            a.body
        );
    }
    let p = h.provider.lock().unwrap();
    assert_eq!(
        p.api_requests,
        ["GET /zones/z2"],
        "one check, remembered per grant"
    );
    assert!(p.api_tokens.is_empty(), "no tool call reached the API");
}

#[tokio::test]
async fn a_zone_whose_account_is_not_named_is_forbidden() {
    let h = zone_harness(&[]).await;
    let path = "/mcp/accounts/a1/zones/z3";
    let (_, tokens) = h.tokens_for(&format!("{}{path}", h.origin)).await;
    let access = tokens["access_token"].as_str().unwrap();
    let a = h.rpc_at(path, access, "tools/call", call_records()).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(h.provider.lock().unwrap().api_tokens.is_empty());
}

#[tokio::test]
async fn an_account_url_is_still_checked_by_the_account_alone() {
    let h = zone_harness(&[]).await;
    let path = "/mcp/accounts/a1";
    let (_, tokens) = h.tokens_for(&format!("{}{path}", h.origin)).await;
    let access = tokens["access_token"].as_str().unwrap();
    let a = h.rpc_at(path, access, "tools/list", json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        h.provider.lock().unwrap().api_requests,
        ["GET /accounts/a1"]
    );
}
