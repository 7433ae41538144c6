//! JSON-RPC checks in front of rmcp, shared by both transports.
//!
//! rmcp ignores input that is not JSON, answers a wrong message shape with
//! an `Invalid Request` error without an `id`, and treats a known method
//! whose params do not fit as a custom request (`-32601 Method not found`).
//! [`classify`] parses a message exactly as rmcp does and says what JSON-RPC
//! 2.0 requires instead: `-32700` / `-32600` with `"id": null`, and `-32602`
//! (with the request id and what is wrong) for bad params of a method this
//! server implements.

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, GetSkillRequest,
    InitializeRequest, JsonRpcMessage, ListResourcesRequest, ListSkillsRequest, ListToolsRequest,
    PingRequest, ReadResourceRequest,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// JSON-RPC error codes used here.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// Longest parser detail quoted in an error message (serde quotes input).
const DETAIL_MAX: usize = 200;

/// What to do with one incoming JSON-RPC message.
#[derive(Debug)]
pub enum Verdict {
    /// A message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Answer with this error response (`-32700`, `-32600` or `-32602`);
    /// rmcp never sees the message.
    Reply(Value),
    /// A malformed notification (an object with a string `method` and no
    /// `id`): nothing can answer it, so it is dropped (logged).
    Ignore,
}

/// Classifies one message (a stdio line without its line end, or an HTTP
/// body); a leading UTF-8 byte order mark is skipped.
pub fn classify(bytes: &[u8]) -> Verdict {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Ok(message) => {
            return match invalid_params(&message) {
                Some(reply) => Verdict::Reply(reply),
                None => Verdict::Message(Box::new(message)),
            };
        }
        Err(e) => e,
    };
    // Well-formed JSON of the wrong shape, or no JSON at all? The typed parse
    // may stop early, so check the syntax on its own.
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Reply(error_response(
                Value::Null,
                PARSE_ERROR,
                &format!(
                    "Parse error: the message is not valid JSON ({})",
                    clip(&e.to_string())
                ),
            ));
        }
    };
    // A request for an implemented method whose params are no object.
    if let Some(o) = value.as_object()
        && o.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && !o.contains_key("result")
        && !o.contains_key("error")
        && let Some(id) = o
            .get("id")
            .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
        && let Some(method) = o.get("method").and_then(Value::as_str)
        && let Some(reply) = invalid_params_reply(id.clone(), method, o.get("params"))
    {
        return Verdict::Reply(reply);
    }
    let notification = value
        .as_object()
        .is_some_and(|o| !o.contains_key("id") && o.get("method").is_some_and(Value::is_string));
    if notification {
        tracing::debug!(error = %clip(&error.to_string()), "ignoring a malformed notification");
        return Verdict::Ignore;
    }
    Verdict::Reply(error_response(
        Value::Null,
        INVALID_REQUEST,
        &format!(
            "Invalid Request: not a JSON-RPC 2.0 request or notification ({})",
            clip(&error.to_string())
        ),
    ))
}

/// A `-32602` response when `message` is a request for a method this
/// server implements whose params rmcp could not read (it then falls back
/// to a custom request, which would get `-32601`), and a `-32601` quoting
/// a clip of the name for a method it does not implement.
fn invalid_params(message: &ClientJsonRpcMessage) -> Option<Value> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
    invalid_params_reply(id.clone(), &custom.method, custom.params.as_ref()).or_else(|| {
        // rmcp's own -32601 quotes the whole method name, however long.
        Some(error_response(
            id,
            METHOD_NOT_FOUND,
            &format!("Method not found: `{}`", clip(&custom.method)),
        ))
    })
}

/// The `-32602` response to request `id` for `method` with `params`, or
/// `None` when this server does not implement `method`.
fn invalid_params_reply(id: Value, method: &str, params: Option<&Value>) -> Option<Value> {
    let (detail, expected) = match method {
        "tools/call" => (
            tools_call_detail(params).or_else(|| detail::<CallToolRequest>(method, params)),
            r#"{"name": string, "arguments"?: object}"#,
        ),
        "tools/list" => (
            detail::<ListToolsRequest>(method, params),
            r#"{"cursor"?: string} or no params"#,
        ),
        "resources/list" => (
            detail::<ListResourcesRequest>(method, params),
            r#"{"cursor"?: string} or no params"#,
        ),
        "resources/read" => (
            detail::<ReadResourceRequest>(method, params),
            r#"{"uri": string}"#,
        ),
        "skills/list" => (
            detail::<ListSkillsRequest>(method, params),
            r#"{"cursor"?: string} or no params"#,
        ),
        "skills/get" => (
            detail::<GetSkillRequest>(method, params),
            r#"{"uri": string}"#,
        ),
        "initialize" => (
            detail::<InitializeRequest>(method, params),
            r#"{"protocolVersion": string, "capabilities": object, "clientInfo": {"name": string, "version": string}}"#,
        ),
        "ping" => (
            detail::<PingRequest>(method, params),
            r#"no params, or {"_meta"?: object}"#,
        ),
        "server/discover" => (
            detail::<DiscoverRequest>(method, params),
            r#"{"_meta": object}"#,
        ),
        _ => return None,
    };
    let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
    Some(error_response(
        id,
        INVALID_PARAMS,
        &format!("Invalid params for `{method}`{detail}; expected params {expected}"),
    ))
}

/// Which `tools/call` param is wrong, by name.
fn tools_call_detail(params: Option<&Value>) -> Option<String> {
    let Some(params) = params else {
        return Some("`params` is missing".into());
    };
    let Some(params) = params.as_object() else {
        return Some(format!("`params` must be an object, not {}", kind(params)));
    };
    match params.get("name") {
        None => return Some("`name` (the tool name) is missing".into()),
        Some(name) if !name.is_string() => {
            return Some(format!("`name` must be a string, not {}", kind(name)));
        }
        Some(_) => {}
    }
    match params.get("arguments") {
        Some(arguments) if !arguments.is_object() && !arguments.is_null() => Some(format!(
            "`arguments` must be an object, not {}",
            kind(arguments)
        )),
        _ => None,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Why rmcp's typed form of `method` does not accept `params` (serde's
/// message, clipped), if it says.
fn detail<T: DeserializeOwned>(method: &str, params: Option<&Value>) -> Option<String> {
    let mut request = Map::new();
    request.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        request.insert("params".into(), p.clone());
    }
    serde_json::from_value::<T>(Value::Object(request))
        .err()
        .map(|e| clip(&e.to_string()))
}

/// A JSON-RPC 2.0 error response.
pub(crate) fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// `text` cut to [`DETAIL_MAX`] characters (client input quoted in an
/// error is never echoed whole).
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(DETAIL_MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(input: &str) -> Value {
        match classify(input.as_bytes()) {
            Verdict::Reply(v) => v,
            other => panic!("{input}: expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn non_json_gets_a_parse_error_with_a_null_id() {
        for input in [
            "this is not json",
            r#"{"jsonrpc":"2.0","id":2,"method":"#,
            "",
            "{\"a\":1} x",
            &format!("{}{}", "[".repeat(500), "]".repeat(500)),
        ] {
            let r = reply(input);
            assert_eq!(r["error"]["code"], PARSE_ERROR, "{input}: {r}");
            assert_eq!(r.get("id"), Some(&Value::Null), "{input}: {r}");
            assert_eq!(r["jsonrpc"], "2.0");
            assert!(
                r["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Parse error")
            );
        }
    }

    #[test]
    fn wrong_shapes_get_invalid_request_with_a_null_id() {
        for input in [
            "[]",
            r#""hello""#,
            "42",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
        ] {
            let r = reply(input);
            assert_eq!(r["error"]["code"], INVALID_REQUEST, "{input}: {r}");
            assert_eq!(r.get("id"), Some(&Value::Null), "{input}: {r}");
        }
        // serde quotes the input: the message stays short
        let long = format!("\"{}\"", "x".repeat(100_000));
        assert!(reply(&long)["error"]["message"].as_str().unwrap().len() < 400);
    }

    #[test]
    fn bad_params_of_implemented_methods_get_invalid_params_with_the_id() {
        for (input, id, says) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
                json!(1),
                "`name` (the tool name) is missing",
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":7}}"#,
                json!("a"),
                "`name` must be a string, not a number",
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"zones_get","arguments":[1]}}"#,
                json!(3),
                "`arguments` must be an object, not an array",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
                json!(4),
                "`params` is missing",
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"x"}"#,
                json!(5),
                "`params` must be an object, not a string",
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
                json!(6),
                "initialize",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}"#,
                json!(7),
                "resources/read",
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"skills/get","params":{"uri":7}}"#,
                json!(8),
                "skills/get",
            ),
        ] {
            let r = reply(input);
            assert_eq!(r["error"]["code"], INVALID_PARAMS, "{input}: {r}");
            assert_eq!(r["id"], id, "{input}: {r}");
            let message = r["error"]["message"].as_str().unwrap();
            assert!(message.contains(says), "{input}: {message}");
            assert!(message.contains("expected params"), "{message}");
        }
    }

    #[test]
    fn good_messages_and_other_methods_pass() {
        for input in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_get","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_get"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"api://products"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"skills/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            // a method rmcp knows and this server does not serve: rmcp
            // answers -32601 (an unknown one is answered here, see below)
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x"}}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        ] {
            let v = classify(input.as_bytes());
            assert!(matches!(v, Verdict::Message(_)), "{input}: {v:?}");
        }
    }

    #[test]
    fn malformed_notifications_are_ignored() {
        let v = classify(br#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#);
        assert!(matches!(v, Verdict::Ignore), "{v:?}");
    }

    /// rmcp quoted an unknown method's whole name in its -32601 (a 900 KB
    /// name came back whole): answered here with a clip of it.
    #[test]
    fn an_unknown_method_is_answered_with_a_clipped_name() {
        let long = "m".repeat(100_000);
        let r = reply(&format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"{long}","params":{{}}}}"#
        ));
        assert_eq!(r["error"]["code"], METHOD_NOT_FOUND, "{r}");
        assert_eq!(r["id"], 9);
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Method not found: `mmm"), "{message}");
        assert!(message.len() < DETAIL_MAX + 64, "{} bytes", message.len());
        let r = reply(r#"{"jsonrpc":"2.0","id":"a","method":"nope/nope"}"#);
        assert_eq!(r["error"]["message"], "Method not found: `nope/nope`");
        // A known method is still rmcp's.
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Verdict::Message(_)
        ));
    }
}
