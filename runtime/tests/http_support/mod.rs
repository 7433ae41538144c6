//! The in-process HTTP server the `test_http_*` tests drive: a loopback
//! upstream answering Cloudflare-shaped DNS records, the real router and
//! accept loop on 127.0.0.1:0 with one static client token, and raw
//! JSON-RPC over HTTP with reqwest.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

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
        tools: std::slice::from_ref(&DNS_LIST),
    }],
    source: r#"{"release":"test"}"#,
    spec: "",
    skills: &[],
};

pub const CLIENT_TOKEN: &str = "client-token-123";
pub const UPSTREAM_TOKEN: &str = "upstream-secret-456";
pub const ACCEPT: &str = "application/json, text/event-stream";

pub type Seen = Arc<Mutex<Vec<(String, String)>>>;

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

/// Serves `app` as the loopback upstream on 127.0.0.1:0; its address.
pub async fn loopback_upstream(app: Router) -> std::net::SocketAddr {
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = up.local_addr().unwrap();
    tokio::spawn(serve(up, app));
    addr
}

/// A `Core` over `catalogue` calling `base`, and a token table mapping
/// `client_token` to the upstream token `upstream_token`.
pub fn static_token_core(
    catalogue: &'static Catalogue,
    base: &str,
    client_token: &str,
    upstream_token: &str,
) -> (Core, TokenTable) {
    let core = Core::new(
        catalogue,
        CoreOptions {
            exposure: Exposure::default(),
            upstream: UpstreamConfig {
                base: validate_upstream(base, true).unwrap(),
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
        .load_env_spec(&format!("{}=UP", digest_hex(client_token)), |name| {
            (name == "UP").then(|| upstream_token.to_owned())
        })
        .unwrap();
    (core, tokens)
}

pub struct Server {
    pub url: String,
    pub port: u16,
    pub seen: Seen,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<()>,
}

pub async fn start() -> Server {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route("/client/v4/zones/{zone}/dns_records", get(records))
        .with_state(seen.clone());
    let up_addr = loopback_upstream(app).await;
    let (core, tokens) = static_token_core(
        &CATALOGUE,
        &format!("http://{up_addr}/client/v4"),
        CLIENT_TOKEN,
        UPSTREAM_TOKEN,
    );
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

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

pub async fn post(url: &str, version: Option<&str>, body: &Value) -> (u16, Value) {
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

pub fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"}
    })
}

impl Server {
    /// Stops the server and waits (bounded) for its drain to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("server stops")
            .unwrap();
    }
}

/// The body of a response as JSON.
pub trait JsonValue {
    /// Reads and parses the body.
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        let bytes = self.bytes().await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }
}
