#![allow(clippy::unwrap_used, clippy::panic)]
//! Logs at every level, TRACE included, while a token endpoint quotes the
//! client's Basic header and the API echoes every credential: no line
//! holds a secret in any form it was sent in.

use std::sync::Arc;

use super::testing::{Seen, endpoint};
use super::*;
use crate::catalogue::Method;
use crate::config::UpstreamConfig;
use crate::log_capture_tests::Captured;
use crate::profile::Profile;
use crate::request::HttpRequest;
use crate::security::{KeyLocation, SchemeKind, SecurityScheme};
use crate::upstream::Upstream;

static SCHEMES: [SecurityScheme; 3] = [
    SecurityScheme {
        name: "basic",
        kind: SchemeKind::Basic,
        env: &["L_USER", "L_PASSWORD"],
    },
    SecurityScheme {
        name: "oauth",
        kind: SchemeKind::ClientCredentials {
            token_url: "/oauth/token",
            scopes: &["read"],
        },
        env: &["L_CLIENT_ID", "L_CLIENT_SECRET"],
    },
    SecurityScheme {
        name: "query_key",
        kind: SchemeKind::ApiKey {
            location: KeyLocation::Query,
            name: "key",
        },
        env: &["L_KEY"],
    },
];

static PROFILE: Profile = Profile {
    schemes: &SCHEMES,
    security: &[&[0, 2]],
    ..Profile::generic("L_TOKEN")
};

const SECRETS: [&str; 8] = [
    "log-password-1",
    "log-client-2",
    "log-secret+3",
    "log-key+4",
    // as sent: form-encoded, and the base64 of the Basic pairs
    // `log-client-2:log-secret%2B3` and `alice:log-password-1`
    "log-secret%2B3",
    "log-key%2B4",
    "bG9nLWNsaWVudC0yOmxvZy1zZWNyZXQlMkIz",
    "YWxpY2U6bG9nLXBhc3N3b3JkLTE",
];

#[test]
fn no_log_line_at_any_level_holds_a_secret() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::trace!("capture works");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(exchange());
    });
    let log = captured.text();
    assert!(log.contains("capture works"), "{log}");
    for secret in SECRETS.iter().chain([&"log-token-5"]) {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
}

async fn exchange() {
    let ep = endpoint(|n, seen: &Seen| {
        if seen.target() == "/oauth/token" {
            let quoted = seen.header("authorization").unwrap_or_default();
            if n == 1 {
                return (
                    400,
                    serde_json::json!({"error": "invalid_request", "error_description": quoted})
                        .to_string(),
                );
            }
            return (200, r#"{"access_token":"log-token-5"}"#.to_owned());
        }
        (200, serde_json::json!({ "echo": seen.head }).to_string())
    })
    .await;
    let up = Upstream::new(&UpstreamConfig {
        base: ep.base.parse().unwrap(),
        timeout: std::time::Duration::from_secs(5),
        max_body_bytes: 1 << 20,
    })
    .unwrap();
    let env = |n: &str| {
        Some(
            match n {
                "L_USER" => "alice",
                "L_PASSWORD" => SECRETS[0],
                "L_CLIENT_ID" => SECRETS[1],
                "L_CLIENT_SECRET" => SECRETS[2],
                "L_KEY" => SECRETS[3],
                _ => return None,
            }
            .to_owned(),
        )
    };
    let secrets = ServerSecrets::from_env(&PROFILE, "L_TOKEN", env).unwrap();
    let cred = Credential::with_secrets(None, "log test", Arc::new(secrets)).unwrap();
    const OAUTH: Requirement = &[&[1]];
    const BASIC_AND_KEY: Requirement = &[&[0, 2]];
    for security in [OAUTH, BASIC_AND_KEY, OAUTH] {
        let req = HttpRequest {
            method: Method::Get,
            path_and_query: "/items".into(),
            headers: Vec::new(),
            body: None,
            security: Some(security),
            operation: None,
        };
        // Errors and answers are what the server would log or return.
        match up.send(&req, Some(&cred)).await {
            Ok(resp) => tracing::trace!(body = %String::from_utf8_lossy(&resp.body), "answer"),
            Err(e) => tracing::warn!(error = %e, "failed"),
        }
    }
}
