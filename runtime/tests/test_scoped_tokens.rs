//! Scoped URLs with static client tokens (`--auth tokens`) and a generic
//! API's own scoped path (forge.json `scoped_paths: ["/zones/{zone_id}"]`):
//! the constraint comes from the URL alone. Over real HTTP in process: the
//! constrained argument leaves `tools/list`, is filled, another value is
//! refused with no upstream request, the 401 names the scoped URL's
//! metadata, which is served; paths under `/mcp` that are no scoped URL
//! are not found.
#![allow(clippy::unwrap_used, clippy::panic)]

mod http_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use toolforge_runtime::catalogue::{
    Annotations, Catalogue, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Product, Route,
    SharedText, ToolDef,
};
use toolforge_runtime::profile::{Profile, ScopedPath};
use toolforge_runtime::server::http::{ClientAuth, HttpOptions, serve_listener};

static ITEMS_LIST: ToolDef = ToolDef {
    name: "items_list",
    operation_id: "items-list",
    product: "items",
    title: "List items",
    description: "Lists a zone's items.",
    input_schema: SharedText::Text(
        r#"{"type":"object","properties":{"zone_id":{"type":"string"},"limit":{"type":"number"}},"required":["zone_id"],"additionalProperties":false}"#,
    ),
    output_schema: None,
    annotations: Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: true,
    },
    permissions: &[],
    method: Method::Get,
    routes: &[Route {
        when: None,
        template: "/zones/{zone_id}/items",
    }],
    params: &[ParamDef {
        arg: "zone_id",
        name: "zone_id",
        location: ParamLocation::Path,
        style: ParamStyle::Simple,
        explode: false,
        required: true,
        allow_reserved: false,
    }],
    body: None,
    responses: &[],
    envelope: Envelope::None,
    deprecated: false,
    security: &[],
    ts_declaration: SharedText::Text(""),
};

static CATALOGUE: Catalogue = Catalogue {
    api: "example",
    profile: Profile {
        scoped_paths: &[ScopedPath {
            template: "/zones/{zone_id}",
            check: None,
        }],
        ..Profile::generic("EXAMPLE_API_TOKEN")
    },
    products: &[Product {
        name: "items",
        tools: std::slice::from_ref(&ITEMS_LIST),
    }],
    source: r#"{"release":"test"}"#,
    spec: "",
    skills: &[],
};

const CLIENT_TOKEN: &str = "client-token-scoped";

type Seen = Arc<Mutex<Vec<String>>>;

async fn items(State(seen): State<Seen>, Path(zone): Path<String>) -> axum::Json<Value> {
    seen.lock().unwrap().push(format!("/zones/{zone}/items"));
    axum::Json(json!([{"id": "i1", "zone": zone}]))
}

async fn start() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route("/zones/{zone}/items", get(items))
        .with_state(seen.clone());
    let up_addr = http_support::loopback_upstream(app).await;
    let (core, tokens) = http_support::static_token_core(
        &CATALOGUE,
        &format!("http://{up_addr}"),
        CLIENT_TOKEN,
        "upstream-secret",
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = HttpOptions {
        allowed_hosts: vec![],
        allowed_origins: vec![],
        max_request_bytes: 64 * 1024,
        header_read_timeout: Duration::from_secs(5),
        body_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(60),
        max_connections: 16,
        max_connections_per_ip: 16,
        auth: ClientAuth::Tokens(tokens),
        drain_timeout: Duration::from_secs(5),
        readiness: Vec::new(),
    };
    tokio::spawn(async move {
        let _ = serve_listener(listener, Arc::new(core), options, std::future::pending()).await;
    });
    (format!("http://{addr}"), seen)
}

async fn post(url: &str, token: Option<&str>, method: &str, params: Value) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = resp.text().await.unwrap();
    (
        status,
        challenge,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn a_static_token_at_a_scoped_url_is_bound_by_the_url() {
    let (base, seen) = start().await;
    let scoped = format!("{base}/mcp/zones/z1");
    let token = Some(CLIENT_TOKEN);

    let (status, _, body) = post(&scoped, token, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    let schema = &body["result"]["tools"][0]["inputSchema"];
    assert_eq!(
        schema,
        &json!({"type": "object", "properties": {"limit": {"type": "number"}}, "required": [], "additionalProperties": false})
    );
    // The unscoped listing is untouched.
    let (_, _, body) = post(&format!("{base}/mcp"), token, "tools/list", json!({})).await;
    assert!(body["result"]["tools"][0]["inputSchema"]["properties"]["zone_id"].is_object());

    let call = |args: Value| json!({"name": "items_list", "arguments": args});
    let (_, _, body) = post(&scoped, token, "tools/call", call(json!({"zone_id": "z2"}))).await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert!(seen.lock().unwrap().is_empty(), "no upstream request");
    let (_, _, body) = post(&scoped, token, "tools/call", call(json!({}))).await;
    assert_eq!(body["result"]["isError"], false, "{body}");
    assert_eq!(*seen.lock().unwrap(), ["/zones/z1/items"]);

    let (status, challenge, _) = post(&scoped, None, "tools/list", json!({})).await;
    assert_eq!(status, 401);
    assert!(
        challenge.ends_with("/.well-known/oauth-protected-resource/mcp/zones/z1\""),
        "{challenge}"
    );
    let host = base.trim_start_matches("http://");
    let metadata = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!(
            "{base}/.well-known/oauth-protected-resource/mcp/zones/z1"
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["resource"], format!("http://{host}/mcp/zones/z1"));
    for path in [
        "/mcp/zones/z1/",
        "/mcp/Zones/z1",
        "/mcp/zones/z%31",
        "/mcp/zones",
        "/mcp/other",
    ] {
        let (status, _, body) =
            post(&format!("{base}{path}"), token, "tools/list", json!({})).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
}
