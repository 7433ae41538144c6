//! The fast path for `tools/call` and `ping` over Streamable HTTP.
//!
//! In stateless mode rmcp builds a service per POST (a one-shot transport,
//! channels, a spawned serve loop and a spawned handler task) and parses
//! the body a second time before the [`super::Handler`] sees a call. The
//! authentication layer has already parsed the message (see
//! [`super::jsonrpc_guard::classify`]), so for the requests that need none
//! of rmcp's session machinery this layer calls [`Core::call_observed`]
//! itself and writes the JSON-RPC response with rmcp's own message types,
//! byte for byte what rmcp would send.
//!
//! A request takes this path only when rmcp would certainly serve it the
//! plain way; anything else goes to rmcp unchanged ([`FastCall::of`]):
//! - `Accept` names `application/json` and `text/event-stream` without
//!   parameters or quotes (rmcp answers 406 to fewer; it also accepts
//!   forms this check leaves to it);
//! - `MCP-Protocol-Version` is absent or one of the versions before the
//!   2026-07-28 era (that era's per-request metadata, `Mcp-Method` header
//!   checks and error statuses stay rmcp's), and the request has no
//!   `_meta` protocol version;
//! - no progress token (progress notifications need rmcp's SSE stream);
//! - a `tools/call` without `inputResponses` / `requestState`, or a `ping`.
//!
//! Everything around the call is unchanged because it is answered
//! innermost, in the last layer before rmcp ([`answer`]): allowlists, authentication, per-grant checks (the
//! [`Connection`] goes to the core as before), step-up challenges (the
//! authentication layer wraps this response as it wraps rmcp's),
//! compression and the connection-level drain. A shutdown cancel answers
//! as rmcp does (500); a client that disconnects drops the call.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, GetMeta,
    JsonRpcRequest, JsonRpcVersion2_0, RequestId, RequestMetaObject, ServerJsonRpcMessage,
    ServerResult,
};
use serde::de::{Deserialize, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use tokio_util::sync::CancellationToken;

use super::Core;
use crate::authz::Connection;
use crate::credential::Credential;

/// Protocol versions whose stateless requests rmcp serves without
/// per-request negotiation (before the 2026-07-28 era); an absent header
/// means 2025-03-26 to rmcp.
const PLAIN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What rmcp answers when the server shuts down while a request is in
/// flight (its `internal_error_response("empty response")`).
const SHUTDOWN_BODY: &str =
    "Encounter an error when empty response: no response message received from handler";

/// A request this layer answers itself, parsed by the authentication
/// layer and carried in the request's extensions.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FastCall {
    /// `tools/call`: the request id, the tool name and its arguments.
    Call {
        /// The JSON-RPC id, echoed in the response.
        id: RequestId,
        /// The tool's name.
        name: String,
        /// The arguments object, if any.
        arguments: Option<rmcp::model::JsonObject>,
    },
    /// `ping`.
    Ping(RequestId),
}

impl FastCall {
    /// The fast form of `message`, when rmcp would serve it the plain way
    /// (see the module docs); `None` leaves it to rmcp.
    pub(super) fn of(headers: &HeaderMap, message: &mut ClientJsonRpcMessage) -> Option<Self> {
        let ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. }) = message else {
            return None;
        };
        if !plain_version(headers) || !accepts_json_and_sse(headers) {
            return None;
        }
        if !plain_meta(request.get_meta()) {
            return None;
        }
        match request {
            ClientRequest::CallToolRequest(call) => {
                let params = &mut call.params;
                if !params.meta.as_ref().is_none_or(plain_meta)
                    || params.input_responses.is_some()
                    || params.request_state.is_some()
                {
                    return None;
                }
                Some(Self::Call {
                    id: id.clone(),
                    name: params.name.to_string(),
                    arguments: params.arguments.take(),
                })
            }
            ClientRequest::PingRequest(_) => Some(Self::Ping(id.clone())),
            _ => None,
        }
    }
}

impl FastCall {
    /// The fast form of a plain `tools/call` body, read straight into its
    /// parts. rmcp's message types read a request through an untagged
    /// shape check and two flattened layers, each buffering the whole
    /// message (arguments included) before the call is built; this reads
    /// it once. `None` leaves the body to [`super::jsonrpc_guard::classify`]
    /// and [`FastCall::of`], which decide as before: it accepts only what
    /// rmcp reads as the same plain call (see [`WireCall`]), with rmcp's
    /// own types for the version, the id and the params.
    pub(super) fn decode(headers: &HeaderMap, body: &[u8]) -> Option<Self> {
        if !plain_version(headers) || !accepts_json_and_sse(headers) {
            return None;
        }
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let WireCall { id, params } = serde_json::from_slice(body).ok()?;
        if !params.meta.as_ref().is_none_or(plain_meta)
            || params.input_responses.is_some()
            || params.request_state.is_some()
        {
            return None;
        }
        Some(Self::Call {
            id,
            name: params.name.into_owned(),
            arguments: params.arguments,
        })
    }
}

/// A JSON-RPC `tools/call` request as rmcp reads it: an object whose keys
/// are `jsonrpc` (`"2.0"`), `id`, `method` (`"tools/call"`) and `params`,
/// each exactly once, any other key ignored, and neither `result` nor
/// `error` (rmcp refuses a request carrying either). Anything else, an
/// escaped key or method name included, is an error here and goes the
/// long way.
struct WireCall {
    id: RequestId,
    params: CallToolRequestParams,
}

impl<'de> Deserialize<'de> for WireCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(WireVisitor)
    }
}

struct WireVisitor;

impl<'de> Visitor<'de> for WireVisitor {
    type Value = WireCall;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a plain tools/call request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireCall, A::Error> {
        let (mut version, mut method) = (false, false);
        let (mut id, mut params) = (None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "jsonrpc" if !version => {
                    map.next_value::<JsonRpcVersion2_0>()?;
                    version = true;
                }
                "id" if id.is_none() => id = Some(map.next_value::<RequestId>()?),
                "method" if !method => {
                    if map.next_value::<&'de str>()? != "tools/call" {
                        return Err(A::Error::custom("not tools/call"));
                    }
                    method = true;
                }
                "params" if params.is_none() => {
                    params = Some(map.next_value::<CallToolRequestParams>()?);
                }
                "jsonrpc" | "id" | "method" | "params" | "result" | "error" => {
                    return Err(A::Error::custom("left to rmcp"));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (version, method, id, params) {
            (true, true, Some(id), Some(params)) => Ok(WireCall { id, params }),
            _ => Err(A::Error::custom("not a whole tools/call request")),
        }
    }
}

/// The fast path's shared state.
#[derive(Debug)]
pub(super) struct FastState {
    /// The server.
    pub(super) core: Arc<Core>,
    /// Cancelled at shutdown (rmcp's `cancellation_token`).
    pub(super) shutdown: CancellationToken,
}

/// Answers `req`, marked `fast` by the authentication layer. Called by
/// the innermost middleware in front of rmcp (`http::splice_listing`)
/// rather than being a layer of its own: every `from_fn` layer clones
/// the whole service stack inside it per request and drops it after.
pub(super) async fn answer(state: &FastState, req: Request, fast: FastCall) -> Response {
    if state.shutdown.is_cancelled() {
        return shutdown_response();
    }
    let message = match fast {
        FastCall::Ping(id) => ServerJsonRpcMessage::response(legacy(ServerResult::empty(())), id),
        FastCall::Call {
            id,
            name,
            arguments,
        } => {
            let credential = req.extensions().get::<Credential>();
            let connection = req
                .extensions()
                .get::<Connection>()
                .cloned()
                .unwrap_or_default();
            let call = state.core.call_observed(
                &name,
                arguments,
                credential,
                &connection,
                CancellationToken::new(),
                None,
            );
            let result = tokio::select! {
                result = call => result,
                () = state.shutdown.cancelled() => return shutdown_response(),
            };
            match result {
                Ok(result) => ServerJsonRpcMessage::response(
                    legacy(ServerResult::from(CallToolResponse::from(result))),
                    id,
                ),
                Err(error) => error_message(error, id),
            }
        }
    };
    json_response(&message)
}

/// `result` in the shape of the eras before 2026-07-28, as rmcp's handler
/// leaves it for them: no `resultType: "complete"`, object-only
/// structured content.
fn legacy(mut result: ServerResult) -> ServerResult {
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    result
}

/// A handler error as rmcp sends it (and logs it, at `warn`).
fn error_message(error: ErrorData, id: RequestId) -> ServerJsonRpcMessage {
    tracing::warn!(%id, code = error.code.0, message = %error.message, "response error");
    ServerJsonRpcMessage::error(error, Some(id))
}

/// `message` as rmcp's JSON response: 200, `application/json`.
fn json_response(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => {
            let mut resp = Response::new(Body::from(body));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        Err(e) => {
            tracing::error!("Internal server error when serialize json response: {e}");
            let mut resp = Response::new(Body::from(format!(
                "Encounter an error when serialize json response: {e}"
            )));
            *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            resp
        }
    }
}

fn shutdown_response() -> Response {
    tracing::error!(
        "Internal server error when empty response: no response message received from handler"
    );
    let mut resp = Response::new(Body::from(SHUTDOWN_BODY));
    *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    resp
}

/// `_meta` without a progress token and without the protocol's own keys
/// (per-request version, client context, log level): those need rmcp.
fn plain_meta(meta: &RequestMetaObject) -> bool {
    meta.0
        .keys()
        .all(|k| k != "progressToken" && !k.starts_with("io.modelcontextprotocol/"))
}

/// `MCP-Protocol-Version` absent, or a version rmcp serves without
/// per-request negotiation.
fn plain_version(headers: &HeaderMap) -> bool {
    match headers.get("mcp-protocol-version") {
        None => true,
        Some(v) => v.to_str().is_ok_and(|v| PLAIN_VERSIONS.contains(&v)),
    }
}

/// Whether `Accept` names both JSON and SSE in a form rmcp certainly
/// accepts: entries without parameters, in values without quotes.
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        if value.contains('"') {
            continue;
        }
        for entry in value.split(',') {
            if entry.contains(';') {
                continue;
            }
            let essence = entry.trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

#[cfg(all(test, feature = "codemode"))]
#[path = "fast_call_tests.rs"]
mod tests;
