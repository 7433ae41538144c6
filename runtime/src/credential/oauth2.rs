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
//! (`client_secret_post`). The client ID and secret are redacted in every
//! form they are sent in (raw, form-encoded, the Basic pair and its
//! base64; see [`crate::redact::forms`]) from every error text, and
//! nothing the token endpoint writes is quoted (see [`token_answer`]);
//! fetched tokens join the caller's redaction (see [`TokenSource::redact`]).

use super::token_answer::{self, MAX_LIFETIME};

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::HeaderValue;
use serde_json::Value;

use crate::redact::Redactor;
use crate::redact::forms::{form_encode, pair_forms, sent_forms};

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
    expires: Instant,
    redactor: Redactor,
}

impl AccessToken {
    /// The `Authorization: Bearer …` value, marked sensitive.
    pub fn authorization(&self) -> HeaderValue {
        self.header.clone()
    }

    /// When the token is fetched again: shortly before it expires, and at
    /// most [`MAX_LIFETIME`] after it was issued.
    pub fn renew_at(&self) -> Instant {
        self.expires
    }

    fn fresh(&self) -> bool {
        Instant::now() < self.expires
    }

    /// A token from a token endpoint's answer.
    fn issued(answer: token_answer::Answer) -> Result<Self, String> {
        let mut header = HeaderValue::from_str(&format!("Bearer {}", answer.token))
            .map_err(|_| "the access token cannot be sent in an HTTP header".to_owned())?;
        header.set_sensitive(true);
        // Renew a little early so a token does not expire in flight: by half
        // a minute for long-lived tokens, by half the lifetime for short
        // ones. The lifetime is capped, so the sum cannot overflow; if the
        // clock could not hold it, the token is used for this call only.
        let life = answer.lifetime.min(MAX_LIFETIME);
        let early = life.min(Duration::from_secs(60)) / 2;
        let now = Instant::now();
        let expires = now.checked_add(life.saturating_sub(early)).unwrap_or(now);
        Ok(Self {
            header,
            expires,
            redactor: Redactor::new(sent_forms(&answer.token).iter().map(String::as_str)),
        })
    }
}

/// Fetches and caches access tokens of one client-credentials scheme.
pub struct TokenSource {
    scheme: &'static str,
    token_url: &'static str,
    scopes: &'static [&'static str],
    client_id: String,
    client_secret: String,
    /// The client ID and secret in every form they are sent in.
    client_forms: Vec<String>,
    /// Redacts [`Self::client_forms`] from errors.
    client_redactor: Redactor,
    /// Held while fetching, so concurrent callers share one fetch.
    fetching: tokio::sync::Mutex<()>,
    /// Per scope set asked for (sorted, without duplicates): the newest
    /// token first. The sets come from the catalogue, so they are few.
    recent: RwLock<HashMap<Vec<&'static str>, Vec<Arc<AccessToken>>>>,
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
        let client_forms = client_forms(&client_id, &client_secret);
        let client_redactor = Redactor::new(client_forms.iter().map(String::as_str));
        Self {
            scheme,
            token_url,
            scopes,
            client_id,
            client_secret,
            client_forms,
            client_redactor,
            fetching: tokio::sync::Mutex::new(()),
            recent: RwLock::new(HashMap::new()),
        }
    }

    /// The client ID and secret in every form they are sent in (for the
    /// caller's redactor).
    pub fn client_secrets(&self) -> impl Iterator<Item = &str> {
        self.client_forms.iter().map(String::as_str)
    }

    /// A fresh access token for every scope the scheme declares: the
    /// cached one, or one fetched now.
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
        self.token_for(client, base, self.scopes).await
    }

    /// A fresh access token for `scopes` (what the called operation lists;
    /// tokens are cached per scope set).
    ///
    /// # Errors
    ///
    /// As [`Self::token`].
    pub async fn token_for(
        &self,
        client: &reqwest::Client,
        base: &str,
        scopes: &'static [&'static str],
    ) -> Result<Arc<AccessToken>, TokenError> {
        let mut key = scopes.to_vec();
        key.sort_unstable();
        key.dedup();
        if let Some(token) = self.current(&key).filter(|t| t.fresh()) {
            return Ok(token);
        }
        let _fetching = self.fetching.lock().await;
        if let Some(token) = self.current(&key).filter(|t| t.fresh()) {
            return Ok(token);
        }
        let token = Arc::new(self.fetch(client, base, &key).await?);
        let mut recent = self.recent.write().unwrap_or_else(|e| e.into_inner());
        let tokens = recent.entry(key).or_default();
        tokens.insert(0, token.clone());
        tokens.truncate(RECENT_TOKENS);
        Ok(token)
    }

    /// Forgets `token` after the API refused it, so the next call fetches
    /// a new one (unless another caller already did).
    pub fn invalidate(&self, token: &Arc<AccessToken>) {
        let mut recent = self.recent.write().unwrap_or_else(|e| e.into_inner());
        if let Some(first) = recent
            .values_mut()
            .filter_map(|tokens| tokens.first_mut())
            .find(|first| Arc::ptr_eq(first, token))
        {
            // Kept for redaction, never handed out again.
            *first = Arc::new(AccessToken {
                header: first.header.clone(),
                expires: Instant::now(),
                redactor: first.redactor.clone(),
            });
        }
    }

    /// `text` without the recently fetched access tokens.
    pub fn redact(&self, text: String) -> String {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent
            .values()
            .flatten()
            .fold(text, |text, token| match token.redactor.redact_str(&text) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(clean) => clean,
            })
    }

    /// The redactors of the recently fetched access tokens.
    pub fn redactors(&self) -> Vec<Redactor> {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent
            .values()
            .flatten()
            .map(|t| t.redactor.clone())
            .collect()
    }

    /// `bytes` without the recently fetched access tokens.
    pub fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent
            .values()
            .flatten()
            .fold(bytes, |bytes, token| token.redactor.redact_bytes(bytes))
    }

    fn current(&self, scopes: &[&'static str]) -> Option<Arc<AccessToken>> {
        let recent = self.recent.read().unwrap_or_else(|e| e.into_inner());
        recent.get(scopes)?.first().cloned()
    }

    async fn fetch(
        &self,
        client: &reqwest::Client,
        base: &str,
        scopes: &[&str],
    ) -> Result<AccessToken, TokenError> {
        let url = self.endpoint(base)?;
        let endpoint = format!("{}{}", url.host_str().unwrap_or_default(), url.path());
        let (status, body) = self
            .post(client, &url, scopes, true)
            .await
            .map_err(|e| self.failure(&endpoint, &e))?;
        let (status, body) = if refused_client(status, &body) {
            self.post(client, &url, scopes, false)
                .await
                .map_err(|e| self.failure(&endpoint, &e))?
        } else {
            (status, body)
        };
        self.answer(&endpoint, status, &body)
    }

    /// Reads one answer of the token endpoint `endpoint` (host and path),
    /// as a fetch does. Public for the fuzz target of token answers.
    ///
    /// # Errors
    ///
    /// A refusal or an answer without a usable bearer token; the text
    /// quotes nothing of the answer but registered error codes.
    pub fn answer(
        &self,
        endpoint: &str,
        status: u16,
        body: &[u8],
    ) -> Result<AccessToken, TokenError> {
        token_answer::read(status, body, &self.client_redactor)
            .and_then(AccessToken::issued)
            .map_err(|e| self.failure(endpoint, &e))
    }

    fn failure(&self, endpoint: &str, detail: &str) -> TokenError {
        TokenError::Fetch {
            scheme: self.scheme,
            endpoint: endpoint.to_owned(),
            detail: self.client_redactor.redact_str(detail).into_owned(),
        }
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

    /// One token request for `scopes`; `basic` picks `client_secret_basic` over
    /// `client_secret_post`.
    async fn post(
        &self,
        client: &reqwest::Client,
        url: &url::Url,
        scopes: &[&str],
        basic: bool,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut form: Vec<(&str, &str)> = vec![("grant_type", "client_credentials")];
        let scope = scopes.join(" ");
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
            if body.len().saturating_add(chunk.len()) > MAX_TOKEN_RESPONSE {
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

/// The client ID and secret in every form a token request sends them in:
/// raw and form-encoded (`client_secret_post`), and the Basic pair of the
/// form-encoded values with its base64 (`client_secret_basic`).
fn client_forms(id: &str, secret: &str) -> Vec<String> {
    let mut out = sent_forms(id);
    out.extend(sent_forms(secret));
    out.extend(pair_forms(&format!(
        "{}:{}",
        form_encode(id),
        form_encode(secret)
    )));
    out.extend(pair_forms(&format!("{id}:{secret}")));
    out
}

/// The server refused the client authentication method.
fn refused_client(status: u16, body: &[u8]) -> bool {
    let error = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_owned));
    status == 401 || (status == 400 && error.as_deref() == Some("invalid_client"))
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
