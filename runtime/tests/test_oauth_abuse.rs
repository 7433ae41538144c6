//! `--auth oauth` under abuse (issue 39 item 8), in process against the real
//! router on a SQLite store: replayed consent forms and remembered-approval
//! GETs, sign-in and registration floods from one address, the totals,
//! padded registrations, oversized bodies, superseded access tokens, the
//! scheduled purge, and metadata fetches a bad redirect URI should never
//! cause.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oauth_support::*;
use serde_json::{Value, json};
use toolforge_runtime::oauth::crypto::s256_challenge;
use toolforge_runtime::oauth::model::PendingSignIn;
use toolforge_runtime::oauth::store::{self, GrantStore};

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn with(extra: Value) -> Harness {
    start(Options {
        extra: Some(extra),
        ..Options::default()
    })
    .await
}

async fn open_store(h: &Harness) -> Arc<dyn GrantStore> {
    store::open(&h.store_url).await.unwrap()
}

async fn pending_rows(h: &Harness) -> u64 {
    // Expired ones too: `now = 0` counts every row.
    open_store(h).await.count_pending(0).await.unwrap()
}

fn retry_after(page: &Page) -> u64 {
    page.headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After on {} {}", page.status, page.body))
}

/// Attack: one consent form (csrf + signed request) posted again and again
/// used to store one pending sign-in per post.
#[tokio::test]
async fn a_replayed_consent_form_stores_one_sign_in() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let first = h.approve(&mut browser, &consent, "all").await;
    assert_eq!(first.status, 302, "{}", first.body);
    for _ in 0..25 {
        let replay = h.approve(&mut browser, &consent, "all").await;
        assert_eq!(replay.status, 409, "{}", replay.body);
    }
    assert_eq!(pending_rows(&h).await, 1);
    // The first sign-in still completes.
    let back = browser.get(first.location.as_deref().unwrap()).await;
    let done = browser.get(back.location.as_deref().unwrap()).await;
    assert_eq!(done.status, 302, "{}", done.body);
    assert!(query_of(done.location.as_deref().unwrap()).contains_key("code"));
}

/// Attack: a browser with a remembered approval repeating the same
/// `GET /authorize` used to store a sign-in per request.
#[tokio::test]
async fn remembered_approval_gets_store_one_sign_in_per_request() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    assert_eq!(h.approve(&mut browser, &consent, "all").await.status, 302);
    let challenge = s256_challenge(VERIFIER);
    let params = h.standard_params(&client, &challenge);
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let url = h.authorize_url(&params);
    let first = browser.get(&url).await;
    assert_eq!(first.status, 302, "remembered approval: {}", first.body);
    for _ in 0..25 {
        assert_eq!(browser.get(&url).await.status, 409);
    }
    assert_eq!(pending_rows(&h).await, 2);
    // Another authorization request (new PKCE challenge) is a new sign-in.
    let other = s256_challenge("another-verifier-another-verifier-another-ve");
    let params = h.standard_params(&client, &other);
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(browser.get(&h.authorize_url(&params)).await.status, 302);
}

/// Attack: one address starting sign-ins in a loop; and many addresses
/// together past the total.
#[tokio::test]
async fn sign_ins_are_bounded_per_address_and_in_total() {
    let h = with(json!({"limits": {"sign_ins": {"burst": 3, "per_minute": 1}}})).await;
    let client = h.register(&[REDIRECT]).await;
    // A new browser each time (no remembered approval, new cookies): the
    // address is what is counted.
    for _ in 0..3 {
        let mut browser = Browser::default();
        let consent = h.consent(&mut browser, &client).await;
        assert_eq!(h.approve(&mut browser, &consent, "all").await.status, 302);
    }
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let refused = h.approve(&mut browser, &consent, "all").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!((1..=60).contains(&retry_after(&refused)));
    assert_eq!(pending_rows(&h).await, 3);

    let h = with(json!({"limits": {"max_pending_sign_ins": 2}})).await;
    let client = h.register(&[REDIRECT]).await;
    for n in 0..3 {
        let mut browser = Browser::default();
        let consent = h.consent(&mut browser, &client).await;
        let page = h.approve(&mut browser, &consent, "all").await;
        assert_eq!(page.status, if n < 2 { 302 } else { 429 }, "{}", page.body);
    }
    assert_eq!(pending_rows(&h).await, 2);
}

async fn register_raw(h: &Harness, body: &Value) -> (u16, Value, Option<String>) {
    let response = http()
        .post(format!("{}/register", h.bound))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        retry,
    )
}

/// Attack: registrations padded with unknown members, with hundreds of
/// redirect URIs or very long ones, in a flood from one address, and past
/// the total of unused clients.
#[tokio::test]
async fn registrations_are_trimmed_rate_limited_and_capped() {
    let h = with(json!({"limits": {"registrations": {"burst": 4, "per_minute": 0}}})).await;
    let padded = json!({
        "client_name": "Padded",
        "redirect_uris": [REDIRECT],
        "padding": "x".repeat(12_000),
        "nested": {"a": [1, 2, 3]},
    });
    let (status, reply, _) = register_raw(&h, &padded).await;
    assert_eq!(status, 201, "{reply}");
    assert!(reply.get("padding").is_none() && reply.get("nested").is_none());
    let id = reply["client_id"].as_str().unwrap();
    let stored = open_store(&h).await.client(id).await.unwrap().unwrap();
    assert!(stored.metadata.len() < 1024, "{}", stored.metadata);
    assert!(!stored.metadata.contains("padding"));
    let many: Vec<String> = (0..11)
        .map(|n| format!("http://127.0.0.1:9/cb{n}"))
        .collect();
    let (status, _, _) = register_raw(&h, &json!({"redirect_uris": many})).await;
    assert_eq!(status, 400, "11 redirect URIs");
    let long = format!("https://app.example/{}", "a".repeat(3000));
    let (status, _, _) = register_raw(&h, &json!({"redirect_uris": [long]})).await;
    assert_eq!(status, 400, "a 3 KB redirect URI");
    let (status, _, _) =
        register_raw(&h, &json!({"redirect_uris": [REDIRECT], "client_name": 7})).await;
    assert_eq!(status, 400, "a non-string client_name");
    // The burst of 4 is spent (refused registrations count too).
    let (status, reply, retry) = register_raw(&h, &json!({"redirect_uris": [REDIRECT]})).await;
    assert_eq!(status, 429, "{reply}");
    assert!(retry.is_some());

    let h = with(json!({"limits": {"max_unused_clients": 2}})).await;
    for n in 0..3 {
        let (status, reply, retry) = register_raw(&h, &json!({"redirect_uris": [REDIRECT]})).await;
        if n < 2 {
            assert_eq!(status, 201, "{reply}");
        } else {
            assert_eq!(status, 429, "{reply}");
            assert!(retry.is_some());
        }
    }
}

/// Attack: megabyte bodies on the OAuth routes, which used to be read up
/// to axum's 2 MB default.
#[tokio::test]
async fn oauth_bodies_are_capped() {
    let h = start(Options::default()).await;
    let big = format!("grant_type=refresh_token&pad={}", "x".repeat(200 * 1024));
    for path in ["/token", "/revoke", "/authorize"] {
        let status = http()
            .post(format!("{}{path}", h.bound))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", &h.origin)
            .body(big.clone())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(status, 413, "{path}");
    }
}

/// Decision: a refresh ends the access tokens it supersedes (the store
/// deletes them; this instance's cache forgets them).
#[tokio::test]
async fn a_refresh_ends_the_previous_access_token() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens().await;
    let first = tokens["access_token"].as_str().unwrap();
    assert_eq!(h.call(first).await.0, 200, "cached now");
    let mut refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let mut access = String::new();
    for _ in 0..5 {
        let (status, fresh) = h.refresh(&client, &refresh).await;
        assert_eq!(status, 200, "{fresh}");
        refresh = fresh["refresh_token"].as_str().unwrap().to_owned();
        access = fresh["access_token"].as_str().unwrap().to_owned();
    }
    assert_eq!(h.call(first).await.0, 401, "the first access token");
    assert_eq!(h.call(&access).await.0, 200, "the latest access token");
}

/// The purge runs at start and on its schedule: expired sign-ins go, and
/// a registered client never used past `unused_client_secs` goes.
#[tokio::test]
async fn the_scheduled_purge_deletes_expired_rows_and_unused_clients() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let url = format!("sqlite:{}", dir.path().join("grants.db").display());
    let seeded = store::open(&url).await.unwrap();
    seeded
        .put_pending(&PendingSignIn {
            hash: toolforge_runtime::oauth::model::TokenHash([7; 32]),
            browser: toolforge_runtime::oauth::model::TokenHash([8; 32]),
            expires_at: unix_now() - 10,
            sealed: vec![1, 2, 3],
        })
        .await
        .unwrap();
    seeded
        .register_client(&toolforge_runtime::oauth::model::RegisteredClient {
            client_id: "client-stale".into(),
            metadata: json!({"redirect_uris": [REDIRECT]}).to_string(),
            created_at: unix_now() - 7200,
        })
        .await
        .unwrap();
    assert_eq!(seeded.count_pending(0).await.unwrap(), 1);
    let (provider, provider_url) = start_provider(3600).await;
    let h = start_with(
        Options {
            store: Some(url),
            extra: Some(
                json!({"retention": {"purge_interval_secs": 1, "unused_client_secs": 3600}}),
            ),
            ..Options::default()
        },
        provider,
        provider_url,
        dir,
    )
    .await;
    let fresh = h.register(&[REDIRECT]).await;
    let mut purged = false;
    for _ in 0..100 {
        let pending = seeded.count_pending(0).await.unwrap();
        let stale = seeded.client("client-stale").await.unwrap();
        if pending == 0 && stale.is_none() {
            purged = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(purged, "the purge did not run within 10 s");
    assert!(
        seeded.client(&fresh).await.unwrap().is_some(),
        "a new registration was purged"
    );
}

/// Attack: `/authorize` with a fresh metadata URL and a redirect URI no
/// client could register used to fetch the document first.
#[tokio::test]
async fn a_bad_redirect_uri_is_refused_before_any_metadata_fetch() {
    use axum::routing::get;
    let h = with(json!({"cimd": {"allow_private_addresses": true, "allow_http": true}})).await;
    let hits = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let counted = hits.clone();
    let app = axum::Router::new().route(
        "/{name}",
        get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { axum::http::StatusCode::NOT_FOUND }
        }),
    );
    tokio::spawn(serve(listener, app));
    let challenge = s256_challenge(VERIFIER);
    let long = format!("https://app.example/{}", "a".repeat(3000));
    for (n, redirect) in [
        "javascript:alert(1)",
        "http://app.example/cb",
        long.as_str(),
    ]
    .iter()
    .enumerate()
    {
        let client = format!("{base}/client-{n}.json");
        let page = Browser::default()
            .get(&h.authorize_url(&[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", redirect),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ]))
            .await;
        assert_eq!(page.status, 400, "{redirect}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a document was fetched");
    // New ids from one address past the burst: 429, and no fetch.
    let h = with(json!({
        "cimd": {"allow_private_addresses": true, "allow_http": true},
        "limits": {"cimd_fetches": {"burst": 2, "per_minute": 0}}
    }))
    .await;
    let mut statuses = Vec::new();
    for n in 0..3 {
        let client = format!("{base}/flood-{n}.json");
        let page = Browser::default()
            .get(&h.authorize_url(&[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", REDIRECT),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ]))
            .await;
        if page.status == 429 {
            retry_after(&page);
        }
        statuses.push(page.status);
    }
    assert_eq!(statuses, vec![400, 400, 429]);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}
