//! `POST /token` (authorization_code with PKCE S256; refresh_token with
//! rotation), `POST /revoke` (RFC 7009) and `POST /register` (RFC 7591,
//! public clients only).

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use super::super::crypto::{self, s256_challenge, same};
use super::super::events::{self, AuthEvent};
use super::super::model::{CodeUse, RefreshUse, RegisteredClient, TokenKind, TokenRecord};
use super::{OAuthServer, json_no_store, now, oauth_error};
use crate::limits::Peer;

fn form(body: &[u8]) -> Result<Vec<(String, String)>, Box<Response>> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
    let mut seen = std::collections::BTreeSet::new();
    for (k, _) in &pairs {
        if !seen.insert(k.clone()) {
            return Err(Box::new(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "a parameter is repeated",
            )));
        }
    }
    Ok(pairs)
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn invalid_target() -> Response {
    oauth_error(
        StatusCode::BAD_REQUEST,
        "invalid_target",
        "resource is not this server's MCP endpoint, or not the one the grant was made for",
    )
}

fn invalid_grant(description: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

fn unavailable() -> Response {
    oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the grant store is unavailable",
    )
}

/// `POST /token`.
pub(super) async fn token(
    State(server): State<Arc<OAuthServer>>,
    body: axum::body::Bytes,
) -> Response {
    let pairs = match form(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    // RFC 8707: a `resource` must be one of this server's, and the one the
    // grant was made for (checked once the grant is known).
    let asked = match field(&pairs, "resource") {
        Some(given) => match server.resource_for(given) {
            Some(resource) => Some(resource),
            None => return invalid_target(),
        },
        None => None,
    };
    let asked = asked.as_deref();
    match field(&pairs, "grant_type") {
        Some("authorization_code") => exchange_code(&server, &pairs, asked).await,
        Some("refresh_token") => refresh(&server, &pairs, asked).await,
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "grant_type must be authorization_code or refresh_token",
        ),
    }
}

async fn exchange_code(
    server: &OAuthServer,
    pairs: &[(String, String)],
    asked: Option<&str>,
) -> Response {
    let (Some(code), Some(client_id), Some(redirect_uri)) = (
        field(pairs, "code"),
        field(pairs, "client_id"),
        field(pairs, "redirect_uri"),
    ) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "code, client_id and redirect_uri are required",
        );
    };
    let Some(verifier) = field(pairs, "code_verifier") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "code_verifier is required (PKCE)",
        );
    };
    let keys = &server.setup.keys;
    let store = &server.setup.store;
    let now = now();
    let record = match store.take_code(&keys.hash(code), now).await {
        Ok(CodeUse::Fresh(record)) => record,
        Ok(CodeUse::Replayed { grant_id }) => {
            // RFC 6749 §4.1.2: a reused code revokes what it issued.
            revoke(server, &grant_id).await;
            return invalid_grant("the authorization code was already used");
        }
        Ok(CodeUse::Unknown) => return invalid_grant("unknown or expired authorization code"),
        Err(e) => {
            tracing::error!(error = %e, "take_code");
            return unavailable();
        }
    };
    if record.client_id != client_id || record.redirect_uri != redirect_uri {
        return invalid_grant("the code was issued to another client or redirect_uri");
    }
    if !same(
        s256_challenge(verifier).as_bytes(),
        record.code_challenge.as_bytes(),
    ) {
        return invalid_grant("code_verifier does not match the code_challenge");
    }
    let Some(grant_key) = crypto::unwrap_grant_key(code, &record.grant_id, &record.wrapped_key)
    else {
        return invalid_grant("the code cannot be redeemed");
    };
    let grant = match store.grant(&record.grant_id).await {
        Ok(Some(g)) if !g.revoked && server.serves(&g.resource) => g,
        Ok(_) => return invalid_grant("the grant was revoked"),
        Err(_) => return unavailable(),
    };
    if asked.is_some_and(|a| a != grant.resource) {
        return invalid_target();
    }
    let Ok((access, access_record, refresh, refresh_record)) =
        new_pair(server, &grant.id, &grant_key, now, grant.expires_at)
    else {
        return unavailable();
    };
    if let Err(e) = store.issue_tokens(&access_record, &refresh_record).await {
        tracing::error!(error = %e, "issue_tokens");
        return unavailable();
    }
    events::record(AuthEvent::Issued);
    token_response(server, &access, &refresh, &grant.scopes)
}

type Pair = (String, TokenRecord, String, TokenRecord);

fn new_pair(
    server: &OAuthServer,
    grant_id: &str,
    grant_key: &[u8; crypto::KEY_LEN],
    now: i64,
    grant_end: i64,
) -> Result<Pair, crypto::KeyError> {
    let keys = &server.setup.keys;
    let lifetimes = &server.setup.config.lifetimes;
    let access = keys.new_token("tfa_")?;
    let refresh = keys.new_token("tfr_")?;
    let access_ttl = i64::try_from(lifetimes.access_token_secs).unwrap_or(3600);
    let access_record = TokenRecord {
        hash: keys.hash(&access),
        kind: TokenKind::Access,
        grant_id: grant_id.to_owned(),
        expires_at: (now + access_ttl).min(grant_end),
        wrapped_key: crypto::wrap_grant_key(&access, grant_id, grant_key)?,
    };
    let refresh_record = TokenRecord {
        hash: keys.hash(&refresh),
        kind: TokenKind::Refresh,
        grant_id: grant_id.to_owned(),
        expires_at: grant_end,
        wrapped_key: crypto::wrap_grant_key(&refresh, grant_id, grant_key)?,
    };
    Ok((access, access_record, refresh, refresh_record))
}

fn token_response(
    server: &OAuthServer,
    access: &str,
    refresh: &str,
    scopes: &[String],
) -> Response {
    json_no_store(
        StatusCode::OK,
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": server.setup.config.lifetimes.access_token_secs,
            "refresh_token": refresh,
            "scope": scopes.join(" "),
        }),
    )
}

async fn refresh(
    server: &OAuthServer,
    pairs: &[(String, String)],
    asked: Option<&str>,
) -> Response {
    let (Some(presented), Some(client_id)) =
        (field(pairs, "refresh_token"), field(pairs, "client_id"))
    else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "refresh_token and client_id are required",
        );
    };
    let keys = &server.setup.keys;
    let store = &server.setup.store;
    let now = now();
    let hash = keys.hash(presented);
    let (record, grant) = match store.token(&hash, now).await {
        Ok(Some((r, g))) if r.kind == TokenKind::Refresh => (r, g),
        Ok(_) => return invalid_grant("unknown or expired refresh token"),
        Err(_) => return unavailable(),
    };
    if grant.revoked || grant.client_id != client_id || !server.serves(&grant.resource) {
        return invalid_grant("the refresh token is not valid for this client");
    }
    if asked.is_some_and(|a| a != grant.resource) {
        return invalid_target();
    }
    if let Some(scope) = super::step_up::pending_step_up(&grant, now) {
        // The session was just challenged for `scope`: the same narrow
        // token would fail again, so the client is sent to authorize. The
        // refresh token stays valid (see `STEP_UP_WINDOW_SECS`).
        events::record(AuthEvent::StepUpRefused);
        return invalid_grant(&format!(
            "a step-up to the scope {scope} is pending: authorize again with scope= naming it \
             (a refresh never adds scopes)"
        ));
    }
    if let Some(scope) = field(pairs, "scope") {
        // Refresh never widens: every requested scope must be granted.
        if !scope
            .split(' ')
            .filter(|s| !s.is_empty())
            .all(|s| grant.scopes.iter().any(|g| g == s))
        {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_scope",
                "a refresh cannot add scopes to the grant",
            );
        }
    }
    let Some(grant_key) = crypto::unwrap_grant_key(presented, &grant.id, &record.wrapped_key)
    else {
        // The store keeps a rotated-out refresh token's row but no longer
        // its wrapped key: presenting it is reuse.
        if grant.refresh_current != Some(hash) && grant.refresh_previous != Some(hash) {
            revoke(server, &grant.id).await;
            return invalid_grant("the refresh token was already used; the grant is revoked");
        }
        return invalid_grant("the refresh token cannot be used");
    };
    let Ok((access, access_record, refresh, refresh_record)) =
        new_pair(server, &grant.id, &grant_key, now, grant.expires_at)
    else {
        return unavailable();
    };
    match store
        .rotate_refresh(&hash, &access_record, &refresh_record, now)
        .await
    {
        Ok(RefreshUse::Rotated { grant, .. }) => {
            // The store deleted the access tokens this refresh superseded;
            // this instance's cache forgets them too.
            server.cache.forget_grant(&grant.id);
            events::record(AuthEvent::Refreshed);
            token_response(server, &access, &refresh, &grant.scopes)
        }
        Ok(RefreshUse::Reused) => {
            server.cache.forget_grant(&grant.id);
            events::record(AuthEvent::Revoked);
            invalid_grant("the refresh token was already used; the grant is revoked")
        }
        Ok(RefreshUse::Invalid) => invalid_grant("unknown or expired refresh token"),
        Err(e) => {
            tracing::error!(error = %e, "rotate_refresh");
            unavailable()
        }
    }
}

/// Revokes a grant here and in every cache of this instance.
pub(super) async fn revoke(server: &OAuthServer, grant_id: &str) {
    server.cache.forget_grant(grant_id);
    if let Err(e) = server.setup.store.revoke_grant(grant_id).await {
        tracing::error!(error = %e, "revoke_grant");
    }
    events::record(AuthEvent::Revoked);
}

/// `POST /revoke` (RFC 7009): always 200, whatever the token.
pub(super) async fn revoke_route(
    State(server): State<Arc<OAuthServer>>,
    body: axum::body::Bytes,
) -> Response {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    let Some(token) = field(&pairs, "token") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "token is required",
        );
    };
    let now = now();
    if let Ok(Some((record, grant))) = server
        .setup
        .store
        .token(&server.setup.keys.hash(token), now)
        .await
        && !grant.revoked
    {
        // The upstream tokens are revoked too, best effort, while the
        // presented token can still unseal them.
        if let Some(tokens) = super::session::unseal(token, &record, &grant) {
            let upstream = &server.setup.upstream;
            if let Some(refresh) = &tokens.refresh_token {
                upstream.revoke(refresh, "refresh_token").await;
            }
            upstream.revoke(&tokens.access_token, "access_token").await;
        }
        revoke(&server, &grant.id).await;
    }
    StatusCode::OK.into_response()
}

/// Client metadata members `/register` keeps (RFC 7591 §2, strings);
/// any other member is dropped, so a registration stores only what the
/// server uses or shows.
const KEPT_STRINGS: &[&str] = &[
    "client_name",
    "client_uri",
    "logo_uri",
    "tos_uri",
    "policy_uri",
    "software_id",
    "software_version",
    "scope",
];

/// Longest kept metadata string, in bytes.
const MAX_MEMBER_BYTES: usize = 1024;

/// `POST /register` (RFC 7591): public clients with https or loopback
/// redirect URIs; `limits.registrations` per address, at most
/// `limits.max_unused_clients` registered and not yet used, at most
/// `limits.max_redirect_uris` redirect URIs; unknown members dropped.
pub(super) async fn register(
    State(server): State<Arc<OAuthServer>>,
    Peer(peer): Peer,
    body: axum::body::Bytes,
) -> Response {
    let bad = |description: &str| {
        oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            description,
        )
    };
    if body.len() > 16 * 1024 {
        return bad("the registration is too large");
    }
    if let Err(secs) = server.guards.registrations.check(peer) {
        return super::guard::too_many_json(secs, "too many registrations from this address");
    }
    let Ok(serde_json::Value::Object(given)) = serde_json::from_slice::<serde_json::Value>(&body)
    else {
        return bad("the body is not a JSON object");
    };
    let limits = &server.setup.config.limits;
    let uris: Vec<String> = given
        .get("redirect_uris")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if uris.is_empty()
        || uris.len() > limits.max_redirect_uris
        || !uris.iter().all(|u| {
            u.len() <= limits.max_redirect_uri_bytes && crate::clients::redirect_uri_acceptable(u)
        })
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            &format!(
                "redirect_uris are required (at most {}), each https or loopback http without fragment, at most {} bytes",
                limits.max_redirect_uris, limits.max_redirect_uri_bytes
            ),
        );
    }
    let mut object = serde_json::Map::new();
    object.insert("redirect_uris".into(), json!(uris));
    for name in KEPT_STRINGS {
        match given.get(*name) {
            None => {}
            Some(serde_json::Value::String(v)) if v.len() <= MAX_MEMBER_BYTES => {
                object.insert((*name).into(), json!(v));
            }
            Some(_) => {
                return bad(&format!(
                    "{name} must be a string of at most {MAX_MEMBER_BYTES} bytes"
                ));
            }
        }
    }
    let cap = limits.max_unused_clients;
    let store = &server.setup.store;
    match server
        .guards
        .unused_clients
        .admit(cap, || store.count_unused_clients())
        .await
    {
        Ok(()) => {}
        Err(true) => {
            tracing::warn!(
                cap,
                "unused registered clients at the cap: refusing registrations"
            );
            return super::guard::too_many_json(
                60,
                "too many registered clients are waiting for a first sign-in",
            );
        }
        Err(false) => return unavailable(),
    }
    let Ok(id) = server.setup.keys.new_token("client-") else {
        return unavailable();
    };
    let client_id = id.replace('_', "-");
    object.insert("client_id".into(), json!(client_id));
    object.insert("token_endpoint_auth_method".into(), json!("none"));
    object.insert(
        "grant_types".into(),
        json!(["authorization_code", "refresh_token"]),
    );
    object.insert("response_types".into(), json!(["code"]));
    let now = now();
    object.insert("client_id_issued_at".into(), json!(now));
    let metadata = serde_json::Value::Object(object);
    let client = RegisteredClient {
        client_id,
        metadata: metadata.to_string(),
        created_at: now,
    };
    if server.setup.store.register_client(&client).await.is_err() {
        return unavailable();
    }
    json_no_store(StatusCode::CREATED, metadata)
}
