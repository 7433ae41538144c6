//! MCP over Streamable HTTP at `/mcp` (stateless, JSON responses), with
//! Host/Origin allowlists (403 before anything else), bearer-token client
//! authentication (401 with RFC 9728 `resource_metadata`), a request body
//! limit (413), header-read, body-read (408) and idle timeouts, a bound on
//! open connections (503) and graceful shutdown. The connection side lives
//! in [`super::connections`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody as _};
use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcRequest};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;

use super::accept::accept_until;
pub use super::allowlist::{default_hosts, host_allowed, origin_allowed};
use super::auth::{TokenTable, bearer_token};
use super::compress::{self, Encoding, LeaveUncompressed, Precompressed};
use super::connections::{Drain, Gate, Timeouts};
use super::content_coding;
use super::fast_call::{self, FastCall, FastState};
use super::health::{self, Health, ReadinessCheck};
use super::jsonrpc_guard::{
    INVALID_PARAMS, METHOD_NOT_FOUND, PARSE_ERROR, Verdict, classify, clip,
};
use super::scoped::{self, metadata_url, unauthorized};
use super::{Core, Handler, ServeError};
use crate::credential::Credential;
use crate::listing::{NarrowedSlot, SPLICE_MAX};

/// How HTTP clients are authenticated.
#[derive(Debug, Clone)]
pub enum ClientAuth {
    /// Every request needs a configured bearer token; it selects the
    /// upstream credential.
    Tokens(TokenTable),
    /// No client authentication (loopback-only testing mode); every request
    /// uses this credential.
    Unauthenticated(Option<Credential>),
    /// Tokens this server issues as an OAuth authorization server; each
    /// wraps the user's upstream token (`--auth oauth`).
    #[cfg(feature = "oauth")]
    OAuth {
        /// The authorization server's setup.
        setup: Arc<crate::oauth::OAuthSetup>,
        /// The server's other credentials, joined to each upstream token.
        secrets: Option<Arc<crate::credential::ServerSecrets>>,
    },
}

/// Options of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Extra allowed `Host` values (`host` or `host:port`); loopback names
    /// with the bound port are always allowed.
    pub allowed_hosts: Vec<String>,
    /// Allowed `Origin` values (`scheme://host[:port]`); requests without
    /// `Origin` always pass.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body.
    pub max_request_bytes: usize,
    /// Time allowed for a client to send a request head (from accept, or
    /// from the first byte of a later request).
    pub header_read_timeout: Duration,
    /// Time allowed for a whole request body, from the end of its head;
    /// a late body is answered 408 and the connection closed.
    pub body_read_timeout: Duration,
    /// Time a keep-alive connection may sit between requests before it is
    /// closed (gracefully).
    pub idle_timeout: Duration,
    /// Most connections open at once: at the bound the oldest without a
    /// request in flight is dropped, and only when all are busy does a new
    /// one get a 503.
    pub max_connections: usize,
    /// Most connections open at once from one peer address (IPv6: one
    /// /64); more get a 429.
    pub max_connections_per_ip: usize,
    /// Client authentication.
    pub auth: ClientAuth,
    /// After SIGTERM, how long in-flight requests may take to finish
    /// before the server exits anyway.
    pub drain_timeout: Duration,
    /// Extra `/readyz` checks (e.g. the OAuth grant store), see
    /// [`ReadinessCheck`].
    pub readiness: Vec<Arc<dyn ReadinessCheck>>,
}

#[derive(Debug)]
struct HttpState {
    core: Arc<Core>,
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<super::oauth_front::OAuthFront>>,
    hosts: Vec<String>,
    origins: Vec<String>,
    auth: ClientAuth,
    max_request_bytes: usize,
    compressed: Arc<Precompressed>,
    visible: scoped::Visibility,
    /// Whether `tools/call` and `ping` take [`fast_call`].
    fast_path: bool,
    /// What [`fast_call::answer`] needs.
    fast: Arc<FastState>,
}

/// The router: `/mcp` and the protected-resource metadata documents.
pub fn router(
    core: Arc<Core>,
    options: &HttpOptions,
    bound: SocketAddr,
) -> (Router, ShutdownHandle) {
    router_with(core, options, bound, true)
}

/// [`router`], with or without the `tools/call` fast path (without it,
/// rmcp answers every request: the tests compare the two).
pub(super) fn router_with(
    core: Arc<Core>,
    options: &HttpOptions,
    bound: SocketAddr,
    fast_path: bool,
) -> (Router, ShutdownHandle) {
    let mut hosts = default_hosts(bound);
    hosts.extend(options.allowed_hosts.iter().cloned());
    #[allow(unused_mut)]
    let mut origins = options.allowed_origins.clone();
    #[cfg(feature = "oauth")]
    let oauth = match &options.auth {
        ClientAuth::OAuth { setup, .. } => {
            let profile = &core.catalogue.profile;
            let server = super::oauth_front::OAuthFront::new(setup.clone(), bound.port(), profile);
            // The public origin is this server: its consent form posts
            // back with that Origin, and proxies forward its Host.
            let (origin, host) = server.origin_and_host();
            origins.push(origin);
            hosts.extend(host);
            Some(server)
        }
        _ => None,
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(options.max_request_bytes);
    let fast = Arc::new(FastState {
        core: core.clone(),
        shutdown: config.cancellation_token.clone(),
    });
    let state = Arc::new(HttpState {
        core: core.clone(),
        #[cfg(feature = "oauth")]
        oauth: oauth.clone(),
        hosts,
        origins,
        auth: options.auth.clone(),
        max_request_bytes: options.max_request_bytes,
        compressed: Precompressed::new(core.listing().clone()),
        visible: scoped::Visibility::default(),
        fast_path,
        fast,
    });
    let health = Health::new(core.clone(), options.readiness.clone());
    let cancel = ShutdownHandle {
        config: config.clone(),
        health: health.clone(),
    };
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(core.clone(), None)),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let mcp = Router::new()
        .route_service("/mcp", service.clone())
        .route_service("/mcp/{*scoped}", service)
        .layer(from_fn_with_state(state.clone(), splice_listing))
        .layer(axum::middleware::from_fn(compress::on_the_fly))
        .layer(from_fn_with_state(state.clone(), authenticate));
    let metadata = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp/{*scoped}",
            get(resource_metadata),
        )
        .with_state(state.clone());
    #[cfg(feature = "oauth")]
    let metadata = match &oauth {
        Some(server) => server.routes(),
        None => metadata,
    };
    let app = Router::new()
        .merge(mcp)
        .merge(metadata)
        .fallback(not_found)
        .layer(axum::middleware::from_fn(content_coding::refuse_encoded))
        .layer(from_fn_with_state(state, guard))
        // Probes skip the allowlists and authentication (see `health`).
        .merge(health::routes(health));
    (app, cancel)
}

/// Marks the server as draining and stops rmcp's in-flight work when the
/// server shuts down.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    config: StreamableHttpServerConfig,
    health: Arc<Health>,
}

impl ShutdownHandle {
    /// `/readyz` answers 503 from now on.
    pub fn start_draining(&self) {
        self.health.start_draining();
    }

    /// Cancels every in-flight MCP request.
    pub fn cancel(&self) {
        self.config.cancellation_token.cancel();
    }
}

/// Binds `listen`, prints `listening on http://IP:PORT/mcp` to stderr, and
/// serves until `shutdown` resolves, then drains (see
/// [`serve_listener_until`]; `force` ends the drain at once).
///
/// # Errors
///
/// When the address cannot be bound, or `force` ended the drain.
pub async fn serve_http(
    core: Arc<Core>,
    listen: SocketAddr,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
    force: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| ServeError::Io {
            context: format!("cannot listen on {listen}"),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Io {
        context: "cannot read the bound address".into(),
        source,
    })?;
    eprintln!("listening on http://{bound}/mcp");
    serve_listener_until(listener, core, options, shutdown, force).await
}

/// [`serve_listener_until`] without a way to cut the drain short.
///
/// # Errors
///
/// When the listener's address cannot be read.
pub async fn serve_listener(
    listener: TcpListener,
    core: Arc<Core>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    serve_listener_until(listener, core, options, shutdown, std::future::pending()).await
}

/// Serves on an already bound listener until `shutdown` resolves, then
/// stops accepting and lets in-flight requests finish (at most
/// `drain_timeout`; `/readyz` answers 503 meanwhile). When `force`
/// resolves during the drain (a second SIGTERM or SIGINT), in-flight work
/// is cancelled and the drain ends at once with
/// [`ServeError::DrainInterrupted`]; before the drain, `force` is ignored.
///
/// Each connection is admitted by a [`Gate`] of `max_connections`,
/// `max_connections_per_ip` per peer address (the rest get a 503 or 429),
/// and driven by [`super::connections::drive`], which applies the header,
/// idle and body timeouts.
///
/// # Errors
///
/// When the listener's address cannot be read, or `force` ended the drain.
pub async fn serve_listener_until(
    listener: TcpListener,
    core: Arc<Core>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
    force: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let bound = listener.local_addr().map_err(|source| ServeError::Io {
        context: "cannot read the bound address".into(),
        source,
    })?;
    let (app, cancel) = router(core, &options, bound);
    let timeouts = Timeouts {
        header_read: options.header_read_timeout,
        idle: options.idle_timeout,
        body_read: options.body_read_timeout,
    };
    let gate = Gate::new(options.max_connections, options.max_connections_per_ip);
    let drain = Drain::default();
    accept_until(&listener, &app, &gate, timeouts, &drain, shutdown).await;
    drop(listener);
    cancel.start_draining();
    tracing::info!(
        connections = gate.open(),
        "shutting down: stopped accepting, finishing in-flight requests"
    );
    let limit = options.drain_timeout;
    let forced = tokio::select! {
        () = drain.finish() => {
            tracing::info!("in-flight requests finished");
            false
        }
        () = tokio::time::sleep(limit) => {
            tracing::warn!(secs = limit.as_secs_f64(), "in-flight requests did not finish within the drain timeout");
            false
        }
        () = force => {
            tracing::warn!("second signal: cancelling in-flight requests and exiting now");
            true
        }
    };
    cancel.cancel();
    if forced {
        return Err(ServeError::DrainInterrupted);
    }
    Ok(())
}

fn text_response(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_owned(),
    )
        .into_response()
}

fn request_host(req: &Request) -> Option<&str> {
    req.headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
}

async fn guard(State(state): State<Arc<HttpState>>, req: Request, next: Next) -> Response {
    // Refused unread, as in `authenticate`.
    let unread = has_body(req.headers());
    if !host_allowed(request_host(&req), &state.hosts) {
        return closing_if(
            unread,
            text_response(
                StatusCode::FORBIDDEN,
                "Forbidden: the Host header is not allowed (see --allowed-host)",
            ),
        );
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    if !origin_allowed(origin, &state.origins) {
        return closing_if(
            unread,
            text_response(
                StatusCode::FORBIDDEN,
                "Forbidden: the Origin header is not allowed (see --allowed-origin)",
            ),
        );
    }
    next.run(req).await
}

async fn authenticate(
    State(state): State<Arc<HttpState>>,
    mut req: Request,
    next: Next,
) -> Response {
    // Refused before its body is read: the connection cannot carry another
    // request (hyper closes it once it sees the body unread), so the
    // response says so. Without `Connection: close` a client may send its
    // next request on that connection and see it closed without an answer.
    let unread = has_body(req.headers());
    let refuse = |resp: Response| closing_if(unread, resp);
    // A scoped URL (`/mcp/accounts/A`) binds the session to its values.
    let scope = match scoped::scope_of(&state.core, req.uri().path()) {
        Ok(scope) => scope,
        Err(resp) => return refuse(*resp),
    };
    // An OAuth request's grant, to answer a refusal with a step-up.
    #[cfg(feature = "oauth")]
    let mut stepping: Option<(Arc<crate::authz::GrantAccess>, String)> = None;
    let credential = match &state.auth {
        ClientAuth::Unauthenticated(_) if scope.is_some() => {
            return refuse(scoped::needs_client_auth());
        }
        ClientAuth::Unauthenticated(c) => c.clone(),
        ClientAuth::Tokens(table) => {
            let presented = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer_token);
            match presented.and_then(|t| table.authenticate(t)) {
                Some(c) => {
                    req.extensions_mut().insert(match &scope {
                        Some(s) => crate::authz::Connection::ScopedClientToken(Arc::clone(s)),
                        None => crate::authz::Connection::ClientToken,
                    });
                    Some(c)
                }
                None => {
                    let host = request_host(&req).unwrap_or("localhost");
                    let metadata = metadata_url(host, scope.as_deref());
                    return refuse(unauthorized(&metadata, presented.is_some()));
                }
            }
        }
        #[cfg(feature = "oauth")]
        ClientAuth::OAuth { secrets, .. } => {
            let Some(server) = &state.oauth else {
                return refuse(text_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "OAuth is not set up",
                ));
            };
            let presented = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer_token);
            let metadata = server.resource_metadata_url_at(scope.as_deref());
            let Some(presented) = presented else {
                return refuse(unauthorized(&metadata, false));
            };
            match server.authenticate_at(presented, scope.as_ref()).await {
                Ok(session) => {
                    let connection = server.connection(&session);
                    if let crate::authz::Connection::OAuth(grant) = &connection {
                        stepping = Some((Arc::clone(grant), session.client_id.clone()));
                    }
                    req.extensions_mut().insert(connection);
                    let credential = match Credential::new(&session.upstream_token, "oauth grant") {
                        Ok(c) => match secrets {
                            Some(s) => c.bind(s),
                            None => c,
                        },
                        // An upstream token the runtime cannot send.
                        Err(_) => return refuse(unauthorized(&metadata, true)),
                    };
                    if let Some(scope) = &scope
                        && let Err(resp) = state
                            .visible
                            .verify(&state.core, &session.grant_id, scope, &credential)
                            .await
                    {
                        return refuse(*resp);
                    }
                    Some(credential)
                }
                Err(crate::oauth::Rejection::InvalidToken) => {
                    return refuse(unauthorized(&metadata, true));
                }
                Err(crate::oauth::Rejection::Unavailable) => {
                    return refuse(text_response(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Service Unavailable: the grant store or the upstream provider cannot be reached",
                    ));
                }
            }
        }
    };
    // The client token goes no further than this layer.
    req.headers_mut().remove(header::AUTHORIZATION);
    if let Some(c) = credential {
        req.extensions_mut().insert(c);
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > state.max_request_bytes as u64) {
        return refuse(too_large(state.max_request_bytes));
    }
    // Every POST body is read here, under the body-read deadline (see
    // `connections::TimedBody`): rmcp would answer a non-JSON one 415
    // without reading it, but a stalled body gets 408 whatever its type.
    if req.method() == http::Method::POST {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, state.max_request_bytes).await {
            Ok(b) => b,
            Err(e) => {
                let limit = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                // A late body also ends here; `ConnService` turns whatever
                // this answers into the 408.
                return if limit {
                    too_large(state.max_request_bytes)
                } else {
                    text_response(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: the request body could not be read",
                    )
                };
            }
        };
        // Not JSON, or bad params of a method this server implements (which
        // rmcp would answer with -32601): answered here. Everything else,
        // wrong message shapes and content types included, is rmcp's (see
        // `splice_listing`).
        let mut parts = parts;
        let json = is_json(&parts.headers);
        // A plain `tools/call` is read once, into its parts; every other
        // body is classified as before.
        let fast = (json && state.fast_path)
            .then(|| FastCall::decode(&parts.headers, &bytes))
            .flatten();
        let verdict = match fast {
            Some(fast) => {
                parts.extensions.insert(fast);
                Verdict::Ignore
            }
            None if json => classify(&bytes),
            None => Verdict::Ignore,
        };
        match verdict {
            Verdict::Reply(error) => match error["error"]["code"].as_i64() {
                Some(PARSE_ERROR) => {
                    return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
                }
                Some(INVALID_PARAMS | METHOD_NOT_FOUND) => {
                    return axum::Json(error).into_response();
                }
                _ => {}
            },
            Verdict::Message(message) if lists_tools(&message) => {
                parts.extensions.insert(ListsTools);
                parts.extensions.insert(NarrowedSlot::default());
            }
            Verdict::Message(mut message) if state.fast_path => {
                if let Some(fast) = FastCall::of(&parts.headers, &mut message) {
                    parts.extensions.insert(fast);
                }
            }
            Verdict::Message(_) | Verdict::Ignore => {}
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    #[cfg(feature = "oauth")]
    if let (Some((grant, client_id)), Some(server)) = (stepping, &state.oauth) {
        let asked = crate::oauth::server::step_up::requested_delivery(req.uri().query());
        let resp = next.run(req).await;
        return super::oauth_front::respond(server, &grant, &client_id, asked, resp).await;
    }
    next.run(req).await
}

/// Whether a request announces a body (chunks, or a length that is not
/// zero).
fn has_body(headers: &http::HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.to_str().map_or(true, |v| v.trim() != "0"))
}

/// `resp`, with `Connection: close` when `close`.
fn closing_if(close: bool, mut resp: Response) -> Response {
    if close {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        })
}

fn too_large(limit: usize) -> Response {
    text_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("Payload Too Large: the request body exceeds {limit} bytes"),
    )
}

/// A JSON-RPC error without an id (the request could not be read).
fn jsonrpc_error(code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

async fn resource_metadata(State(state): State<Arc<HttpState>>, req: Request) -> Response {
    let host = request_host(&req).unwrap_or("localhost");
    scoped::static_metadata(&state.core, host, req.uri().path())
}

async fn not_found() -> Response {
    text_response(StatusCode::NOT_FOUND, "Not Found: the MCP endpoint is /mcp")
}

/// Marks a request that is a `tools/list` (only its response holds the
/// listing placeholder).
#[derive(Debug, Clone, Copy)]
struct ListsTools;

fn lists_tools(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::ListToolsRequest(_),
            ..
        })
    )
}

/// Answers a request marked [`FastCall`] ([`fast_call::answer`]: no
/// listing, never a 415, so nothing below applies to it); replaces the
/// listing placeholder in `tools/list` responses, and turns rmcp's
/// plain-text answer to a body that is JSON but no JSON-RPC message into
/// a JSON-RPC `Invalid Request` error.
async fn splice_listing(
    State(state): State<Arc<HttpState>>,
    mut req: Request,
    next: Next,
) -> Response {
    if let Some(fast) = req.extensions_mut().remove::<FastCall>() {
        return fast_call::answer(&state.fast, req, fast).await;
    }
    let listing = req.extensions().get::<ListsTools>().is_some();
    let narrowed = req.extensions().get::<NarrowedSlot>().cloned();
    let encoding = Encoding::negotiate(req.headers());
    let resp = next.run(req).await;
    if resp.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, SPLICE_MAX)
            .await
            .unwrap_or_default();
        if let Some(detail) = bytes.strip_prefix(b"fail to deserialize request body ".as_slice()) {
            let detail = clip(&String::from_utf8_lossy(detail));
            return jsonrpc_error(
                -32600,
                &format!("Invalid Request: not a JSON-RPC request or notification ({detail})"),
            );
        }
        return Response::from_parts(parts, Body::from(bytes));
    }
    if !listing {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let small = resp
        .body()
        .size_hint()
        .exact()
        .is_some_and(|n| n <= SPLICE_MAX as u64);
    if !is_json || !small {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, SPLICE_MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "could not read a response body");
            return text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
        }
    };
    // A narrowed session's listing, left by the handler, or the shared one.
    let spliced = match narrowed.and_then(|slot| slot.take()) {
        Some(listing) => state.core.listing().splice_narrowed(&bytes, listing),
        None => state.core.listing().splice(&bytes),
    };
    let body = match spliced {
        Some(spliced) => {
            let shared = spliced.variant.is_some();
            let packed = if shared {
                state.compressed.answer(&spliced, encoding)
            } else {
                state.compressed.answer_narrowed(&spliced, encoding)
            };
            match packed {
                Some(packed) => {
                    if shared {
                        crate::metrics::listing(encoding.as_str(), packed.len());
                    }
                    compress::mark(&mut parts.headers, encoding);
                    packed.into_body()
                }
                None if shared => {
                    crate::metrics::listing("identity", spliced.len());
                    parts.extensions.insert(LeaveUncompressed);
                    spliced.into_body()
                }
                // Until its compressed form is made, the on-the-fly layer
                // compresses a narrowed listing.
                None => spliced.into_body(),
            }
        }
        None => Body::from(bytes),
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, body)
}

#[cfg(test)]
#[path = "http_tests.rs"]
pub(crate) mod tests;
