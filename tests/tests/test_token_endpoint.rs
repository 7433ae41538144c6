#![allow(clippy::unwrap_used, clippy::panic)]
//! Tool calls whose credential is an OAuth client-credentials token, end to
//! end: an in-process server core over the generated larder catalogue
//! (`list_orders` needs the `oauth` scheme) against a loopback API whose
//! `POST /oauth/token` answers as a hostile or broken token endpoint does.
//!
//! - `expires_in` of 2^64 - 1 (number or string), 2^63, `1e400` as a
//!   string: the call gets an answer (it used to panic in
//!   `Instant + Duration`, so the client never got one), and the token is
//!   reused by the next call instead of being fetched again.
//! - The token request asks for the scope `list_orders`' operation lists
//!   (`orders:read`), not every scope of the scheme.
//! - A refusal quoting the `Authorization: Basic` header the server sent,
//!   and a `token_type` holding it: the tool error holds no part of the
//!   client ID, the secret or their base64.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use larder_tools::CATALOGUE;
use serde_json::{Value, json};
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::credential::{Credential, ServerSecrets};
use toolforge_runtime::server::{Core, CoreOptions};
use toolforge_tests::upstream::{Reply, Upstream};

const CLIENT_ID: &str = "larder-client-7Qk";
const CLIENT_SECRET: &str = "CS-SECRET-larder-91xZ";
const TOKEN: &str = "cc-access-token-4d1";

fn core(upstream: &Upstream) -> Core {
    Core::new(
        &CATALOGUE,
        CoreOptions {
            exposure: Exposure::default(),
            upstream: UpstreamConfig {
                base: validate_upstream(&upstream.url(), true).unwrap(),
                timeout: Duration::from_secs(10),
                max_body_bytes: 1 << 20,
            },
            output_schemas: false,
            max_argument_bytes: 100_000,
            credential_hint: "set the OAuth client".into(),
        },
    )
    .unwrap()
}

/// The server's credential: only the OAuth client is set.
fn credential() -> Credential {
    let secrets =
        ServerSecrets::from_env(
            &CATALOGUE.profile,
            CATALOGUE.profile.token_env,
            |n| match n {
                "LARDER_OAUTH_CLIENT_ID" => Some(CLIENT_ID.to_owned()),
                "LARDER_OAUTH_CLIENT_SECRET" => Some(CLIENT_SECRET.to_owned()),
                _ => None,
            },
        )
        .unwrap();
    Credential::with_secrets(None, "test environment", Arc::new(secrets)).unwrap()
}

/// An API whose token endpoint answers `token_answer`.
fn api(status: u16, token_answer: String) -> Upstream {
    Upstream::start(move |req| {
        if req.path() == "/oauth/token" {
            let body: Value = serde_json::from_str(&token_answer).unwrap_or(Value::Null);
            Reply::json(status, &body)
        } else if req.header("authorization") == Some(&format!("Bearer {TOKEN}")) {
            Reply::json(200, &json!({"orders": [], "page": 1}))
        } else {
            Reply::json(401, &json!({"message": "no token"}))
        }
    })
    .unwrap()
}

async fn call(core: &Core, credential: &Credential) -> Value {
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        core.call(
            "list_orders",
            Some(serde_json::Map::new()),
            Some(credential),
        ),
    )
    .await
    .expect("the call answers")
    .unwrap();
    serde_json::to_value(result).unwrap()
}

#[tokio::test]
async fn an_expires_in_past_the_clock_still_gets_an_answer() {
    for expires_in in [
        "18446744073709551615",
        "\"18446744073709551615\"",
        "9223372036854775808",
        "\"1e400\"",
    ] {
        let upstream = api(
            200,
            format!(
                r#"{{"access_token":"{TOKEN}","token_type":"bearer","expires_in":{expires_in}}}"#
            ),
        );
        let core = core(&upstream);
        let credential = credential();
        for _ in 0..2 {
            let result = call(&core, &credential).await;
            assert_eq!(result["isError"], false, "{expires_in}: {result}");
            assert!(!result.to_string().contains(TOKEN), "{result}");
        }
        let fetches = upstream
            .requests()
            .iter()
            .filter(|r| r.path() == "/oauth/token")
            .count();
        assert_eq!(fetches, 1, "{expires_in}: the token is cached");
        let token_request = upstream
            .requests()
            .into_iter()
            .find(|r| r.path() == "/oauth/token")
            .unwrap();
        let scope: Vec<String> = url::form_urlencoded::parse(&token_request.body)
            .filter(|(k, _)| k == "scope")
            .map(|(_, v)| v.into_owned())
            .collect();
        assert_eq!(
            scope,
            ["orders:read"],
            "only list_orders' scope is asked for"
        );
    }
}

#[tokio::test]
async fn a_token_endpoint_quoting_the_basic_header_leaks_nothing_to_the_client() {
    let b64 =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    for (status, answer) in [
        (
            400,
            json!({"error": "invalid_client", "error_description": format!("Authorization: Basic {b64}")}),
        ),
        (
            200,
            json!({"access_token": TOKEN, "token_type": format!("Basic {b64}")}),
        ),
        (400, json!({"error": format!("Basic {}", &b64[..40])})),
    ] {
        let upstream = api(status, answer.to_string());
        let result = call(&core(&upstream), &credential()).await;
        assert_eq!(result["isError"], true, "{result}");
        let text = result.to_string();
        for leak in [&b64[..8], CLIENT_SECRET, "CS-SECRE", CLIENT_ID] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
    }
}
