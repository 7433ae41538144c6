//! `GET /authorize` (checks the request, shows the consent page) and
//! `POST /authorize` (the consent decision: on approval, the redirect to
//! the upstream provider with this server's own PKCE and a signed,
//! expiring, single-use state bound to the browser).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};

use super::super::crypto::s256_challenge;
use super::super::model::{Exposure, PendingSignIn};
use super::page;
use super::{OAuthServer, now};
use crate::clients::ClientInfo;
use crate::limits::Peer;

/// Cookie binding a browser to its consent form and sign-in.
pub(super) const BROWSER_COOKIE: &str = "tf_browser";
/// Cookie binding a browser to the upstream sign-in it started.
pub(super) const SIGN_IN_COOKIE: &str = "tf_signin";
/// Cookie remembering which clients this browser approved (signed).
const APPROVED_COOKIE: &str = "tf_approved";

/// The checked authorization request, carried signed through the consent
/// form and sealed into the sign-in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct AuthRequest {
    /// Client id.
    pub client_id: String,
    /// Exact redirect URI.
    pub redirect_uri: String,
    /// PKCE S256 challenge.
    pub code_challenge: String,
    /// The client's state, echoed back.
    #[serde(default)]
    pub state: Option<String>,
    /// When the signed request stops being accepted.
    pub expires_at: i64,
    /// What the sign-in's state derives from: random for each consent
    /// form, so a replayed form finds its sign-in already stored; derived
    /// from the request for a remembered approval, so a repeated `GET`
    /// stores nothing new either.
    #[serde(default)]
    pub nonce: String,
    /// The catalogue scopes the client asked for with `scope=` (a step-up
    /// asks for the scopes held plus the missing one): preselected as the
    /// advanced template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// The exposure this browser approved before for the client, kept by a
    /// step-up so it adds the scope without widening the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Exposure>,
    /// The RFC 8707 resource the grant is for (`None`: `/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

/// What the upstream callback needs, sealed into the pending sign-in.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SignIn {
    /// The downstream request.
    pub request: AuthRequest,
    /// The consent choice.
    pub exposure: Exposure,
    /// Upstream scopes requested.
    pub scopes: Vec<String>,
    /// This server's PKCE verifier for the upstream provider.
    pub verifier: String,
}

fn params(query: Option<&str>) -> Result<Vec<(String, String)>, ()> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let mut seen = BTreeSet::new();
    for (k, _) in &pairs {
        // RFC 6749 §3.1: parameters must not be repeated.
        if !seen.insert(k.as_str()) {
            return Err(());
        }
    }
    Ok(pairs)
}

fn get<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The client's redirect URI with `params` added (error or code), `iss`
/// always included (RFC 9207).
pub(super) fn client_redirect(
    server: &OAuthServer,
    redirect_uri: &str,
    params: &[(&str, &str)],
    state: Option<&str>,
) -> String {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return redirect_uri.to_owned();
    };
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
        if let Some(state) = state {
            q.append_pair("state", state);
        }
        q.append_pair("iss", server.issuer());
    }
    url.to_string()
}

fn error_redirect(
    server: &OAuthServer,
    redirect_uri: &str,
    state: Option<&str>,
    error: &str,
    description: &str,
) -> Response {
    let location = client_redirect(
        server,
        redirect_uri,
        &[("error", error), ("error_description", description)],
        state,
    );
    page::redirect(&location, &[])
}

fn valid_challenge(challenge: &str) -> bool {
    (43..=128).contains(&challenge.len())
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// `GET /authorize`.
pub(super) async fn show(
    State(server): State<Arc<OAuthServer>>,
    Peer(peer): Peer,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let Ok(pairs) = params(query.as_deref()) else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Invalid request",
            "A parameter is repeated.",
        );
    };
    let Some(client_id) = get(&pairs, "client_id") else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Invalid request",
            "client_id is missing.",
        );
    };
    let Some(redirect_uri) = get(&pairs, "redirect_uri") else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Invalid request",
            "redirect_uri is missing.",
        );
    };
    // The cheap checks come before a metadata document is fetched: a URI
    // no client could have registered is refused without one.
    if redirect_uri.len() > server.setup.config.limits.max_redirect_uri_bytes
        || !crate::clients::redirect_uri_acceptable(redirect_uri)
    {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Invalid redirect URI",
            "redirect_uri is not one the client registered.",
        );
    }
    let client = match server
        .clients
        .resolve(client_id, peer, server.setup.store.as_ref())
        .await
    {
        Ok(c) => c,
        Err(crate::clients::ClientError::TooMany(secs)) => {
            return super::guard::too_many_page(secs);
        }
        Err(e) => {
            return page::error(StatusCode::BAD_REQUEST, "Unknown client", &e.to_string());
        }
    };
    // Exact string match against what the client registered: no case
    // folding, no trailing-slash or port leniency.
    if !client.redirect_uris.iter().any(|u| u == redirect_uri)
        || !crate::clients::redirect_uri_acceptable(redirect_uri)
    {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Invalid redirect URI",
            "redirect_uri is not one the client registered.",
        );
    }
    let state = get(&pairs, "state");
    if state.is_some_and(|s| s.len() > 2048) {
        return error_redirect(
            &server,
            redirect_uri,
            None,
            "invalid_request",
            "state is too long",
        );
    }
    if get(&pairs, "response_type") != Some("code") {
        return error_redirect(
            &server,
            redirect_uri,
            state,
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    let Some(challenge) = get(&pairs, "code_challenge") else {
        return error_redirect(
            &server,
            redirect_uri,
            state,
            "invalid_request",
            "PKCE is required: code_challenge is missing",
        );
    };
    if get(&pairs, "code_challenge_method") != Some("S256") {
        return error_redirect(
            &server,
            redirect_uri,
            state,
            "invalid_request",
            "code_challenge_method must be S256",
        );
    }
    if !valid_challenge(challenge) {
        return error_redirect(
            &server,
            redirect_uri,
            state,
            "invalid_request",
            "code_challenge is not a base64url S256 challenge",
        );
    }
    // RFC 8707: the resource becomes the grant's (and its path constraint).
    let resource = match get(&pairs, "resource") {
        Some(given) => match server.resource_for(given) {
            Some(resource) => resource,
            None => {
                return error_redirect(
                    &server,
                    redirect_uri,
                    state,
                    "invalid_target",
                    "resource is not this server's MCP endpoint or one of its scoped URLs",
                );
            }
        },
        None => server.resource().to_owned(),
    };
    let mut request = AuthRequest {
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.to_owned(),
        code_challenge: challenge.to_owned(),
        state: state.map(str::to_owned),
        expires_at: now()
            + i64::try_from(server.setup.config.lifetimes.sign_in_secs).unwrap_or(600),
        nonce: String::new(),
        scopes: asked_scopes(&server, get(&pairs, "scope")),
        base: None,
        resource: Some(resource),
    };
    let (browser, mut cookies) = match page::read_cookie(&headers, BROWSER_COOKIE)
        .and_then(|v| server.setup.keys.verify("browser", v))
    {
        Some(nonce) => (nonce.to_owned(), Vec::new()),
        None => {
            let Ok(nonce) = server.setup.keys.new_token("") else {
                return unavailable();
            };
            let cookie = page::cookie(
                BROWSER_COOKIE,
                &server.setup.keys.sign("browser", &nonce),
                86_400,
                server.secure_cookies(),
            );
            (nonce, vec![cookie])
        }
    };
    let approved = remembered(&server, &headers, &client, redirect_uri);
    match approved {
        // Asking for scopes: the user consents again, to exactly those.
        Some(exposure) if request.scopes.is_some() => request.base = Some(exposure),
        Some(exposure) => {
            request.nonce = remembered_nonce(&server, &browser, &request);
            return start_sign_in(&server, peer, request, exposure, cookies).await;
        }
        None => {}
    }
    let Ok(nonce) = server.setup.keys.new_token("") else {
        return unavailable();
    };
    request.nonce = nonce;
    let Ok(json) = serde_json::to_vec(&request) else {
        return unavailable();
    };
    let signed_request = server
        .setup
        .keys
        .sign("authorize-request", &URL_SAFE_NO_PAD.encode(json));
    let csrf = server.setup.keys.sign("csrf", &browser);
    let host = url::Url::parse(redirect_uri)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let products: Vec<String> = server.setup.products.keys().cloned().collect();
    let body = page::consent(&page::Consent {
        client: client.name.as_deref().unwrap_or(&client.client_id),
        client_id: &client.client_id,
        redirect_host: &host,
        provider: &server.setup.config.upstream.name,
        products: &products,
        scopes: &server.setup.scopes,
        preselected: request.scopes.as_deref(),
        request: &signed_request,
        csrf: &csrf,
    });
    let mut response = page::html(StatusCode::OK, body);
    for cookie in cookies.drain(..) {
        if let Ok(v) = http::HeaderValue::from_str(&cookie) {
            response.headers_mut().append(http::header::SET_COOKIE, v);
        }
    }
    response
}

fn unavailable() -> Response {
    page::error(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again",
        "The server could not complete the request.",
    )
}

#[derive(Serialize, Deserialize)]
struct Approval {
    client_id: String,
    redirect_uri: String,
    exposure: Exposure,
}

fn approvals(server: &OAuthServer, headers: &HeaderMap) -> Vec<Approval> {
    page::read_cookie(headers, APPROVED_COOKIE)
        .and_then(|v| server.setup.keys.verify("approved", v))
        .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The exposure this browser approved before for exactly this client and
/// redirect URI (a new client never rides on another's approval).
fn remembered(
    server: &OAuthServer,
    headers: &HeaderMap,
    client: &ClientInfo,
    redirect_uri: &str,
) -> Option<Exposure> {
    approvals(server, headers)
        .into_iter()
        .find(|a| a.client_id == client.client_id && a.redirect_uri == redirect_uri)
        .map(|a| a.exposure)
}

/// The nonce of a remembered approval's sign-in: the same browser asking
/// the same thing again gets the same one.
fn remembered_nonce(server: &OAuthServer, browser: &str, request: &AuthRequest) -> String {
    let key = serde_json::json!([
        browser,
        request.client_id,
        request.redirect_uri,
        request.code_challenge,
        request.state,
    ])
    .to_string();
    URL_SAFE_NO_PAD.encode(server.setup.keys.hash(&format!("remembered:{key}")).0)
}

/// `POST /authorize`: the consent decision.
pub(super) async fn decide(
    State(server): State<Arc<OAuthServer>>,
    Peer(peer): Peer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let keys = &server.setup.keys;
    let browser =
        page::read_cookie(&headers, BROWSER_COOKIE).and_then(|v| keys.verify("browser", v));
    let csrf_ok = match (browser, field("csrf").and_then(|c| keys.verify("csrf", c))) {
        (Some(cookie), Some(form)) => {
            super::super::crypto::same(cookie.as_bytes(), form.as_bytes())
        }
        _ => false,
    };
    if !csrf_ok {
        return page::error(
            StatusCode::FORBIDDEN,
            "Request refused",
            "The consent form is missing its CSRF token or was not sent from this browser. Start the sign-in again.",
        );
    }
    let request: Option<AuthRequest> = field("request")
        .and_then(|r| keys.verify("authorize-request", r))
        .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let Some(request) = request else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Invalid request",
            "The consent form was altered.",
        );
    };
    if request.expires_at < now() {
        return page::error(
            StatusCode::BAD_REQUEST,
            "Expired",
            "The consent form expired. Start the sign-in again.",
        );
    }
    if field("decision") != Some("approve") {
        return error_redirect(
            &server,
            &request.redirect_uri,
            request.state.as_deref(),
            "access_denied",
            "the user denied the request",
        );
    }
    let chosen: Vec<String> = fields
        .iter()
        .filter(|(k, _)| k == "products")
        .map(|(_, v)| v.clone())
        .filter(|p| server.setup.products.contains_key(p))
        .collect();
    let exposure = match field("exposure") {
        Some("minimal") => Exposure {
            scopes: Some(Vec::new()),
            ..Exposure::default()
        },
        Some("read_only") => Exposure {
            read_only: true,
            ..Exposure::default()
        },
        Some("products") => Exposure {
            products: Some(chosen),
            ..Exposure::default()
        },
        Some("advanced") => match advanced_scopes(&server, field("scopes").unwrap_or("")) {
            // A step-up keeps what was approved before and adds the scopes.
            Ok(scopes) => Exposure {
                scopes: Some(scopes),
                ..request.base.clone().unwrap_or_default()
            },
            Err(unknown) => {
                return page::error(
                    StatusCode::BAD_REQUEST,
                    "Unknown scope",
                    &format!(
                        "`{unknown}` is not a scope this server knows. Go back and choose from the list."
                    ),
                );
            }
        },
        _ => Exposure::default(),
    };
    let mut approvals = approvals(&server, &headers);
    approvals
        .retain(|a| !(a.client_id == request.client_id && a.redirect_uri == request.redirect_uri));
    approvals.push(Approval {
        client_id: request.client_id.clone(),
        redirect_uri: request.redirect_uri.clone(),
        exposure: exposure.clone(),
    });
    let keep = approvals.len().saturating_sub(10);
    let approvals = &approvals[keep..];
    let mut cookies = Vec::new();
    if let Ok(json) = serde_json::to_vec(approvals) {
        cookies.push(page::cookie(
            APPROVED_COOKIE,
            &keys.sign("approved", &URL_SAFE_NO_PAD.encode(json)),
            30 * 86_400,
            server.secure_cookies(),
        ));
    }
    start_sign_in(&server, peer, request, exposure, cookies).await
}

/// The catalogue scopes among a `scope=` parameter's (others, such as
/// `offline_access`, are asked for anyway); `None` when it names none, or
/// every one (clients ask for the metadata's `scopes_supported` on their
/// first sign-in: that is no particular choice, so the page stays as is).
fn asked_scopes(server: &OAuthServer, scope: Option<&str>) -> Option<Vec<String>> {
    let catalogue = &server.setup.scopes;
    let asked: BTreeSet<String> = scope?
        .split(' ')
        .filter(|id| catalogue.iter().any(|s| s.id == *id))
        .map(str::to_owned)
        .collect();
    let all = catalogue.iter().all(|s| asked.contains(&s.id));
    (!asked.is_empty() && !all).then(|| asked.into_iter().collect())
}

/// The advanced template's scope list (space or comma separated), each a
/// catalogue scope; the first unknown one (clipped) otherwise.
fn advanced_scopes(server: &OAuthServer, text: &str) -> Result<Vec<String>, String> {
    let mut out = BTreeSet::new();
    for id in text.split(|c: char| c.is_whitespace() || c == ',') {
        if id.is_empty() {
            continue;
        }
        if !server.setup.scopes.iter().any(|s| s.id == id) {
            return Err(id.chars().take(64).collect());
        }
        out.insert(id.to_owned());
    }
    Ok(out.into_iter().collect())
}

/// The upstream scopes for a consent choice.
fn scopes_for(server: &OAuthServer, exposure: &Exposure) -> Vec<String> {
    let mut out: BTreeSet<String> = server
        .setup
        .config
        .upstream
        .scopes
        .iter()
        .cloned()
        .collect();
    let catalogue = &server.setup.scopes;
    if let Some(chosen) = &exposure.scopes {
        // Minimal (none) or advanced: exactly the chosen catalogue scopes.
        out.extend(
            chosen
                .iter()
                .filter(|id| catalogue.iter().any(|s| &s.id == *id))
                .cloned(),
        );
        return out.into_iter().collect();
    }
    let wanted: Option<BTreeSet<&String>> = exposure.products.as_ref().map(|chosen| {
        chosen
            .iter()
            .filter_map(|p| server.setup.products.get(p))
            .flatten()
            .collect()
    });
    let any_permissions = catalogue.iter().any(|s| !s.permissions.is_empty());
    for scope in catalogue {
        let fits_read = !exposure.read_only || scope.read_only;
        let fits_products = match &wanted {
            None => true,
            Some(_) if !any_permissions || scope.permissions.is_empty() => true,
            Some(wanted) => scope.permissions.iter().any(|p| wanted.contains(p)),
        };
        if fits_read && fits_products {
            out.insert(scope.id.clone());
        }
    }
    out.into_iter().collect()
}

/// Records the sign-in and redirects to the upstream provider: at most
/// `limits.sign_ins` per address and `limits.max_pending_sign_ins` stored,
/// one per consent form (its nonce names the sign-in's state).
async fn start_sign_in(
    server: &OAuthServer,
    peer: Option<std::net::IpAddr>,
    mut request: AuthRequest,
    exposure: Exposure,
    mut cookies: Vec<String>,
) -> Response {
    let keys = &server.setup.keys;
    if let Err(secs) = server.guards.sign_ins.check(peer) {
        return super::guard::too_many_page(secs);
    }
    let cap = server.setup.config.limits.max_pending_sign_ins;
    let store = &server.setup.store;
    match server
        .guards
        .pending
        .admit(cap, || store.count_pending(now()))
        .await
    {
        Ok(()) => {}
        Err(true) => {
            tracing::warn!(cap, "pending sign-ins at the cap: refusing new ones");
            return super::guard::too_many_page(60);
        }
        Err(false) => return unavailable(),
    }
    if request.nonce.is_empty() {
        let Ok(nonce) = keys.new_token("") else {
            return unavailable();
        };
        request.nonce = nonce;
    }
    let state_id = URL_SAFE_NO_PAD.encode(keys.hash(&format!("sign-in:{}", request.nonce)).0);
    let (Ok(verifier), Ok(binding)) = (keys.new_token(""), keys.new_token("")) else {
        return unavailable();
    };
    let scopes = scopes_for(server, &exposure);
    let sign_in = SignIn {
        request,
        exposure,
        scopes: scopes.clone(),
        verifier: verifier.clone(),
    };
    let hash = keys.hash(&state_id);
    let Ok(plain) = serde_json::to_vec(&sign_in) else {
        return unavailable();
    };
    let Ok(sealed) = keys.seal_state(&plain, &hash.0) else {
        return unavailable();
    };
    let lifetime = server.setup.config.lifetimes.sign_in_secs;
    let expires_at = now() + i64::try_from(lifetime).unwrap_or(600);
    let pending = PendingSignIn {
        hash,
        browser: keys.hash(&binding),
        expires_at,
        sealed,
    };
    match server.setup.store.put_pending(&pending).await {
        Ok(true) => {}
        Ok(false) => {
            return page::error(
                StatusCode::CONFLICT,
                "Already started",
                "This sign-in was already started from this form. Start again from your application.",
            );
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot store the sign-in");
            return unavailable();
        }
    }
    let state = keys.sign("upstream-state", &format!("{state_id}~{expires_at}"));
    let provider = &server.setup.config.upstream;
    let Ok(mut url) = url::Url::parse(&provider.authorize_url) else {
        return unavailable();
    };
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &provider.client_id)
            .append_pair("redirect_uri", &server.callback_url())
            .append_pair("state", &state)
            .append_pair("code_challenge", &s256_challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        if !scopes.is_empty() {
            q.append_pair("scope", &scopes.join(" "));
        }
        for (k, v) in &provider.extra_authorize_params {
            q.append_pair(k, v);
        }
    }
    cookies.push(page::cookie(
        SIGN_IN_COOKIE,
        &binding,
        lifetime,
        server.secure_cookies(),
    ));
    page::redirect(url.as_str(), &cookies)
}
