//! A raw MCP client over Streamable HTTP built on [`crate::http`]: exact
//! control of the bytes, headers and protocol version, for protocol and
//! fault tests (the real SDK clients are driven by `tests/js` and
//! `tests/py`).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{self, Response};

/// Protocol version of the initialize-era (2025-11-25) clients.
pub const HANDSHAKE_VERSION: &str = "2025-11-25";

/// A raw Streamable HTTP MCP client.
#[derive(Debug, Clone)]
pub struct RawClient {
    /// Server address.
    pub addr: SocketAddr,
    /// Request target, e.g. `/mcp`.
    pub path: String,
    /// Bearer token (sent as `Authorization: Bearer …`) when set.
    pub token: Option<String>,
    /// Value of the `MCP-Protocol-Version` header.
    pub protocol_version: String,
    /// Bound on each request.
    pub timeout: Duration,
}

impl RawClient {
    /// A client for `http://addr/mcp` with this bearer token.
    pub fn new(addr: SocketAddr, token: &str) -> Self {
        Self {
            addr,
            path: "/mcp".to_owned(),
            token: Some(token.to_owned()),
            protocol_version: HANDSHAKE_VERSION.to_owned(),
            timeout: Duration::from_secs(60),
        }
    }

    /// The default headers: auth, accept, content type, protocol version.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "MCP-Protocol-Version".to_owned(),
                self.protocol_version.clone(),
            ),
        ];
        if let Some(token) = &self.token {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        headers
    }

    /// POSTs `body` with the default headers plus `extra` (an `extra`
    /// header replaces a default of the same name).
    ///
    /// # Errors
    ///
    /// Transport failures.
    pub fn post_raw(&self, body: &[u8], extra: &[(&str, &str)]) -> Result<Response, String> {
        let mut headers: Vec<(String, String)> = self
            .headers()
            .into_iter()
            .filter(|(n, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(n)))
            .collect();
        headers.extend(
            extra
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
        );
        let request = http::Request {
            method: "POST".to_owned(),
            target: self.path.clone(),
            headers,
            body: Some(body.to_vec()),
        };
        http::send(self.addr, &request, self.timeout)
            .map_err(|e| format!("POST {} failed: {e}", self.path))
    }

    /// Sends a request of any method with exactly these headers.
    ///
    /// # Errors
    ///
    /// Transport failures.
    pub fn send(
        &self,
        method: &str,
        target: &str,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> Result<Response, String> {
        let request = http::Request {
            method: method.to_owned(),
            target: target.to_owned(),
            headers,
            body,
        };
        http::send(self.addr, &request, self.timeout)
            .map_err(|e| format!("{method} {target} failed: {e}"))
    }

    /// Sends one JSON-RPC request and returns the JSON-RPC response object.
    ///
    /// # Errors
    ///
    /// Transport failures, a non-200 status, or a body that holds no JSON-RPC message.
    pub fn rpc(&self, id: u64, method: &str, params: Value) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post_raw(body.to_string().as_bytes(), &[])?;
        if response.status != 200 {
            return Err(format!(
                "{method}: HTTP {} {}",
                response.status,
                clip(&response.text(), 2000)
            ));
        }
        message(&response)
    }

    /// `initialize` (2025-11-25 handshake), then `notifications/initialized`.
    ///
    /// # Errors
    ///
    /// As [`RawClient::rpc`], or a JSON-RPC error.
    pub fn initialize(&self) -> Result<Value, String> {
        let reply = self.rpc(
            0,
            "initialize",
            json!({
                "protocolVersion": self.protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "toolforge-raw", "version": "1.0.0"},
            }),
        )?;
        let result = result_of(&reply)?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = self.post_raw(note.to_string().as_bytes(), &[])?;
        Ok(result)
    }

    /// `tools/list` (all pages).
    ///
    /// # Errors
    ///
    /// As [`RawClient::rpc`], or a JSON-RPC error.
    pub fn list_tools(&self) -> Result<Vec<Value>, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for page in 0..100 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let result = result_of(&self.rpc(100 + page, "tools/list", params)?)?;
            tools.extend(result["tools"].as_array().cloned().unwrap_or_default());
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err("tools/list did not end after 100 pages".to_owned())
    }

    /// `tools/call`: the JSON-RPC response object (result or error).
    ///
    /// # Errors
    ///
    /// As [`RawClient::rpc`].
    pub fn call_tool_raw(&self, name: &str, arguments: Value) -> Result<Value, String> {
        self.rpc(
            7,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    }

    /// `tools/call`: the `CallToolResult`.
    ///
    /// # Errors
    ///
    /// As [`RawClient::rpc`], or a JSON-RPC error.
    pub fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, String> {
        result_of(&self.call_tool_raw(name, arguments)?)
    }
}

/// The JSON-RPC message in a response: a JSON body, or the last `data:`
/// event of an SSE body.
///
/// # Errors
///
/// Neither form holds JSON.
pub fn message(response: &Response) -> Result<Value, String> {
    let text = response.text();
    let is_sse = response
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if !is_sse {
        return serde_json::from_str(&text).map_err(|e| {
            format!(
                "HTTP {} body is not JSON ({e}): {}",
                response.status,
                clip(&text, 2000)
            )
        });
    }
    text.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v.get("id").is_some())
        .ok_or_else(|| {
            format!(
                "SSE body without a JSON-RPC response: {}",
                clip(&text, 2000)
            )
        })
}

/// The `result` of a JSON-RPC response.
///
/// # Errors
///
/// It is an error response (the error is shown).
pub fn result_of(reply: &Value) -> Result<Value, String> {
    if let Some(error) = reply.get("error") {
        return Err(format!("JSON-RPC error: {error}"));
    }
    reply
        .get("result")
        .cloned()
        .ok_or_else(|| format!("no result in {reply}"))
}

/// The text of every `text` content block of a `CallToolResult`, joined.
pub fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// At most `max` characters of `text`.
pub fn clip(text: &str, max: usize) -> String {
    crate::mock::clip(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(content_type: &str, body: &str) -> Response {
        Response {
            status: 200,
            headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn json_and_sse_bodies() {
        let v = message(&response(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ))
        .unwrap();
        assert_eq!(v["id"], 1);
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":true}}\n\n";
        let v = message(&response("text/event-stream", sse)).unwrap();
        assert_eq!(v["result"]["ok"], true);
        assert!(message(&response("application/json", "nope")).is_err());
        assert!(result_of(&json!({"error": {"code": -32601}})).is_err());
        let text = result_text(
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(text, "a\nb");
    }
}
