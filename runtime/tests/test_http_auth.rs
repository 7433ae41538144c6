//! The HTTP server's door, in process (`http_support`): a request without
//! or with a wrong token is a 401 pointing at the RFC 9728 metadata, the
//! metadata documents name this resource, Host and Origin checks answer
//! 403 before auth, and a static token's refused call is a tool error,
//! never an `insufficient_scope` challenge.
#![allow(clippy::unwrap_used, clippy::panic)]

mod http_support;

use http_support::*;
use serde_json::{Value, json};

#[tokio::test]
async fn tokens_metadata_and_host_origin_checks() {
    let server = start().await;
    let url = server.url.clone();

    // 401 without a token, with the RFC 9728 pointer
    let resp = client()
        .post(&url)
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp\"",
            server.port
        )
    );
    let resp = client()
        .post(&url)
        .header("authorization", "Bearer wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );

    // metadata documents
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let meta: Value = client()
            .get(format!("http://127.0.0.1:{}{path}", server.port))
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        assert_eq!(meta["resource"], url.as_str());
        assert_eq!(meta["bearer_methods_supported"], json!(["header"]));
        assert_eq!(meta["authorization_servers"], json!([]));
    }

    // Host and Origin checks answer 403 before auth
    let resp = client()
        .post(&url)
        .header("host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = client()
        .post(&url)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = client()
        .post(&url)
        .header("origin", "https://app.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401, "an allowed origin reaches auth");
    server.stop().await;
}

/// A static client token's refused call is a tool error naming what the
/// operator must grant, never an `insufficient_scope` challenge.
#[tokio::test]
async fn a_static_token_is_never_challenged() {
    let server = start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dns_records_list", "arguments": {"zone_id": "forbidden"}}});
    let resp = client()
        .post(&server.url)
        .header("authorization", format!("Bearer {CLIENT_TOKEN}"))
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers().get("www-authenticate").is_none());
    let value: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(value["result"]["isError"], true, "{value}");
    let text = value["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("403"), "{text}");
    assert!(text.contains("ask the operator"), "{text}");
    assert!(
        value["result"]["_meta"]
            .get("mcp/www_authenticate")
            .is_none(),
        "{value}"
    );
}
