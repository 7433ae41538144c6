//! A raw OAuth 2.1 client for an `--auth oauth` server, step by step
//! (dynamic registration, the authorization URL with PKCE and `resource`,
//! the code exchange, refresh, revocation), for tests that check what the
//! SDK clients do not show.

use serde_json::{Value, json};

use crate::browser::percent_encode;
use crate::http::Response;
use crate::oauth::{OAuthServer, Pkce, post_form, send};

/// Tokens from the token endpoint.
#[derive(Clone)]
pub struct Tokens {
    /// The access token.
    pub access: String,
    /// The refresh token, when one was issued.
    pub refresh: Option<String>,
    /// The whole response (for `scope`, `expires_in`, `token_type`).
    pub body: Value,
}

impl std::fmt::Debug for Tokens {
    // Never print token values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("scope", &self.body["scope"])
            .field("expires_in", &self.body["expires_in"])
            .finish_non_exhaustive()
    }
}

/// Registers a public client (RFC 7591) with one redirect URI; returns
/// its `client_id`.
///
/// # Errors
///
/// The registration is refused or the reply has no `client_id`.
pub fn register(server: &OAuthServer, redirect: &str, name: &str) -> Result<String, String> {
    let body = json!({
        "client_name": name,
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let response = send(
        "POST",
        &format!("{}/register", server.base_url),
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        Some(body.to_string().into_bytes()),
    )?;
    let value: Value = serde_json::from_slice(&response.body)
        .map_err(|e| format!("/register answered {} with no JSON ({e})", response.status))?;
    if !(200..300).contains(&response.status) {
        return Err(format!("/register answered {}: {value}", response.status));
    }
    value["client_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no client_id in {value}"))
}

/// `<base_url>/authorize?…` with S256 PKCE, `state` and the MCP
/// endpoint as `resource`.
pub fn authorize_url(
    server: &OAuthServer,
    client_id: &str,
    redirect: &str,
    pkce: &Pkce,
    state: &str,
) -> String {
    format!(
        "{}/authorize?response_type=code&client_id={}&redirect_uri={}&state={}&code_challenge={}&code_challenge_method=S256&resource={}",
        server.base_url,
        percent_encode(client_id),
        percent_encode(redirect),
        percent_encode(state),
        pkce.challenge,
        percent_encode(&server.mcp_url()),
    )
}

fn tokens_of(response: &Response) -> Result<Tokens, String> {
    let body: Value = serde_json::from_slice(&response.body)
        .map_err(|e| format!("/token answered {} with no JSON ({e})", response.status))?;
    if response.status != 200 {
        return Err(format!("/token answered {}: {body}", response.status));
    }
    let access = body["access_token"]
        .as_str()
        .ok_or("no access_token")?
        .to_owned();
    let refresh = body["refresh_token"].as_str().map(str::to_owned);
    let mut shown = body.clone();
    if let Some(map) = shown.as_object_mut() {
        map.remove("access_token");
        map.remove("refresh_token");
    }
    Ok(Tokens {
        access,
        refresh,
        body: shown,
    })
}

/// Exchanges a code (authorization_code with the PKCE verifier and the
/// resource); the raw response.
///
/// # Errors
///
/// Transport failures.
pub fn exchange_raw(
    server: &OAuthServer,
    client_id: &str,
    code: &str,
    redirect: &str,
    verifier: &str,
) -> Result<Response, String> {
    let resource = server.mcp_url();
    post_form(
        &format!("{}/token", server.base_url),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect),
            ("client_id", client_id),
            ("code_verifier", verifier),
            ("resource", &resource),
        ],
        None,
    )
}

/// As [`exchange_raw`], for a 200 with tokens.
///
/// # Errors
///
/// Anything but a 200 with an access token.
pub fn exchange(
    server: &OAuthServer,
    client_id: &str,
    code: &str,
    redirect: &str,
    verifier: &str,
) -> Result<Tokens, String> {
    tokens_of(&exchange_raw(server, client_id, code, redirect, verifier)?)
}

/// Refreshes.
///
/// # Errors
///
/// Anything but a 200 with an access token.
pub fn refresh(
    server: &OAuthServer,
    client_id: &str,
    refresh_token: &str,
) -> Result<Tokens, String> {
    let resource = server.mcp_url();
    let response = post_form(
        &format!("{}/token", server.base_url),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
            ("resource", &resource),
        ],
        None,
    )?;
    tokens_of(&response)
}

/// Revokes a token (RFC 7009); the status.
///
/// # Errors
///
/// Transport failures.
pub fn revoke(
    server: &OAuthServer,
    client_id: &str,
    token: &str,
    hint: &str,
) -> Result<u16, String> {
    post_form(
        &format!("{}/revoke", server.base_url),
        &[
            ("token", token),
            ("token_type_hint", hint),
            ("client_id", client_id),
        ],
        None,
    )
    .map(|r| r.status)
}
