#![allow(clippy::unwrap_used, clippy::panic)]
//! Client-credentials tokens asked for the scopes the called operation
//! lists (the profile's scope table), cached per scope set, against a
//! loopback token endpoint that records the `scope` asked for.

use std::sync::Arc;
use std::time::Duration;

use super::testing::{Seen, endpoint};
use super::*;
use crate::catalogue::Method;
use crate::config::UpstreamConfig;
use crate::profile::Profile;
use crate::request::HttpRequest;
use crate::security::{OperationScopes, SchemeKind, SecurityScheme};
use crate::upstream::Upstream;

static SCHEMES: [SecurityScheme; 1] = [SecurityScheme {
    name: "oauth",
    kind: SchemeKind::ClientCredentials {
        token_url: "/oauth/token",
        scopes: &["orders:read", "orders:write", "reports:read"],
    },
    env: &["S_CLIENT_ID", "S_CLIENT_SECRET"],
}];

static PROFILE: Profile = Profile {
    schemes: &SCHEMES,
    security: &[&[0]],
    scopes: &[
        OperationScopes {
            operation: "createOrder",
            scheme: 0,
            scopes: &["orders:write"],
        },
        OperationScopes {
            operation: "listOrders",
            scheme: 0,
            scopes: &["orders:read"],
        },
        OperationScopes {
            operation: "spendReport",
            scheme: 0,
            scopes: &["reports:read", "orders:read"],
        },
        OperationScopes {
            operation: "ping",
            scheme: 0,
            scopes: &[],
        },
    ],
    ..Profile::generic("S_TOKEN")
};

fn credential() -> Credential {
    let secrets = ServerSecrets::from_env(&PROFILE, "S_TOKEN", |n| match n {
        "S_CLIENT_ID" => Some("scope-client".to_owned()),
        "S_CLIENT_SECRET" => Some("scope-secret-8".to_owned()),
        _ => None,
    })
    .unwrap();
    Credential::with_secrets(None, "test env", Arc::new(secrets)).unwrap()
}

fn request(operation: Option<&'static str>) -> HttpRequest {
    HttpRequest {
        method: Method::Get,
        path_and_query: "/orders".into(),
        headers: Vec::new(),
        body: None,
        security: Some(&[&[0]]),
        operation,
    }
}

/// The `scope` of a token request body, decoded.
fn scope_of(seen: &Seen) -> String {
    url::form_urlencoded::parse(seen.body.as_bytes())
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn each_call_asks_only_for_the_scopes_its_operation_lists() {
    let ep = endpoint(|n, seen: &Seen| {
        if seen.target() == "/oauth/token" {
            (
                200,
                format!(r#"{{"access_token":"tok-{n}","expires_in":3600}}"#),
            )
        } else {
            let auth = seen.header("authorization").unwrap_or_default();
            (200, serde_json::json!({ "auth": auth }).to_string())
        }
    })
    .await;
    let up = Upstream::new(&UpstreamConfig {
        base: ep.base.parse().unwrap(),
        timeout: Duration::from_secs(5),
        max_body_bytes: 1 << 20,
    })
    .unwrap();
    let cred = credential();
    for operation in [
        Some("listOrders"),
        Some("createOrder"),
        Some("listOrders"),
        Some("spendReport"),
        None,
        Some("unlisted"),
        Some("ping"),
    ] {
        let resp = up.send(&request(operation), Some(&cred)).await.unwrap();
        // The fetched token is redacted from what the API echoes.
        let body = String::from_utf8(resp.body).unwrap();
        assert!(
            body.contains("[REDACTED]") && !body.contains("tok-"),
            "{body}"
        );
    }
    let seen = ep.seen.lock().unwrap().clone();
    let asked: Vec<String> = seen
        .iter()
        .filter(|s| s.target() == "/oauth/token")
        .map(scope_of)
        .collect();
    // One fetch per scope set, in the order first needed; a second
    // listOrders call reuses its token; an operation without an entry
    // (or no operation) asks for everything the scheme declares; one that
    // lists no scope asks for none.
    assert_eq!(
        asked,
        [
            "orders:read",
            "orders:write",
            "orders:read reports:read",
            "orders:read orders:write reports:read",
            "",
        ]
    );
    // Each API call carried the token of its own scope set.
    let sent: Vec<String> = seen
        .iter()
        .filter(|s| s.target() == "/orders")
        .map(|s| s.header("authorization").unwrap())
        .collect();
    assert_eq!(
        sent,
        [
            "Bearer tok-1",
            "Bearer tok-3",
            "Bearer tok-1",
            "Bearer tok-6",
            "Bearer tok-8",
            "Bearer tok-8",
            "Bearer tok-11",
        ]
    );
}
