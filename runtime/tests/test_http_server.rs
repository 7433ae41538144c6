//! The HTTP server end to end, in process: a loopback upstream, the real
//! router and accept loop on 127.0.0.1:0, and raw JSON-RPC over HTTP with
//! reqwest: auth, Host/Origin checks, both protocol eras, listing,
//! tools/call, bad protocol input.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use toolforge_runtime::catalogue::{
    Annotations, Catalogue, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Product, Route,
    ToolDef,
};
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::profile::{BodyEnvelope, Profile};
use toolforge_runtime::server::auth::{TokenTable, digest_hex};
use toolforge_runtime::server::http::{ClientAuth, HttpOptions, serve_listener};
use toolforge_runtime::server::{Core, CoreOptions};

static DNS_LIST: ToolDef = ToolDef {
    name: "dns_records_list",
    operation_id: "dns-records-list",
    product: "dns_records",
    title: "List DNS records",
    description: "Lists a zone's DNS records.",
    input_schema: toolforge_runtime::catalogue::SharedText::Text(
        r#"{"type":"object","properties":{"zone_id":{"type":"string","maxLength":32},"per_page":{"type":"number"}},"required":["zone_id"],"additionalProperties":false}"#,
    ),
    output_schema: Some(toolforge_runtime::catalogue::SharedText::Text(
        r#"{"type":"object","properties":{"result":{"type":"array"},"result_info":{"type":"object"}}}"#,
    )),
    annotations: Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: true,
    },
    permissions: &["DNS Read"],
    method: Method::Get,
    routes: &[Route {
        when: None,
        template: "/zones/{zone_id}/dns_records",
    }],
    params: &[
        ParamDef {
            arg: "zone_id",
            name: "zone_id",
            location: ParamLocation::Path,
            style: ParamStyle::Simple,
            explode: false,
            required: true,
            allow_reserved: false,
        },
        ParamDef {
            arg: "per_page",
            name: "per_page",
            location: ParamLocation::Query,
            style: ParamStyle::Form,
            explode: true,
            required: false,
            allow_reserved: false,
        },
    ],
    body: None,
    responses: &[],
    envelope: Envelope::Result { list: true },
    deprecated: false,
    security: &[],
    ts_declaration: toolforge_runtime::catalogue::SharedText::Text(""),
};

static CATALOGUE: Catalogue = Catalogue {
    api: "cloudflare",
    profile: Profile {
        envelope: BodyEnvelope {
            payload: "/result",
            failure_flag: Some("/success"),
            page: Some("/result_info"),
            ..BodyEnvelope::BARE
        },
        ..Profile::generic("CLOUDFLARE_API_TOKEN")
    },
    products: &[Product {
        name: "dns_records",
        tools: &[&DNS_LIST],
    }],
    source: r#"{"release":"test"}"#,
    spec: "",
    skills: &[],
};

const CLIENT_TOKEN: &str = "client-token-123";
const UPSTREAM_TOKEN: &str = "upstream-secret-456";
const ACCEPT: &str = "application/json, text/event-stream";

type Seen = Arc<Mutex<Vec<(String, String)>>>;

async fn records(
    State(seen): State<Seen>,
    Path(zone): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if let Ok(mut s) = seen.lock() {
        s.push((auth, uri.to_string()));
    }
    if zone == "forbidden" {
        return (
            axum::http::StatusCode::FORBIDDEN,
            axum::Json(json!({"success": false, "errors": [{"code": 9109, "message": "Unauthorized to access requested resource"}]})),
        )
            .into_response();
    }
    axum::Json(json!({
        "success": true, "errors": [], "messages": [],
        "result": [{"id": "r1", "zone": zone, "type": "A"}],
        "result_info": {"page": 1, "per_page": 2, "count": 1, "total_count": 1}
    }))
    .into_response()
}

async fn serve(listener: TcpListener, app: Router) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let svc = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
    }
}

struct Server {
    url: String,
    port: u16,
    seen: Seen,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

async fn start() -> Server {
    let seen: Seen = Arc::default();
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_addr = up.local_addr().unwrap();
    let app = Router::new()
        .route("/client/v4/zones/{zone}/dns_records", get(records))
        .with_state(seen.clone());
    tokio::spawn(serve(up, app));

    let core = Core::new(
        &CATALOGUE,
        CoreOptions {
            exposure: Exposure::default(),
            upstream: UpstreamConfig {
                base: validate_upstream(&format!("http://{up_addr}/client/v4"), true).unwrap(),
                timeout: Duration::from_secs(5),
                max_body_bytes: 1 << 20,
            },
            output_schemas: false,
            max_argument_bytes: 64 * 1024,
            credential_hint: "configure tokens".into(),
        },
    )
    .unwrap();
    let mut tokens = TokenTable::default();
    tokens
        .load_env_spec(&format!("{}=UP", digest_hex(CLIENT_TOKEN)), |name| {
            (name == "UP").then(|| UPSTREAM_TOKEN.to_owned())
        })
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let options = HttpOptions {
        allowed_hosts: vec![],
        allowed_origins: vec!["https://app.example.com".into()],
        max_request_bytes: 64 * 1024,
        header_read_timeout: Duration::from_secs(5),
        body_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(60),
        max_connections: 64,
        max_connections_per_ip: 64,
        auth: ClientAuth::Tokens(tokens),
        drain_timeout: Duration::from_secs(10),
        readiness: Vec::new(),
    };
    let task = tokio::spawn(async move {
        serve_listener(listener, Arc::new(core), options, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Server {
        url: format!("http://{addr}/mcp"),
        port: addr.port(),
        seen,
        stop: Some(tx),
        task,
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn post(url: &str, version: Option<&str>, body: &Value) -> (u16, Value) {
    let mut req = client()
        .post(url)
        .header("authorization", format!("Bearer {CLIENT_TOKEN}"))
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(v) = version {
        req = req.header("mcp-protocol-version", v);
        // 2026-07-28 (SEP-2243) mirrors the method and tool name in headers.
        if v >= "2026-07-28" {
            if let Some(m) = body["method"].as_str() {
                req = req.header("mcp-method", m);
            }
            if let Some(n) = body["params"]["name"].as_str() {
                req = req.header("mcp-name", n);
            }
        }
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"}
    })
}

#[tokio::test]
async fn http_server_end_to_end() {
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

    // graceful shutdown
    let mut server = server;
    if let Some(stop) = server.stop.take() {
        let _ = stop.send(());
    }
    tokio::time::timeout(Duration::from_secs(15), server.task)
        .await
        .expect("server stops")
        .unwrap();
}

trait JsonValue {
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        let bytes = self.bytes().await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }
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
