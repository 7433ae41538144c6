//! The authorization server's HTTP side: metadata (RFC 8414, RFC 9728),
//! `/authorize` with the consent page, the upstream callback, `/token`,
//! `/revoke` and optional `/register`.

mod authorize;
mod callback;
mod guard;
mod page;
mod purge;
mod resource;
mod session;
pub mod step_up;
mod token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

pub use purge::purge_once;
pub use session::{Rejection, Session};

use super::clients::ClientResolver;
use super::config::{OAuthConfig, ScopeEntry};
use super::crypto::ServerKeys;
use super::store::GrantStore;
use super::upstream::UpstreamClient;

/// Everything `--auth oauth` needs, prepared before the listener binds.
#[derive(Debug)]
pub struct OAuthSetup {
    /// The configuration.
    pub config: OAuthConfig,
    /// Keys derived from the server secret.
    pub keys: ServerKeys,
    /// The grant store.
    pub store: Arc<dyn GrantStore>,
    /// The upstream provider client.
    pub upstream: UpstreamClient,
    /// The scope catalogue.
    pub scopes: Vec<ScopeEntry>,
    /// Each skill's tool permissions (sorted), for the consent page and
    /// for narrowing the requested upstream scopes to chosen skills: one
    /// skill per product, or the profile's skill groups.
    pub products: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// The scoped URLs of the served API (`/mcp/accounts/A`), which the server
/// also issues tokens for: given to [`OAuthServer::new`] by the MCP server,
/// which knows its profile's scoped paths.
pub trait ScopedUrls: Send + Sync + std::fmt::Debug {
    /// The canonical spelling of the path `suffix` after `/mcp`, when it is
    /// one of the scoped URLs spelled exactly (no trailing slash, query,
    /// fragment, encoding, dot segment or case change).
    fn canonical(&self, suffix: &str) -> Option<String>;
}

/// No scoped URLs: tokens are issued for `/mcp` only.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoScopedUrls;

impl ScopedUrls for NoScopedUrls {
    fn canonical(&self, _suffix: &str) -> Option<String> {
        None
    }
}

/// The running authorization server (the setup plus the bound origin).
#[derive(Debug)]
pub struct OAuthServer {
    setup: Arc<OAuthSetup>,
    origin: String,
    resource: String,
    clients: ClientResolver,
    cache: session::TokenCache,
    refreshing: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    guards: guard::Guards,
    /// The scoped URLs (resources besides `/mcp`).
    scoped: Arc<dyn ScopedUrls>,
    _purge: Option<purge::PurgeTask>,
}

/// The current Unix time in seconds.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl OAuthServer {
    /// The server for a setup bound to `port` (for a `{port}` public URL),
    /// issuing tokens for `/mcp` and the profile's `scoped` URLs.
    /// On a Tokio runtime it starts the scheduled purge of the grant store
    /// (see `retention`), which stops when the server is dropped.
    pub fn new(setup: Arc<OAuthSetup>, port: u16, scoped: Arc<dyn ScopedUrls>) -> Arc<Self> {
        let origin = setup.config.public_origin(port);
        let resource = format!("{origin}/mcp");
        let clients = ClientResolver::new(setup.config.cimd.clone(), &setup.config.limits);
        let cache = session::TokenCache::new(setup.config.token_cache_secs);
        let guards = guard::Guards::new(&setup.config.limits);
        let purge = purge::spawn(setup.store.clone(), setup.config.retention.clone());
        Arc::new(Self {
            setup,
            origin,
            resource,
            clients,
            cache,
            refreshing: Mutex::new(HashMap::new()),
            guards,
            scoped,
            _purge: purge,
        })
    }

    /// The issuer (the public origin).
    pub fn issuer(&self) -> &str {
        &self.origin
    }

    /// The protected resource (`<origin>/mcp`).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The RFC 9728 metadata URL for `WWW-Authenticate`.
    pub fn resource_metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.origin)
    }

    /// The grant store (for `/readyz`).
    pub fn store(&self) -> &Arc<dyn GrantStore> {
        &self.setup.store
    }

    /// The public origin as an `Origin` header value and its `Host`.
    pub fn origin_and_host(&self) -> (String, Option<String>) {
        let host = url::Url::parse(&self.origin).ok().and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            })
        });
        (self.origin.clone(), host)
    }

    fn callback_url(&self) -> String {
        format!("{}/oauth/callback", self.origin)
    }

    fn secure_cookies(&self) -> bool {
        self.origin.starts_with("https://")
    }

    /// The authorization server's routes.
    pub fn routes(self: &Arc<Self>) -> Router {
        let mut router = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(authorization_server_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server/mcp",
                get(authorization_server_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource",
                get(protected_resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(protected_resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource/mcp/{*rest}",
                get(resource::scoped_metadata),
            )
            .route("/authorize", get(authorize::show).post(authorize::decide))
            .route("/oauth/callback", get(callback::complete))
            .route("/token", post(token::token))
            .route("/revoke", post(token::revoke_route));
        if self.setup.config.dynamic_registration {
            router = router.route("/register", post(token::register));
        }
        // Bodies past the OAuth cap are refused unread (413), not buffered
        // up to axum's 2 MB default.
        router
            .layer(axum::extract::DefaultBodyLimit::max(
                self.setup.config.limits.max_body_bytes,
            ))
            .with_state(self.clone())
    }

    /// The RFC 8414 document.
    pub fn authorization_server_metadata(&self) -> serde_json::Value {
        let o = &self.origin;
        let mut doc = json!({
            "issuer": o,
            "authorization_endpoint": format!("{o}/authorize"),
            "token_endpoint": format!("{o}/token"),
            "revocation_endpoint": format!("{o}/revoke"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
            "scopes_supported": self.setup.scopes.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            "resource_indicators_supported": true,
        });
        if self.setup.config.dynamic_registration {
            doc["registration_endpoint"] = json!(format!("{o}/register"));
        }
        doc
    }

    /// The RFC 9728 document.
    pub fn protected_resource_metadata(&self) -> serde_json::Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.origin],
            "bearer_methods_supported": ["header"],
            "scopes_supported": self.setup.scopes.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            "resource_name": self.setup.config.upstream.name,
        })
    }

    fn refresh_lock(&self, grant_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.refreshing.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        if map.len() > 10_000 {
            map.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        map.entry(grant_id.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
            .clone()
    }
}

async fn authorization_server_metadata(
    axum::extract::State(server): axum::extract::State<Arc<OAuthServer>>,
) -> Response {
    json_no_store(StatusCode::OK, server.authorization_server_metadata())
}

async fn protected_resource_metadata(
    axum::extract::State(server): axum::extract::State<Arc<OAuthServer>>,
) -> Response {
    json_no_store(StatusCode::OK, server.protected_resource_metadata())
}

/// A JSON response with `Cache-Control: no-store`.
fn json_no_store(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
        .headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// An OAuth error response (RFC 6749 §5.2).
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    json_no_store(
        status,
        json!({"error": error, "error_description": description}),
    )
}
