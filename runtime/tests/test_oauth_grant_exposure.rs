//! Exposure per grant over HTTP: the consent page's choice, stored on the
//! grant, narrows `tools/list` and refuses a hidden tool by name with a
//! text saying how to widen the session; a refresh keeps the narrowing;
//! an unnarrowed grant still gets the whole (pre-encoded) listing.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;
use serde_json::json;

#[tokio::test]
async fn a_read_only_grant_lists_no_write_tool_and_refuses_one_by_name() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("read_only").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(h.listed(access).await, ["dns_records_list"]);

    let before = h.provider.lock().unwrap().api_tokens.len();
    let (status, body) = h
        .rpc(
            access,
            "tools/call",
            json!({"name": "dns_records_create", "arguments": {"zone_id": "z1"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("outside what this session was authorized for"),
        "{text}"
    );
    assert!(text.contains("consent page"), "{text}");
    assert_eq!(
        h.provider.lock().unwrap().api_tokens.len(),
        before,
        "no upstream request for a hidden tool"
    );

    // A refresh cannot widen it.
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, renewed) = h.refresh(&client, refresh).await;
    assert_eq!(status, 200, "{renewed}");
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(h.listed(access).await, ["dns_records_list"]);
}

#[tokio::test]
async fn an_unnarrowed_grant_gets_every_tool() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("all").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(
        h.listed(access).await,
        ["dns_records_list", "dns_records_create"]
    );
}
