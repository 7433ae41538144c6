//! `--auth oauth` in process: the sign-in, tokens, refresh, revocation and
//! every attack the issue names, against a loopback upstream provider and
//! the real router on a SQLite grant store.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;
use toolforge_runtime::oauth::crypto::s256_challenge;

fn ok_result(body: &serde_json::Value) -> bool {
    body["result"]["isError"] != serde_json::json!(true) && body["result"].is_object()
}

#[tokio::test]
async fn metadata_documents_derive_from_the_public_url() {
    let h = start(Options::default()).await;
    let as_meta = get_json(
        &format!("{}/.well-known/oauth-authorization-server", h.origin),
        Some("evil.example"),
    )
    .await;
    // A foreign Host is refused before anything is derived from it.
    assert!(as_meta.is_null());
    let as_meta = get_json(
        &format!("{}/.well-known/oauth-authorization-server", h.origin),
        None,
    )
    .await;
    assert_eq!(as_meta["issuer"], h.origin);
    assert_eq!(
        as_meta["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    assert_eq!(
        as_meta["authorization_response_iss_parameter_supported"],
        true
    );
    assert_eq!(as_meta["client_id_metadata_document_supported"], true);
    assert_eq!(as_meta["token_endpoint"], format!("{}/token", h.origin));
    let pr = get_json(
        &format!("{}/.well-known/oauth-protected-resource/mcp", h.origin),
        None,
    )
    .await;
    assert_eq!(pr["resource"], h.resource());
    assert_eq!(pr["authorization_servers"], serde_json::json!([h.origin]));
    let (status, _) = h.call("").await;
    assert_eq!(status, 401);
    let challenge = http()
        .post(format!("{}/mcp", h.origin))
        .send()
        .await
        .unwrap();
    let www = challenge.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        www,
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            h.origin
        )
    );
}

#[tokio::test]
async fn full_flow_calls_with_the_upstream_token_refreshes_and_revokes() {
    let h = start(Options::default()).await;
    let (client_id, tokens) = h.tokens().await;
    let access = tokens["access_token"].as_str().unwrap();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    assert!(access.len() >= 43 && refresh.len() >= 43);
    let (status, body) = h.call(access).await;
    assert_eq!(status, 200);
    assert!(ok_result(&body), "{body}");
    {
        let p = h.provider.lock().unwrap();
        let seen = p.api_tokens.last().unwrap();
        assert!(
            seen.starts_with("up-access-"),
            "the API got the upstream token"
        );
        assert!(
            !body.to_string().contains(seen.as_str()),
            "never in a result"
        );
    }
    let (status, fresh) = h.refresh(&client_id, refresh).await;
    assert_eq!(status, 200, "{fresh}");
    let access2 = fresh["access_token"].as_str().unwrap();
    assert_ne!(access2, access);
    let (status, body) = h.call(access2).await;
    assert_eq!(status, 200);
    assert!(ok_result(&body));
    assert_eq!(h.revoke(access2).await, 200);
    assert_eq!(h.call(access2).await.0, 401);
    assert_eq!(
        h.call(access).await.0,
        401,
        "revocation ends the whole grant"
    );
    let (status, _) = h
        .refresh(&client_id, fresh["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(status, 400);
    assert!(
        !h.provider.lock().unwrap().revoked.is_empty(),
        "upstream tokens revoked too"
    );
}

async fn authorize_error(
    h: &Harness,
    params: &[(&str, &str)],
) -> std::collections::BTreeMap<String, String> {
    let mut browser = Browser::default();
    let page = browser.get(&h.authorize_url(params)).await;
    assert_eq!(page.status, 302, "{}", page.body);
    let location = page.location.unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    let q = query_of(&location);
    assert_eq!(q["iss"], h.origin, "iss on error responses too");
    assert_eq!(q["state"], "client-state-1");
    q
}

#[tokio::test]
async fn pkce_missing_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let q = authorize_error(
        &h,
        &[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("state", "client-state-1"),
        ],
    )
    .await;
    assert_eq!(q["error"], "invalid_request");
}

#[tokio::test]
async fn pkce_plain_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let q = authorize_error(
        &h,
        &[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", VERIFIER),
            ("code_challenge_method", "plain"),
            ("state", "client-state-1"),
        ],
    )
    .await;
    assert_eq!(q["error"], "invalid_request");
}

#[tokio::test]
async fn pkce_wrong_verifier_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let done = h.sign_in(&mut browser, &client).await;
    let code = query_of(&done)["code"].clone();
    let (status, body) = h
        .exchange(
            &client,
            &code,
            "another-verifier-another-verifier-another-verifier",
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_grant");
    let (status, _) = h.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 400, "a failed attempt uses the code up");
}

#[tokio::test]
async fn redirect_uri_mismatches_get_an_error_page_not_a_redirect() {
    let h = start(Options::default()).await;
    let client = h.register(&["https://app.example/cb"]).await;
    let challenge = s256_challenge(VERIFIER);
    for bad in [
        "https://APP.example/cb",
        "https://app.example/CB",
        "https://app.example/cb/",
        "https://app.example/cb?x=1",
        "https://app.example:443/cb#",
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "https://evil.example/cb",
    ] {
        let mut browser = Browser::default();
        let page = browser
            .get(&h.authorize_url(&[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", bad),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ]))
            .await;
        assert_eq!(page.status, 400, "{bad}");
        assert!(page.location.is_none(), "{bad}");
        assert!(!page.body.contains("<script>alert"), "{bad}");
    }
    // Registration refuses such URIs outright.
    for bad in [
        "javascript:alert(1)",
        "data:text/html,x",
        "http://evil.example/cb",
    ] {
        let (status, _) = post_json(
            &format!("{}/register", h.origin),
            &serde_json::json!({"redirect_uris": [bad]}),
        )
        .await;
        assert_eq!(status, 400, "{bad}");
    }
}

#[tokio::test]
async fn replayed_code_is_refused_and_revokes_the_first_tokens() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let done = h.sign_in(&mut browser, &client).await;
    let code = query_of(&done)["code"].clone();
    let (status, first) = h.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 200);
    let access = first["access_token"].as_str().unwrap();
    assert_eq!(h.call(access).await.0, 200);
    let (status, body) = h.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_grant");
    assert_eq!(
        h.call(access).await.0,
        401,
        "tokens of the first exchange stop working"
    );
    let (status, _) = h
        .refresh(&client, first["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(status, 400);
}

async fn to_callback(h: &Harness, browser: &mut Browser, client: &str) -> String {
    let consent = h.consent(browser, client).await;
    let to_provider = h.approve(browser, &consent, "all").await;
    assert_eq!(to_provider.status, 302);
    let back = browser.get(to_provider.location.as_deref().unwrap()).await;
    back.location.unwrap()
}

#[tokio::test]
async fn tampered_state_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let callback = to_callback(&h, &mut browser, &client).await;
    let q = query_of(&callback);
    let state = &q["state"];
    let (value, sig) = state.rsplit_once('.').unwrap();
    let mut chars: Vec<char> = value.chars().collect();
    chars[0] = if chars[0] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect::<String>() + "." + sig;
    let url = format!(
        "{}/oauth/callback?code={}&state={}",
        h.origin, q["code"], tampered
    );
    let page = browser.get(&url).await;
    assert_eq!(page.status, 400);
    assert!(page.location.is_none());
}

#[tokio::test]
async fn replayed_state_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let callback = to_callback(&h, &mut browser, &client).await;
    let cookie = browser.jar.clone();
    let first = browser.get(&callback).await;
    assert_eq!(first.status, 302);
    browser.jar = cookie;
    let second = browser.get(&callback).await;
    assert_eq!(second.status, 400, "the state is single use");
}

#[tokio::test]
async fn state_from_another_browser_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let callback = to_callback(&h, &mut browser, &client).await;
    let mut other = Browser::default();
    let page = other.get(&callback).await;
    assert_eq!(page.status, 400, "bound to the browser that consented");
    // The sign-in is still there for the right browser only if the
    // binding check ran before taking it; either way no code leaks.
    assert!(page.location.is_none());
}

#[tokio::test]
async fn expired_state_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let callback = to_callback(&h, &mut browser, &client).await;
    let q = query_of(&callback);
    // A correctly signed state whose expiry has passed (signed with the
    // same server secret the harness uses).
    let keys = toolforge_runtime::oauth::crypto::ServerKeys::from_secret(SECRET).unwrap();
    let (value, _) = q["state"].rsplit_once('.').unwrap();
    let (id, _) = value.split_once('~').unwrap();
    let expired = keys.sign("upstream-state", &format!("{id}~{}", 1_000_000));
    let url = format!(
        "{}/oauth/callback?code={}&state={}",
        h.origin,
        q["code"],
        url::form_urlencoded::byte_serialize(expired.as_bytes()).collect::<String>()
    );
    let page = browser.get(&url).await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("too long"), "{}", page.body);
}

#[tokio::test]
async fn consent_post_without_csrf_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let request = hidden(&consent.body, "request");
    let page = browser
        .post_form(
            &format!("{}/authorize", h.origin),
            &h.origin,
            &[
                ("request", &request),
                ("decision", "approve"),
                ("exposure", "all"),
            ],
        )
        .await;
    assert_eq!(page.status, 403);
    // A CSRF token from another browser does not help either.
    let mut attacker = Browser::default();
    let theirs = h.consent(&mut attacker, &client).await;
    let csrf = hidden(&theirs.body, "csrf");
    let page = browser
        .post_form(
            &format!("{}/authorize", h.origin),
            &h.origin,
            &[
                ("csrf", &csrf),
                ("request", &request),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(page.status, 403);
}

#[tokio::test]
async fn consent_page_is_escaped_and_unframeable() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let page = h.consent(&mut browser, &client).await;
    assert!(page.body.contains("Test &lt;b&gt;Client&lt;/b&gt;"));
    assert!(page.body.contains("Test &lt;Provider&gt;"));
    assert!(!page.body.contains("<b>Client"));
    assert!(!page.body.contains("<script"));
    assert_eq!(page.headers["x-frame-options"], "DENY");
    // `no-referrer` would make browsers post the form with `Origin: null`.
    assert_eq!(page.headers["referrer-policy"], "same-origin");
    assert!(
        page.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert!(page.body.contains("127.0.0.1"), "names the redirect host");
}

#[tokio::test]
async fn a_new_client_does_not_ride_on_another_clients_approval() {
    let h = start(Options::default()).await;
    let first = h.register(&[REDIRECT]).await;
    let second = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let _ = h.sign_in(&mut browser, &first).await;
    // Same browser, approved `first` before: `first` skips the page …
    let challenge = s256_challenge(VERIFIER);
    let params = h.standard_params(&first, &challenge);
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let again = browser.get(&h.authorize_url(&params)).await;
    assert_eq!(again.status, 302, "remembered approval for the same client");
    // … `second` is asked.
    let page = h.consent(&mut browser, &second).await;
    assert!(page.body.contains("id=\"approve\""));
}

#[tokio::test]
async fn token_for_another_resource_is_refused() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let challenge = s256_challenge(VERIFIER);
    let q = authorize_error(
        &h,
        &[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "client-state-1"),
            ("resource", "https://other.example/mcp"),
        ],
    )
    .await;
    assert_eq!(q["error"], "invalid_target");
    // A token issued by a server at another origin, sharing the store and
    // the secret, is refused here.
    let (_, tokens) = h.tokens().await;
    let other = start_with(
        Options {
            store: Some(h.store_url.clone()),
            ..Options::default()
        },
        h.provider.clone(),
        h.provider_url.clone(),
        h.dir.clone(),
    )
    .await;
    assert_ne!(other.origin, h.origin);
    assert_eq!(
        other.call(tokens["access_token"].as_str().unwrap()).await.0,
        401
    );
    assert_eq!(
        h.call(tokens["access_token"].as_str().unwrap()).await.0,
        200
    );
}

#[tokio::test]
async fn expired_access_tokens_are_refused() {
    let h = start(Options {
        access_token_secs: 3,
        token_cache_secs: 0,
        ..Options::default()
    })
    .await;
    let (_, tokens) = h.tokens().await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(h.call(access).await.0, 200);
    // Expiry is in whole seconds: wait until it has certainly passed.
    tokio::time::sleep(std::time::Duration::from_millis(4100)).await;
    assert_eq!(h.call(access).await.0, 401);
}

#[tokio::test]
async fn revoked_tokens_are_refused_at_once_on_this_instance() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens().await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(h.call(access).await.0, 200, "now cached");
    assert_eq!(
        h.revoke(tokens["refresh_token"].as_str().unwrap()).await,
        200
    );
    assert_eq!(h.call(access).await.0, 401);
    assert_eq!(h.revoke("not-a-token").await, 200, "RFC 7009: always 200");
}

#[tokio::test]
async fn refresh_token_reuse_revokes_the_grant() {
    let h = start(Options::default()).await;
    let (client, t0) = h.tokens().await;
    let r0 = t0["refresh_token"].as_str().unwrap();
    let (status, _) = h.refresh(&client, r0).await;
    assert_eq!(status, 200);
    // r0 stays valid until r1 is used (a lost response is survivable).
    let (status, t1b) = h.refresh(&client, r0).await;
    assert_eq!(status, 200, "{t1b}");
    let r1b = t1b["refresh_token"].as_str().unwrap();
    let (status, t2) = h.refresh(&client, r1b).await;
    assert_eq!(status, 200);
    // r0 is now older than the previous token: presenting it revokes.
    let (status, _) = h.refresh(&client, r0).await;
    assert_eq!(status, 400);
    assert_eq!(h.call(t2["access_token"].as_str().unwrap()).await.0, 401);
    assert_eq!(
        h.refresh(&client, t2["refresh_token"].as_str().unwrap())
            .await
            .0,
        400
    );
}

#[tokio::test]
async fn refresh_cannot_widen_scope_or_resource() {
    let h = start(Options::default()).await;
    let (client, t0) = h.tokens().await;
    let r0 = t0["refresh_token"].as_str().unwrap();
    let (status, body) = h
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", r0),
            ("client_id", &client),
            ("scope", "dns_records:read account:write everything"),
        ])
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_scope");
    let (status, body) = h
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", r0),
            ("client_id", &client),
            ("resource", "https://other.example/mcp"),
        ])
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_target");
    let (status, _) = h.refresh("another-client", r0).await;
    assert_eq!(status, 400, "another client cannot use it");
    let (status, _) = h.refresh(&client, r0).await;
    assert_eq!(status, 200, "the refused attempts did not consume it");
}

#[tokio::test]
async fn read_only_consent_asks_only_read_scopes_upstream() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let to_provider = h.approve(&mut browser, &consent, "read_only").await;
    assert_eq!(to_provider.status, 302);
    let q = query_of(to_provider.location.as_deref().unwrap());
    let scopes: Vec<&str> = q["scope"].split(' ').collect();
    assert!(scopes.contains(&"dns_records:read"), "{scopes:?}");
    assert!(
        !scopes
            .iter()
            .any(|s| s.ends_with(":write") || s.ends_with(":edit")),
        "{scopes:?}"
    );
    assert_eq!(q["code_challenge_method"], "S256");
    assert_ne!(
        q["code_challenge"],
        s256_challenge(VERIFIER),
        "its own PKCE upstream"
    );
}

#[tokio::test]
async fn an_expired_upstream_token_is_refreshed_once_for_concurrent_calls() {
    let h = start(Options {
        upstream_expires_in: 10,
        token_cache_secs: 0,
        ..Options::default()
    })
    .await;
    let (_, tokens) = h.tokens().await;
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    // 10 s is inside the 30 s refresh margin: every call needs a refresh;
    // the refreshed token lives an hour, so one refresh serves them all.
    h.provider.lock().unwrap().expires_in = 3600;
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let access = access.clone();
            let origin = h.origin.clone();
            tokio::spawn(async move {
                let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dns_records_list", "arguments": {"zone_id": "z1"}}});
                http()
                    .post(format!("{origin}/mcp"))
                    .header("authorization", format!("Bearer {access}"))
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(body.to_string())
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), 200);
    }
    let refreshes = h.provider.lock().unwrap().refreshes;
    assert_eq!(
        refreshes, 1,
        "one upstream refresh for eight concurrent calls"
    );
}

#[tokio::test]
async fn upstream_invalid_grant_on_refresh_revokes_the_grant() {
    let h = start(Options {
        upstream_expires_in: 1,
        token_cache_secs: 0,
        ..Options::default()
    })
    .await;
    let (_, tokens) = h.tokens().await;
    h.provider.lock().unwrap().refuse_refresh = true;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _) = h.call(access).await;
    assert_eq!(status, 401);
    h.provider.lock().unwrap().refuse_refresh = false;
    assert_eq!(h.call(access).await.0, 401, "the grant stays revoked");
}

#[tokio::test]
async fn the_store_holds_no_token_in_the_clear() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens().await;
    let (_, fresh) = h
        .refresh(&client, tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(h.call(fresh["access_token"].as_str().unwrap()).await.0, 200);
    let mut secrets: Vec<String> = vec![
        tokens["access_token"].as_str().unwrap().into(),
        tokens["refresh_token"].as_str().unwrap().into(),
        fresh["access_token"].as_str().unwrap().into(),
        fresh["refresh_token"].as_str().unwrap().into(),
    ];
    {
        let p = h.provider.lock().unwrap();
        secrets.extend(p.access.keys().cloned());
        secrets.extend(p.refresh.iter().cloned());
    }
    let path = h.store_url.strip_prefix("sqlite:").unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    if let Ok(wal) = std::fs::read(format!("{path}-wal")) {
        bytes.extend(wal);
    }
    assert!(bytes.len() > 1000);
    for secret in &secrets {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "a token is in the store in the clear"
        );
    }
    assert!(
        !bytes.windows(3).any(|w| w == b"Zq9"),
        "upstream token marker found in the store"
    );
}

#[tokio::test]
async fn cimd_private_addresses_are_refused() {
    let h = start(Options::default()).await;
    let challenge = s256_challenge(VERIFIER);
    for client in [
        "https://127.0.0.1/client.json",
        "https://localhost/client.json",
        "https://[::1]/client.json",
        "https://10.0.0.1/client.json",
        "https://169.254.169.254/latest/meta-data",
    ] {
        let mut browser = Browser::default();
        let page = browser
            .get(&h.authorize_url(&[
                ("response_type", "code"),
                ("client_id", client),
                ("redirect_uri", REDIRECT),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ]))
            .await;
        assert_eq!(page.status, 400, "{client}");
        assert!(
            page.body.contains("private") || page.body.contains("resolve"),
            "{client}: {}",
            page.body
        );
    }
}

async fn serve_documents() -> String {
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let doc = serde_json::json!({"client_id": format!("{base}/good.json"), "client_name": "Doc client", "redirect_uris": [REDIRECT]});
    let app = axum::Router::new()
        .route("/good.json", get(move || async move { axum::Json(doc) }))
        .route(
            "/redirect.json",
            get(|| async { (axum::http::StatusCode::FOUND, [("location", "/good.json")]) }),
        )
        .route("/huge.json", get(|| async { "x".repeat(10 * 1024 * 1024) }));
    tokio::spawn(serve(listener, app));
    base
}

#[tokio::test]
async fn cimd_redirects_and_huge_documents_are_refused_and_good_ones_work() {
    let h = start(Options {
        allow_private_cimd: true,
        ..Options::default()
    })
    .await;
    let base = serve_documents().await;
    let challenge = s256_challenge(VERIFIER);
    let try_client = |client: String| {
        let url = h.authorize_url(&[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ]);
        async move { Browser::default().get(&url).await }
    };
    let page = try_client(format!("{base}/redirect.json")).await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("redirect"), "{}", page.body);
    let page = try_client(format!("{base}/huge.json")).await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("larger than"), "{}", page.body);
    let page = try_client(format!("{base}/good.json")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Doc client"));
}

#[test]
fn the_example_config_and_the_flagship_scope_catalogue_load() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("oauth/cloudflare.example.toml");
    let config = toolforge_runtime::oauth::config::OAuthConfig::load(&path).unwrap();
    assert_eq!(config.public_origin(0), "https://mcp.example.com");
    let scopes = config.scopes().unwrap();
    assert!(
        scopes
            .iter()
            .any(|s| s.id == "dns_records:read" && s.read_only)
    );
    assert!(
        scopes
            .iter()
            .any(|s| s.id == "dns_records:edit" && !s.read_only)
    );
}
