//! Upstream credentials held server-side.
//!
//! A [`Credential`] is what one caller sends upstream: the token its client
//! maps to (or the server's own, over stdio) plus the [`ServerSecrets`]
//! read from the environment for the profile's other schemes (API keys in
//! a header, query or cookie, bearer tokens, HTTP basic, OAuth client
//! credentials; see [`crate::security`]). [`Credential::authorize`] picks
//! what one request sends from the operation's requirement. Its `Debug`
//! output names where the token came from, never the token;
//! [`Credential::redact`] scrubs every secret, in every form an upstream
//! plausibly echoes it in (escaped, URL-encoded, case-changed, the basic
//! header's base64; see [`crate::redact`]), from anything derived from an
//! upstream response before the rest of the server sees it.

#[cfg(test)]
mod log_tests;
pub mod oauth2;
#[cfg(test)]
mod scope_tests;
pub mod secrets;
#[cfg(test)]
mod send_tests;
#[cfg(test)]
mod testing;
pub mod token_answer;
pub mod unset;

use std::fmt;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use sha2::{Digest, Sha256};

use crate::redact::Redactor;
use crate::security::{KeyLocation, Requirement, SchemeKind, operation_scopes};

pub use oauth2::{AccessToken, TokenError, TokenSource};
pub use secrets::ServerSecrets;
use secrets::{SchemeValue, key_location};

/// Why a token cannot be used as an upstream credential.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// The token is empty (or only whitespace).
    #[error("the upstream token from {source_label} is empty")]
    Empty {
        /// Where the token came from, e.g. ``env `PETSTORE_API_TOKEN` ``.
        source_label: String,
    },
    /// The token holds characters that cannot go into an HTTP header.
    #[error(
        "the upstream token from {source_label} contains characters that cannot be sent in an HTTP header (control characters or non-ASCII)"
    )]
    NotHeaderSafe {
        /// Where the token came from.
        source_label: String,
    },
    /// A configured value cannot be used.
    #[error("the upstream credential from {source_label} is unusable: {reason}")]
    Invalid {
        /// Where the value came from.
        source_label: String,
        /// Why.
        reason: &'static str,
    },
}

/// Why a request cannot be given the credentials it needs.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    /// Nothing configured meets the requirement; the text names the
    /// variables to set.
    #[error("{0}")]
    Missing(String),
    /// An OAuth access token could not be fetched.
    #[error(transparent)]
    Token(#[from] TokenError),
}

/// What one request sends: headers, query parameters and cookies.
#[derive(Debug, Default)]
pub struct Authorization {
    /// Headers to add (values marked sensitive).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `name=value` query parameters to append (never shown).
    pub query: Vec<(&'static str, String)>,
    /// Cookies to add to the `Cookie` header.
    pub cookies: Vec<(&'static str, String)>,
    /// The fetched OAuth tokens sent, to forget when the API refuses them.
    pub tokens: Vec<(Arc<TokenSource>, Arc<AccessToken>)>,
}

impl Authorization {
    /// The request carries an OAuth access token the server fetched.
    pub fn has_fetched_token(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The request as sent: `path_and_query` with the credential's query
    /// parameters appended (form-encoded), and `headers` followed by the
    /// credential's, with one `Cookie` header holding the parameters'
    /// cookies and the credential's (RFC 6265 §5.4). Credential values are
    /// marked sensitive.
    ///
    /// # Errors
    ///
    /// The name of a header that cannot be sent (an invalid name, or a
    /// value that is not printable ASCII).
    pub fn apply(
        &self,
        path_and_query: &str,
        headers: &[(String, String)],
    ) -> Result<(String, Vec<(HeaderName, HeaderValue)>), String> {
        let mut target = path_and_query.to_owned();
        for (name, value) in &self.query {
            target.push(if target.contains('?') { '&' } else { '?' });
            target.extend(url::form_urlencoded::byte_serialize(name.as_bytes()));
            target.push('=');
            target.extend(url::form_urlencoded::byte_serialize(value.as_bytes()));
        }
        let mut out = Vec::with_capacity(headers.len() + self.headers.len() + 1);
        let mut cookie_sent = false;
        for (name, value) in headers {
            let (Ok(n), Ok(v), true) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
                crate::request::header_safe(value),
            ) else {
                return Err(name.clone());
            };
            if n == http::header::COOKIE && !self.cookies.is_empty() {
                if !cookie_sent && let Some(v) = self.cookie_header(Some(value)) {
                    out.push((n, v));
                }
                cookie_sent = true;
                continue;
            }
            out.push((n, v));
        }
        if !cookie_sent && let Some(v) = self.cookie_header(None) {
            out.push((http::header::COOKIE, v));
        }
        out.extend(self.headers.iter().cloned());
        Ok((target, out))
    }

    /// One `Cookie` value: `existing` (the parameters'), then the
    /// credential's cookies.
    fn cookie_header(&self, existing: Option<&str>) -> Option<HeaderValue> {
        if self.cookies.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = existing
            .filter(|e| !e.is_empty())
            .map(|e| vec![e.to_owned()])
            .unwrap_or_default();
        parts.extend(self.cookies.iter().map(|(n, v)| format!("{n}={v}")));
        sensitive(&parts.join("; "))
    }

    /// Forgets the fetched tokens (the API answered 401).
    pub fn invalidate_tokens(&self) {
        for (source, token) in &self.tokens {
            source.invalidate(token);
        }
    }
}

/// An upstream credential set plus a label saying where it came from.
///
/// Cloning is cheap (shared). Secrets are only reachable through
/// [`Credential::authorize`], which marks header values sensitive.
#[derive(Clone)]
pub struct Credential {
    inner: Arc<Inner>,
}

struct Inner {
    /// The caller's token: sent as bearer when there are no secrets (a
    /// profile without schemes), else as the primary scheme's value.
    token: Option<String>,
    secrets: Option<Arc<ServerSecrets>>,
    label: String,
    key: [u8; 32],
    redactor: Redactor,
}

impl Credential {
    /// One bearer token sent with every request (a profile that declares
    /// no schemes); `label` says where it came from (no secret in it).
    ///
    /// # Errors
    ///
    /// Refuses an empty token or one that cannot be an HTTP header value.
    pub fn new(token: &str, label: impl Into<String>) -> Result<Self, CredentialError> {
        let label = label.into();
        let token = checked_token(token, &label)?;
        Ok(Self::build(Some(token), None, label))
    }

    /// The credentials of a caller of a profile with schemes: `token` (when
    /// the caller brings one) fills the primary scheme, `secrets` the rest.
    ///
    /// # Errors
    ///
    /// Refuses an empty token or one that cannot be an HTTP header value.
    pub fn with_secrets(
        token: Option<&str>,
        label: impl Into<String>,
        secrets: Arc<ServerSecrets>,
    ) -> Result<Self, CredentialError> {
        let label = label.into();
        let token = token.map(|t| checked_token(t, &label)).transpose()?;
        Ok(Self::build(token, Some(secrets), label))
    }

    /// This credential's token joined to `secrets` (an HTTP client's
    /// mapped token, used with the server's other schemes). A profile
    /// without schemes keeps the plain bearer credential.
    pub fn bind(&self, secrets: &Arc<ServerSecrets>) -> Self {
        if secrets.profile().schemes.is_empty() {
            return self.clone();
        }
        Self::build(
            self.inner.token.clone(),
            Some(secrets.clone()),
            self.inner.label.clone(),
        )
    }

    fn build(token: Option<String>, secrets: Option<Arc<ServerSecrets>>, label: String) -> Self {
        let mut all: Vec<String> = token
            .iter()
            .flat_map(|t| crate::redact::forms::sent_forms(t))
            .collect();
        if let Some(s) = &secrets {
            all.extend(s.secrets());
        }
        let mut hasher = Sha256::new();
        for secret in &all {
            hasher.update(secret.as_bytes());
            hasher.update([0]);
        }
        let key = hasher.finalize().into();
        let redactor = Redactor::new(all.iter().map(String::as_str));
        Self {
            inner: Arc::new(Inner {
                token,
                secrets,
                label,
                key,
                redactor,
            }),
        }
    }

    /// Where the token came from (safe to log).
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// A stable cache key for per-credential data: a SHA-256 over the
    /// secrets.
    pub fn cache_key(&self) -> [u8; 32] {
        self.inner.key
    }

    /// The `Authorization: Bearer …` header value of the caller's token,
    /// marked sensitive so HTTP libraries never print it.
    pub fn authorization(&self) -> Option<HeaderValue> {
        bearer(self.inner.token.as_deref()?)
    }

    /// What a request needing `requirement` (`None`: the profile's global
    /// one) sends, fetching an OAuth token when the chosen alternative
    /// has a client-credentials scheme: for the scopes `operation` lists
    /// for it ([`crate::profile::Profile::scopes`]), else for all the
    /// scheme declares. `base` resolves relative token URLs.
    ///
    /// # Errors
    ///
    /// No configured alternative meets the requirement (the error names the
    /// variables to set), or a token fetch failed.
    pub async fn authorize(
        &self,
        requirement: Option<Requirement>,
        operation: Option<&str>,
        client: &reqwest::Client,
        base: &str,
    ) -> Result<Authorization, AuthorizeError> {
        let mut out = Authorization::default();
        let Some(secrets) = &self.inner.secrets else {
            if let Some(value) = self.authorization() {
                out.headers.push((http::header::AUTHORIZATION, value));
            }
            return Ok(out);
        };
        let profile = secrets.profile();
        let requirement = requirement.unwrap_or(profile.security);
        let token = self.inner.token.as_deref();
        let Some(alternative) = secrets
            .choose(requirement, token.is_some())
            .map_err(AuthorizeError::Missing)?
        else {
            return Ok(out);
        };
        for &index in alternative {
            let Some(scheme) = secrets.scheme(index) else {
                continue;
            };
            let value = match (token, profile.primary == Some(index)) {
                (Some(t), true) => Some(Value::Secret(t)),
                _ => secrets.value(index).map(Value::from),
            };
            let Some(value) = value else { continue };
            match value {
                Value::Secret(secret) => match key_location(scheme.kind) {
                    Some((KeyLocation::Header, name)) => {
                        if let (Ok(n), Some(v)) =
                            (HeaderName::from_bytes(name.as_bytes()), sensitive(secret))
                        {
                            out.headers.push((n, v));
                        }
                    }
                    Some((KeyLocation::Query, name)) => out.query.push((name, secret.to_owned())),
                    Some((KeyLocation::Cookie, name)) => {
                        out.cookies.push((name, secret.to_owned()));
                    }
                    None => {
                        if let Some(v) = bearer(secret) {
                            out.headers.push((http::header::AUTHORIZATION, v));
                        }
                    }
                },
                Value::Basic(header) => {
                    if let Some(v) = sensitive(header) {
                        out.headers.push((http::header::AUTHORIZATION, v));
                    }
                }
                Value::Client(source) => {
                    debug_assert!(matches!(scheme.kind, SchemeKind::ClientCredentials { .. }));
                    let scopes =
                        operation.and_then(|op| operation_scopes(profile.scopes, op, index));
                    let fetched = match scopes {
                        Some(scopes) => source.token_for(client, base, scopes).await?,
                        None => source.token(client, base).await?,
                    };
                    out.headers
                        .push((http::header::AUTHORIZATION, fetched.authorization()));
                    out.tokens.push((source.clone(), fetched));
                }
            }
        }
        Ok(out)
    }

    /// `text` with every secret, in any recognised form, replaced by
    /// `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        let clean = self.inner.redactor.redact_str(text).into_owned();
        match &self.inner.secrets {
            Some(s) => s.token_sources().fold(clean, |t, src| src.redact(t)),
            None => clean,
        }
    }

    /// `text` redacted as by [`Self::redact`], then cut to at most
    /// `max_chars` characters (and `…`) without leaving the beginning of
    /// a secret at the cut (see [`Redactor::clip`]).
    pub fn clip(&self, text: &str, max_chars: usize) -> String {
        let clean = self.redact(text);
        let fetched: Vec<Redactor> = match &self.inner.secrets {
            Some(s) => s.token_sources().flat_map(|src| src.redactors()).collect(),
            None => Vec::new(),
        };
        let mut all = vec![&self.inner.redactor];
        all.extend(fetched.iter());
        crate::redact::clip_redacted(&clean, max_chars, &all)
    }

    /// `bytes` with every secret, in any recognised form, replaced by
    /// `[REDACTED]` (no copy when none is present).
    pub fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let clean = self.inner.redactor.redact_bytes(bytes);
        match &self.inner.secrets {
            Some(s) => s.token_sources().fold(clean, |b, src| src.redact_bytes(b)),
            None => clean,
        }
    }
}

/// A configured value, borrowed for one request.
enum Value<'a> {
    Secret(&'a str),
    Basic(&'a str),
    Client(&'a Arc<TokenSource>),
}

impl<'a> From<&'a SchemeValue> for Value<'a> {
    fn from(value: &'a SchemeValue) -> Self {
        match value {
            SchemeValue::Secret(s) => Value::Secret(s),
            SchemeValue::Basic { header, .. } => Value::Basic(header),
            SchemeValue::Client(source) => Value::Client(source),
        }
    }
}

fn checked_token(token: &str, label: &str) -> Result<String, CredentialError> {
    let token = token.trim();
    if token.is_empty() {
        return Err(CredentialError::Empty {
            source_label: label.to_owned(),
        });
    }
    if !token.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return Err(CredentialError::NotHeaderSafe {
            source_label: label.to_owned(),
        });
    }
    Ok(token.to_owned())
}

fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(value).ok()?;
    v.set_sensitive(true);
    Some(v)
}

fn bearer(token: &str) -> Option<HeaderValue> {
    sensitive(&format!("Bearer {token}"))
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credential({})", self.inner.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let c = Credential::new("s3cr3t-token", "env `X`").unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("env `X`"));
        let header = c.authorization().unwrap();
        assert!(header.is_sensitive());
        assert!(!format!("{header:?}").contains("s3cr3t"));
    }

    #[test]
    fn rejects_empty_and_unsafe_tokens() {
        assert!(matches!(
            Credential::new("  ", "l"),
            Err(CredentialError::Empty { .. })
        ));
        let err = Credential::new("a\r\nb", "l").unwrap_err();
        assert!(matches!(err, CredentialError::NotHeaderSafe { .. }));
        assert!(!err.to_string().contains("a\r\nb"));
    }

    #[test]
    fn redacts_text_and_bytes() {
        let c = Credential::new("tok123", "l").unwrap();
        assert_eq!(c.redact("x tok123 y tok123"), "x [REDACTED] y [REDACTED]");
        assert_eq!(
            c.redact_bytes(b"{\"auth\":\"Bearer tok123\"}".to_vec()),
            b"{\"auth\":\"Bearer [REDACTED]\"}".to_vec()
        );
        assert_eq!(c.redact_bytes(b"nothing".to_vec()), b"nothing".to_vec());
    }
}
