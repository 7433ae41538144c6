#![allow(clippy::unwrap_used)]
//! The fast path answers exactly as rmcp does: each request goes to a
//! router with the fast path and to one without it, and the two responses
//! must agree in status, every header and body bytes.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use http::{StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use super::super::http::{ClientAuth, ShutdownHandle, router_with};
use super::super::tests::{catalogue, core, upstream};
use super::*;
use crate::config::Exposure;

const HOST: &str = "127.0.0.1:8787";

use crate::server::http::tests::options;

fn tokens() -> ClientAuth {
    use crate::server::auth::{TokenTable, digest_hex};
    let mut table = TokenTable::default();
    let spec = format!(
        "{}=ONE,{}=TWO",
        digest_hex("client-one"),
        digest_hex("client-two")
    );
    table
        .load_env_spec(&spec, |name| match name {
            "ONE" => Some("one".to_owned()),
            "TWO" => Some("two".to_owned()),
            _ => None,
        })
        .unwrap();
    ClientAuth::Tokens(table)
}

/// Both routers over one core.
async fn routers(exposure: Exposure) -> (Router, Router) {
    let (fast, plain, _) = routers_and_shutdown(exposure).await;
    (fast, plain)
}

/// Both routers and the shutdown handles of both.
async fn routers_and_shutdown(exposure: Exposure) -> (Router, Router, [ShutdownHandle; 2]) {
    let (base, _) = upstream().await;
    let core = Arc::new(core(&base, exposure));
    let opts = options(tokens());
    let bound = HOST.parse().unwrap();
    let (fast, a) = router_with(core.clone(), &opts, bound, true);
    let (plain, b) = router_with(core, &opts, bound, false);
    (fast, plain, [a, b])
}

/// One POST: the extra headers replace the defaults of the same name.
fn post(body: &str, extra: &[(&str, &str)]) -> Request {
    let mut req = Request::post("/mcp")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header(header::AUTHORIZATION, "Bearer client-one")
        .body(Body::from(body.to_owned()))
        .unwrap();
    for (k, v) in extra {
        let name = header::HeaderName::from_bytes(k.as_bytes()).unwrap();
        if v.is_empty() {
            req.headers_mut().remove(name);
        } else {
            req.headers_mut().insert(name, v.parse().unwrap());
        }
    }
    req
}

#[derive(Debug, PartialEq)]
struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    encoding: Option<String>,
    /// Every header, sorted (content type and encoding included).
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn answer(router: &Router, req: Request) -> Answer {
    let resp = router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let text = |name| {
        resp.headers()
            .get(name)
            .map(|v: &http::HeaderValue| v.to_str().unwrap().to_owned())
    };
    let content_type = text(header::CONTENT_TYPE);
    let encoding = text(header::CONTENT_ENCODING);
    let mut headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    headers.sort();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 22)
        .await
        .unwrap()
        .to_vec();
    Answer {
        status,
        content_type,
        encoding,
        headers,
        body,
    }
}

/// The same answer from both routers; returns it.
async fn same(routers: &(Router, Router), body: &str, extra: &[(&str, &str)]) -> Answer {
    let fast = answer(&routers.0, post(body, extra)).await;
    let plain = answer(&routers.1, post(body, extra)).await;
    assert_eq!(
        fast,
        plain,
        "{body} {extra:?}\nfast:  {}\nrmcp:  {}",
        String::from_utf8_lossy(&fast.body),
        String::from_utf8_lossy(&plain.body)
    );
    fast
}

fn json_of(a: &Answer) -> Value {
    serde_json::from_slice(&a.body).unwrap()
}

fn call(id: Value, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
    .to_string()
}

#[tokio::test]
async fn calls_answer_as_rmcp_does() {
    let r = routers(Exposure::default()).await;
    // success, with a string id and with a number id
    for id in [json!(1), json!("req-7")] {
        let a = same(
            &r,
            &call(id.clone(), "acct_get", json!({"account_id": "acc1"})),
            &[],
        )
        .await;
        let v = json_of(&a);
        assert_eq!(v["id"], id);
        assert_ne!(v["result"]["isError"], true, "{v}");
        assert!(
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("acc1"),
            "{v}"
        );
    }
    // no arguments at all (the omitted account is filled in)
    let a = same(
        &r,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"acct_get"}}"#,
        &[],
    )
    .await;
    assert!(json_of(&a)["result"].is_object());
    // an upstream error: a tool error
    let a = same(
        &r,
        &call(
            json!(3),
            "things_list",
            json!({"account_or_zone": "accounts", "account_or_zone_id": "x"}),
        ),
        &[],
    )
    .await;
    assert_eq!(json_of(&a)["result"]["isError"], true);
    // arguments the input schema refuses
    let a = same(
        &r,
        &call(json!(4), "acct_get", json!({"account_id": "x".repeat(40)})),
        &[],
    )
    .await;
    assert!(json_of(&a).get("result").is_some() || json_of(&a).get("error").is_some());
    let a = same(&r, &call(json!(5), "acct_get", json!({"nope": 1})), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    // an unknown tool, and one this server does not expose
    let a = same(&r, &call(json!(6), "no_such_tool", json!({})), &[]).await;
    assert_eq!(json_of(&a)["error"]["code"], -32602, "{:?}", json_of(&a));
    let a = same(&r, &call(json!(7), "thing_delete", json!({})), &[]).await;
    assert!(json_of(&a)["result"].is_object() || json_of(&a)["error"].is_object());
    // a large result, compressed for a client that asks
    let a = same(
        &r,
        &call(json!(8), "big_get", json!({})),
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
}

#[tokio::test]
async fn ping_and_protocol_errors_answer_as_rmcp_does() {
    let r = routers(Exposure::default()).await;
    let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
    let a = same(&r, ping, &[]).await;
    assert_eq!(
        json_of(&a),
        json!({"jsonrpc": "2.0", "id": 9, "result": {}})
    );
    // every era before 2026-07-28, and no header at all
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", ""] {
        same(&r, ping, &[("mcp-protocol-version", version)]).await;
        same(
            &r,
            &call(json!(1), "acct_get", json!({})),
            &[("mcp-protocol-version", version)],
        )
        .await;
    }
    // an unknown version: rmcp's 400
    let a = same(
        &r,
        &call(json!(1), "acct_get", json!({})),
        &[("mcp-protocol-version", "1999-01-01")],
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    // the 2026-07-28 era without its request metadata: rmcp's error
    let a = same(
        &r,
        &call(json!(1), "acct_get", json!({})),
        &[("mcp-protocol-version", "2026-07-28")],
    )
    .await;
    assert_ne!(a.status, StatusCode::OK);
    // Accept without SSE, or without JSON: 406
    for accept in ["application/json", "text/event-stream", "*/*"] {
        let a = same(&r, ping, &[("accept", accept)]).await;
        assert_eq!(a.status, StatusCode::NOT_ACCEPTABLE, "{accept}");
    }
    // Accept forms the fast path leaves to rmcp: still the same answer
    for accept in [
        "application/json;q=0, text/event-stream",
        "application/json;q=0.5, text/event-stream;q=1",
        "application/json, text/event-stream; q=0",
        r#"application/json, text/event-stream;x="a,b""#,
    ] {
        same(
            &r,
            &call(json!(1), "acct_get", json!({})),
            &[("accept", accept)],
        )
        .await;
    }
    // bad params, a notification, a response, a batch, an unknown method
    same(
        &r,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
        &[],
    )
    .await;
    same(&r, r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"acct_get","arguments":[1]}}"#, &[]).await;
    let a = same(
        &r,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[],
    )
    .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    same(&r, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, &[]).await;
    same(
        &r,
        &format!("[{}]", call(json!(1), "acct_get", json!({}))),
        &[],
    )
    .await;
    same(&r, r#"{"jsonrpc":"2.0","id":1,"method":"nope/nope"}"#, &[]).await;
    // a progress token: rmcp's path (with its notification stream)
    same(
        &r,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"acct_get","_meta":{"progressToken":"p"}}}"#,
        &[],
    )
    .await;
    // no credential, a wrong one: 401 before either path
    let a = same(&r, ping, &[("authorization", "")]).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = same(&r, ping, &[("authorization", "Bearer wrong")]).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}

/// The credential of the token presented is the one the call uses, and a
/// narrowed exposure refuses what it hides, on both paths alike.
#[tokio::test]
async fn credentials_and_exposure_hold_on_the_fast_path() {
    let r = routers(Exposure::default()).await;
    // each client's own credential picks its default account (one has
    // one account, two has two)
    let one = same(&r, &call(json!(1), "acct_get", json!({})), &[]).await;
    let two = same(
        &r,
        &call(json!(1), "acct_get", json!({})),
        &[("authorization", "Bearer client-two")],
    )
    .await;
    assert_ne!(one.body, two.body);
    // an upstream that echoes the credential: redacted on both paths
    let echo = same(
        &r,
        &call(json!(1), "acct_get", json!({"account_id": "acc9"})),
        &[],
    )
    .await;
    for a in [&one, &two, &echo] {
        let text = String::from_utf8_lossy(&a.body);
        assert!(
            !text.contains("Bearer one") && !text.contains("Bearer two"),
            "{text}"
        );
    }
    let read_only = Exposure::new(catalogue(), None, true).unwrap();
    let r = routers(read_only).await;
    let a = same(&r, &call(json!(2), "thing_delete", json!({})), &[]).await;
    let v = json_of(&a);
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{v}"
    );
}

/// A shutdown that cancels in-flight work (the second signal, or the end
/// of the drain) answers a call or a ping as rmcp does: 500.
#[tokio::test]
async fn a_cancelled_shutdown_answers_as_rmcp_does() {
    let (fast, plain, handles) = routers_and_shutdown(Exposure::default()).await;
    for h in &handles {
        h.cancel();
    }
    let r = (fast, plain);
    for body in [
        call(json!(1), "slow_get", json!({})),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#.to_owned(),
    ] {
        let a = same(&r, &body, &[]).await;
        assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    }
}

/// Which requests take the fast path at all.
#[test]
fn only_plain_requests_take_the_fast_path() {
    let headers = |pairs: &[(&str, &str)]| {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            "application/json, text/event-stream".parse().unwrap(),
        );
        for (k, v) in pairs {
            h.insert(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    };
    let fast = |h: &HeaderMap, body: &str| {
        let mut message: ClientJsonRpcMessage = serde_json::from_str(body).unwrap();
        FastCall::of(h, &mut message).is_some()
    };
    let plain = call(json!(1), "a", json!({}));
    assert!(fast(&headers(&[]), &plain));
    assert!(fast(
        &headers(&[("mcp-protocol-version", "2025-06-18")]),
        &plain
    ));
    assert!(fast(
        &headers(&[]),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
    ));
    assert!(fast(
        &headers(&[]),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"x":1}}}"#
    ));
    for version in ["2026-07-28", "1999-01-01"] {
        assert!(
            !fast(&headers(&[("mcp-protocol-version", version)]), &plain),
            "{version}"
        );
    }
    for accept in [
        "application/json",
        "application/json;q=1, text/event-stream",
        "*/*",
    ] {
        assert!(!fast(&headers(&[("accept", accept)]), &plain), "{accept}");
    }
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","requestState":"s"}}"#,
    ] {
        assert!(!fast(&headers(&[]), body), "{body}");
    }
}

/// Bodies whose shape is plain or nearly so: the one-pass decode must
/// take exactly the calls rmcp's types read as plain ones, with the same
/// id, name and arguments, and leave everything else to them.
const SHAPES: &[(&str, bool)] = &[
    (
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"acct_get","arguments":{"account_id":"acc1"}}}"#,
        true,
    ),
    // keys in another order, params before method
    (
        r#"{"params":{"arguments":{"account_id":"acc1"},"name":"acct_get"},"method":"tools/call","id":"s-1","jsonrpc":"2.0"}"#,
        true,
    ),
    // a byte order mark, extra keys rmcp ignores, plain _meta, null _meta
    (
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"acct_get\"}}",
        true,
    ),
    (
        r#"{"jsonrpc":"2.0","id":3,"x":[1,{"y":2}],"method":"tools/call","params":{"name":"acct_get","z":1,"_meta":{"a":1}}}"#,
        true,
    ),
    (
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"acct_get","_meta":null,"arguments":null}}"#,
        true,
    ),
    // duplicate keys in the arguments: the last one, as rmcp reads them
    (
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"acct_get","arguments":{"account_id":"a","account_id":"acc1"}}}"#,
        true,
    ),
    // escaped name and arguments
    (
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"acct\u005fget","arguments":{"account_id":"acc\u0031"}}}"#,
        true,
    ),
    // left to rmcp: result or error beside the request keys, duplicate
    // top-level keys, an escaped key or method, another method, no
    // params, wrong version, bad id, bad params, progress and the
    // protocol's own _meta keys, input responses, request state
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get"},"result":{}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get"},"error":null}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get"},"params":{"name":"big_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","\u0069d":7,"method":"tools/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools\/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"name":"acct_get"}}"#,
        false,
    ),
    (r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#, false),
    (
        r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"id":7,"method":"tools/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"acct_get"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get","arguments":[1]}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get","_meta":{"progressToken":1}}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get","_meta":{"io.modelcontextprotocol/logLevel":"info"}}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get","requestState":"s"}}"#,
        false,
    ),
    (
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get","inputResponses":{}}}"#,
        false,
    ),
    (
        r#"[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"acct_get"}}]"#,
        false,
    ),
];

fn plain_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::ACCEPT,
        "application/json, text/event-stream".parse().unwrap(),
    );
    h
}

/// The long way's verdict on `body`: what `authenticate` did before.
fn long_way(h: &HeaderMap, body: &[u8]) -> Option<FastCall> {
    match crate::server::jsonrpc_guard::classify(body) {
        crate::server::jsonrpc_guard::Verdict::Message(mut m) => FastCall::of(h, &mut m),
        _ => None,
    }
}

#[test]
fn the_one_pass_decode_takes_exactly_the_plain_calls_rmcp_reads() {
    let h = plain_headers();
    for (body, plain) in SHAPES {
        let decoded = FastCall::decode(&h, body.as_bytes());
        assert_eq!(decoded.is_some(), *plain, "{body}");
        if let Some(decoded) = decoded {
            assert_eq!(Some(decoded), long_way(&h, body.as_bytes()), "{body}");
        }
    }
    // headers the fast path leaves to rmcp: no decode at all
    let mut h = plain_headers();
    h.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    assert_eq!(FastCall::decode(&h, SHAPES[0].0.as_bytes()), None);
    let mut h = plain_headers();
    h.insert(header::ACCEPT, "application/json".parse().unwrap());
    assert_eq!(FastCall::decode(&h, SHAPES[0].0.as_bytes()), None);
}

/// The same shapes through both routers: the same bytes back, whichever
/// way each took.
#[tokio::test]
async fn odd_shapes_answer_as_rmcp_does() {
    let r = routers(Exposure::default()).await;
    // (rmcp itself does not read a byte order mark; `classify` skips it,
    // and took such a call the fast way before this decode too.)
    for (body, _) in SHAPES.iter().filter(|(b, _)| !b.starts_with('\u{feff}')) {
        same(&r, body, &[]).await;
    }
}

/// The fast router really answers a plain call itself: rmcp does not
/// read a byte order mark, the fast path does, so only the fast router
/// gives this call a result.
#[tokio::test]
async fn the_fast_router_answers_plain_calls_itself() {
    let (fast, plain) = routers(Exposure::default()).await;
    let body = format!("\u{feff}{}", call(json!(1), "acct_get", json!({})));
    let a = answer(&fast, post(&body, &[])).await;
    let v = json_of(&a);
    assert!(v["result"]["content"].is_array(), "{v}");
    let b = answer(&plain, post(&body, &[])).await;
    assert_ne!(a.body, b.body, "rmcp answered it too");
    assert!(
        String::from_utf8_lossy(&b.body).contains("error"),
        "{}",
        String::from_utf8_lossy(&b.body)
    );
}
