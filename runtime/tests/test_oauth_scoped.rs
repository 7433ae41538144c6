//! Path-scoped sessions over HTTP with `--auth oauth`: the RFC 8707
//! `resource` chosen at `/authorize` (`<origin>/mcp/accounts/A`) binds the
//! grant. Its token works only there (401 with that URL's metadata at
//! `/mcp` and at another account's URL); the constrained argument leaves
//! `tools/list`; a call naming another account is refused with no upstream
//! request; the first use checks once per grant that the user's token sees
//! the account (else 403); every other spelling of a resource is refused.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::scoped::SCOPED;
use oauth_support::*;
use serde_json::json;
use toolforge_runtime::oauth::crypto::s256_challenge;

async fn scoped_harness() -> Harness {
    start(Options {
        catalogue: Some(&SCOPED),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn a_token_for_one_account_works_only_at_its_url() {
    let h = scoped_harness().await;
    let resource = format!("{}/mcp/accounts/a1", h.origin);
    let (client, tokens) = h.tokens_for(&resource).await;
    let access = tokens["access_token"].as_str().unwrap();

    // Not at /mcp, not at another account's URL: 401 naming that URL's metadata.
    for (path, metadata) in [
        ("/mcp", "/.well-known/oauth-protected-resource/mcp\""),
        (
            "/mcp/accounts/b2",
            "/.well-known/oauth-protected-resource/mcp/accounts/b2\"",
        ),
    ] {
        let a = h.rpc_at(path, access, "tools/list", json!({})).await;
        assert_eq!(a.status, 401, "{path}: {}", a.body);
        let challenge = a.challenge.unwrap();
        assert!(challenge.contains(metadata), "{path}: {challenge}");
        assert!(challenge.contains("invalid_token"), "{challenge}");
    }
    // A path under /mcp that is no scoped URL is not found.
    for path in [
        "/mcp/accounts/a1/",
        "/mcp/Accounts/a1",
        "/mcp/accounts/a%31",
    ] {
        let a = h.rpc_at(path, access, "tools/list", json!({})).await;
        assert_eq!(a.status, 404, "{path}: {}", a.body);
    }
    assert!(
        h.provider.lock().unwrap().api_requests.is_empty(),
        "nothing reached the API"
    );

    // At its URL: the account argument is gone from the schema.
    let a = h
        .rpc_at("/mcp/accounts/a1", access, "tools/list", json!({}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let tools = a.body["result"]["tools"].as_array().unwrap();
    let workers = tools
        .iter()
        .find(|t| t["name"] == "workers_scripts_list")
        .unwrap();
    assert!(
        workers["inputSchema"]["properties"]
            .get("account_id")
            .is_none(),
        "{workers}"
    );
    assert_eq!(workers["inputSchema"]["required"], json!([]), "{workers}");
    assert!(workers["inputSchema"]["properties"].get("tag").is_some());

    // A call naming another account: refused, no upstream request.
    let before = h.provider.lock().unwrap().api_requests.clone();
    let a = h
        .rpc_at(
            "/mcp/accounts/a1",
            access,
            "tools/call",
            json!({"name": "workers_scripts_list", "arguments": {"account_id": "b2"}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["result"]["isError"], true, "{}", a.body);
    let text = a.body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`account_id` = `b2`"), "{text}");
    let after = h.provider.lock().unwrap().api_requests.clone();
    assert_eq!(
        after.iter().filter(|r| r.contains("b2")).count(),
        0,
        "{after:?}"
    );
    assert_eq!(
        after.iter().filter(|r| r.contains("workers")).count(),
        before.iter().filter(|r| r.contains("workers")).count()
    );

    // Two calls with the account filled in: one visibility check in all.
    for _ in 0..2 {
        let a = h
            .rpc_at(
                "/mcp/accounts/a1",
                access,
                "tools/call",
                json!({"name": "workers_scripts_list", "arguments": {}}),
            )
            .await;
        assert_eq!(a.body["result"]["isError"], false, "{}", a.body);
    }
    let requests = h.provider.lock().unwrap().api_requests.clone();
    assert_eq!(
        requests,
        [
            "GET /accounts/a1",
            "GET /accounts/a1/workers/scripts",
            "GET /accounts/a1/workers/scripts"
        ],
        "{requests:?}"
    );

    // A refresh keeps the resource; asking /token for another one is refused.
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, reply) = h
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", &client),
            ("resource", &h.resource()),
        ])
        .await;
    assert_eq!((status, &reply["error"]), (400, &json!("invalid_target")));
    let (status, renewed) = h.refresh(&client, refresh).await;
    assert_eq!(status, 200, "{renewed}");
    let access = renewed["access_token"].as_str().unwrap();
    let a = h
        .rpc_at("/mcp/accounts/a1", access, "tools/list", json!({}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        h.rpc_at("/mcp", access, "tools/list", json!({}))
            .await
            .status,
        401
    );
    let metadata = get_json(
        &format!(
            "{}/.well-known/oauth-protected-resource/mcp/accounts/a1",
            h.bound
        ),
        None,
    )
    .await;
    assert_eq!(metadata["resource"], resource, "{metadata}");
    assert_eq!(metadata["authorization_servers"], json!([h.origin]));
}

#[tokio::test]
async fn an_account_the_user_cannot_see_is_forbidden_and_remembered() {
    let h = scoped_harness().await;
    h.provider
        .lock()
        .unwrap()
        .hidden_accounts
        .push("a9".to_owned());
    let (_, tokens) = h.tokens_for(&format!("{}/mcp/accounts/a9", h.origin)).await;
    let access = tokens["access_token"].as_str().unwrap();
    for _ in 0..2 {
        let a = h
            .rpc_at("/mcp/accounts/a9", access, "tools/list", json!({}))
            .await;
        assert_eq!(a.status, 403, "{}", a.body);
        assert!(
            a.body["error_description"]
                .as_str()
                .unwrap()
                .contains("/mcp/accounts/a9"),
            "{}",
            a.body
        );
    }
    assert_eq!(
        h.provider.lock().unwrap().api_requests,
        ["GET /accounts/a9"],
        "one check per grant"
    );
}

/// A new client's authorization code for `resource`: (client id, code).
async fn code_for(h: &Harness, resource: &str) -> (String, String) {
    let client_id = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let challenge = s256_challenge(VERIFIER);
    let mut params = h.standard_params(&client_id, &challenge);
    for (k, v) in &mut params {
        if *k == "resource" {
            *v = resource.to_owned();
        }
    }
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let consent = browser.get(&h.authorize_url(&params)).await;
    let to_provider = h.approve(&mut browser, &consent, "all").await;
    let back = browser.get(to_provider.location.as_deref().unwrap()).await;
    let done = browser.get(back.location.as_deref().unwrap()).await;
    (client_id, query_of(&done.location.unwrap())["code"].clone())
}

#[tokio::test]
async fn a_scoped_code_is_redeemed_only_for_its_resource() {
    let h = scoped_harness().await;
    let resource = format!("{}/mcp/accounts/a1", h.origin);
    for other in [
        h.resource(),
        format!("{}/mcp/accounts/b2", h.origin),
        format!("{resource}/"),
    ] {
        let (client_id, code) = code_for(&h, &resource).await;
        let (status, reply) = h
            .token(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("client_id", &client_id),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("resource", &other),
            ])
            .await;
        assert_eq!(status, 400, "{other}: {reply}");
        assert_eq!(reply["error"], "invalid_target", "{other}: {reply}");
    }
    // An unscoped code is not redeemed for a scoped resource either.
    let (client_id, code) = code_for(&h, &h.resource()).await;
    let (status, reply) = h
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", &resource),
        ])
        .await;
    assert_eq!((status, &reply["error"]), (400, &json!("invalid_target")));
}

#[tokio::test]
async fn only_a_scoped_url_spelled_exactly_is_a_resource() {
    let h = scoped_harness().await;
    let client = h.register(&[REDIRECT]).await;
    let challenge = s256_challenge(VERIFIER);
    let good = format!("{}/mcp/accounts/a1", h.origin);
    let port = h.origin.rsplit(':').next().unwrap().to_owned();
    let bad = [
        format!("{good}#fragment"),
        format!("{good}?x=1"),
        format!("{good}/"),
        good.replace("127.0.0.1", "localhost"),
        good.replace(&format!(":{port}"), ":1"),
        good.replace("http://", "HTTP://"),
        good.replace("/accounts/", "/Accounts/"),
        good.replace("/mcp/", "/MCP/"),
        good.replace("/accounts/a1", "/accounts%2Fa1"),
        good.replace("/a1", "/a%31"),
        format!("{good}/../b2"),
        format!("{}/mcp/accounts/a1/../b2", h.origin),
        format!("{}/mcp/accounts", h.origin),
        format!("{}/mcp/accounts/a1/zones/z1", h.origin),
    ];
    for resource in &bad {
        let mut params = h.standard_params(&client, &challenge);
        for (k, v) in &mut params {
            if *k == "resource" {
                *v = resource.clone();
            }
        }
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = Browser::default().get(&h.authorize_url(&params)).await;
        assert_eq!(page.status, 302, "{resource}: {}", page.body);
        let q = query_of(page.location.as_deref().unwrap());
        assert_eq!(q["error"], "invalid_target", "{resource}");
    }
    // Two values (one of them good): refused as a repeated parameter.
    let mut params = h.standard_params(&client, &challenge);
    params.push(("resource", good.clone()));
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = Browser::default().get(&h.authorize_url(&params)).await;
    assert_eq!(page.status, 400, "{}", page.body);
    // The exact one shows the consent page.
    let mut params = h.standard_params(&client, &challenge);
    for (k, v) in &mut params {
        if *k == "resource" {
            *v = good.clone();
        }
    }
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = Browser::default().get(&h.authorize_url(&params)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    // Metadata exists only for scoped URLs spelled exactly.
    for (path, found) in [
        ("/mcp/accounts/a1", true),
        ("/mcp/accounts/a1/", false),
        ("/mcp/accounts%2Fa1", false),
        ("/mcp/Accounts/a1", false),
    ] {
        let status = http()
            .get(format!(
                "{}/.well-known/oauth-protected-resource{path}",
                h.bound
            ))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(status == 200, found, "{path}: {status}");
    }
}

#[tokio::test]
async fn both_eras_are_scoped_and_a_step_up_names_the_scoped_metadata() {
    let h = scoped_harness().await;
    let resource = format!("{}/mcp/accounts/a1", h.origin);
    // Minimal: the grant lacks the DNS scope, so a refusal steps up.
    let (_, tokens) = h.tokens_for_choosing(&resource, "minimal").await;
    let access = tokens["access_token"].as_str().unwrap();
    for version in ["2025-11-25", "2026-07-28"] {
        let other = h
            .rpc_at_in(
                version,
                "/mcp/accounts/a1",
                access,
                "tools/call",
                json!({"name": "workers_scripts_list", "arguments": {"account_id": "b2"}}),
            )
            .await;
        assert_eq!(other.status, 200, "{version}: {}", other.body);
        assert_eq!(
            other.body["result"]["isError"], true,
            "{version}: {}",
            other.body
        );
        let mine = h
            .rpc_at_in(
                version,
                "/mcp/accounts/a1",
                access,
                "tools/call",
                json!({"name": "workers_scripts_list", "arguments": {}}),
            )
            .await;
        assert_eq!(
            mine.body["result"]["isError"], false,
            "{version}: {}",
            mine.body
        );
        let refused = h
            .rpc_at_in(
                version,
                "/mcp/accounts/a1",
                access,
                "tools/call",
                json!({"name": "dns_records_list", "arguments": {"zone_id": "forbidden"}}),
            )
            .await;
        assert_eq!(refused.status, 403, "{version}: {}", refused.body);
        let challenge = refused.challenge.unwrap();
        assert!(challenge.contains("insufficient_scope"), "{challenge}");
        assert!(
            challenge.contains("/.well-known/oauth-protected-resource/mcp/accounts/a1\""),
            "{version}: {challenge}"
        );
    }
    assert!(
        !h.provider
            .lock()
            .unwrap()
            .api_requests
            .iter()
            .any(|r| r.contains("b2"))
    );
}
