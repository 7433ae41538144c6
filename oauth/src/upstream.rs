//! The server as an OAuth client of the upstream provider: the code
//! exchange after sign-in, refreshing a grant's upstream token, revoking
//! it. Written on reqwest (already the upstream client) rather than the
//! `oauth2` crate, which pins another reqwest major.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::config::{TokenAuth, UpstreamProvider};
use super::model::UnixTime;

/// The upstream tokens of a grant, as sealed into it.
#[derive(Clone, Serialize, Deserialize)]
pub struct UpstreamTokens {
    /// The upstream access token.
    pub access_token: String,
    /// The upstream refresh token, when the provider issued one.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// When the access token expires, if the provider said.
    #[serde(default)]
    pub expires_at: Option<UnixTime>,
    /// The scopes the provider granted (as it reported them).
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for UpstreamTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamTokens")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Why the upstream token endpoint did not give tokens. No variant carries
/// a token or the response body.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamOAuthError {
    /// The provider refused the grant (`invalid_grant`, or a 401): the
    /// user must sign in again.
    #[error("the upstream provider refused the grant ({0})")]
    Refused(String),
    /// The provider could not be reached or answered something unusable.
    #[error("the upstream provider's token endpoint failed: {0}")]
    Unavailable(String),
}

#[derive(Deserialize)]
struct TokenReply {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorReply {
    error: String,
}

/// The provider, its client secret and an HTTP client.
#[derive(Clone)]
pub struct UpstreamClient {
    provider: UpstreamProvider,
    secret: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for UpstreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamClient")
            .field("token_url", &self.provider.token_url)
            .finish_non_exhaustive()
    }
}

impl UpstreamClient {
    /// A client for `provider` with its secret.
    ///
    /// # Errors
    ///
    /// The TLS stack cannot be set up.
    pub fn new(provider: UpstreamProvider, secret: String) -> Result<Self, UpstreamOAuthError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(20))
            .no_proxy()
            .user_agent(concat!("toolforge-runtime/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| UpstreamOAuthError::Unavailable(format!("client setup: {e}")))?;
        Ok(Self {
            provider,
            secret,
            http,
        })
    }

    /// The provider's configuration.
    pub fn provider(&self) -> &UpstreamProvider {
        &self.provider
    }

    /// The secrets a redactor must hide.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Exchanges an authorization code (with this server's PKCE verifier).
    ///
    /// # Errors
    ///
    /// See [`UpstreamOAuthError`].
    pub async fn exchange_code(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
        now: UnixTime,
    ) -> Result<UpstreamTokens, UpstreamOAuthError> {
        self.token_request(
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", verifier),
            ],
            None,
            now,
        )
        .await
    }

    /// Refreshes `tokens` (keeping the old refresh token when the provider
    /// does not rotate it).
    ///
    /// # Errors
    ///
    /// See [`UpstreamOAuthError`]; no refresh token is `Refused`.
    pub async fn refresh(
        &self,
        tokens: &UpstreamTokens,
        now: UnixTime,
    ) -> Result<UpstreamTokens, UpstreamOAuthError> {
        let Some(refresh) = tokens.refresh_token.as_deref() else {
            return Err(UpstreamOAuthError::Refused(
                "no upstream refresh token".into(),
            ));
        };
        self.token_request(
            &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
            Some(refresh),
            now,
        )
        .await
    }

    /// Revokes an upstream token (RFC 7009), best effort.
    pub async fn revoke(&self, token: &str, hint: &str) {
        let Some(url) = &self.provider.revoke_url else {
            return;
        };
        let form = [("token", token), ("token_type_hint", hint)];
        let request = self.authenticated(self.http.post(url), &form);
        if let Err(e) = request.send().await {
            tracing::warn!(error = %without_url(&e), "upstream revocation failed");
        }
    }

    fn authenticated(
        &self,
        request: reqwest::RequestBuilder,
        form: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let mut fields: Vec<(&str, &str)> = form.to_vec();
        let request = match self.provider.token_auth {
            TokenAuth::ClientSecretBasic => {
                // RFC 6749 §2.3.1: form-encode id and secret before Basic.
                let id = form_encode(&self.provider.client_id);
                let secret = form_encode(&self.secret);
                request.basic_auth(id, Some(secret))
            }
            TokenAuth::ClientSecretPost => {
                fields.push(("client_id", &self.provider.client_id));
                fields.push(("client_secret", &self.secret));
                request
            }
        };
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
    }

    async fn token_request(
        &self,
        form: &[(&str, &str)],
        old_refresh: Option<&str>,
        now: UnixTime,
    ) -> Result<UpstreamTokens, UpstreamOAuthError> {
        let request = self.authenticated(self.http.post(&self.provider.token_url), form);
        let response = request
            .send()
            .await
            .map_err(|e| UpstreamOAuthError::Unavailable(without_url(&e)))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| UpstreamOAuthError::Unavailable(without_url(&e)))?;
        if !status.is_success() {
            let code = serde_json::from_slice::<ErrorReply>(&bytes)
                .map(|e| e.error)
                .unwrap_or_default();
            // Only the provider's error code is kept: its description may
            // quote what was sent.
            let code: String = code
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(64)
                .collect();
            return Err(
                if code == "invalid_grant" || status == reqwest::StatusCode::UNAUTHORIZED {
                    UpstreamOAuthError::Refused(if code.is_empty() {
                        format!("HTTP {}", status.as_u16())
                    } else {
                        code
                    })
                } else {
                    UpstreamOAuthError::Unavailable(format!("HTTP {} {}", status.as_u16(), code))
                },
            );
        }
        let reply: TokenReply = serde_json::from_slice(&bytes).map_err(|_| {
            UpstreamOAuthError::Unavailable("the token response is not the expected JSON".into())
        })?;
        if reply
            .token_type
            .as_deref()
            .is_some_and(|t| !t.eq_ignore_ascii_case("bearer"))
        {
            return Err(UpstreamOAuthError::Unavailable(
                "the provider issued a token that is not a bearer token".into(),
            ));
        }
        Ok(UpstreamTokens {
            access_token: reply.access_token,
            refresh_token: reply
                .refresh_token
                .or_else(|| old_refresh.map(str::to_owned)),
            expires_at: reply.expires_in.map(|s| now.saturating_add(s.max(0))),
            scope: reply.scope,
        })
    }
}

fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// A reqwest error without its URL (which may carry a query secret).
fn without_url(e: &reqwest::Error) -> String {
    let e = e.to_string();
    e.split(" for url").next().unwrap_or_default().to_owned()
}
