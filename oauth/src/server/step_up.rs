//! Answering a refused call with an `insufficient_scope` challenge (RFC
//! 6750 §3.1, MCP authorization "scope challenge"): HTTP 403 with
//! `WWW-Authenticate` on the JSON-RPC POST, or, for clients that step up
//! only on a tool result, the same challenge in the error result's
//! `_meta["mcp/www_authenticate"]`.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::OAuthServer;
use crate::model::PendingStepUp;

/// A refused call's step-up, as the MCP server's authorization decision
/// made it: the grant, what it holds and where, and the scope to ask for.
#[derive(Debug, Clone, Copy)]
pub struct Challenge<'a> {
    /// The grant the session runs on.
    pub grant_id: &'a str,
    /// The upstream scopes the grant holds.
    pub held: &'a [String],
    /// The scoped URL (its path after `/mcp`) of the session, if any.
    pub scoped: Option<&'a str>,
    /// The catalogue scope to ask for.
    pub scope: &'a str,
    /// `METHOD path` of the refused request (for `error_description`).
    pub request: &'a str,
}

/// How a challenge reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// HTTP 403 with `WWW-Authenticate` (the MCP specification's way).
    Http,
    /// An error tool result carrying it in `_meta["mcp/www_authenticate"]`.
    ToolResult,
}

/// A client that steps up only on a tool result.
struct ToolResultClient {
    /// Matched exactly against a CIMD client id.
    client_id: Option<&'static str>,
    /// Matched against the host of a registered redirect URI.
    redirect_host: Option<&'static str>,
}

/// Clients known to step up only on a tool result (data, not logic: add a
/// row when another client is seen doing so).
const TOOL_RESULT_CLIENTS: &[ToolResultClient] = &[
    // Codex's Client ID Metadata Document.
    ToolResultClient {
        client_id: Some("https://chatgpt.com/oauth/codex/client.json"),
        redirect_host: None,
    },
    // ChatGPT connectors register with a chatgpt.com redirect URI.
    ToolResultClient {
        client_id: None,
        redirect_host: Some("chatgpt.com"),
    },
];

/// `?scopeChallenge=http|tool` of the request URI, which overrides the
/// table.
pub fn requested_delivery(query: Option<&str>) -> Option<Delivery> {
    url::form_urlencoded::parse(query.unwrap_or("").as_bytes()).find_map(|(k, v)| {
        (k == "scopeChallenge").then(|| match v.as_ref() {
            "tool" => Some(Delivery::ToolResult),
            "http" => Some(Delivery::Http),
            _ => None,
        })?
    })
}

/// The delivery for `client_id`: the table, from the client id itself or
/// (for a registered client) its redirect URIs' hosts.
pub async fn delivery_for(server: &OAuthServer, client_id: &str) -> Delivery {
    if TOOL_RESULT_CLIENTS
        .iter()
        .any(|c| c.client_id == Some(client_id))
    {
        return Delivery::ToolResult;
    }
    let hosts: Vec<String> = match server.setup.store.client(client_id).await {
        Ok(Some(client)) => serde_json::from_str::<Value>(&client.metadata)
            .ok()
            .and_then(|m| m["redirect_uris"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|u| url::Url::parse(u).ok()?.host_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let matches = |host: &str| {
        TOOL_RESULT_CLIENTS.iter().any(|c| {
            c.redirect_host
                .is_some_and(|h| host == h || host.ends_with(&format!(".{h}")))
        })
    };
    if hosts.iter().any(|h| matches(h)) {
        Delivery::ToolResult
    } else {
        Delivery::Http
    }
}

/// The `WWW-Authenticate` value: the scopes always requested, every scope
/// the grant holds and the missing one.
pub fn challenge(server: &OAuthServer, asked: &Challenge<'_>) -> String {
    let mut scopes: Vec<&str> = server
        .setup
        .config
        .upstream
        .scopes
        .iter()
        .chain(asked.held.iter())
        .map(String::as_str)
        .chain(std::iter::once(asked.scope))
        .collect();
    scopes.sort_unstable();
    scopes.dedup();
    let description = format!("{} needs the scope {}", asked.request, asked.scope);
    format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"{}\"",
        quoted(&scopes.join(" ")),
        quoted(&server.resource_metadata_url_at(asked.scoped)),
        quoted(&description)
    )
}

/// How long after a step-up challenge a refresh of the grant is refused
/// (10 minutes: time for the user to pass the consent page and the
/// upstream sign-in). After it, a client that never stepped up refreshes
/// again (narrow as before); a new challenge starts a new window.
pub const STEP_UP_WINDOW_SECS: i64 = 600;

/// The scope of the step-up challenge sent to `grant` less than
/// [`STEP_UP_WINDOW_SECS`] before `now`, if any. A refresh then would
/// return the same narrow token (a refresh never widens), so the client is
/// told to authorize again: the pinned TypeScript SDK answers an
/// `insufficient_scope` 403 by refreshing first, and re-authorizes only
/// when that fails with `invalid_grant`.
pub fn pending_step_up(grant: &crate::model::Grant, now: i64) -> Option<&str> {
    grant
        .step_up
        .as_ref()
        // A mark a little ahead of this instance's clock (another
        // instance's) counts as pending too.
        .filter(|p| p.at.saturating_add(STEP_UP_WINDOW_SECS) > now)
        .map(|p| p.scope.as_str())
}

/// A quoted-string's content: printable ASCII without `"` and `\`.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c,
            _ => '?',
        })
        .collect()
}

/// `resp`, or the step-up challenge `asked` in its place when the
/// request's surfaces recorded one (and the call itself was answered, 200).
pub async fn respond(
    server: &OAuthServer,
    asked: Option<Challenge<'_>>,
    client_id: &str,
    delivery: Option<Delivery>,
    resp: Response,
) -> Response {
    let Some(asked) = asked else {
        return resp;
    };
    if resp.status() != StatusCode::OK {
        return resp;
    }
    let delivery = match delivery {
        Some(d) => d,
        None => delivery_for(server, client_id).await,
    };
    // Either delivery: a client that refreshes instead of authorizing again
    // is sent to `/authorize` while the challenge is recent (see
    // `pending_step_up`).
    let pending = PendingStepUp {
        scope: asked.scope.to_owned(),
        at: super::now(),
    };
    if let Err(e) = server
        .setup
        .store
        .mark_step_up(asked.grant_id, &pending)
        .await
    {
        tracing::warn!(error = %e, "mark_step_up");
    }
    answer(resp, &challenge(server, &asked), delivery).await
}

/// The response carrying `challenge` in place of `resp` (a JSON-RPC
/// answer of a `tools/call` whose result is the refusal).
pub async fn answer(resp: Response, challenge: &str, delivery: Delivery) -> Response {
    match delivery {
        Delivery::Http => {
            let body = json!({"error": "insufficient_scope", "error_description": "the call needs a scope this session was not granted; authorize again with the scope in WWW-Authenticate"});
            let mut out = (StatusCode::FORBIDDEN, axum::Json(body)).into_response();
            if let Ok(v) = HeaderValue::from_str(challenge) {
                out.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
            out
        }
        Delivery::ToolResult => {
            let (mut parts, body) = resp.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, 4 << 20).await else {
                return (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
                    .into_response();
            };
            let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) else {
                return Response::from_parts(parts, Body::from(bytes));
            };
            if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
                let meta = result
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("mcp/www_authenticate".into(), json!([challenge]));
                }
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(message.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_overrides_the_delivery() {
        assert_eq!(
            requested_delivery(Some("scopeChallenge=tool")),
            Some(Delivery::ToolResult)
        );
        assert_eq!(
            requested_delivery(Some("a=1&scopeChallenge=http")),
            Some(Delivery::Http)
        );
        assert_eq!(requested_delivery(Some("scopeChallenge=other")), None);
        assert_eq!(requested_delivery(None), None);
    }

    fn grant_marked(at: Option<i64>) -> crate::model::Grant {
        let mut grant = crate::store::suite::grant("g");
        grant.step_up = at.map(|at| PendingStepUp {
            scope: "zone:read".into(),
            at,
        });
        grant
    }

    #[test]
    fn a_step_up_is_pending_for_the_window_only() {
        let now = 1_800_000_000;
        assert_eq!(pending_step_up(&grant_marked(None), now), None);
        assert_eq!(
            pending_step_up(&grant_marked(Some(now)), now),
            Some("zone:read")
        );
        let edge = now - STEP_UP_WINDOW_SECS + 1;
        assert_eq!(
            pending_step_up(&grant_marked(Some(edge)), now),
            Some("zone:read")
        );
        let expired = now - STEP_UP_WINDOW_SECS;
        assert_eq!(pending_step_up(&grant_marked(Some(expired)), now), None);
        assert_eq!(
            pending_step_up(&grant_marked(Some(now + 5)), now),
            Some("zone:read"),
            "a mark from a clock slightly ahead"
        );
        assert_eq!(
            pending_step_up(&grant_marked(Some(i64::MAX)), now),
            Some("zone:read"),
            "no overflow"
        );
        assert_eq!(pending_step_up(&grant_marked(Some(i64::MIN)), now), None);
    }

    #[test]
    fn quoted_strings_cannot_be_broken_out_of() {
        assert_eq!(quoted("a\"b\\c\u{e9}\r\n"), "a?b?c???");
    }
}
