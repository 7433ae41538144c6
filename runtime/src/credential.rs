//! Upstream credentials held server-side.
//!
//! A [`Credential`] wraps an upstream API token. Its `Debug` output names
//! where the token came from, never the token; [`Credential::redact`] scrubs
//! the token, in every form an upstream plausibly echoes it in (escaped,
//! URL-encoded, case-changed; see [`crate::redact`]), from anything derived
//! from an upstream response before the rest of the server sees it.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::redact::Redactor;

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
}

/// An upstream API token plus a label saying where it came from.
///
/// Cloning is cheap (shared). The token is only reachable through
/// [`Credential::authorization`], which marks the header value sensitive.
#[derive(Clone)]
pub struct Credential {
    inner: Arc<Inner>,
}

struct Inner {
    token: String,
    label: String,
    key: [u8; 32],
    redactor: Redactor,
}

impl Credential {
    /// Wraps `token`; `label` says where it came from (no secret in it).
    ///
    /// # Errors
    ///
    /// Refuses an empty token or one that cannot be an HTTP header value.
    pub fn new(token: &str, label: impl Into<String>) -> Result<Self, CredentialError> {
        let label = label.into();
        let token = token.trim();
        if token.is_empty() {
            return Err(CredentialError::Empty {
                source_label: label,
            });
        }
        if !token.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            return Err(CredentialError::NotHeaderSafe {
                source_label: label,
            });
        }
        let key = Sha256::digest(token.as_bytes()).into();
        Ok(Self {
            inner: Arc::new(Inner {
                token: token.to_owned(),
                label,
                key,
                redactor: Redactor::new([token]),
            }),
        })
    }

    /// Where the token came from (safe to log).
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// A stable cache key for per-credential data: the SHA-256 of the token.
    pub fn cache_key(&self) -> [u8; 32] {
        self.inner.key
    }

    /// The `Authorization: Bearer …` header value, marked sensitive so HTTP
    /// libraries never print it.
    pub fn authorization(&self) -> Option<http::HeaderValue> {
        let mut value =
            http::HeaderValue::from_str(&format!("Bearer {}", self.inner.token)).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// `text` with the token, in any recognised form, replaced by
    /// `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        self.inner.redactor.redact_str(text).into_owned()
    }

    /// `bytes` with the token, in any recognised form, replaced by
    /// `[REDACTED]` (no copy when it is absent).
    pub fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        self.inner.redactor.redact_bytes(bytes)
    }

    /// The redactor for this credential's secrets.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }
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
