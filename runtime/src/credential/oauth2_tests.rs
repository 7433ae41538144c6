#![allow(clippy::unwrap_used)]
//! The client-credentials source against a token endpoint on loopback (a
//! minimal HTTP/1.1 responder: the network edge is the only mock).

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::credential::testing::endpoint;
use crate::credential::token_answer;

fn source(url: &'static str) -> TokenSource {
    TokenSource::new(
        "oauth",
        url,
        &["read", "write"],
        "client-id-1".into(),
        "client-secret-XYZ".into(),
    )
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .unwrap()
}

fn header_text(token: &AccessToken) -> String {
    token.authorization().to_str().unwrap().to_owned()
}

#[tokio::test]
async fn fetches_once_and_caches_with_basic_client_auth() {
    let ep = endpoint(|n, _| {
        (
            200,
            format!(r#"{{"access_token":"tok-{n}","token_type":"Bearer","expires_in":3600}}"#),
        )
    })
    .await;
    let src = source("/oauth/token");
    let c = client();
    let base = format!("{}/v2", ep.base);
    let first = src.token(&c, &base).await.unwrap();
    let again = src.token(&c, &base).await.unwrap();
    assert_eq!(header_text(&first), "Bearer tok-1");
    assert!(Arc::ptr_eq(&first, &again));
    let seen = ep.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    // Relative token URL resolved against the base URL's host.
    assert!(
        seen[0].head.starts_with("POST /oauth/token HTTP/1.1"),
        "{}",
        seen[0].head
    );
    // client_secret_basic: base64("client-id-1:client-secret-XYZ").
    assert!(
        seen[0]
            .head
            .contains("Y2xpZW50LWlkLTE6Y2xpZW50LXNlY3JldC1YWVo="),
        "{}",
        seen[0].head
    );
    assert_eq!(
        seen[0].body,
        "grant_type=client_credentials&scope=read+write"
    );
    assert!(!seen[0].body.contains("client-secret"));
}

#[tokio::test]
async fn concurrent_callers_share_one_fetch() {
    let ep = endpoint(|n, _| {
        std::thread::sleep(Duration::from_millis(50));
        (
            200,
            format!(r#"{{"access_token":"tok-{n}","expires_in":600}}"#),
        )
    })
    .await;
    let src = Arc::new(source("/token"));
    let c = client();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (src, c, base) = (src.clone(), c.clone(), ep.base.clone());
        tasks.push(tokio::spawn(async move {
            header_text(&src.token(&c, &base).await.unwrap())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), "Bearer tok-1");
    }
    assert_eq!(ep.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn expired_and_invalidated_tokens_are_fetched_again() {
    let ep = endpoint(|n, _| {
        // The first token expires at once (lifetime 0).
        let life = if n == 1 { 0 } else { 3600 };
        (
            200,
            format!(r#"{{"access_token":"tok-{n}","expires_in":{life}}}"#),
        )
    })
    .await;
    let src = source("/token");
    let c = client();
    let first = src.token(&c, &ep.base).await.unwrap();
    let second = src.token(&c, &ep.base).await.unwrap();
    assert_eq!(header_text(&first), "Bearer tok-1");
    assert_eq!(header_text(&second), "Bearer tok-2");
    src.invalidate(&second);
    let third = src.token(&c, &ep.base).await.unwrap();
    assert_eq!(header_text(&third), "Bearer tok-3");
    // An invalidation of a token already replaced changes nothing.
    src.invalidate(&second);
    let fourth = src.token(&c, &ep.base).await.unwrap();
    assert!(Arc::ptr_eq(&third, &fourth));
    // Recent tokens are redacted.
    assert_eq!(src.redact("a tok-3 b".into()), "a [REDACTED] b");
    assert_eq!(src.redact("a tok-2 b".into()), "a [REDACTED] b");
}

#[tokio::test]
async fn falls_back_to_the_secret_in_the_body_when_basic_is_refused() {
    let ep = endpoint(|_, seen| {
        if seen
            .head
            .to_ascii_lowercase()
            .contains("authorization: basic")
        {
            (401, r#"{"error":"invalid_client"}"#.to_owned())
        } else if seen.body.contains("client_secret=client-secret-XYZ") {
            (
                200,
                r#"{"access_token":"posted","token_type":"bearer"}"#.to_owned(),
            )
        } else {
            (400, r#"{"error":"invalid_request"}"#.to_owned())
        }
    })
    .await;
    let src = source("/token");
    let token = src.token(&client(), &ep.base).await.unwrap();
    assert_eq!(header_text(&token), "Bearer posted");
    assert_eq!(ep.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn errors_name_the_endpoint_and_never_the_secret() {
    let ep = endpoint(|_, _| {
        (
            400,
            r#"{"error":"invalid_scope","error_description":"client client-id-1 with secret client-secret-XYZ may not ask for write"}"#
                .to_owned(),
        )
    })
    .await;
    let err = source("/token")
        .token(&client(), &ep.base)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("invalid_scope"), "{err}");
    assert!(err.contains("127.0.0.1/token"), "{err}");
    assert!(!err.contains("client-secret-XYZ"), "{err}");
    assert!(!err.contains("client-id-1"), "{err}");
}

#[tokio::test]
async fn refuses_bad_answers() {
    for (body, expect) in [
        (r#"{"token_type":"bearer"}"#, "no `access_token`"),
        (r#"{"access_token":"a","token_type":"mac"}"#, "only bearer"),
        (r#"{"access_token":"a\r\nX-Injected: 1"}"#, "cannot be sent"),
        ("not json", "not JSON"),
    ] {
        let ep = endpoint(move |_, _| (200, body.to_owned())).await;
        let err = source("/token")
            .token(&client(), &ep.base)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(expect), "{body}: {err}");
    }
}

#[tokio::test]
async fn secrets_go_only_over_https_or_to_loopback() {
    let c = client();
    let err = source("http://auth.example.com/token")
        .token(&c, "https://api.example.com")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only over https"), "{err}");
    let err = source("ftp://auth.example.com/token")
        .token(&c, "https://api.example.com")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("ftp"), "{err}");
}

#[tokio::test]
async fn oversized_answers_are_refused() {
    let ep = endpoint(|_, _| {
        (
            200,
            format!(r#"{{"access_token":"{}"}}"#, "a".repeat(70_000)),
        )
    })
    .await;
    let err = source("/token")
        .token(&client(), &ep.base)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("larger than"), "{err}");
}

#[tokio::test]
async fn an_expires_in_past_the_clock_neither_panics_nor_lives_forever() {
    for expires_in in [
        "9223372036854775808",
        "18446744073709551615",
        "\"18446744073709551615\"",
        "\"1e400\"",
        "-1",
        "1e300",
    ] {
        let ep = endpoint(move |n, _| {
            (
                200,
                format!(r#"{{"access_token":"tok-{n}","expires_in":{expires_in}}}"#),
            )
        })
        .await;
        let src = source("/token");
        let token = src.token(&client(), &ep.base).await.unwrap();
        assert!(
            token.renew_at() <= std::time::Instant::now() + token_answer::MAX_LIFETIME,
            "{expires_in}"
        );
    }
}

/// `Basic base64(client-id-1:client-secret-XYZ)`, as the request sends it.
const BASIC: &str = "Basic Y2xpZW50LWlkLTE6Y2xpZW50LXNlY3JldC1YWVo=";

#[tokio::test]
async fn an_endpoint_quoting_the_basic_header_leaks_nothing() {
    // The header quoted whole, cut to a prefix, URL-encoded, JSON-escaped,
    // and as an unsupported token type (which errors used to quote).
    let quotes: [(u16, String); 5] = [
        (
            400,
            format!(r#"{{"error":"invalid_request","error_description":"bad {BASIC}"}}"#),
        ),
        (
            400,
            format!(
                r#"{{"error":"invalid_request","error_description":"{}"}}"#,
                &BASIC[..30]
            ),
        ),
        (
            400,
            format!(
                r#"{{"error":"{}"}}"#,
                BASIC.replace(' ', "%20").replace('=', "%3D")
            ),
        ),
        (
            400,
            format!(
                r#"{{"error":"invalid_request","error_description":"{}"}}"#,
                BASIC
                    .chars()
                    .map(|c| format!("\\u{:04x}", c as u32))
                    .collect::<String>()
            ),
        ),
        (
            200,
            format!(r#"{{"access_token":"a","token_type":"{BASIC}"}}"#),
        ),
    ];
    for (status, body) in quotes {
        let shown = body.clone();
        let ep = endpoint(move |_, _| (status, body.clone())).await;
        let err = source("/token")
            .token(&client(), &ep.base)
            .await
            .unwrap_err()
            .to_string();
        for leak in [
            "Y2xpZW50LWlkLTE6",
            "Y2xpZW50",
            "client-secret",
            "client-id-1",
            "Basic",
        ] {
            assert!(!err.contains(leak), "{leak} from {shown} in {err}");
        }
    }
}
