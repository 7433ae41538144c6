//! Scoped URLs of the HTTP transport (`/mcp/accounts/A`): which scope a
//! request path names, the protected-resource metadata of each one, and
//! the first-use check that a signed-in user's upstream token can see the
//! scoped resource, and that a zone is in the URL's account (one upstream
//! request per grant, cached).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use super::Core;
use crate::authz::PathScope;
use crate::catalogue::Method;
use crate::credential::Credential;
use crate::request::HttpRequest;

/// Most remembered visibility answers; past it the cache starts over.
const MAX_REMEMBERED: usize = 50_000;

/// The scope a request path names: `Ok(None)` for `/mcp` itself, an error
/// response (404) for a path under `/mcp` that is no scoped URL.
pub(super) fn scope_of(core: &Core, path: &str) -> Result<Option<Arc<PathScope>>, Box<Response>> {
    let Some(suffix) = path.strip_prefix("/mcp") else {
        return Ok(None);
    };
    if suffix.is_empty() {
        return Ok(None);
    }
    crate::authz::parse_scope(core.catalogue.profile.scoped_paths, suffix)
        .map(|scope| Some(Arc::new(scope)))
        .ok_or_else(|| Box::new(not_scoped()))
}

fn not_scoped() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not Found: the MCP endpoint is /mcp (or one of the scoped URLs this server defines)",
    )
        .into_response()
}

/// The RFC 9728 document of `/mcp` or a scoped URL (by the metadata
/// document's raw request path) for a server without `--auth oauth`: no
/// authorization server, the client holds a static token.
pub(super) fn static_metadata(core: &Core, host: &str, raw_path: &str) -> Response {
    let suffix = raw_path
        .strip_prefix("/.well-known/oauth-protected-resource")
        .map(|rest| rest.strip_prefix("/mcp").unwrap_or(rest))
        .unwrap_or("");
    let scope = if suffix.is_empty() {
        String::new()
    } else {
        match crate::authz::parse_scope(core.catalogue.profile.scoped_paths, suffix) {
            Some(scope) => scope.suffix,
            None => return not_scoped(),
        }
    };
    axum::Json(json!({
        "resource": format!("http://{host}/mcp{scope}"),
        "authorization_servers": [],
        "bearer_methods_supported": ["header"],
        "resource_name": core.info().server_info.name,
    }))
    .into_response()
}

/// Per grant and scoped URL: whether the user's upstream token could see
/// the scoped resource.
#[derive(Debug, Default)]
pub(super) struct Visibility {
    seen: Mutex<HashMap<(String, String), bool>>,
}

impl Visibility {
    fn remembered(&self, key: &(String, String)) -> Option<bool> {
        match self.seen.lock() {
            Ok(seen) => seen.get(key).copied(),
            Err(poisoned) => poisoned.into_inner().get(key).copied(),
        }
    }

    fn remember(&self, key: (String, String), visible: bool) {
        let mut seen = match self.seen.lock() {
            Ok(seen) => seen,
            Err(poisoned) => poisoned.into_inner(),
        };
        if seen.len() >= MAX_REMEMBERED {
            seen.clear();
        }
        seen.insert(key, visible);
    }

    /// Checks, once per `grant` and scope, that `credential` can see the
    /// scoped resource (the profile's check path answers 2xx, and its
    /// answer ties the values the check does not name, such as a zone's
    /// account, to it: [`PathScope::confirmed_by`]): a 401, 403 or 404, or
    /// a resource of another account, is a 403 for the session; any other
    /// failure is a 503 and is asked again next time.
    ///
    /// # Errors
    ///
    /// The response refusing the request.
    pub(super) async fn verify(
        &self,
        core: &Core,
        grant: &str,
        scope: &PathScope,
        credential: &Credential,
    ) -> Result<(), Box<Response>> {
        let Some(check) = scope.path.check else {
            return Ok(());
        };
        let key = (grant.to_owned(), scope.suffix.clone());
        let visible = match self.remembered(&key) {
            Some(visible) => visible,
            None => {
                let request = HttpRequest {
                    method: Method::Get,
                    path_and_query: scope.fill_template(check),
                    headers: Vec::new(),
                    body: None,
                    security: None,
                    operation: None,
                };
                let resp = match core.upstream().send(&request, Some(credential)).await {
                    Ok(resp) => resp,
                    Err(e) => {
                        tracing::warn!(error = %credential.redact(&e.to_string()), "scoped URL check failed");
                        return Err(Box::new(unavailable()));
                    }
                };
                let visible = match resp.status.as_u16() {
                    // The same answer ties the values the check does not
                    // name (a zone's account) to the checked resource.
                    200..=299 => {
                        let body = serde_json::from_slice::<serde_json::Value>(&resp.body).ok();
                        let payload = body
                            .as_ref()
                            .and_then(|b| b.pointer(core.catalogue.profile.envelope.payload));
                        scope.confirmed_by(check, payload)
                    }
                    401 | 403 | 404 => false,
                    _ => return Err(Box::new(unavailable())),
                };
                self.remember(key, visible);
                visible
            }
        };
        if visible {
            return Ok(());
        }
        let body = json!({
            "error": "forbidden",
            "error_description": format!(
                "the signed-in account cannot see the resource of this URL (/mcp{}), or it is not in the URL's account; connect at a URL of a resource it can reach",
                scope.suffix
            ),
        });
        Err(Box::new(
            (StatusCode::FORBIDDEN, axum::Json(body)).into_response(),
        ))
    }
}

fn unavailable() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Service Unavailable: the API did not answer the check of this scoped URL",
    )
        .into_response()
}

/// A scoped URL asked of a server without client authentication: there is
/// no session to bind.
pub(super) fn needs_client_auth() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not Found: scoped URLs need client authentication; this server's MCP endpoint is /mcp",
    )
        .into_response()
}

/// The RFC 9728 metadata URL of `/mcp` (or a scoped URL) at `host`, for a
/// server without `--auth oauth`.
pub(super) fn metadata_url(host: &str, scope: Option<&PathScope>) -> String {
    format!(
        "http://{host}/.well-known/oauth-protected-resource/mcp{}",
        scope.map_or("", |s| s.suffix.as_str())
    )
}

/// The 401 of a request without a valid bearer token.
pub(super) fn unauthorized(metadata: &str, presented: bool) -> Response {
    crate::metrics::auth_event(crate::metrics::AuthEvent::Rejected);
    let mut challenge = format!("Bearer resource_metadata=\"{metadata}\"");
    let description = if presented {
        challenge.push_str(", error=\"invalid_token\"");
        "the bearer token is not valid for this server"
    } else {
        "this server needs `Authorization: Bearer <token>`"
    };
    let body = json!({"error": if presented { "invalid_token" } else { "unauthorized" }, "error_description": description});
    let mut resp = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    if let Ok(v) = http::HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
    }
    resp
}
