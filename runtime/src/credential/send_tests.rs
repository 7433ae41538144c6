#![allow(clippy::unwrap_used, clippy::panic)]
//! Every scheme kind sent through the upstream client to a loopback
//! endpoint: what each requirement sends, the choice between
//! alternatives, the errors naming what to set, redaction of every
//! secret form, and the OAuth token refresh after a 401.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::testing::{Endpoint, Seen, endpoint};
use super::*;
use crate::catalogue::Method;
use crate::config::UpstreamConfig;
use crate::profile::Profile;
use crate::request::HttpRequest;
use crate::security::{KeyLocation, SchemeKind, SecurityScheme};
use crate::upstream::{Upstream, UpstreamError};

static SCHEMES: [SecurityScheme; 7] = [
    SecurityScheme {
        name: "basic",
        kind: SchemeKind::Basic,
        env: &["T_BASIC_USERNAME", "T_BASIC_PASSWORD"],
    },
    SecurityScheme {
        name: "bearer",
        kind: SchemeKind::Bearer,
        env: &["T_BEARER"],
    },
    SecurityScheme {
        name: "cookie_key",
        kind: SchemeKind::ApiKey {
            location: KeyLocation::Cookie,
            name: "sid",
        },
        env: &["T_COOKIE_KEY"],
    },
    SecurityScheme {
        name: "digest",
        kind: SchemeKind::Unsupported {
            what: "http digest",
        },
        env: &[],
    },
    SecurityScheme {
        name: "header_key",
        kind: SchemeKind::ApiKey {
            location: KeyLocation::Header,
            name: "X-Key",
        },
        env: &["T_HEADER_KEY"],
    },
    SecurityScheme {
        name: "oauth",
        kind: SchemeKind::ClientCredentials {
            token_url: "/oauth/token",
            scopes: &["read"],
        },
        env: &["T_OAUTH_CLIENT_ID", "T_OAUTH_CLIENT_SECRET"],
    },
    SecurityScheme {
        name: "query_key",
        kind: SchemeKind::ApiKey {
            location: KeyLocation::Query,
            name: "api_key",
        },
        env: &["T_QUERY_KEY"],
    },
];

const BASIC: u16 = 0;
const BEARER: u16 = 1;
const COOKIE: u16 = 2;
const DIGEST: u16 = 3;
const HEADER: u16 = 4;
const OAUTH: u16 = 5;
const QUERY: u16 = 6;

static PROFILE: Profile = Profile {
    schemes: &SCHEMES,
    security: &[&[BEARER], &[HEADER]],
    primary: Some(BEARER),
    ..Profile::generic("T_BEARER")
};

fn full_env() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("T_BASIC_USERNAME", "alice"),
        ("T_BASIC_PASSWORD", "pa55-w0rd-basic"),
        ("T_BEARER", "bearer-secret-1"),
        ("T_COOKIE_KEY", "cookie-secret-2"),
        ("T_HEADER_KEY", "header-secret-3"),
        ("T_OAUTH_CLIENT_ID", "oauth-client"),
        ("T_OAUTH_CLIENT_SECRET", "oauth-secret-4"),
        ("T_QUERY_KEY", "query-secret-5"),
    ])
}

fn secrets(env: &HashMap<&'static str, &'static str>) -> Arc<ServerSecrets> {
    Arc::new(
        ServerSecrets::from_env(&PROFILE, "T_BEARER", |n| {
            env.get(n).map(|v| (*v).to_owned())
        })
        .unwrap(),
    )
}

fn credential(env: &HashMap<&'static str, &'static str>) -> Credential {
    Credential::with_secrets(None, "test env", secrets(env)).unwrap()
}

fn upstream(base: &str) -> Upstream {
    Upstream::new(&UpstreamConfig {
        base: base.parse().unwrap(),
        timeout: Duration::from_secs(5),
        max_body_bytes: 1 << 20,
    })
    .unwrap()
}

fn request(security: Option<Requirement>) -> HttpRequest {
    HttpRequest {
        method: Method::Get,
        path_and_query: "/items?limit=2".into(),
        headers: Vec::new(),
        body: None,
        security,
        operation: None,
    }
}

/// An API at `/v1` that echoes each request head as its body, and a token
/// endpoint at `/oauth/token` issuing `tok-N`.
async fn api() -> Endpoint {
    endpoint(|n, seen: &Seen| {
        if seen.target().starts_with("/oauth/token") {
            (
                200,
                format!(r#"{{"access_token":"oauth-tok-{n}","expires_in":3600}}"#),
            )
        } else {
            (200, serde_json::json!({ "head": seen.head }).to_string())
        }
    })
    .await
}

async fn send_one(security: Option<Requirement>, cred: &Credential) -> (Seen, String) {
    let ep = api().await;
    let up = upstream(&format!("{}/v1", ep.base));
    let resp = up.send(&request(security), Some(cred)).await.unwrap();
    let seen = ep.seen.lock().unwrap().last().cloned().unwrap();
    (seen, String::from_utf8(resp.body).unwrap())
}

#[tokio::test]
async fn each_kind_is_sent_where_its_scheme_says() {
    let cred = credential(&full_env());
    let (seen, _) = send_one(Some(&[&[BEARER]]), &cred).await;
    assert_eq!(
        seen.header("authorization").unwrap(),
        "Bearer bearer-secret-1"
    );
    let (seen, _) = send_one(Some(&[&[HEADER]]), &cred).await;
    assert_eq!(seen.header("x-key").unwrap(), "header-secret-3");
    assert!(seen.header("authorization").is_none());
    let (seen, _) = send_one(Some(&[&[QUERY]]), &cred).await;
    assert_eq!(seen.target(), "/v1/items?limit=2&api_key=query-secret-5");
    let (seen, _) = send_one(Some(&[&[COOKIE]]), &cred).await;
    assert_eq!(seen.header("cookie").unwrap(), "sid=cookie-secret-2");
    let (seen, _) = send_one(Some(&[&[BASIC]]), &cred).await;
    // base64("alice:pa55-w0rd-basic")
    assert_eq!(
        seen.header("authorization").unwrap(),
        "Basic YWxpY2U6cGE1NS13MHJkLWJhc2lj"
    );
    let (seen, _) = send_one(Some(&[&[OAUTH]]), &cred).await;
    assert!(
        seen.header("authorization")
            .unwrap()
            .starts_with("Bearer oauth-tok-"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn two_schemes_at_once_and_the_global_default() {
    let cred = credential(&full_env());
    let (seen, _) = send_one(Some(&[&[BASIC, HEADER]]), &cred).await;
    assert!(seen.header("authorization").unwrap().starts_with("Basic "));
    assert_eq!(seen.header("x-key").unwrap(), "header-secret-3");
    // `None` is the profile's global requirement: bearer first.
    let (seen, _) = send_one(None, &cred).await;
    assert_eq!(
        seen.header("authorization").unwrap(),
        "Bearer bearer-secret-1"
    );
    // An empty requirement sends nothing, though credentials are set.
    let (seen, _) = send_one(Some(&[]), &cred).await;
    assert!(seen.header("authorization").is_none() && seen.header("x-key").is_none());
}

#[tokio::test]
async fn the_first_satisfiable_alternative_wins_and_optional_means_optional() {
    let mut env = full_env();
    env.remove("T_BEARER");
    let cred = credential(&env);
    // Bearer unset: the global requirement falls back to the header key.
    let (seen, _) = send_one(None, &cred).await;
    assert_eq!(seen.header("x-key").unwrap(), "header-secret-3");
    assert!(seen.header("authorization").is_none());
    // Optional: sent when set, nothing when not.
    let (seen, _) = send_one(Some(&[&[COOKIE], &[]]), &cred).await;
    assert_eq!(seen.header("cookie").unwrap(), "sid=cookie-secret-2");
    let cred = credential(&HashMap::new());
    let (seen, _) = send_one(Some(&[&[COOKIE], &[]]), &cred).await;
    assert!(seen.header("cookie").is_none());
}

#[tokio::test]
async fn a_cookie_key_joins_the_cookie_parameters() {
    let ep = api().await;
    let up = upstream(&ep.base);
    let mut req = request(Some(&[&[COOKIE]]));
    req.headers.push(("Cookie".into(), "theme=dark".into()));
    up.send(&req, Some(&credential(&full_env()))).await.unwrap();
    let seen = ep.seen.lock().unwrap()[0].clone();
    assert_eq!(
        seen.header("cookie").unwrap(),
        "theme=dark; sid=cookie-secret-2"
    );
    assert_eq!(seen.head.matches("cookie:").count(), 1, "{}", seen.head);
}

#[tokio::test]
async fn the_client_token_fills_the_primary_scheme() {
    let cred =
        Credential::with_secrets(Some("client-mapped"), "client", secrets(&full_env())).unwrap();
    let (seen, _) = send_one(Some(&[&[BEARER]]), &cred).await;
    assert_eq!(
        seen.header("authorization").unwrap(),
        "Bearer client-mapped"
    );
    // Binding a plain credential gives the same.
    let bound = Credential::new("client-mapped", "client")
        .unwrap()
        .bind(&secrets(&HashMap::new()));
    let (seen, _) = send_one(None, &bound).await;
    assert_eq!(
        seen.header("authorization").unwrap(),
        "Bearer client-mapped"
    );
}

async fn send_err(security: Requirement, cred: &Credential) -> String {
    let ep = api().await;
    let err = upstream(&ep.base)
        .send(&request(Some(security)), Some(cred))
        .await
        .unwrap_err();
    assert!(matches!(err, UpstreamError::Credential { .. }), "{err:?}");
    assert!(ep.seen.lock().unwrap().is_empty(), "nothing may be sent");
    err.to_string()
}

#[tokio::test]
async fn unmet_requirements_name_the_variables_to_set() {
    let cred = credential(&HashMap::new());
    let err = send_err(&[&[QUERY], &[BASIC, HEADER]], &cred).await;
    assert_eq!(
        err,
        "GET /items: the server has no credential for this operation: set `T_QUERY_KEY`, or both `T_BASIC_USERNAME` and `T_HEADER_KEY` in the server's environment"
    );
    // Only the unset half of a combination is named; basic needs only
    // its user name (the password may be empty).
    let mut env = HashMap::new();
    env.insert("T_HEADER_KEY", "header-value-long");
    let err = send_err(&[&[BASIC, HEADER]], &credential(&env)).await;
    assert!(err.contains("set `T_BASIC_USERNAME` in"), "{err}");
    assert!(!err.contains("T_BASIC_PASSWORD"), "{err}");
    assert!(!err.contains("T_HEADER_KEY"), "{err}");
    // A scheme toolforge cannot send is named as such.
    let err = send_err(&[&[DIGEST]], &credential(&full_env())).await;
    assert!(
        err.contains("scheme `digest` (http digest), which toolforge cannot send"),
        "{err}"
    );
}

#[tokio::test]
async fn echoed_secrets_are_redacted_in_every_form() {
    let cred = credential(&full_env());
    const CASES: [Requirement; 4] = [
        &[&[BASIC, HEADER]],
        &[&[QUERY, COOKIE]],
        &[&[OAUTH]],
        &[&[BEARER]],
    ];
    for security in CASES {
        let (_, body) = send_one(Some(security), &cred).await;
        for secret in [
            "pa55-w0rd-basic",
            "YWxpY2U6cGE1NS13MHJkLWJhc2lj",
            "bearer-secret-1",
            "cookie-secret-2",
            "header-secret-3",
            "query-secret-5",
            "oauth-tok-",
        ] {
            assert!(!body.contains(secret), "{secret} leaked in {body}");
        }
        assert!(body.contains("[REDACTED]"), "{body}");
    }
}

#[tokio::test]
async fn a_refused_oauth_token_is_fetched_again_once() {
    let ep = endpoint(|n, seen: &Seen| {
        if seen.target().starts_with("/oauth/token") {
            (
                200,
                format!(r#"{{"access_token":"oauth-tok-{n}","expires_in":3600}}"#),
            )
        } else if seen.header("authorization").as_deref() == Some("Bearer oauth-tok-1") {
            (401, r#"{"error":"expired"}"#.to_owned())
        } else {
            (200, r#"{"ok":true}"#.to_owned())
        }
    })
    .await;
    let up = upstream(&ep.base);
    let cred = credential(&full_env());
    let resp = up
        .send(&request(Some(&[&[OAUTH]])), Some(&cred))
        .await
        .unwrap();
    assert_eq!(resp.status.as_u16(), 200);
    let targets: Vec<String> = ep
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.target().to_owned())
        .collect();
    assert_eq!(
        targets,
        [
            "/oauth/token",
            "/items?limit=2",
            "/oauth/token",
            "/items?limit=2"
        ]
    );
    // A second 401 is the API's answer, not retried again.
    let ep = endpoint(|n, seen: &Seen| {
        if seen.target().starts_with("/oauth/token") {
            (200, format!(r#"{{"access_token":"t{n}"}}"#))
        } else {
            (401, "{}".to_owned())
        }
    })
    .await;
    let resp = upstream(&ep.base)
        .send(&request(Some(&[&[OAUTH]])), Some(&credential(&full_env())))
        .await
        .unwrap();
    assert_eq!(resp.status.as_u16(), 401);
    assert_eq!(ep.seen.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn a_query_key_never_reaches_an_error() {
    // A port nobody listens on.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let up = upstream(&format!("http://{addr}"));
    let err = up
        .send(&request(Some(&[&[QUERY]])), Some(&credential(&full_env())))
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("query-secret-5"), "{err}");
    assert!(!err.contains("api_key"), "{err}");
    assert!(err.starts_with("GET /items:"), "{err}");
}

#[test]
fn environment_values_are_checked() {
    let read = |pairs: &[(&'static str, &'static str)]| {
        let env: HashMap<&str, &str> = pairs.iter().copied().collect();
        ServerSecrets::from_env(&PROFILE, "T_BEARER", |n| {
            env.get(n).map(|v| (*v).to_owned())
        })
    };
    // A password without its user name is half a basic credential.
    let err = read(&[("T_BASIC_PASSWORD", "pw")]).unwrap_err().to_string();
    assert!(
        err.contains("T_BASIC_USERNAME")
            && err.contains("T_BASIC_PASSWORD")
            && err.contains("needs the user name")
            && !err.contains("pw"),
        "{err}"
    );
    let err = read(&[("T_OAUTH_CLIENT_SECRET", "s")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("set both variables or neither"), "{err}");
    let err = read(&[("T_BASIC_USERNAME", "a:b"), ("T_BASIC_PASSWORD", "p")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot contain `:`"), "{err}");
    let err = read(&[("T_HEADER_KEY", "abc\u{7f}def")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("T_HEADER_KEY") && !err.contains("abc"),
        "{err}"
    );
    // Empty (as in a copied `.env.example`) means unset.
    let s = read(&[("T_HEADER_KEY", "  "), ("T_BEARER", "b")]).unwrap();
    assert_eq!(s.configured(), ["T_BEARER"]);
    assert!(s.unconfigured().contains(&"T_HEADER_KEY"));
    // --token-env renames the primary scheme's variable.
    let env: HashMap<&str, &str> = [("OTHER", "tok")].into_iter().collect();
    let s = ServerSecrets::from_env(&PROFILE, "OTHER", |n| env.get(n).map(|v| (*v).to_owned()))
        .unwrap();
    assert_eq!(s.configured(), ["OTHER"]);
}

#[test]
fn debug_and_cache_keys_show_no_secret() {
    let cred = credential(&full_env());
    let shown = format!("{cred:?} {:?}", secrets(&full_env()));
    for secret in full_env().values() {
        assert!(
            !shown.contains(secret) || *secret == "alice",
            "{secret} in {shown}"
        );
    }
    assert_ne!(cred.cache_key(), credential(&HashMap::new()).cache_key());
}

#[tokio::test]
async fn a_token_endpoint_quoting_the_basic_header_reaches_no_tool_error() {
    // base64("oauth-client:oauth-secret-4"), as the token request sends it.
    const B64: &str = "b2F1dGgtY2xpZW50Om9hdXRoLXNlY3JldC00";
    for body in [
        format!(r#"{{"error":"invalid_request","error_description":"header was Basic {B64}"}}"#),
        format!(r#"{{"access_token":"a","token_type":"Basic {B64}"}}"#),
        format!(r#"{{"error":"Basic {}"}}"#, &B64[..24]),
    ] {
        let ep = endpoint(move |_, _| (400, body.clone())).await;
        let err = upstream(&ep.base)
            .send(&request(Some(&[&[OAUTH]])), Some(&credential(&full_env())))
            .await
            .unwrap_err()
            .to_string();
        for leak in [&B64[..8], "oauth-secret-4", "oauth-client"] {
            assert!(!err.contains(leak), "{leak} in {err}");
        }
    }
}

#[tokio::test]
async fn a_header_cut_inside_a_secret_keeps_no_part_of_it() {
    // A Retry-After that holds the basic header's base64 across the
    // 200-character cut of quoted headers: redacted before the cut.
    let ep = super::testing::endpoint_with_headers(|_, _| {
        let value = format!("{}YWxpY2U6cGE1NS13MHJkLWJhc2lj", "x".repeat(190));
        (429, format!("retry-after: {value}\r\n"), "{}".to_owned())
    })
    .await;
    let resp = upstream(&ep.base)
        .send(&request(Some(&[&[BASIC]])), Some(&credential(&full_env())))
        .await
        .unwrap();
    let after = resp.retry_after.unwrap();
    assert!(!after.contains("YWxp"), "{after}");
    assert!(after.ends_with("[REDACTED]"), "{after}");
}

#[tokio::test]
async fn an_overflowing_retry_after_is_quoted_not_computed() {
    let ep = super::testing::endpoint_with_headers(|_, _| {
        (
            429,
            "retry-after: 99999999999999999999\r\n".to_owned(),
            "{}".to_owned(),
        )
    })
    .await;
    let resp = upstream(&ep.base)
        .send(&request(None), Some(&credential(&full_env())))
        .await
        .unwrap();
    assert_eq!(resp.retry_after.as_deref(), Some("99999999999999999999"));
}

/// RFC 7617 allows an empty password, and Stripe takes its key as the user
/// name: the user name alone configures basic, is sent as `user:`, and is
/// then the secret the redactor hides.
#[tokio::test]
async fn a_basic_user_name_alone_is_sent_with_an_empty_password() {
    let env = HashMap::from([("T_BASIC_USERNAME", "sk_test_4eC39HqLyjWDarjtT1zdp7dc")]);
    let s = secrets(&env);
    assert_eq!(s.configured(), ["T_BASIC_USERNAME", "T_BASIC_PASSWORD"]);
    let cred = Credential::with_secrets(None, "test env", s).unwrap();
    let (seen, body) = send_one(Some(&[&[BASIC]]), &cred).await;
    // base64("sk_test_4eC39HqLyjWDarjtT1zdp7dc:")
    let b64 = "c2tfdGVzdF80ZUMzOUhxTHlqV0Rhcmp0VDF6ZHA3ZGM6";
    assert_eq!(
        seen.header("authorization").unwrap(),
        format!("Basic {b64}")
    );
    for secret in ["sk_test_4eC39HqLyjWDarjtT1zdp7dc", b64] {
        assert!(!body.contains(secret), "{secret} leaked in {body}");
    }
    assert!(body.contains("[REDACTED]"), "{body}");
}
