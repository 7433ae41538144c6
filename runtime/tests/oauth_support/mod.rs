//! In-process harness for the OAuth tests: a loopback upstream OAuth
//! provider and API (the network edge), the real server on 127.0.0.1:0
//! with `--auth oauth` on a SQLite store, and a cookie-keeping "browser"
//! that walks the sign-in without following redirects by itself.
#![allow(clippy::unwrap_used, clippy::panic, dead_code, missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use toolforge_runtime::catalogue::{
    Annotations, Catalogue, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Product, Route,
    ToolDef,
};
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::oauth::config::OAuthConfig;
use toolforge_runtime::oauth::crypto::{ServerKeys, s256_challenge};
use toolforge_runtime::oauth::upstream::UpstreamClient;
use toolforge_runtime::oauth::{OAuthSetup, store};
use toolforge_runtime::profile::{BodyEnvelope, Profile};
use toolforge_runtime::server::http::{ClientAuth, HttpOptions, serve_listener};
use toolforge_runtime::server::{Core, CoreOptions};

mod mcp;
pub mod scoped;

pub static DNS_LIST: ToolDef = ToolDef {
    name: "dns_records_list",
    operation_id: "dns-records-list",
    product: "dns_records",
    title: "List DNS records",
    description: "Lists a zone's DNS records.",
    input_schema: toolforge_runtime::catalogue::SharedText::Text(
        r#"{"type":"object","properties":{"zone_id":{"type":"string"}},"required":["zone_id"],"additionalProperties":false}"#,
    ),
    output_schema: None,
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
    envelope: Envelope::Result { list: true },
    deprecated: false,
    security: &[],
    ts_declaration: toolforge_runtime::catalogue::SharedText::Text(""),
};

/// A write tool: a read-only grant must neither list nor call it.
pub static DNS_CREATE: ToolDef = ToolDef {
    name: "dns_records_create",
    operation_id: "dns-records-create",
    title: "Create a DNS record",
    description: "Creates a DNS record.",
    annotations: Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: true,
    },
    permissions: &["DNS Write"],
    method: Method::Post,
    ..DNS_LIST
};

/// The product's rows (a catalogue lists its tools by value).
static DNS_TOOLS: [ToolDef; 2] = [ToolDef { ..DNS_LIST }, ToolDef { ..DNS_CREATE }];

pub static CATALOGUE: Catalogue = Catalogue {
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
        tools: &DNS_TOOLS,
    }],
    source: r#"{"release":"test"}"#,
    spec: "",
    skills: &[],
};

/// The upstream provider's state.
#[derive(Default)]
pub struct Provider {
    pub counter: u64,
    /// code → (challenge, redirect_uri, scope)
    pub codes: HashMap<String, (String, String, String)>,
    /// access token → expires_at (unix)
    pub access: HashMap<String, i64>,
    pub refresh: Vec<String>,
    pub expires_in: i64,
    pub refuse_refresh: bool,
    pub refreshes: u32,
    pub revoked: Vec<String>,
    /// Bearer tokens the API saw.
    pub api_tokens: Vec<String>,
    /// Scopes asked at the provider's authorize endpoint.
    pub asked_scopes: Vec<String>,
    /// Account API requests (`GET /accounts/…`), in order.
    pub api_requests: Vec<String>,
    /// Accounts whose details the API refuses (403).
    pub hidden_accounts: Vec<String>,
    /// The account of each zone `GET /zones/{zone}` names (none: the
    /// answer names no account).
    pub zone_accounts: HashMap<String, String>,
}

pub type Shared = Arc<Mutex<Provider>>;

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn query_map(query: Option<String>) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

async fn provider_authorize(State(p): State<Shared>, RawQuery(q): RawQuery) -> Response {
    let q = query_map(q);
    let mut p = p.lock().unwrap();
    p.counter += 1;
    let code = format!("upcode-{}", p.counter);
    p.asked_scopes
        .push(q.get("scope").cloned().unwrap_or_default());
    p.codes.insert(
        code.clone(),
        (
            q["code_challenge"].clone(),
            q["redirect_uri"].clone(),
            q.get("scope").cloned().unwrap_or_default(),
        ),
    );
    let mut url = url::Url::parse(&q["redirect_uri"]).unwrap();
    url.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &q["state"]);
    (StatusCode::FOUND, [("location", url.to_string())]).into_response()
}

fn issue(p: &mut Provider, refresh: Option<String>) -> Value {
    p.counter += 1;
    let access = format!("up-access-{}-{}", p.counter, "Zq9");
    let refresh = refresh.unwrap_or_else(|| format!("up-refresh-{}", p.counter));
    p.access.insert(access.clone(), unix_now() + p.expires_in);
    p.refresh.push(refresh.clone());
    json!({"access_token": access, "token_type": "Bearer", "expires_in": p.expires_in, "refresh_token": refresh, "scope": "dns_records:read"})
}

async fn provider_token(State(p): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let want = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("toolforge:upstream-client-secret")
    );
    if basic != want {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let form: BTreeMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let mut p = p.lock().unwrap();
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some((challenge, redirect, _)) = p.codes.remove(&form["code"]) else {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            };
            if s256_challenge(&form["code_verifier"]) != challenge
                || form["redirect_uri"] != redirect
            {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            }
            axum::Json(issue(&mut p, None)).into_response()
        }
        Some("refresh_token") => {
            p.refreshes += 1;
            if p.refuse_refresh || !p.refresh.contains(&form["refresh_token"]) {
                return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "invalid_grant", "error_description": "refresh token revoked"}))).into_response();
            }
            let reply = issue(&mut p, Some(form["refresh_token"].clone()));
            axum::Json(reply).into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "unsupported_grant_type"})),
        )
            .into_response(),
    }
}

async fn provider_revoke(State(p): State<Shared>, body: String) -> StatusCode {
    let form: BTreeMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let mut p = p.lock().unwrap();
    if let Some(t) = form.get("token") {
        p.access.remove(t);
        p.refresh.retain(|r| r != t);
        p.revoked.push(t.clone());
    }
    StatusCode::OK
}

async fn api_records(
    State(p): State<Shared>,
    Path(zone): Path<String>,
    headers: HeaderMap,
) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned();
    let mut p = p.lock().unwrap();
    let valid = p.access.get(&token).is_some_and(|e| *e > unix_now());
    p.api_tokens.push(token);
    if !valid {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}))).into_response();
    }
    // A zone the token may not see, as when a scope is missing.
    if zone == "forbidden" {
        return (StatusCode::FORBIDDEN, axum::Json(json!({"success": false, "errors": [{"code": 9109, "message": "Unauthorized to access requested resource"}]}))).into_response();
    }
    axum::Json(json!({"success": true, "errors": [], "messages": [], "result": [{"id": "r1", "zone": zone}]})).into_response()
}

pub async fn serve(listener: TcpListener, app: Router) {
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

/// Options for one test's server.
pub struct Options {
    pub access_token_secs: u64,
    pub upstream_expires_in: i64,
    pub dynamic_registration: bool,
    pub allow_private_cimd: bool,
    pub token_cache_secs: u64,
    /// Reuse this store file / secret (several servers on one store).
    pub store: Option<String>,
    /// Another instance's public URL (several instances behind one name).
    pub public_url: Option<String>,
    /// Config members merged into the file (objects one level deep), e.g.
    /// `{"limits": {...}}`.
    pub extra: Option<Value>,
    /// The served catalogue (default: [`CATALOGUE`]).
    pub catalogue: Option<&'static Catalogue>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            access_token_secs: 3600,
            upstream_expires_in: 3600,
            dynamic_registration: true,
            allow_private_cimd: false,
            token_cache_secs: 5,
            store: None,
            public_url: None,
            extra: None,
            catalogue: None,
        }
    }
}

pub struct Harness {
    /// The public origin (issuer).
    pub origin: String,
    /// Where this instance listens (differs from `origin` for a second
    /// instance behind the same public name).
    pub bound: String,
    pub provider: Shared,
    pub provider_url: String,
    pub store_url: String,
    pub dir: Arc<tempfile::TempDir>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

pub const SECRET: &str = "c2VydmVyLXNlY3JldC1zZXJ2ZXItc2VjcmV0LXNlcnZlci1zZWNyZXQ";

pub async fn start_provider(expires_in: i64) -> (Shared, String) {
    let provider: Shared = Arc::new(Mutex::new(Provider {
        expires_in,
        ..Provider::default()
    }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/authorize", get(provider_authorize))
        .route("/token", post(provider_token))
        .route("/revoke", post(provider_revoke))
        .route("/client/v4/zones/{zone}/dns_records", get(api_records))
        .route("/client/v4/accounts/{account}", get(scoped::account))
        .route("/client/v4/zones/{zone}", get(scoped::zone))
        .route(
            "/client/v4/accounts/{account}/workers/scripts",
            get(scoped::scripts),
        )
        .with_state(provider.clone());
    tokio::spawn(serve(listener, app));
    (provider, format!("http://{addr}"))
}

pub async fn start(options: Options) -> Harness {
    let (provider, provider_url) = start_provider(options.upstream_expires_in).await;
    start_with(
        options,
        provider,
        provider_url,
        Arc::new(tempfile::tempdir().unwrap()),
    )
    .await
}

pub async fn start_with(
    options: Options,
    provider: Shared,
    provider_url: String,
    dir: Arc<tempfile::TempDir>,
) -> Harness {
    let store_url = options
        .store
        .clone()
        .unwrap_or_else(|| format!("sqlite:{}", dir.path().join("grants.db").display()));
    let config_path = dir.path().join(format!("oauth-{}.json", rand_suffix()));
    let config = json!({
        "public_url": options.public_url.clone().unwrap_or_else(|| "http://127.0.0.1:{port}".into()),
        "secret_env": "UNUSED_IN_PROCESS",
        "store": store_url,
        "dynamic_registration": options.dynamic_registration,
        "upstream": {
            "name": "Test <Provider>",
            "authorize_url": format!("{provider_url}/authorize"),
            "token_url": format!("{provider_url}/token"),
            "revoke_url": format!("{provider_url}/revoke"),
            "client_id": "toolforge",
            "client_secret_env": "UNUSED",
            "scopes": ["offline_access"]
        },
        "lifetimes": {"access_token_secs": options.access_token_secs, "refresh_token_secs": 86400, "code_secs": 60, "sign_in_secs": 600},
        "cimd": {"allow_private_addresses": options.allow_private_cimd, "allow_http": options.allow_private_cimd, "max_bytes": 16384, "timeout_ms": 2000, "cache_secs": 0},
        "token_cache_secs": options.token_cache_secs,
        "scope_catalogue": concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime/oauth/cloudflare-scopes.json")
    });
    let mut config = config;
    if let Some(Value::Object(extra)) = &options.extra {
        for (k, v) in extra {
            match (config.get_mut(k), v) {
                (Some(Value::Object(have)), Value::Object(add)) => {
                    have.extend(add.clone());
                }
                _ => {
                    config[k] = v.clone();
                }
            }
        }
    }
    std::fs::write(&config_path, config.to_string()).unwrap();
    let config = OAuthConfig::load(&config_path).unwrap();
    let scopes = config.scopes().unwrap();
    let upstream =
        UpstreamClient::new(config.upstream.clone(), "upstream-client-secret".into()).unwrap();
    let store = store::open(&store_url).await.unwrap();
    let catalogue = options.catalogue.unwrap_or(&CATALOGUE);
    let products = toolforge_runtime::server::oauth_front::skills_of(catalogue);
    let setup = Arc::new(OAuthSetup {
        config,
        keys: ServerKeys::from_secret(SECRET).unwrap(),
        store,
        upstream,
        scopes,
        products,
    });
    let core = Core::new(
        catalogue,
        CoreOptions {
            exposure: Exposure::default(),
            upstream: UpstreamConfig {
                base: validate_upstream(&format!("{provider_url}/client/v4"), true).unwrap(),
                timeout: Duration::from_secs(5),
                max_body_bytes: 1 << 20,
            },
            output_schemas: false,
            max_argument_bytes: 64 * 1024,
            credential_hint: "sign in again".into(),
        },
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let http = HttpOptions {
        allowed_hosts: vec![],
        allowed_origins: vec![],
        max_request_bytes: 64 * 1024,
        header_read_timeout: Duration::from_secs(5),
        body_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(60),
        max_connections: 64,
        max_connections_per_ip: 64,
        auth: ClientAuth::OAuth {
            setup,
            secrets: None,
        },
        drain_timeout: Duration::from_secs(5),
        readiness: vec![],
    };
    tokio::spawn(async move {
        let _ = serve_listener(listener, Arc::new(core), http, async {
            let _ = rx.await;
        })
        .await;
    });
    Harness {
        origin: options
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}")),
        bound: format!("http://{addr}"),
        provider,
        provider_url,
        store_url,
        dir,
        stop: Some(tx),
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

/// A minimal browser: a cookie jar and one request at a time.
#[derive(Default)]
pub struct Browser {
    pub jar: BTreeMap<String, String>,
}

pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

impl Browser {
    fn cookie_header(&self) -> String {
        self.jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn finish(&mut self, response: reqwest::Response) -> Page {
        for value in response.headers().get_all("set-cookie") {
            let text = value.to_str().unwrap();
            let pair = text.split(';').next().unwrap();
            let (k, v) = pair.split_once('=').unwrap();
            if text.contains("Max-Age=0") {
                self.jar.remove(k);
            } else {
                self.jar.insert(k.to_owned(), v.to_owned());
            }
        }
        Page {
            status: response.status().as_u16(),
            location: response
                .headers()
                .get("location")
                .map(|v| v.to_str().unwrap().to_owned()),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    }

    pub async fn get(&mut self, url: &str) -> Page {
        let response = http()
            .get(url)
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.finish(response).await
    }

    pub async fn post_form(&mut self, url: &str, origin: &str, fields: &[(&str, &str)]) -> Page {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let response = http()
            .post(url)
            .header("cookie", self.cookie_header())
            .header("origin", origin)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        self.finish(response).await
    }
}

/// POSTs JSON: (status, JSON body or null).
pub async fn post_json(url: &str, body: &Value) -> (u16, Value) {
    let response = http()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// GETs JSON (null when the body is not JSON).
pub async fn get_json(url: &str, host: Option<&str>) -> Value {
    let mut request = http().get(url);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// A hidden form field's value from the consent page.
pub fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {page}"))
        + marker.len();
    let end = start + page[start..].find('"').unwrap();
    page[start..end].to_owned()
}

pub fn query_of(url: &str) -> BTreeMap<String, String> {
    let url = url::Url::parse(url).unwrap();
    url.query_pairs().into_owned().collect()
}

pub const REDIRECT: &str = "http://127.0.0.1:9/callback";
pub const VERIFIER: &str = "verifier-verifier-verifier-verifier-verifier-0001";

impl Harness {
    pub fn resource(&self) -> String {
        format!("{}/mcp", self.origin)
    }

    /// Registers a public client (RFC 7591).
    pub async fn register(&self, redirect_uris: &[&str]) -> String {
        let (_, reply) = post_json(
            &format!("{}/register", self.bound),
            &json!({"client_name": "Test <b>Client</b>", "redirect_uris": redirect_uris}),
        )
        .await;
        reply["client_id"].as_str().unwrap().to_owned()
    }

    pub fn authorize_url(&self, params: &[(&str, &str)]) -> String {
        let mut url = url::Url::parse(&format!("{}/authorize", self.bound)).unwrap();
        url.query_pairs_mut().extend_pairs(params);
        url.to_string()
    }

    pub fn standard_params<'a>(
        &self,
        client_id: &'a str,
        challenge: &'a str,
    ) -> Vec<(&'a str, String)> {
        vec![
            ("response_type", "code".to_owned()),
            ("client_id", client_id.to_owned()),
            ("redirect_uri", REDIRECT.to_owned()),
            ("code_challenge", challenge.to_owned()),
            ("code_challenge_method", "S256".to_owned()),
            ("state", "client-state-1".to_owned()),
            ("resource", self.resource()),
        ]
    }

    /// GET /authorize → consent page (asserted 200).
    pub async fn consent(&self, browser: &mut Browser, client_id: &str) -> Page {
        let challenge = s256_challenge(VERIFIER);
        let params = self.standard_params(client_id, &challenge);
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = browser.get(&self.authorize_url(&params)).await;
        assert_eq!(page.status, 200, "{}", page.body);
        page
    }

    /// Approves a consent page: returns the redirect to the provider.
    pub async fn approve(&self, browser: &mut Browser, consent: &Page, exposure: &str) -> Page {
        let csrf = hidden(&consent.body, "csrf");
        let request = hidden(&consent.body, "request");
        browser
            .post_form(
                &format!("{}/authorize", self.bound),
                &self.origin,
                &[
                    ("csrf", &csrf),
                    ("request", &request),
                    ("decision", "approve"),
                    ("exposure", exposure),
                ],
            )
            .await
    }

    /// The whole browser walk: returns the final redirect to the client.
    pub async fn sign_in(&self, browser: &mut Browser, client_id: &str) -> String {
        let consent = self.consent(browser, client_id).await;
        let to_provider = self.approve(browser, &consent, "all").await;
        assert_eq!(to_provider.status, 302, "{}", to_provider.body);
        let back = browser.get(to_provider.location.as_deref().unwrap()).await;
        assert_eq!(back.status, 302);
        let done = browser.get(back.location.as_deref().unwrap()).await;
        assert_eq!(done.status, 302, "{}", done.body);
        done.location.unwrap()
    }

    pub async fn token(&self, fields: &[(&str, &str)]) -> (u16, Value) {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let response = http()
            .post(format!("{}/token", self.bound))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn exchange(&self, client_id: &str, code: &str, verifier: &str) -> (u16, Value) {
        let resource = self.resource();
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("resource", &resource),
        ])
        .await
    }

    /// Client registered, signed in and tokens obtained.
    pub async fn tokens(&self) -> (String, Value) {
        let client_id = self.register(&[REDIRECT]).await;
        let mut browser = Browser::default();
        let done = self.sign_in(&mut browser, &client_id).await;
        let code = query_of(&done)["code"].clone();
        let (status, tokens) = self.exchange(&client_id, &code, VERIFIER).await;
        assert_eq!(status, 200, "{tokens}");
        (client_id, tokens)
    }

    pub async fn refresh(&self, client_id: &str, refresh: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", client_id),
        ])
        .await
    }

    /// tools/call of dns_records_list with a bearer token: (status, body).
    pub async fn call(&self, bearer: &str) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dns_records_list", "arguments": {"zone_id": "z1"}}});
        let response = http()
            .post(format!("{}/mcp", self.bound))
            .header("authorization", format!("Bearer {bearer}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn revoke(&self, token: &str) -> u16 {
        http()
            .post(format!("{}/revoke", self.bound))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }
}
