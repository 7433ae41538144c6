//! Unit tests of the HTTP router.

use super::*;

fn test_router() -> Router {
    let core = crate::server::example_core_tests::example_core(&["a_get"]);
    let http = self::options(ClientAuth::Unauthenticated(None));
    router(core, &http, "127.0.0.1:8787".parse().unwrap()).0
}

async fn post(body: &str) -> (StatusCode, serde_json::Value) {
    use tower::ServiceExt as _;
    let req = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1:8787")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let resp = test_router().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// A request refused before its body is read is answered with
/// `Connection: close`; one without a body keeps its connection.
#[test]
fn refusals_close_connections_whose_body_was_not_read() {
    let with = |pairs: &[(header::HeaderName, &str)]| {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    };
    assert!(has_body(&with(&[(header::CONTENT_LENGTH, "12")])));
    assert!(has_body(&with(&[(header::TRANSFER_ENCODING, "chunked")])));
    assert!(has_body(&with(&[(header::CONTENT_LENGTH, "x")])));
    assert!(!has_body(&with(&[(header::CONTENT_LENGTH, "0")])));
    assert!(!has_body(&with(&[])));
    let closed = closing_if(true, unauthorized("http://h/m", false));
    assert_eq!(closed.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(closed.headers()[header::CONNECTION], "close");
    let kept = closing_if(false, unauthorized("http://h/m", false));
    assert!(kept.headers().get(header::CONNECTION).is_none());
}

#[tokio::test]
async fn bad_params_get_invalid_params_and_garbage_a_parse_error() {
    for (body, says) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            "`name` (the tool name) is missing",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            "`name` must be a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_get","arguments":[1]}}"#,
            "`arguments` must be an object",
        ),
    ] {
        let (status, v) = post(body).await;
        assert_eq!(status, StatusCode::OK, "{body}: {v}");
        assert_eq!(v["error"]["code"], -32602, "{body}: {v}");
        assert_eq!(v["id"], 1, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{v}"
        );
    }
    let (status, v) = post(r#"{"jsonrpc":"2.0","id":2,"method":"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert_eq!(v.get("id"), Some(&serde_json::Value::Null), "{v}");
    // good requests and unknown methods are still rmcp's
    let (status, v) = post(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
    assert_eq!((status, &v["result"]), (StatusCode::OK, &json!({})), "{v}");
    let (_, v) = post(r#"{"jsonrpc":"2.0","id":4,"method":"nope/nope","params":{}}"#).await;
    assert_eq!(v["error"]["code"], -32601, "{v}");
}

/// The HTTP options of the router tests (here and the fast path's): small
/// limits, long timeouts, `auth` as given.
pub(crate) fn options(auth: ClientAuth) -> HttpOptions {
    HttpOptions {
        allowed_hosts: Vec::new(),
        allowed_origins: Vec::new(),
        max_request_bytes: 1 << 16,
        header_read_timeout: Duration::from_secs(10),
        body_read_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        max_connections: 16,
        max_connections_per_ip: 16,
        auth,
        drain_timeout: Duration::from_secs(10),
        readiness: Vec::new(),
    }
}
