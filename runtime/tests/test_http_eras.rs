//! Both protocol eras over HTTP, in process (`http_support`): 2025-11-25
//! with `initialize` then `tools/list` and `tools/call` (the upstream gets
//! the mapped request with the server's upstream token, which never
//! reaches the result; invalid arguments are a tool error naming the
//! field), and 2026-07-28 with `server/discover` and per-request `_meta`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod http_support;

use http_support::*;
use serde_json::json;

#[tokio::test]
async fn both_protocol_eras_list_and_call() {
    let server = start().await;
    let url = server.url.clone();

    // 2025-11-25: initialize, then tools/list and tools/call with the header
    let (status, init) = post(
        &url,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    assert_eq!(status, 200, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "cloudflare-mcp");
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let (_, list) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "dns_records_list");
    assert_eq!(tools[0]["title"], "List DNS records");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["zone_id"]));
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert!(
        tools[0].get("outputSchema").is_none(),
        "output schemas only on request"
    );
    let (_, full) = post(
        &format!("{url}?output_schemas=1"),
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    assert_eq!(full["result"]["tools"][0]["outputSchema"]["type"], "object");

    let (_, call) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "dns_records_list", "arguments": {"zone_id": "z1", "per_page": 2}}}),
    )
    .await;
    let result = &call["result"];
    assert_eq!(result["isError"], false, "{call}");
    assert_eq!(result["structuredContent"]["result"][0]["zone"], "z1");
    assert_eq!(result["structuredContent"]["result_info"]["count"], 1);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"success\":true")
    );
    {
        let seen = server.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, format!("Bearer {UPSTREAM_TOKEN}"));
        assert_eq!(seen[0].1, "/client/v4/zones/z1/dns_records?per_page=2");
    }
    assert!(!call.to_string().contains(UPSTREAM_TOKEN));

    // invalid arguments: a tool error naming the field
    let (_, bad) = post(
        &url,
        Some("2025-11-25"),
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "dns_records_list", "arguments": {"zone_id": 7}}}),
    )
    .await;
    assert_eq!(bad["result"]["isError"], true);
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("/zone_id")
    );

    // 2026-07-28: server/discover and per-request _meta, no initialize
    let (status, discover) = post(
        &url,
        Some("2026-07-28"),
        &json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {"_meta": meta_2026()}}),
    )
    .await;
    assert_eq!(status, 200, "{discover}");
    assert!(
        discover["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert!(
        discover["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25"))
    );
    let (_, list26) = post(
        &url,
        Some("2026-07-28"),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta_2026()}}),
    )
    .await;
    assert_eq!(list26["result"]["resultType"], "complete", "{list26}");
    assert_eq!(list26["result"]["tools"][0]["name"], "dns_records_list");
    let (_, call26) = post(
        &url,
        Some("2026-07-28"),
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
            "_meta": meta_2026(), "name": "dns_records_list", "arguments": {"zone_id": "z2"}}}),
    )
    .await;
    assert_eq!(
        call26["result"]["structuredContent"]["result"][0]["zone"], "z2",
        "{call26}"
    );
    server.stop().await;
}
