//! OAuth 2.0 client credentials (RFC 6749 §4.4): the server exchanges a
//! client ID and secret for an access token at the scheme's token URL,
//! caches it until shortly before it expires, and fetches a new one when it
//! has expired or the API refused it.
//!
//! One [`TokenSource`] per scheme is shared by every caller, and concurrent
//! calls wait for one fetch instead of each starting their own. The client
//! authenticates with HTTP Basic (`client_secret_basic`, the method every
//! server must support) and, when the server refuses that as
//! `invalid_client`, once more with the secret in the form body
//! (`client_secret_post`). Access tokens, the client ID and the secret are
//! scrubbed from every error text; fetched tokens join the caller's
//! redaction (see [`TokenSource::redact`]).

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::HeaderValue;
use serde_json::Value;

use crate::redact::Redactor;
use crate::request::header_safe;

/// Largest token response read.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;
/// Fetched tokens kept for redaction (the current one and the one before).
const RECENT_TOKENS: usize = 2;

/// Why no access token could be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token URL cannot be used.
    #[error("the OAuth token URL of scheme `{scheme}` is unusable: {reason}")]
    Url {
        /// The scheme's name.
        scheme: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The token endpoint could not be reached or answered badly.
    #[error(
        "fetching an OAuth access token for scheme `{scheme}` from {endpoint} failed: {detail}"
    )]
    Fetch {
        /// The scheme's name.
        scheme: &'static str,
        /// Host and path of the token endpoint (no query).
        endpoint: String,
        /// What failed (scrubbed of the client secret).
        detail: String,
    },
}

/// An access token with its expiry.
#[derive(Debug)]
pub struct AccessToken {
    header: HeaderValue,
    expires: Option<Instant>,
    redactor: Redactor,
}

impl AccessToken {
    /// The `Authorization: Bearer …` value, marked sensitive.
    pub fn authorization(&self) -> HeaderValue {
        self.header.clone()
    }

    fn fresh(&self) -> bool {
        self.expires.is_none_or(|at| Instant::now() < at)
    }
}

/// Fetches and caches access tokens of one client-credentials scheme.
pub struct TokenSource {
    scheme: &'static str,
    token_url: &'static str,
    scopes: &'static [&'static str],
    client_id: String,
    client_secret: String,
    /// Redacts the client ID and secret from token endpoint answers.
    client_redactor: Redactor,
    /// Held while fetching, so concurrent callers share one fetch.
    fetching: tokio::sync::Mutex<()>,
    /// The newest token first.
    recent: RwLock<Vec<Arc<AccessToken>>>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenSource({})", self.scheme)
    }
}

impl TokenSource {
    /// A source for scheme `scheme` whose token endpoint is `token_url`
    /// (absolute, or relative to the API base URL).
    pub fn new(
        scheme: &'static str,
        token_url: &'static str,
        scopes: &'static [&'static str],
        client_id: String,
        client_secret: String,
    ) -> Self {
        let client_redactor = Redactor::new([client_id.as_str(), client_secret.as_str()]);
        Self {
            scheme,
            token_url,
            scopes,
            client_id,
            client_secret,
            client_redactor,
            fetching: tokio::sync::Mutex::new(()),
            recent: RwLock::new(Vec::new()),
        }
    }

    /// The client ID and secret (for the caller's redactor).
    pub fn client_secrets(&self) -> [&str; 2] {
        [&self.client_id, &self.client_secret]
    }

    /// A fresh access token: the cached one, or one fetched now.
    ///
    /// # Errors
    ///
    /// An unusable token URL, an unreachable endpoint, or an answer
    /// without a bearer access token.
    pub async fn token(
        &self,
        client: &reqwest::Client,
        base: &str,
    ) -> Result<Arc<AccessToken>, TokenError> {
        if let Some(token) = self.current().filter(|t| t.fresh()) {
            return Ok(token);
        }
        let _fetching = self.fetching.lock().await;
        if let Some(token) = self.current().filter(|t| t.fresh()) {
            return Ok(token);
        }
        let token = Arc::new(self.fetch(client, base).await?);
        let mut recent = self.recent.write().unwrap_or_else(|e| e.into_inner());
        recent.insert(0, token.clone());
        recent.truncate(RECENT_TOKENS);
        Ok(token)
    }

    /// Forgets `token` after the API refused it, so the next call fetches
    /// a new one (unless another caller already did).
    pub fn invalidate(&self, token: &Arc<AccessToken>) {
        let mut recent = self.recent.write().unwrap_or_else(|e| e.into_inner());
        if let Some(first) = recent.first_mut()
            && Arc::ptr_eq(first, token)
        {
            // Kept for redaction, never handed out again.
            *first = Arc::new(AccessToken {
                header: first.header.clone(),
                expires: Some(Instant::now()),
                redactor: first.redactor.clone(),
            });
        }
    }

    /// `text` without the recently fetched access tokens.
    pub fn redact(&self, text: String) -> String {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent
            .iter()
            .fold(text, |text, token| match token.redactor.redact_str(&text) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(clean) => clean,
            })
    }

    /// `bytes` without the recently fetched access tokens.
    pub fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent
            .iter()
            .fold(bytes, |bytes, token| token.redactor.redact_bytes(bytes))
    }

    fn current(&self) -> Option<Arc<AccessToken>> {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent.first().cloned()
    }

    async fn fetch(&self, client: &reqwest::Client, base: &str) -> Result<AccessToken, TokenError> {
        let url = self.endpoint(base)?;
        let endpoint = format!("{}{}", url.host_str().unwrap_or_default(), url.path());
        let fail = |detail: String| TokenError::Fetch {
            scheme: self.scheme,
            endpoint: endpoint.clone(),
            detail: self.client_redactor.redact_str(&detail).into_owned(),
        };
        let (status, body) = self.post(client, &url, true).await.map_err(&fail)?;
        let (status, body) = if refused_client(status, &body) {
            self.post(client, &url, false).await.map_err(&fail)?
        } else {
            (status, body)
        };
        parse_token(status, &body).map_err(fail)
    }

    /// The token URL resolved against `base`; https, or http to a loopback
    /// host only.
    fn endpoint(&self, base: &str) -> Result<url::Url, TokenError> {
        let bad = |reason: String| TokenError::Url {
            scheme: self.scheme,
            reason,
        };
        let base = url::Url::parse(base).map_err(|e| bad(format!("the base URL: {e}")))?;
        let url = base
            .join(self.token_url)
            .map_err(|e| bad(format!("`{}`: {e}", self.token_url)))?;
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        match url.scheme() {
            "https" => Ok(url),
            "http" if loopback => Ok(url),
            other => Err(bad(format!(
                "it is {other}:, and client secrets are sent only over https (or http to a loopback host)"
            ))),
        }
    }

    /// One token request; `basic` picks `client_secret_basic` over
    /// `client_secret_post`.
    async fn post(
        &self,
        client: &reqwest::Client,
        url: &url::Url,
        basic: bool,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut form: Vec<(&str, &str)> = vec![("grant_type", "client_credentials")];
        let scope = self.scopes.join(" ");
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        if !basic {
            form.push(("client_id", &self.client_id));
            form.push(("client_secret", &self.client_secret));
        }
        let body = serde_urlencoded(&form);
        let mut request = client
            .post(url.clone())
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        if basic {
            request = request.header(http::header::AUTHORIZATION, self.basic_header()?);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| e.without_url().to_string())?
        {
            if body.len() + chunk.len() > MAX_TOKEN_RESPONSE {
                return Err(format!(
                    "the answer is larger than {MAX_TOKEN_RESPONSE} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    }

    /// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
    fn basic_header(&self) -> Result<HeaderValue, String> {
        let enc = |s: &str| form_encode(s);
        let pair = format!("{}:{}", enc(&self.client_id), enc(&self.client_secret));
        let value = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        );
        let mut header =
            HeaderValue::from_str(&value).map_err(|_| "the client ID cannot be sent".to_owned())?;
        header.set_sensitive(true);
        Ok(header)
    }
}

/// The server refused the client authentication method.
fn refused_client(status: u16, body: &[u8]) -> bool {
    let error = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_owned));
    status == 401 || (status == 400 && error.as_deref() == Some("invalid_client"))
}

/// Reads a token response (RFC 6749 §5.1 / §5.2).
fn parse_token(status: u16, body: &[u8]) -> Result<AccessToken, String> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        let field = |name: &str| {
            json.as_ref()
                .and_then(|v| v.get(name)?.as_str())
                .map(|s| s.chars().take(200).collect::<String>())
        };
        let mut detail = format!("the token endpoint answered {status}");
        if let Some(error) = field("error") {
            detail.push_str(&format!(" `{error}`"));
        }
        if let Some(description) = field("error_description") {
            detail.push_str(&format!(": {description}"));
        }
        return Err(detail);
    }
    let Some(json) = json else {
        return Err("the token endpoint's answer is not JSON".to_owned());
    };
    let token = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or("the token endpoint's answer has no `access_token`")?;
    if let Some(kind) = json.get("token_type").and_then(Value::as_str)
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(format!(
            "the token endpoint issued a `{}` token; only bearer tokens are supported",
            kind.chars().take(40).collect::<String>()
        ));
    }
    if !header_safe(token) {
        return Err("the access token cannot be sent in an HTTP header".to_owned());
    }
    let mut header = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the access token cannot be sent in an HTTP header".to_owned())?;
    header.set_sensitive(true);
    let lifetime = match json.get("expires_in") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    // Renew a little early so a token does not expire in flight: by half a
    // minute for long-lived tokens, by half the lifetime for short ones.
    let expires =
        lifetime.map(|secs| Instant::now() + Duration::from_secs(secs - (secs.min(60) / 2)));
    Ok(AccessToken {
        header,
        expires,
        redactor: Redactor::new([token]),
    })
}

fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn serde_urlencoded(pairs: &[(&str, &str)]) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

#[cfg(test)]
#[path = "oauth2_tests.rs"]
mod tests;
