//! Scoped URLs in the harness: a catalogue with an account-scoped tool and
//! the scoped path `/accounts/{account_id}`, the upstream's account
//! endpoints (logging every request), and a sign-in for a given resource.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolforge_runtime::catalogue::{
    Catalogue, Method, ParamDef, ParamLocation, ParamStyle, Product, Route, SharedText, ToolDef,
};
use toolforge_runtime::oauth::crypto::s256_challenge;
use toolforge_runtime::profile::{ScopedPath, SkillGroup};

use super::{Browser, CATALOGUE, DNS_LIST, Harness, REDIRECT, Shared, VERIFIER, http, query_of};

/// `GET /accounts/{account_id}/workers/scripts`, fixed at a scoped URL.
pub static WORKERS_LIST: ToolDef = ToolDef {
    name: "workers_scripts_list",
    operation_id: "workers-scripts-list",
    product: "workers",
    title: "List Workers scripts",
    description: "Lists an account's Workers scripts.",
    input_schema: SharedText::Text(
        r#"{"type":"object","properties":{"account_id":{"type":"string"},"tag":{"type":"string"}},"required":["account_id"],"additionalProperties":false}"#,
    ),
    permissions: &["Workers Scripts Read"],
    routes: &[Route {
        when: None,
        template: "/accounts/{account_id}/workers/scripts",
    }],
    params: &[ParamDef {
        arg: "account_id",
        name: "account_id",
        location: ParamLocation::Path,
        style: ParamStyle::Simple,
        explode: false,
        required: true,
        allow_reserved: false,
    }],
    method: Method::Get,
    ..DNS_LIST
};

/// The harness catalogue with `/mcp/accounts/{account_id}`.
pub static SCOPED: Catalogue = Catalogue {
    profile: toolforge_runtime::profile::Profile {
        scoped_paths: &[ScopedPath {
            template: "/accounts/{account_id}",
            check: Some("/accounts/{account_id}"),
        }],
        ..CATALOGUE.profile
    },
    products: &[
        Product {
            name: "dns_records",
            tools: std::slice::from_ref(&DNS_LIST),
        },
        Product {
            name: "workers",
            tools: std::slice::from_ref(&WORKERS_LIST),
        },
    ],
    ..CATALOGUE
};

/// The harness catalogue with Cloudflare's two scoped paths: an account,
/// and a zone in an account (checked with `GET /zones/{zone_id}`).
pub static ZONE_SCOPED: Catalogue = Catalogue {
    profile: toolforge_runtime::profile::Profile {
        scoped_paths: &[
            ScopedPath {
                template: "/accounts/{account_id}",
                check: Some("/accounts/{account_id}"),
            },
            ScopedPath {
                template: "/accounts/{account_id}/zones/{zone_id}",
                check: Some("/zones/{zone_id}"),
            },
        ],
        ..CATALOGUE.profile
    },
    ..SCOPED
};

/// The harness catalogue with skills of forge.json `skill_groups` instead
/// of one per product.
pub static GROUPED: Catalogue = Catalogue {
    profile: toolforge_runtime::profile::Profile {
        skill_groups: &[
            SkillGroup {
                name: "dns-read",
                tools: &["dns_records_list"],
            },
            SkillGroup {
                name: "dns-write",
                tools: &["dns_records_create"],
            },
        ],
        ..CATALOGUE.profile
    },
    ..CATALOGUE
};

fn bearer(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned()
}

fn answer(p: &Shared, headers: &HeaderMap, account: &str, request: String) -> Response {
    let mut p = p.lock().unwrap();
    p.api_requests.push(request);
    let token = bearer(headers);
    if !p.access.contains_key(&token) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}))).into_response();
    }
    if p.hidden_accounts.iter().any(|a| a == account) {
        return (StatusCode::FORBIDDEN, axum::Json(json!({"success": false, "errors": [{"code": 9109, "message": "Unauthorized to access requested resource"}]}))).into_response();
    }
    axum::Json(json!({"success": true, "errors": [], "messages": [], "result": {"id": account}}))
        .into_response()
}

/// `GET /accounts/{account}`: the account's details (the scoped check).
pub async fn account(
    State(p): State<Shared>,
    Path(account): Path<String>,
    headers: HeaderMap,
) -> Response {
    let request = format!("GET /accounts/{account}");
    answer(&p, &headers, &account, request)
}

/// `GET /zones/{zone}`: the zone's details, naming its account when the
/// provider's `zone_accounts` has one (the zone-scoped check).
pub async fn zone(
    State(p): State<Shared>,
    Path(zone): Path<String>,
    headers: HeaderMap,
) -> Response {
    let mut p = p.lock().unwrap();
    p.api_requests.push(format!("GET /zones/{zone}"));
    if !p.access.contains_key(&bearer(&headers)) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}))).into_response();
    }
    let mut result = json!({"id": zone, "name": "example.com"});
    if let Some(account) = p.zone_accounts.get(&zone) {
        result["account"] = json!({"id": account, "name": "Account"});
    }
    axum::Json(json!({"success": true, "errors": [], "messages": [], "result": result}))
        .into_response()
}

/// `GET /accounts/{account}/workers/scripts`.
pub async fn scripts(
    State(p): State<Shared>,
    Path(account): Path<String>,
    headers: HeaderMap,
) -> Response {
    let request = format!("GET /accounts/{account}/workers/scripts");
    answer(&p, &headers, &account, request)
}

/// What a JSON-RPC POST to a path under the server answered.
pub struct Answer {
    pub status: u16,
    pub challenge: Option<String>,
    pub body: Value,
}

impl Harness {
    /// Signs in a new client asking for `resource` (exchanging the code
    /// with the same `resource`): the client id and the token response.
    pub async fn tokens_for(&self, resource: &str) -> (String, Value) {
        self.tokens_for_choosing(resource, "all").await
    }

    /// [`Harness::tokens_for`] with the consent template `exposure`.
    pub async fn tokens_for_choosing(&self, resource: &str, exposure: &str) -> (String, Value) {
        let client_id = self.register(&[REDIRECT]).await;
        let mut browser = Browser::default();
        let challenge = s256_challenge(VERIFIER);
        let params: Vec<(&str, String)> = self
            .standard_params(&client_id, &challenge)
            .into_iter()
            .map(|(k, v)| {
                if k == "resource" {
                    (k, resource.to_owned())
                } else {
                    (k, v)
                }
            })
            .collect();
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let consent = browser.get(&self.authorize_url(&params)).await;
        assert_eq!(consent.status, 200, "{}", consent.body);
        let to_provider = self.approve(&mut browser, &consent, exposure).await;
        assert_eq!(to_provider.status, 302, "{}", to_provider.body);
        let back = browser.get(to_provider.location.as_deref().unwrap()).await;
        let done = browser.get(back.location.as_deref().unwrap()).await;
        assert_eq!(done.status, 302, "{}", done.body);
        let code = query_of(&done.location.unwrap())["code"].clone();
        let (status, tokens) = self
            .token(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("client_id", &client_id),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("resource", resource),
            ])
            .await;
        assert_eq!(status, 200, "{tokens}");
        (client_id, tokens)
    }

    /// One JSON-RPC request to `path` (`/mcp/accounts/a1`).
    pub async fn rpc_at(&self, path: &str, bearer: &str, method: &str, params: Value) -> Answer {
        self.rpc_at_in("2025-11-25", path, bearer, method, params)
            .await
    }

    /// [`Harness::rpc_at`] in protocol era `version` (2026-07-28 carries
    /// its version in `_meta` and mirrors method and name in headers).
    pub async fn rpc_at_in(
        &self,
        version: &str,
        path: &str,
        bearer: &str,
        method: &str,
        mut params: Value,
    ) -> Answer {
        let mut request = http()
            .post(format!("{}{path}", self.bound))
            .header("authorization", format!("Bearer {bearer}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version);
        if version >= "2026-07-28" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "scoped-test", "version": "1"}
            });
            request = request.header("mcp-method", method);
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                request = request.header("mcp-name", name.to_owned());
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = request.body(body.to_string()).send().await.unwrap();
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap();
        Answer {
            status,
            challenge,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        }
    }
}
