//! The protected resources this server issues tokens for: `/mcp` and each
//! scoped URL of the profile (`/mcp/accounts/A`), their RFC 8707 check at
//! `/authorize` and `/token`, and their RFC 9728 metadata (path-suffixed
//! well-known URLs).

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde_json::json;

use super::{OAuthServer, json_no_store, oauth_error};

impl OAuthServer {
    /// The canonical resource a client's RFC 8707 `resource` names, when it
    /// is this server's: `<origin>/mcp` (a trailing slash tolerated, as
    /// before scoped URLs), or `<origin>/mcp` followed by one of the
    /// profile's scoped paths spelled exactly (no trailing slash, query,
    /// fragment, encoding, dot segment or case change).
    pub fn resource_for(&self, given: &str) -> Option<String> {
        let base = self.resource();
        if given == base || given.strip_prefix(base) == Some("/") {
            return Some(base.to_owned());
        }
        let suffix = given.strip_prefix(base)?;
        self.scoped
            .canonical(suffix)
            .map(|suffix| format!("{base}{suffix}"))
    }

    /// Whether a stored grant's resource is one this server serves.
    pub(super) fn serves(&self, resource: &str) -> bool {
        self.resource_for(resource).as_deref() == Some(resource)
    }

    /// The canonical suffix of `/mcp` + `suffix`, when it is a scoped URL.
    pub fn scope_of(&self, suffix: &str) -> Option<String> {
        self.scoped.canonical(suffix)
    }

    /// The RFC 9728 metadata URL of `/mcp` or of a scoped URL (its suffix
    /// after `/mcp`), for `WWW-Authenticate`.
    pub fn resource_metadata_url_at(&self, suffix: Option<&str>) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource/mcp{}",
            self.issuer(),
            suffix.unwrap_or("")
        )
    }

    /// The RFC 9728 document of the resource `<origin>/mcp` + `suffix`.
    pub fn protected_resource_metadata_at(&self, suffix: &str) -> serde_json::Value {
        let mut doc = self.protected_resource_metadata();
        doc["resource"] = json!(format!("{}{suffix}", self.resource()));
        doc
    }
}

/// `GET /.well-known/oauth-protected-resource/mcp/{scoped path}`.
pub(super) async fn scoped_metadata(
    State(server): State<Arc<OAuthServer>>,
    uri: http::Uri,
) -> Response {
    // The raw path: a decoded one would accept `%2F` and other spellings.
    let suffix = uri
        .path()
        .strip_prefix("/.well-known/oauth-protected-resource/mcp")
        .unwrap_or("");
    match server.scope_of(suffix) {
        Some(suffix) => json_no_store(
            StatusCode::OK,
            server.protected_resource_metadata_at(&suffix),
        ),
        None => oauth_error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no protected resource at this path",
        ),
    }
}
