#![allow(clippy::unwrap_used, clippy::panic)]
//! Property test, end to end: an upstream that echoes the credential back
//! in random forms (JSON `\u`-escaped wholly or in part, `\/`, URL-encoded,
//! HTML references, case-changed, `Bearer …`; in values, keys, error
//! messages, `Retry-After`, an odd `Content-Type`, a redirect `Location`)
//! never gets it to the client. For random tokens and responses, through
//! the real server in `direct`, `code` and `codemode` modes: no result
//! text, `structuredContent`, error text or log line (at trace level)
//! holds the token in any of those forms, and the JavaScript of the
//! sandboxed modes never sees it (the code rebuilds the token from a
//! reversed copy and reports whether anything it received contains it).
//! The attacks the issue names come first, then random ones.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::echo::{EchoRng, holds};
use toolforge_tests::mcp::RawClient;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "echo-client-token-5f1c";
const ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
/// Random tokens, each served by one server per mode.
const TOKENS: usize = 2;
/// Random echoing responses per token and mode.
const CASES: usize = 12;
const SEED: u64 = 0x7e57_ec40;

/// The JavaScript for the sandboxed modes: `call` is the expression that
/// reaches the upstream.
fn probe(call: &str, token: &str) -> String {
    let reversed: String = token.chars().rev().collect();
    format!(
        r#"async () => {{
  const t = "{reversed}".split('').reverse().join('').toLowerCase();
  let got = null, failed = null;
  try {{ got = await {call}; }} catch (e) {{ failed = String(e && e.message); }}
  const all = JSON.stringify({{got, failed}});
  let decoded = all;
  try {{ decoded = decodeURIComponent(all); }} catch (e) {{}}
  const seen = all.toLowerCase().includes(t) || decoded.toLowerCase().includes(t);
  return {{seen, got, failed, spaced: all.split('').join(' ')}};
}}"#
    )
}

/// The tool call that makes the server fetch `GET /zones/{ZONE}`.
fn call_for(mode: &str, token: &str) -> (&'static str, Value) {
    match mode {
        "direct" => ("zones_get", json!({"zone_id": ZONE})),
        "code" => (
            "code",
            json!({"code": probe(&format!("codemode.zones_get({{zone_id: '{ZONE}'}})"), token)}),
        ),
        _ => (
            "execute",
            json!({"code": probe(&format!("api.request({{method: 'GET', path: '/zones/{ZONE}'}})"), token), "truncate": false}),
        ),
    }
}

#[test]
fn an_echoed_credential_never_reaches_the_client_in_any_mode() {
    let mut rng = EchoRng::new(SEED);
    let current = Arc::new(Mutex::new(Reply::envelope(json!({"id": ZONE}))));
    let serving = Arc::clone(&current);
    let upstream = Upstream::start(move |_| {
        serving
            .lock()
            .map(|r| r.clone())
            .unwrap_or_else(|_| Reply::text(500, "text/plain", "lock"))
    })
    .unwrap();
    let mut checked = 0;
    for _ in 0..TOKENS {
        let token = rng.token();
        for mode in ["direct", "code", "codemode"] {
            let config = ServerConfig::new([
                "--upstream".to_owned(),
                upstream.url(),
                "--allow-loopback-upstream".to_owned(),
                "--mode".to_owned(),
                mode.to_owned(),
                "--sandbox-workers".to_owned(),
                "1".to_owned(),
            ])
            .token(CLIENT_TOKEN, &token)
            .env("RUST_LOG", "trace");
            let server = Server::http(&config).unwrap_or_else(|e| panic!("{mode}: {e}"));
            let client = RawClient::new(server.addr(), CLIENT_TOKEN);
            let mut cases: Vec<_> = EchoRng::named_cases(&token)
                .into_iter()
                .map(|(_, case)| case)
                .collect();
            cases.extend((0..CASES).map(|_| rng.case(&token)));
            let (tool, arguments) = call_for(mode, &token);
            let replies = {
                let current = Arc::clone(&current);
                with_deadline(Duration::from_secs(120), move || {
                    client.initialize()?;
                    let mut replies = Vec::new();
                    for case in cases {
                        if let Ok(mut slot) = current.lock() {
                            *slot = case.reply();
                        }
                        let reply = client.call_tool_raw(tool, arguments.clone())?;
                        replies.push((case, reply));
                    }
                    Ok::<_, String>(replies)
                })
            };
            let replies = match replies {
                Ok(Ok(r)) => r,
                Ok(Err(e)) | Err(e) => panic!("{mode}: {e}\n{}", server.log()),
            };
            for (case, reply) in &replies {
                let text = reply.to_string();
                assert!(
                    !holds(&text, &token),
                    "{mode}: the token reached the client\ncase: {case:?}\nreply: {text}"
                );
                let result = &reply["result"];
                assert!(result.is_object(), "{mode}: {reply}");
                if mode != "direct" {
                    let value: Value = result["content"][0]["text"]
                        .as_str()
                        .and_then(|t| serde_json::from_str(t).ok())
                        .unwrap_or(Value::Null);
                    assert_eq!(
                        value["seen"], false,
                        "{mode}: the sandbox saw the token\ncase: {case:?}\nreply: {reply}"
                    );
                }
                checked += 1;
            }
            // The upstream did get the credential, so the echoes were real.
            let log = server.log();
            assert!(!holds(&log, &token), "{mode}: the token is in the log");
        }
    }
    let seen = upstream.requests();
    assert!(seen.iter().all(|r| {
        r.header("authorization")
            .is_some_and(|a| a.starts_with("Bearer "))
    }));
    assert_eq!(
        checked,
        TOKENS * 3 * (CASES + EchoRng::named_cases("x").len())
    );
}
