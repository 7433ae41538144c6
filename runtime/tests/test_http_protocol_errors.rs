//! Bad protocol input over HTTP, in process (`http_support`): broken
//! JSON, a request without `jsonrpc`, an unknown method, bad params and an
//! oversized body get JSON-RPC errors (or 413), the server keeps serving,
//! and it stops gracefully.
#![allow(clippy::unwrap_used, clippy::panic)]

mod http_support;

use http_support::*;
use serde_json::{Value, json};

#[tokio::test]
async fn bad_protocol_input_is_refused_and_the_server_keeps_serving() {
    let server = start().await;
    let url = server.url.clone();
    let (status, init) = post(
        &url,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    assert_eq!(status, 200, "{init}");

    // bad protocol input: JSON-RPC errors, and the server keeps serving
    let resp = client()
        .post(&url)
        .header("authorization", format!("Bearer {CLIENT_TOKEN}"))
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json_value().await;
    assert_eq!(v["error"]["code"], -32700);
    let (status, v) = post(&url, Some("2025-11-25"), &json!({"id": 1, "foo": "bar"})).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (400, json!(-32600)),
        "{v}"
    );
    let (_, v) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "no/such"}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let (_, v) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "nope"}}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let (_, v) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 5}}),
    )
    .await;
    assert!(v["error"]["code"].is_i64(), "{v}");
    let (status, _) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {
            "name": "dns_records_list", "arguments": {"zone_id": "x".repeat(100_000)}}}),
    )
    .await;
    assert_eq!(status, 413);
    let (status, again) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(again["result"]["tools"][0]["name"], "dns_records_list");
    server.stop().await;
}
