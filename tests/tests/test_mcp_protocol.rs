#![allow(clippy::unwrap_used, clippy::panic)]
//! Bad protocol input and HTTP security, byte for byte with a raw client:
//! garbage JSON, wrong JSON-RPC shapes, unknown methods and tools, bad and
//! huge arguments each get a JSON-RPC error (or a tool error naming each bad
//! field), never a crash, and the server answers normally afterwards; the
//! bearer-token gate (401 + `WWW-Authenticate` with `resource_metadata`,
//! RFC 9728 metadata), the Host and Origin allowlists (403 before auth) and
//! the request body limit (413). The same bad input over stdio.

use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::http::Response;
use toolforge_tests::mcp::{self, RawClient, clip, result_text};
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "protocol-client-token-1c55e0";
const UPSTREAM_TOKEN: &str = "cf-protocol-upstream-secret-77Hq";
/// `--max-request-bytes` of the server under test.
const MAX_REQUEST: usize = 64 * 1024;
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// A server whose upstream is never reached (no test here calls upstream
/// successfully): a loopback port nobody listens on.
fn start(extra: &[&str]) -> Server {
    let mut config = ServerConfig::new([
        "--upstream",
        "http://127.0.0.1:9",
        "--allow-loopback-upstream",
        "--max-request-bytes",
        &MAX_REQUEST.to_string(),
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    for arg in extra {
        config = config.arg(*arg);
    }
    Server::http(&config).unwrap_or_else(|e| panic!("{e}"))
}

/// The JSON-RPC error object of a response, whatever its HTTP status (2xx or 4xx).
fn jsonrpc_error(response: &Response) -> Result<Value, String> {
    if response.status >= 500 {
        return Err(format!(
            "HTTP {}: {}",
            response.status,
            clip(&response.text(), 500)
        ));
    }
    let message = mcp::message(response)?;
    if message["jsonrpc"] != "2.0" {
        return Err(format!("not a JSON-RPC 2.0 message: {message}"));
    }
    match message.get("error") {
        Some(error) if error["code"].is_i64() && error["message"].is_string() => Ok(message),
        _ => Err(format!("not a JSON-RPC error response: {message}")),
    }
}

/// The server still answers `ping` and `tools/list`, and its process runs.
fn assert_alive(test: &str, server: &mut Server) {
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let ping = client.rpc(99, "ping", json!({})).unwrap_or_else(|e| {
        panic!(
            "{test}: the server stopped answering: {e}\n{}",
            server.log()
        )
    });
    assert_eq!(ping["result"], json!({}), "{test}: ping: {ping}");
    let tools = client.list_tools().unwrap();
    assert_eq!(
        tools.len(),
        // The operations and `whoami`.
        cloudflare_tools::CATALOGUE.tools().count() + 1,
        "{test}"
    );
    assert_eq!(server.exit_status(), None, "{test}: the server exited");
    assert!(
        !server.log().contains("panicked"),
        "{test}: the server log shows a panic:\n{}",
        server.log()
    );
}

/// Runs `body` against a fresh server with a deadline, then checks it is alive.
fn with_server<F>(test: &str, extra: &[&str], body: F)
where
    F: FnOnce(RawClient) -> Vec<String> + Send + 'static,
{
    let mut server = start(extra);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let problems = match with_deadline(TEST_LIMIT, move || body(client)) {
        Ok(problems) => problems,
        Err(e) => vec![e],
    };
    assert!(
        problems.is_empty(),
        "{test}: {} problem(s):\n  {}\n--- server stderr (tail) ---\n{}",
        problems.len(),
        problems.join("\n  "),
        toolforge_tests::process::tail(&server.log(), 4000)
    );
    assert_alive(test, &mut server);
}

/// Sends each body and checks the JSON-RPC error code is one of `codes`
/// (and, for unidentifiable requests, that `id` is null).
fn expect_codes(client: &RawClient, cases: &[(&str, String, &[i64])]) -> Vec<String> {
    let mut problems = Vec::new();
    for (what, body, codes) in cases {
        let response = match client.post_raw(body.as_bytes(), &[]) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{what}: {e}"));
                continue;
            }
        };
        match jsonrpc_error(&response) {
            Ok(message) => {
                let code = message["error"]["code"].as_i64().unwrap_or_default();
                if !codes.contains(&code) {
                    problems.push(format!(
                        "{what}: error code {code}, expected one of {codes:?}: {} (request {})",
                        clip(&message.to_string(), 600),
                        clip(body, 200)
                    ));
                }
            }
            Err(e) => problems.push(format!(
                "{what}: {} (request {})",
                clip(&e, 600),
                clip(body, 200)
            )),
        }
    }
    problems
}

#[test]
fn garbage_json_gets_a_parse_error() {
    with_server("garbage_json_gets_a_parse_error", &[], |client| {
        let mut problems = expect_codes(
            &client,
            &[
                ("not JSON", "{not json".to_owned(), &[-32700]),
                ("an empty body", String::new(), &[-32700]),
                (
                    "truncated JSON",
                    r#"{"jsonrpc":"2.0","id":1,"method":"pi"#.to_owned(),
                    &[-32700],
                ),
                (
                    "binary bytes",
                    "\u{0}\u{1}\u{2}\u{fffd}".to_owned(),
                    &[-32700],
                ),
            ],
        );
        // A parse error cannot know the request id: it must be null.
        let response = client.post_raw(b"{not json", &[]).unwrap();
        let message = mcp::message(&response).unwrap();
        if message.get("id") != Some(&Value::Null) {
            problems.push(format!(
                "a parse error must carry `\"id\": null`: {message}"
            ));
        }
        problems
    });
}

#[test]
fn wrong_jsonrpc_shapes_get_invalid_request() {
    with_server("wrong_jsonrpc_shapes_get_invalid_request", &[], |client| {
        expect_codes(
            &client,
            &[
                ("an empty batch", "[]".to_owned(), &[-32600]),
                ("a JSON string", r#""hello""#.to_owned(), &[-32600]),
                ("a number", "42".to_owned(), &[-32600]),
                (
                    "jsonrpc 1.0",
                    r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.to_owned(),
                    &[-32600],
                ),
                (
                    "no jsonrpc member",
                    r#"{"id":1,"method":"ping"}"#.to_owned(),
                    &[-32600],
                ),
                (
                    "a numeric method",
                    r#"{"jsonrpc":"2.0","id":1,"method":5}"#.to_owned(),
                    &[-32600],
                ),
                (
                    "an id without a method",
                    r#"{"jsonrpc":"2.0","id":1}"#.to_owned(),
                    &[-32600],
                ),
                (
                    "an object id",
                    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.to_owned(),
                    &[-32600],
                ),
                (
                    "string params",
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#.to_owned(),
                    &[-32600, -32602],
                ),
                (
                    "a result sent to the server",
                    r#"{"jsonrpc":"2.0","id":1,"result":{},"method":"ping"}"#.to_owned(),
                    &[-32600],
                ),
            ],
        )
    });
}

#[test]
fn bad_params_of_known_methods_get_invalid_params() {
    with_server(
        "bad_params_of_known_methods_get_invalid_params",
        &[],
        |client| {
            expect_codes(
            &client,
            &[
                (
                    "tools/call without a name",
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#.to_owned(),
                    &[-32602],
                ),
                (
                    "tools/call with a numeric name",
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#.to_owned(),
                    &[-32602],
                ),
                (
                    "tools/call with array arguments",
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"zones_get","arguments":[1]}}"#
                        .to_owned(),
                    &[-32602],
                ),
            ],
        )
        },
    );
}

#[test]
fn unknown_methods_and_tools_get_jsonrpc_errors() {
    with_server(
        "unknown_methods_and_tools_get_jsonrpc_errors",
        &[],
        |client| {
            let mut problems = expect_codes(
            &client,
            &[
                ("an unknown method", r#"{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{}}"#.to_owned(), &[-32601]),
                ("resources/subscribe (resources never change)", r#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"api://products"}}"#.to_owned(), &[-32601]),
                ("an unknown resource", r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"api://nope"}}"#.to_owned(), &[-32602]),
                ("an unknown skill", r#"{"jsonrpc":"2.0","id":1,"method":"skills/get","params":{"uri":"skill://nope/SKILL.md"}}"#.to_owned(), &[-32602]),
                ("prompts/get on a server without prompts", r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x"}}"#.to_owned(), &[-32601]),
                (
                    "an unknown tool",
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#.to_owned(),
                    &[-32602],
                ),
            ],
        );
            let reply = client.call_tool_raw("no_such_tool", json!({})).unwrap();
            let text = reply["error"]["message"].as_str().unwrap_or_default();
            if !text.contains("no_such_tool") {
                problems.push(format!(
                    "the unknown-tool error does not name the tool: {reply}"
                ));
            }
            if reply["id"] != 7 {
                problems.push(format!(
                    "the error does not carry the request id 7: {reply}"
                ));
            }
            problems
        },
    );
}

#[test]
fn invalid_arguments_name_each_bad_field() {
    with_server("invalid_arguments_name_each_bad_field", &[], |client| {
        let reply = client
            .call_tool_raw(
                "zones_list",
                json!({"per_page": "many", "status": "bogus", "unexpected_field": 1}),
            )
            .unwrap();
        // A tool error (the 2025-11-25 advice for input validation) or a
        // JSON-RPC invalid-params error; either way each field is named.
        let text = match (reply.get("result"), reply.get("error")) {
            (Some(result), _) if result["isError"] == true => result_text(result),
            (_, Some(error)) if error["code"] == -32602 => error.to_string(),
            _ => return vec![format!("invalid arguments were not refused: {reply}")],
        };
        ["per_page", "status", "unexpected_field"]
            .iter()
            .filter(|f| !text.contains(*f))
            .map(|f| format!("the error does not name `{f}`: {text}"))
            .collect()
    });
}

#[test]
fn huge_and_deep_arguments_are_refused_without_a_crash() {
    with_server(
        "huge_and_deep_arguments_are_refused_without_a_crash",
        &[],
        |client| {
            let mut problems = Vec::new();
            // Under the body limit, but far over the field's maxLength (32).
            let long = "x".repeat(MAX_REQUEST - 2048);
            let reply = client
                .call_tool_raw("zones_get", json!({"zone_id": long}))
                .unwrap();
            let refused = reply["result"]["isError"] == true || reply["error"]["code"] == -32602;
            let text = reply.to_string();
            if !refused || !text.contains("zone_id") {
                problems.push(format!(
                    "a 60 KB zone_id was not refused naming the field: {}",
                    clip(&text, 500)
                ));
            }
            if text.len() > 16 * 1024 {
                problems.push(format!("the refusal echoes {} bytes back", text.len()));
            }
            // Deep nesting: a recursion bomb in the arguments.
            let depth = 20_000;
            let deep = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"zones_get","arguments":{{"zone_id":"a","x":{}{}}}}}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            problems.extend(expect_codes(
                &client,
                &[("20,000 nested arrays", deep, &[-32700, -32600, -32602])],
            ));
            // Thousands of unexpected keys (under the limit).
            let mut args = serde_json::Map::new();
            args.insert("zone_id".to_owned(), json!("a"));
            for i in 0..3000 {
                args.insert(format!("k{i}"), json!(i));
            }
            let reply = client
                .call_tool_raw("zones_get", Value::Object(args))
                .unwrap();
            if !(reply["result"]["isError"] == true || reply.get("error").is_some()) {
                problems.push(format!(
                    "3,000 unexpected keys were not refused: {}",
                    clip(&reply.to_string(), 500)
                ));
            }
            problems
        },
    );
}

#[test]
fn bodies_over_the_limit_get_413() {
    with_server("bodies_over_the_limit_get_413", &[], |client| {
        let mut problems = Vec::new();
        for size in [MAX_REQUEST + 1, 4 * MAX_REQUEST, 8 * 1024 * 1024] {
            let padding = "x".repeat(size);
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"zones_get","arguments":{{"zone_id":"{padding}"}}}}}}"#
            );
            match client.post_raw(body.as_bytes(), &[]) {
                Ok(r) if r.status == 413 => {}
                Ok(r) => problems.push(format!(
                    "a {size}-byte body got HTTP {} (expected 413)",
                    r.status
                )),
                // The server may close the connection while we still send; that is a refusal too,
                // but it must have answered 413 first for the smaller sizes.
                Err(e) if size > 4 * MAX_REQUEST => {
                    let _ = e;
                }
                Err(e) => problems.push(format!("a {size}-byte body: {e}")),
            }
        }
        // Just under the limit is served (a JSON-RPC answer, not 413).
        let padding = "y".repeat(MAX_REQUEST - 200);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"pad":"{padding}"}}}}}}"#
        );
        match client.post_raw(body.as_bytes(), &[]) {
            Ok(r) if r.status == 200 => {}
            Ok(r) => problems.push(format!(
                "a body just under the limit got HTTP {}: {}",
                r.status,
                clip(&r.text(), 300)
            )),
            Err(e) => problems.push(format!("a body just under the limit: {e}")),
        }
        problems
    });
}

#[test]
fn http_framing_errors_get_4xx() {
    with_server("http_framing_errors_get_4xx", &[], |client| {
        let mut problems = Vec::new();
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
            ("a text/plain body", vec![("Content-Type", "text/plain")]),
            (
                "an unsupported MCP-Protocol-Version",
                vec![("MCP-Protocol-Version", "1999-01-01")],
            ),
        ];
        for (what, headers) in cases {
            match client.post_raw(ping, &headers) {
                Ok(r) if (400..500).contains(&r.status) => {}
                Ok(r) => problems.push(format!("{what}: HTTP {} (expected 4xx)", r.status)),
                Err(e) => problems.push(format!("{what}: {e}")),
            }
        }
        // Stateless Streamable HTTP: no SSE stream to GET, no session to DELETE.
        for method in ["GET", "DELETE"] {
            let mut headers = client.headers();
            headers.retain(|(n, _)| n != "Content-Type");
            match client.send(method, "/mcp", headers, None) {
                Ok(r) if r.status == 405 || (400..500).contains(&r.status) => {}
                Ok(r) => problems.push(format!("{method} /mcp: HTTP {} (expected 405)", r.status)),
                Err(e) => problems.push(format!("{method} /mcp: {e}")),
            }
        }
        problems
    });
}

// --- Authentication -----------------------------------------------------------

fn metadata_url(server: &Server) -> String {
    format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.addr()
    )
}

#[test]
fn requests_without_a_valid_token_get_401_with_resource_metadata() {
    let test = "requests_without_a_valid_token_get_401_with_resource_metadata";
    let mut server = start(&[]);
    let addr = server.addr();
    let expected_metadata = metadata_url(&server);
    let problems = with_deadline(TEST_LIMIT, move || {
        let mut problems = Vec::new();
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut anonymous = RawClient::new(addr, "");
        anonymous.token = None;
        let upstream_bearer = format!("Bearer {UPSTREAM_TOKEN}");
        let cases: Vec<(&str, Option<&str>)> = vec![
            ("no Authorization header", None),
            ("a wrong token", Some("Bearer not-the-token")),
            ("the upstream token itself", Some(upstream_bearer.as_str())),
            ("Basic auth", Some("Basic dXNlcjpwYXNz")),
            ("an empty bearer", Some("Bearer ")),
            ("the token without a scheme", Some(CLIENT_TOKEN)),
        ];
        for (what, auth) in cases {
            let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
            let response = match anonymous.post_raw(ping, &headers) {
                Ok(r) => r,
                Err(e) => {
                    problems.push(format!("{what}: {e}"));
                    continue;
                }
            };
            if response.status != 401 {
                problems.push(format!("{what}: HTTP {} (expected 401): {}", response.status, clip(&response.text(), 300)));
                continue;
            }
            let challenge = response.header("www-authenticate").unwrap_or_default();
            if !challenge.to_ascii_lowercase().starts_with("bearer")
                || !challenge.contains(&format!("resource_metadata=\"{expected_metadata}\""))
            {
                problems.push(format!(
                    "{what}: WWW-Authenticate `{challenge}` lacks Bearer resource_metadata=\"{expected_metadata}\""
                ));
            }
            if response.text().contains(CLIENT_TOKEN) || response.text().contains(UPSTREAM_TOKEN) {
                problems.push(format!("{what}: the 401 body echoes a token"));
            }
        }
        // The right token, with the scheme in any case (RFC 7235), is accepted.
        for scheme in ["Bearer", "bearer"] {
            let value = format!("{scheme} {CLIENT_TOKEN}");
            match anonymous.post_raw(ping, &[("Authorization", value.as_str())]) {
                Ok(r) if r.status == 200 => {}
                Ok(r) => problems.push(format!("`{scheme} <token>`: HTTP {}", r.status)),
                Err(e) => problems.push(format!("`{scheme} <token>`: {e}")),
            }
        }
        problems
    })
    .unwrap_or_else(|e| vec![e]);
    assert!(problems.is_empty(), "{test}:\n  {}", problems.join("\n  "));
    let log = server.log();
    assert!(
        !log.contains(CLIENT_TOKEN)
            && !log.contains(UPSTREAM_TOKEN)
            && !log.contains("not-the-token"),
        "{test}: a presented token appears in the log:\n{log}"
    );
    assert_alive(test, &mut server);
}

#[test]
fn protected_resource_metadata_is_served_without_auth() {
    let test = "protected_resource_metadata_is_served_without_auth";
    let server = start(&[]);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let resource = server.url();
    let problems = with_deadline(TEST_LIMIT, move || {
        let mut problems = Vec::new();
        for path in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ] {
            let response = match client.send(
                "GET",
                path,
                vec![("Accept".to_owned(), "application/json".to_owned())],
                None,
            ) {
                Ok(r) => r,
                Err(e) => {
                    problems.push(format!("GET {path}: {e}"));
                    continue;
                }
            };
            if response.status != 200 {
                problems.push(format!("GET {path}: HTTP {}", response.status));
                continue;
            }
            if !response
                .header("content-type")
                .is_some_and(|c| c.starts_with("application/json"))
            {
                problems.push(format!(
                    "GET {path}: content type {:?}",
                    response.header("content-type")
                ));
            }
            let doc: Value = match serde_json::from_slice(&response.body) {
                Ok(doc) => doc,
                Err(e) => {
                    problems.push(format!("GET {path}: not JSON ({e})"));
                    continue;
                }
            };
            // RFC 9728 §3.3: `resource` is the protected resource's identifier (the MCP URL).
            if doc["resource"] != resource.as_str() {
                problems.push(format!(
                    "GET {path}: resource {} (expected {resource})",
                    doc["resource"]
                ));
            }
            if let Some(methods) = doc.get("bearer_methods_supported")
                && !methods
                    .as_array()
                    .is_some_and(|m| m.iter().any(|x| x == "header"))
            {
                problems.push(format!(
                    "GET {path}: bearer_methods_supported {methods} lacks \"header\""
                ));
            }
        }
        problems
    })
    .unwrap_or_else(|e| vec![e]);
    assert!(problems.is_empty(), "{test}:\n  {}", problems.join("\n  "));
}

// --- Host and Origin ----------------------------------------------------------

#[test]
fn foreign_hosts_and_origins_get_403_before_auth() {
    let test = "foreign_hosts_and_origins_get_403_before_auth";
    let mut server = start(&[
        "--allowed-host",
        "mcp.example.test",
        "--allowed-origin",
        "https://app.example.test",
    ]);
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let port = server.addr().port();
    let problems = with_deadline(TEST_LIMIT, move || {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
        let send = |host: Option<&str>, origin: Option<&str>, auth: bool| {
            let mut headers: Vec<(String, String)> = client
                .headers()
                .into_iter()
                .filter(|(n, _)| auth || n != "Authorization")
                .collect();
            if let Some(origin) = origin {
                headers.push(("Origin".to_owned(), origin.to_owned()));
            }
            // `http::encode` writes `Host: <addr>`; a second Host would be ambiguous,
            // so a custom Host goes through the raw request line instead.
            match host {
                None => client.send("POST", "/mcp", headers, Some(ping.clone())),
                Some(host) => raw_with_host(client.addr, host, &headers, &ping),
            }
        };
        let local = format!("localhost:{port}");
        let evil_with_port = format!("evil.example.com:{port}");
        let cases: Vec<HostCase<'_>> = vec![
            (
                "a foreign Host without auth",
                Some("evil.example.com"),
                None,
                false,
                403,
            ),
            (
                "a foreign Host with auth",
                Some("evil.example.com"),
                None,
                true,
                403,
            ),
            (
                "a foreign Host with the server's port",
                Some(evil_with_port.as_str()),
                None,
                true,
                403,
            ),
            (
                "a foreign Origin without auth",
                None,
                Some("http://evil.example.com"),
                false,
                403,
            ),
            (
                "a foreign Origin with auth",
                None,
                Some("http://evil.example.com"),
                true,
                403,
            ),
            (
                "the allowed Origin over http (scheme differs)",
                None,
                Some("http://app.example.test"),
                true,
                403,
            ),
            ("`null` Origin", None, Some("null"), true, 403),
            (
                "localhost with the server's port",
                Some(local.as_str()),
                None,
                true,
                200,
            ),
            (
                "the extra allowed Host",
                Some("mcp.example.test"),
                None,
                true,
                200,
            ),
            (
                "the allowed Origin",
                None,
                Some("https://app.example.test"),
                true,
                200,
            ),
            (
                "no Origin, no auth (auth comes after the allowlists)",
                None,
                None,
                false,
                401,
            ),
        ];
        let mut problems = Vec::new();
        for (what, host, origin, auth, expected) in cases {
            match send(host, origin, auth) {
                Ok(r) if r.status == expected => {}
                Ok(r) => problems.push(format!(
                    "{what}: HTTP {} (expected {expected}): {}",
                    r.status,
                    clip(&r.text(), 200)
                )),
                Err(e) => problems.push(format!("{what}: {e}")),
            }
        }
        problems
    })
    .unwrap_or_else(|e| vec![e]);
    assert!(problems.is_empty(), "{test}:\n  {}", problems.join("\n  "));
    assert_alive(test, &mut server);
}

/// (what, Host, Origin, send the token, expected status).
type HostCase<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool, u16);

/// A POST with exactly this `Host` header (the tiny client adds its own).
fn raw_with_host(
    addr: std::net::SocketAddr,
    host: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Response, String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    stream.write_all(body).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    toolforge_tests::http::parse(&raw).map_err(|e| e.to_string())
}

// --- stdio --------------------------------------------------------------------

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

fn start_stdio() -> Server {
    let config = ServerConfig::new([
        "--upstream",
        "http://127.0.0.1:9",
        "--allow-loopback-upstream",
    ])
    .env("CLOUDFLARE_API_TOKEN", UPSTREAM_TOKEN);
    Server::stdio(&config).unwrap_or_else(|e| panic!("{e}"))
}

/// Sends `line` and expects a JSON-RPC error with one of `codes`.
fn stdio_expect(
    server: &mut Server,
    what: &str,
    line: &str,
    codes: &[i64],
    id: &Value,
) -> Option<String> {
    if let Err(e) = server.send_line(line) {
        return Some(format!("{what}: {e}"));
    }
    match server.read_message(Duration::from_secs(5)) {
        Ok(m) => {
            let code = m["error"]["code"].as_i64().unwrap_or_default();
            if !codes.contains(&code) {
                Some(format!(
                    "{what}: expected an error with code {codes:?}, got {m}"
                ))
            } else if m.get("id") != Some(id) {
                Some(format!("{what}: the error must carry `\"id\": {id}`: {m}"))
            } else {
                None
            }
        }
        Err(e) => Some(format!("{what}: no JSON-RPC error came back ({e})")),
    }
}

#[test]
fn stdio_bad_input_gets_errors_and_the_server_goes_on() {
    let test = "stdio_bad_input_gets_errors_and_the_server_goes_on";
    let mut server = start_stdio();
    let mut problems = Vec::new();
    server.send_line(INITIALIZE).unwrap();
    match server.read_message(Duration::from_secs(20)) {
        Ok(m) if m["result"]["protocolVersion"].is_string() => {}
        other => panic!("{test}: initialize failed: {other:?}\n{}", server.log()),
    }
    server
        .send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .unwrap();
    let null = Value::Null;
    let cases: Vec<(&str, String, Vec<i64>, Value)> = vec![
        ("garbage", "this is not json".to_owned(), vec![-32700], null.clone()),
        ("truncated JSON", r#"{"jsonrpc":"2.0","id":2,"method":"#.to_owned(), vec![-32700], null.clone()),
        ("an empty batch", "[]".to_owned(), vec![-32600], null.clone()),
        ("a JSON string", r#""hello""#.to_owned(), vec![-32600], null.clone()),
        ("an unknown method", r#"{"jsonrpc":"2.0","id":3,"method":"nope/nope"}"#.to_owned(), vec![-32601], json!(3)),
        (
            "an unknown tool",
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#.to_owned(),
            vec![-32602],
            json!(4),
        ),
        (
            "tools/call without a name",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#.to_owned(),
            vec![-32602],
            json!(5),
        ),
    ];
    for (what, line, codes, id) in &cases {
        problems.extend(stdio_expect(&mut server, what, line, codes, id));
    }
    // Still serving.
    server
        .send_line(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#)
        .unwrap();
    // Skip any stray messages until the ping answer (bounded).
    let mut alive = false;
    for _ in 0..10 {
        match server.read_message(Duration::from_secs(10)) {
            Ok(m) if m["id"] == 6 => {
                alive = m["result"] == json!({});
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    if !alive {
        problems.push("the server did not answer ping after the bad input".to_owned());
    }
    // End of input ends the server cleanly.
    server.close_stdin();
    match server.wait_exit(Duration::from_secs(20)) {
        Some(status) if status.contains("exit status: 0") => {}
        Some(status) => problems.push(format!("after end of input the server ended with {status}")),
        None => problems.push("the server did not exit within 20 s after end of input".to_owned()),
    }
    let log = server.log();
    if log.contains(UPSTREAM_TOKEN) {
        problems.push("the upstream token appears in the stdio server's log".to_owned());
    }
    assert!(
        problems.is_empty(),
        "{test}: {} problem(s):\n  {}\n--- server stderr ---\n{}",
        problems.len(),
        problems.join("\n  "),
        toolforge_tests::process::tail(&log, 4000)
    );
}

#[test]
fn concurrent_requests_are_all_served() {
    concurrent_requests("concurrent_requests_are_all_served", &[]);
}

/// The same on the multi-threaded runtime (`--worker-threads 0`: one per core).
#[test]
fn concurrent_requests_are_all_served_by_worker_threads() {
    concurrent_requests(
        "concurrent_requests_are_all_served_by_worker_threads",
        &["--worker-threads", "0"],
    );
}

/// 16 requests at once (listings and pings), each answered correctly.
fn concurrent_requests(test: &str, extra: &[&str]) {
    with_server(test, extra, |client| {
        let handles: Vec<_> = (0..16u64)
            .map(|i| {
                let client = client.clone();
                std::thread::spawn(move || -> Result<(), String> {
                    if i % 2 == 0 {
                        let tools = client.list_tools()?;
                        if tools.is_empty() {
                            return Err(format!("request {i}: an empty listing"));
                        }
                    } else {
                        let reply = client.rpc(i, "ping", json!({}))?;
                        if reply["id"] != i || reply["result"] != json!({}) {
                            return Err(format!("request {i}: {reply}"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("a request thread panicked".to_owned()),
            })
            .collect()
    });
}

/// A child killed by its id on drop.
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (bounded) for the child to exit.
fn wait_child(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn stdio_works_with_stdout_redirected_to_a_file() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let test = "stdio_works_with_stdout_redirected_to_a_file";
    let scratch = toolforge_tests::server::ScratchDir::new().unwrap();
    let out_path = scratch.path().join("stdout.jsonl");
    let err_path = scratch.path().join("stderr.log");
    let bin = toolforge_tests::server::binary().unwrap();
    let child = Command::new(bin)
        .args([
            "--transport",
            "stdio",
            "--upstream",
            "http://127.0.0.1:9",
            "--allow-loopback-upstream",
        ])
        .env("CLOUDFLARE_API_TOKEN", UPSTREAM_TOKEN)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let mut guard = ChildGuard(child);
    {
        let mut stdin = guard.0.stdin.take().unwrap();
        writeln!(stdin, "{INITIALIZE}").unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
        // Dropping stdin: end of input.
    }
    let status = wait_child(&mut guard.0, Duration::from_secs(20));
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "{test}: with stdout on a regular file the server did not answer and exit at end of input \
         (status {status:?}); stdout:\n{out}\nstderr:\n{err}"
    );
    let answers: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        answers
            .iter()
            .any(|m| m["id"] == 1 && m["result"]["protocolVersion"].is_string())
            && answers
                .iter()
                .any(|m| m["id"] == 2 && m["result"] == json!({})),
        "{test}: missing answers; stdout:\n{out}\nstderr:\n{err}"
    );
}

#[test]
fn stdio_server_exits_on_sigterm() {
    let test = "stdio_server_exits_on_sigterm";
    let mut server = start_stdio();
    server.send_line(INITIALIZE).unwrap();
    let init = server.read_message(Duration::from_secs(20));
    assert!(
        init.is_ok(),
        "{test}: initialize failed: {init:?}\n{}",
        server.log()
    );
    // SIGTERM to exactly this child, by its id.
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some(),
        "{test}: still running 20 s after SIGTERM (stdin open); stderr:\n{}",
        server.log()
    );
}

// --- the `request` dry run ------------------------------------------------------

#[test]
fn the_request_dry_run_validates_like_the_server() {
    let bin = toolforge_tests::server::binary().unwrap_or_else(|e| panic!("{e}"));
    let run = |args: &str| {
        let out = std::process::Command::new(&bin)
            .args(["request", "dns_records_get", args])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = run(r#"{"zone_id": 5, "dns_record_id": "r"}"#);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid arguments for tool `dns_records_get`")
            && stderr.contains("/zone_id"),
        "{stderr}"
    );
    let (code, _, stderr) = run(r#"{"zone_id": "z", "dns_record_id": "r", "surprise": 1}"#);
    assert_eq!(code, Some(2), "{stderr}");
    let (code, stdout, stderr) = run(r#"{"zone_id": "z", "dns_record_id": "a/b"}"#);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("/zones/z/dns_records/a%2Fb"), "{stdout}");
}
