#![allow(clippy::unwrap_used, clippy::panic)]
//! `whoami` end to end: the real `cloudflare-mcp` server over Streamable
//! HTTP with one upstream token per client (`--tokens-file`), the Python
//! SDK's `ClientSession` as the client, a loopback upstream that echoes
//! the caller's token in every body.
//!
//! - a user token: `GET /user` answers, `whoami` is `user:<id>` with the
//!   e-mail as its name, and a second call is served from the cache;
//! - an account-owned token: `GET /user` is refused (403), so `whoami`
//!   falls back to the only account of `GET /accounts` (`account:<id>`);
//! - a token refused everywhere: a tool error naming both probes.
//!
//! The token appears nowhere in what the client received or the server
//! logged. Needs the Python venv (see `toolforge_tests::clients`);
//! `TOOLFORGE_SKIP_PYTHON=1` skips with a loud line.

use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const USER_CLIENT: &str = "whoami-client-user-81f2";
const USER_TOKEN: &str = "cf-user-token-secret-Qm41xv9T";
const ACCOUNT_CLIENT: &str = "whoami-client-account-27ac";
const ACCOUNT_TOKEN: &str = "cf-account-token-secret-Lp03zr7W";
const REFUSED_CLIENT: &str = "whoami-client-refused-5d0e";
const REFUSED_TOKEN: &str = "cf-refused-token-secret-Hx66kd2B";
const USER_ID: &str = "7c5dae5552338874e5053f2534d2767a";
const ACCOUNT_ID: &str = "01a7362d577a6c3019a474fd6f485823";
const CLIENT_LIMIT: Duration = Duration::from_secs(120);
const TEST_LIMIT: Duration = Duration::from_secs(300);

/// The upstream: `/user` answers the user token only, `/accounts` lists one
/// account for the account token; everything else is refused. Every body
/// echoes the bearer token it was sent.
fn upstream() -> Upstream {
    Upstream::start(|req| {
        let token = req
            .header("authorization")
            .unwrap_or_default()
            .trim_start_matches("Bearer ")
            .to_owned();
        let refused = || {
            Reply::json(
                403,
                &json!({"success": false, "errors": [{"code": 9109, "message": format!("Unauthorized to access requested resource with token {token}")}], "messages": [], "result": null}),
            )
        };
        match (req.path(), token.as_str()) {
            ("/user", USER_TOKEN) => Reply::envelope(
                json!({"id": USER_ID, "email": "sam@example.com", "first_name": token, "token": token}),
            ),
            ("/accounts", ACCOUNT_TOKEN) => Reply::envelope(
                json!([{"id": ACCOUNT_ID, "name": format!("Main {token}"), "settings": {"echo": token}}]),
            ),
            _ => refused(),
        }
    })
    .unwrap()
}

/// Lists the tools and calls `whoami` `calls` times as `client`; the
/// driver's report.
fn run(server: &Server, client: &str, calls: usize) -> Value {
    let mut steps = vec![json!({"op": "list"})];
    steps.extend((0..calls).map(|_| json!({"op": "call", "name": "whoami", "arguments": {}})));
    let plan = json!({
        "client": "session",
        "transport": "http",
        "url": format!("{}?output_schemas=1", server.url()),
        "token": client,
        "timeoutSeconds": 60,
        "steps": steps,
    });
    with_deadline(TEST_LIMIT, move || clients::run_python(&plan, CLIENT_LIMIT))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{client}: {e}"))
}

fn assert_no_token(what: &str, text: &str) {
    for token in [USER_TOKEN, ACCOUNT_TOKEN, REFUSED_TOKEN] {
        assert!(!text.contains(token), "{what} holds a token: {text}");
    }
}

#[test]
fn whoami_names_the_credential_and_never_shows_it() {
    let test = "whoami_names_the_credential_and_never_shows_it";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let upstream = upstream();
    let config = ServerConfig::new([
        "--upstream",
        upstream.url().as_str(),
        "--allow-loopback-upstream",
    ])
    .token(USER_CLIENT, USER_TOKEN)
    .token(ACCOUNT_CLIENT, ACCOUNT_TOKEN)
    .token(REFUSED_CLIENT, REFUSED_TOKEN);
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{test}: {e}"));

    // A user token, twice: the second answer comes from the cache.
    let report = run(&server, USER_CLIENT, 2);
    assert_no_token("the user client's report", &report.to_string());
    let tools = report["results"][0]["tools"].as_array().cloned().unwrap();
    let whoami = tools
        .iter()
        .find(|t| t["name"] == "whoami")
        .unwrap_or_else(|| panic!("{test}: whoami is not listed"));
    assert_eq!(whoami["annotations"]["readOnlyHint"], true, "{whoami}");
    assert_eq!(whoami["inputSchema"]["properties"], json!({}), "{whoami}");
    assert!(whoami.get("outputSchema").is_some(), "{whoami}");
    for step in [1, 2] {
        let result = &report["results"][step]["result"];
        assert_eq!(result["isError"], false, "{test}: {result}");
        assert_eq!(
            result["structuredContent"],
            json!({"identity": format!("user:{USER_ID}"), "name": "sam@example.com"}),
            "{test}: {result}"
        );
    }
    let user_probes = upstream
        .requests()
        .iter()
        .filter(|r| r.path() == "/user")
        .count();
    assert_eq!(
        user_probes, 1,
        "{test}: the identity is cached per credential"
    );

    // An account-owned token: /user is refused, the only account answers.
    let report = run(&server, ACCOUNT_CLIENT, 1);
    assert_no_token("the account client's report", &report.to_string());
    let result = &report["results"][1]["result"];
    assert_eq!(result["isError"], false, "{test}: {result}");
    let content = &result["structuredContent"];
    assert_eq!(
        content["identity"],
        format!("account:{ACCOUNT_ID}"),
        "{test}: {result}"
    );
    // The account's name held the token: the upstream client scrubbed it.
    assert_eq!(content["name"], "Main [REDACTED]", "{test}: {result}");

    // Refused everywhere: a tool error naming both probes, without the token.
    let report = run(&server, REFUSED_CLIENT, 1);
    assert_no_token("the refused client's report", &report.to_string());
    let result = &report["results"][1]["result"];
    assert_eq!(result["isError"], true, "{test}: {result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("GET /user answered 403") && text.contains("GET /accounts answered 403"),
        "{test}: {text}"
    );
    assert_no_token("the server log", &server.log());
}
