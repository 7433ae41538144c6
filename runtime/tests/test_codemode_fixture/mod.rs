//! Shared fixture of the Code Mode tests and benchmarks: a small
//! Cloudflare-shaped catalogue (with its resolved spec), a loopback axum
//! upstream that records every request, and in-process [`Core`]s in the
//! `codemode` and `code` modes using the runtime's sandbox worker binary.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, Uri};
use axum::response::IntoResponse;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use toolforge_runtime::catalogue::{
    Annotations, BodyArgs, BodyDef, BodyKind, Catalogue, Envelope, Method, ParamDef, ParamLocation,
    ParamStyle, Product, Route, ToolDef,
};
use toolforge_runtime::codemode::{Mode, ModeSetup};
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::credential::Credential;
use toolforge_runtime::profile::{
    AccountFill, AccountList, BodyEnvelope, MergedSelector, MergedVariant, Pagination, Profile,
    Refusals,
};
use toolforge_runtime::sandbox::{Limits, SandboxConfig, WorkerCommand};
use toolforge_runtime::server::{Core, CoreOptions};

/// The sandbox worker built with the runtime package.
pub const WORKER: &str = env!("CARGO_BIN_EXE_toolforge-sandbox-worker");
/// The upstream token; it must never show up in a result, an error or the sandbox.
pub const TOKEN: &str = "cf-secret-token-8Hq2Zx91";
/// The only account `GET /accounts` returns.
pub const ACCOUNT: &str = "acc0000000000000000000000000001";

const READ: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};
const WRITE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: true,
};

const fn path(name: &'static str) -> ParamDef {
    ParamDef {
        arg: name,
        name,
        location: ParamLocation::Path,
        style: ParamStyle::Simple,
        explode: false,
        required: true,
        allow_reserved: false,
    }
}

const fn query(name: &'static str, style: ParamStyle, explode: bool) -> ParamDef {
    ParamDef {
        arg: name,
        name,
        location: ParamLocation::Query,
        style,
        explode,
        required: false,
        allow_reserved: false,
    }
}

#[allow(clippy::too_many_arguments)]
const fn tool(
    name: &'static str,
    description: &'static str,
    method: Method,
    routes: &'static [Route],
    params: &'static [ParamDef],
    body: Option<BodyDef>,
    input_schema: &'static str,
    ts_declaration: &'static str,
    permissions: &'static [&'static str],
    annotations: Annotations,
    list: bool,
) -> ToolDef {
    ToolDef {
        name,
        operation_id: name,
        product: "test",
        title: description,
        description,
        input_schema: toolforge_runtime::catalogue::SharedText::Text(input_schema),
        output_schema: Some(toolforge_runtime::catalogue::SharedText::Text(
            r#"{"type":"object"}"#,
        )),
        annotations,
        permissions,
        method,
        routes,
        params,
        body,
        responses: &[],
        envelope: Envelope::Result { list },
        deprecated: false,
        security: &[],
        ts_declaration: toolforge_runtime::catalogue::SharedText::Text(ts_declaration),
    }
}

static ZONES_LIST: ToolDef = tool(
    "zones_list",
    "Lists zones.",
    Method::Get,
    &[Route {
        when: None,
        template: "/zones",
    }],
    &[
        query("per_page", ParamStyle::Form, true),
        query("name", ParamStyle::Form, true),
    ],
    None,
    r#"{"type":"object","properties":{"per_page":{"type":"integer"},"name":{"type":"string"}},"additionalProperties":false}"#,
    "type ZoneId = string;\n/** Lists zones. (GET /zones) */\nzones_list(args: { per_page?: number; name?: string }): Promise<{ result?: { id: ZoneId; name: string }[] }>;",
    &["Zone Read"],
    READ,
    true,
);

static DNS_LIST: ToolDef = tool(
    "dns_records_list",
    "Lists DNS records.",
    Method::Get,
    &[Route {
        when: None,
        template: "/zones/{zone_id}/dns_records",
    }],
    &[
        path("zone_id"),
        query("per_page", ParamStyle::Form, true),
        query("types", ParamStyle::Form, false),
        query("created_on", ParamStyle::DeepObject, true),
    ],
    None,
    r#"{"type":"object","properties":{"zone_id":{"type":"string"},"per_page":{"type":"integer"},"types":{"type":"array","items":{"type":"string"}},"created_on":{"type":"object"}},"required":["zone_id"],"additionalProperties":false}"#,
    "type ZoneId = string;\n/** Lists DNS records. (GET /zones/{zone_id}/dns_records) */\ndns_records_list(args: { zone_id: ZoneId; per_page?: number; types?: string[] }): Promise<{ result?: any[] }>;",
    &["DNS Read"],
    READ,
    true,
);

static DNS_CREATE: ToolDef = tool(
    "dns_records_create",
    "Creates a DNS record.",
    Method::Post,
    &[Route {
        when: None,
        template: "/zones/{zone_id}/dns_records",
    }],
    &[path("zone_id")],
    Some(BodyDef {
        content_type: "application/json",
        kind: BodyKind::Json,
        required: true,
        args: BodyArgs::Fields(&[("type", "type"), ("name", "name"), ("content", "content")]),
        file_fields: &[],
        min_fields: 0,
    }),
    r#"{"type":"object","properties":{"zone_id":{"type":"string"},"type":{"type":"string"},"name":{"type":"string"},"content":{"type":"string"}},"required":["zone_id","type","name","content"]}"#,
    "/** Creates a DNS record. (POST /zones/{zone_id}/dns_records) */\ndns_records_create(args: { zone_id: string; type: string; name: string; content: string }): Promise<{ result?: any }>;",
    &["DNS Write"],
    WRITE,
    false,
);

static DNS_EXPORT: ToolDef = tool(
    "dns_records_export",
    "Exports DNS records.",
    Method::Get,
    &[Route {
        when: None,
        template: "/zones/{zone_id}/dns_records/export",
    }],
    &[path("zone_id")],
    None,
    r#"{"type":"object","properties":{"zone_id":{"type":"string"}},"required":["zone_id"]}"#,
    "",
    &["DNS Read"],
    READ,
    false,
);

static RULESETS_LIST: ToolDef = tool(
    "rulesets_list",
    "Lists rulesets of an account or zone.",
    Method::Get,
    &[
        Route {
            when: Some(("account_or_zone", "accounts")),
            template: "/accounts/{account_or_zone_id}/rulesets",
        },
        Route {
            when: Some(("account_or_zone", "zones")),
            template: "/zones/{account_or_zone_id}/rulesets",
        },
    ],
    &[ParamDef {
        required: false,
        ..path("account_or_zone_id")
    }],
    None,
    r#"{"type":"object","properties":{"account_or_zone":{"enum":["accounts","zones"]},"account_or_zone_id":{"type":"string"}},"required":["account_or_zone"]}"#,
    "",
    &["Account Rulesets Read"],
    READ,
    true,
);

static FIREWALL: ToolDef = tool(
    "firewall_rules_list",
    "Lists firewall rules.",
    Method::Get,
    &[Route {
        when: None,
        template: "/zones/{zone_id}/firewall/rules",
    }],
    &[path("zone_id")],
    None,
    r#"{"type":"object","properties":{"zone_id":{"type":"string"}},"required":["zone_id"]}"#,
    "",
    &["Firewall Services Read"],
    READ,
    true,
);

static ECHO: ToolDef = tool(
    "echo_get",
    "Echoes the request (the fixture upstream repeats its headers).",
    Method::Get,
    &[Route {
        when: None,
        template: "/echo",
    }],
    &[],
    None,
    r#"{"type":"object"}"#,
    "",
    &[],
    READ,
    false,
);

static BIG: ToolDef = tool(
    "big_list",
    "Returns 2,000 items.",
    Method::Get,
    &[Route {
        when: None,
        template: "/big",
    }],
    &[],
    None,
    r#"{"type":"object"}"#,
    "",
    &[],
    READ,
    true,
);

/// The spec `search` sees.
pub const SPEC: &str = r#"{"openapi":"3.0.3","info":{"title":"fixture","version":"1"},"paths":{
"/zones":{"get":{"operationId":"zones-list","summary":"List zones","tags":["Zone"],"parameters":[{"name":"per_page","in":"query","schema":{"type":"integer"}}]}},
"/zones/{zone_id}/dns_records":{"get":{"operationId":"dns-list","summary":"List DNS records","tags":["DNS Records for a Zone"]},"post":{"operationId":"dns-create","summary":"Create DNS record","tags":["DNS Records for a Zone"]}},
"/zones/{zone_id}/dns_records/export":{"get":{"summary":"Export DNS records","tags":["DNS Records for a Zone"]}},
"/accounts/{account_id}/rulesets":{"get":{"summary":"List account rulesets","tags":["Rulesets"]}},
"/zones/{zone_id}/rulesets":{"get":{"summary":"List zone rulesets","tags":["Rulesets"]}},
"/zones/{zone_id}/firewall/rules":{"get":{"summary":"List firewall rules","tags":["Firewall"]}}}}"#;

/// The profile the generator's Cloudflare policy emits (as in
/// `generated/src/lib.rs`).
pub static PROFILE: Profile = Profile {
    base_url: Some("https://api.cloudflare.com/client/v4"),
    envelope: BodyEnvelope {
        payload: "/result",
        failure_flag: Some("/success"),
        page: Some("/result_info"),
        ..BodyEnvelope::BARE
    },
    pagination: Pagination::PageNumber {
        param: "page",
        page: "/result_info/page",
        total_pages: "/result_info/total_pages",
    },
    refusals: Refusals {
        grant: "This call needs the token permission(s) {permissions}; grant them to the API token at dash.cloudflare.com/profile/api-tokens, or use a role that includes them.",
        unknown: "The API documents no specific permission for this call; check the API token's permissions and resources at dash.cloudflare.com/profile/api-tokens (the account or zone must be included).",
        empty_list: Some(
            "Note: the list is empty. If you expected items, the API token may lack the permission(s) {permissions} (the API filters lists by permission instead of refusing them); check the token at dash.cloudflare.com/profile/api-tokens.",
        ),
    },
    accounts: AccountFill::FromList(AccountList {
        args: &["account_id", "accountId", "account_identifier"],
        path: "/accounts?per_page=50",
        items: "/result",
        id_field: "id",
        name_field: "name",
        total: Some("/result_info/total_count"),
        permission: Some("Account Settings Read"),
    }),
    merged: Some(MergedSelector {
        arg: "account_or_zone",
        id_arg: "account_or_zone_id",
        variants: &[
            MergedVariant {
                value: "accounts",
                id: "account_id",
                noun: "account",
            },
            MergedVariant {
                value: "zones",
                id: "zone_id",
                noun: "zone",
            },
        ],
    }),
    execute_example: r#"async () => { const r = await api.request({ method: "GET", path: "/zones", query: { per_page: 5 } }); return r.result.map(z => ({ id: z.id, name: z.name })); }"#,
    ..Profile::generic("CLOUDFLARE_API_TOKEN")
};

/// The fixture catalogue.
pub static CATALOGUE: Catalogue = Catalogue {
    api: "cloudflare",
    profile: PROFILE,
    products: &[Product {
        name: "test",
        tools: &[
            ToolDef { ..ZONES_LIST },
            ToolDef { ..DNS_LIST },
            ToolDef { ..DNS_CREATE },
            ToolDef { ..DNS_EXPORT },
            ToolDef { ..RULESETS_LIST },
            ToolDef { ..FIREWALL },
            ToolDef { ..ECHO },
            ToolDef { ..BIG },
        ],
    }],
    source: r#"{"release":"fixture-1"}"#,
    spec: SPEC,
    skills: &[],
};

/// One request the upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path and query, as received (the `/client/v4` prefix removed).
    pub uri: String,
    /// The `Authorization` header.
    pub auth: String,
    /// `Content-Type`, if any.
    pub content_type: String,
    /// The body as text.
    pub body: String,
}

/// The recording upstream.
#[derive(Debug, Clone, Default)]
pub struct Upstream {
    /// Base URL including `/client/v4`.
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Forgets the requests so far.
    pub fn clear(&self) {
        if let Ok(mut s) = self.seen.lock() {
            s.clear();
        }
    }
}

fn envelope(result: Value, info: Option<Value>) -> Value {
    let mut v = json!({"success": true, "errors": [], "messages": [], "result": result});
    if let Some(info) = info {
        v["result_info"] = info;
    }
    v
}

async fn answer(
    State(seen): State<Arc<Mutex<Vec<Seen>>>>,
    method: HttpMethod,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let full = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let rel = full.strip_prefix("/client/v4").unwrap_or(&full).to_owned();
    let auth = header("authorization");
    if let Ok(mut s) = seen.lock() {
        s.push(Seen {
            method: method.to_string(),
            uri: rel.clone(),
            auth: auth.clone(),
            content_type: header("content-type"),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    let path = rel.split('?').next().unwrap_or_default().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let info = |n: usize| Some(json!({"page": 1, "per_page": 20, "count": n, "total_count": n}));
    let json = |status: StatusCode, v: Value| (status, axum::Json(v)).into_response();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["zones"]) => json(
            StatusCode::OK,
            envelope(
                json!([{"id": "zone-a", "name": "a.example"}, {"id": "zone-b", "name": "b.example"}]),
                info(2),
            ),
        ),
        ("GET", ["zones", "empty", "dns_records"]) => {
            json(StatusCode::OK, envelope(json!([]), info(0)))
        }
        ("GET", ["zones", zone, "dns_records"]) => json(
            StatusCode::OK,
            envelope(
                json!([{"id": format!("{zone}-r1"), "type": "A", "name": format!("www.{zone}")}]),
                info(1),
            ),
        ),
        ("POST", ["zones", _, "dns_records"]) => {
            let posted: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            json(
                StatusCode::OK,
                envelope(json!({"id": "new-1", "posted": posted}), None),
            )
        }
        ("GET", ["zones", _, "dns_records", "export"]) => {
            (StatusCode::OK, "www 300 IN A 192.0.2.1\n").into_response()
        }
        ("GET", ["accounts"]) => json(
            StatusCode::OK,
            envelope(json!([{"id": ACCOUNT, "name": "Only"}]), info(1)),
        ),
        ("GET", [_, id, "rulesets"]) => json(
            StatusCode::OK,
            envelope(json!([{"id": "rs1", "owner": id}]), info(1)),
        ),
        ("GET", ["zones", _, "firewall", "rules"]) => json(
            StatusCode::FORBIDDEN,
            json!({"success": false, "errors": [{"code": 10000, "message": "Authentication error"}], "messages": [], "result": null}),
        ),
        ("GET", ["echo"]) => json(
            StatusCode::OK,
            envelope(json!({"authorization": auth, "uri": rel}), None),
        ),
        ("GET", ["big"]) => {
            let items: Vec<Value> = (0..2_000)
                .map(|i| json!({"id": format!("{i:032x}"), "name": format!("item-{i}.example.com"), "type": "A"}))
                .collect();
            json(StatusCode::OK, envelope(Value::Array(items), info(2_000)))
        }
        _ => json(
            StatusCode::NOT_FOUND,
            json!({"success": false, "errors": [{"code": 7003, "message": "No route for that URI"}]}),
        ),
    }
}

/// Starts the recording upstream on a loopback port.
pub async fn upstream() -> Upstream {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(answer).with_state(Arc::clone(&seen));
    tokio::spawn(async move {
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
    });
    Upstream {
        base: format!("http://{addr}/client/v4"),
        seen,
    }
}

/// Limits of the test sandboxes: short deadlines, a small request cap.
pub fn limits() -> Limits {
    Limits {
        memory_bytes: 32 << 20,
        cpu_ms: 500,
        wall_ms: 5_000,
        max_requests: 5,
        ..Limits::default()
    }
}

/// A core over the fixture catalogue in `mode`, sending to `upstream`.
pub fn core(mode: Mode, upstream: &Upstream, exposure: Exposure) -> Core {
    core_with(mode, upstream, exposure, limits())
}

/// [`core`] with explicit sandbox limits.
pub fn core_with(mode: Mode, upstream: &Upstream, exposure: Exposure, limits: Limits) -> Core {
    core_searching(mode, upstream, exposure, limits, None)
}

/// [`core_with`] searching `spec_artifact` instead of the fixture spec.
pub fn core_searching(
    mode: Mode,
    upstream: &Upstream,
    exposure: Exposure,
    limits: Limits,
    spec_artifact: Option<std::path::PathBuf>,
) -> Core {
    core_of(&CATALOGUE, mode, upstream, exposure, limits, spec_artifact)
}

/// [`core_searching`] over another catalogue (e.g. one whose profile lists
/// `whoami`).
pub fn core_of(
    catalogue: &'static Catalogue,
    mode: Mode,
    upstream: &Upstream,
    exposure: Exposure,
    limits: Limits,
    spec_artifact: Option<std::path::PathBuf>,
) -> Core {
    let options = CoreOptions {
        exposure,
        upstream: UpstreamConfig {
            base: validate_upstream(&upstream.base, true).unwrap(),
            timeout: Duration::from_secs(5),
            max_body_bytes: 4 << 20,
        },
        output_schemas: false,
        max_argument_bytes: 64 << 10,
        credential_hint: "set `TEST_TOKEN`".into(),
    };
    let setup = (mode != Mode::Direct).then(|| {
        let config = SandboxConfig::new(WorkerCommand::new(WORKER))
            .with_workers(1)
            .with_limits(limits);
        let mut setup = ModeSetup::new(mode, config);
        setup.spec_artifact = spec_artifact;
        setup
    });
    Core::with_mode(catalogue, options, setup).unwrap()
}

/// The upstream credential.
pub fn credential() -> Credential {
    Credential::new(TOKEN, "test").unwrap()
}

/// `{"code": code}` (plus more fields).
pub fn code_args(code: &str, extra: Value) -> Option<JsonObject> {
    let mut args = json!({"code": code});
    if let (Some(a), Value::Object(e)) = (args.as_object_mut(), extra) {
        a.extend(e);
    }
    args.as_object().cloned()
}

/// Calls `tool` with `code` and the fixture credential.
pub async fn call(core: &Core, tool: &str, code: &str) -> CallToolResult {
    call_with(core, tool, code, json!({})).await
}

/// [`call`] with extra arguments (e.g. `truncate`).
pub async fn call_with(core: &Core, tool: &str, code: &str, extra: Value) -> CallToolResult {
    core.call(tool, code_args(code, extra), Some(&credential()))
        .await
        .unwrap()
}

/// Every text block of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first text block parsed as JSON (the returned value).
pub fn value(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{}", text(result));
    let first = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    serde_json::from_str(&first).unwrap_or_else(|e| panic!("not JSON ({e}): {first}"))
}
