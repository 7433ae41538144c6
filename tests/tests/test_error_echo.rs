#![allow(clippy::unwrap_used, clippy::panic)]
//! No error echoes a whole client input (issue 39, item 7): `skills/get`,
//! `resources/read`, `tools/call`, an unknown method and a message of the
//! wrong shape, each carrying a string of almost `--max-request-bytes`,
//! are answered with an error that quotes at most a short clip of it, over
//! HTTP and over stdio.

use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::mcp::RawClient;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "echo-client-token-4d2a";
const UPSTREAM_TOKEN: &str = "echo-upstream-token-8e1f";
const LIMIT: Duration = Duration::from_secs(90);
/// Longest answer allowed: the clip plus the fixed text around it.
const MAX_ANSWER: usize = 2048;

/// The hostile messages: (what, JSON-RPC message).
fn messages() -> Vec<(&'static str, Value)> {
    let long = "x".repeat(900_000);
    let uri = format!("skill://{long}/SKILL.md");
    vec![
        (
            "skills/get",
            json!({"jsonrpc": "2.0", "id": 1, "method": "skills/get", "params": {"uri": uri}}),
        ),
        (
            "resources/read",
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": uri}}),
        ),
        (
            "tools/call",
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": long, "arguments": {}}}),
        ),
        (
            "an unknown method",
            json!({"jsonrpc": "2.0", "id": 4, "method": long, "params": {}}),
        ),
        (
            "a wrong-shaped message",
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "result": long}),
        ),
        (
            "a wrong jsonrpc version",
            json!({"jsonrpc": long, "id": 6, "method": "ping"}),
        ),
    ]
}

fn check(what: &str, answer: &[u8]) {
    assert!(
        answer.len() <= MAX_ANSWER,
        "{what}: a {}-byte answer echoes the input: {}…",
        answer.len(),
        String::from_utf8_lossy(&answer[..300.min(answer.len())])
    );
}

#[test]
fn http_errors_clip_what_they_quote() {
    with_deadline(LIMIT, || {
        let config = ServerConfig::new([
            "--upstream",
            "http://127.0.0.1:9",
            "--allow-loopback-upstream",
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let client = RawClient::new(server.addr(), CLIENT_TOKEN);
        client.initialize().unwrap();
        for (what, message) in messages() {
            let resp = client
                .post_raw(message.to_string().as_bytes(), &[])
                .unwrap();
            assert!(resp.status < 500, "{what}: HTTP {}", resp.status);
            check(what, &resp.body);
        }
        let log = server.log();
        assert!(
            !log.contains(&"x".repeat(1000)),
            "the log echoes an input:\n{}",
            &log[..log.len().min(2000)]
        );
    })
    .unwrap();
}

#[test]
fn stdio_errors_clip_what_they_quote() {
    with_deadline(LIMIT, || {
        let config = ServerConfig::new([
            "--upstream",
            "http://127.0.0.1:9",
            "--allow-loopback-upstream",
        ])
        .env("CLOUDFLARE_API_TOKEN", UPSTREAM_TOKEN);
        let mut server = Server::stdio(&config).unwrap();
        server
            .send_line(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "echo-test", "version": "1"}}})
                .to_string(),
            )
            .unwrap();
        server.read_message(Duration::from_secs(30)).unwrap();
        server
            .send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .unwrap();
        for (what, message) in messages() {
            server.send_line(&message.to_string()).unwrap();
            let answer = server.read_message(Duration::from_secs(30)).unwrap();
            check(what, answer.to_string().as_bytes());
        }
    })
    .unwrap();
}
