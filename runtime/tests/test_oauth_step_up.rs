//! Step-up over HTTP: a call the upstream refuses for a scope the grant
//! lacks is answered 403 `insufficient_scope` with the scopes to ask for
//! (or, on request, as a tool result carrying the challenge); a grant
//! that already holds an accepted scope gets the plain refusal.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;

#[tokio::test]
async fn a_missing_scope_is_answered_with_an_insufficient_scope_challenge() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("minimal").await;
    let access = tokens["access_token"].as_str().unwrap();

    let (status, challenge, body) = h.list_records(access, "", "forbidden").await;
    assert_eq!(status, 403, "{body}");
    let challenge = challenge.expect("WWW-Authenticate");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"dns_records:read offline_access\""),
        "the held scopes plus the missing one: {challenge}"
    );
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            h.origin
        )),
        "{challenge}"
    );
    assert!(
        challenge.contains("error_description=\"GET /zones/forbidden/dns_records needs the scope dns_records:read\""),
        "{challenge}"
    );

    // The tool-result delivery, asked for by the query.
    let (status, header, body) = h
        .list_records(access, "scopeChallenge=tool", "forbidden")
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(header.is_none());
    assert_eq!(body["result"]["isError"], true, "{body}");
    let carried = body["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap();
    assert_eq!(carried, challenge);
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("grant `dns_records:read`"), "{text}");

    // A call that succeeds is not challenged.
    let (status, header, body) = h.list_records(access, "", "z1").await;
    assert_eq!((status, header), (200, None), "{body}");
}

#[tokio::test]
async fn a_grant_holding_an_accepted_scope_is_never_challenged() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("all").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, header, body) = h.list_records(access, "", "forbidden").await;
    assert_eq!((status, header), (200, None), "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("holds the scope `dns_records"), "{text}");
}

/// Signs in through `consent` (approving `exposure` with `fields`) and
/// returns the new tokens.
async fn finish(
    h: &Harness,
    browser: &mut Browser,
    client: &str,
    consent: &Page,
    exposure: &str,
    fields: &[(&str, &str)],
) -> serde_json::Value {
    let to_provider = h.approve_with(browser, consent, exposure, fields).await;
    assert_eq!(to_provider.status, 302, "{}", to_provider.body);
    let back = browser.get(to_provider.location.as_deref().unwrap()).await;
    let done = browser.get(back.location.as_deref().unwrap()).await;
    let code = query_of(&done.location.unwrap())["code"].clone();
    let (status, tokens) = h.exchange(client, &code, VERIFIER).await;
    assert_eq!(status, 200, "{tokens}");
    tokens
}

/// The whole step-up in one browser: a read-only grant is challenged,
/// `/authorize` with the challenge's `scope` preselects exactly those
/// scopes, and the new grant keeps the read-only exposure, holds the
/// scope and makes the call the upstream refused before.
#[tokio::test]
async fn authorizing_again_with_the_challenged_scope_adds_it_and_keeps_the_exposure() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let first = finish(
        &h,
        &mut browser,
        &client,
        &consent,
        "advanced",
        &[("scopes", "zone:read")],
    )
    .await;
    let access = first["access_token"].as_str().unwrap();
    let (status, challenge, _) = h.list_records(access, "", "forbidden").await;
    assert_eq!(status, 403);
    let challenge = challenge.unwrap();
    let scope = challenge
        .split("scope=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert_eq!(scope, "dns_records:read offline_access zone:read");

    let challenge_s256 = toolforge_runtime::oauth::crypto::s256_challenge(VERIFIER);
    let mut params = h.standard_params(&client, &challenge_s256);
    params.push(("scope", scope.clone()));
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let again = browser.get(&h.authorize_url(&params)).await;
    assert_eq!(
        again.status, 200,
        "asking for scopes shows the consent page again"
    );
    assert!(
        again.body.contains("value=\"advanced\" checked"),
        "{}",
        again.body
    );
    assert!(
        again.body.contains(&format!("value=\"{scope}\"")),
        "{}",
        again.body
    );
    let second = finish(
        &h,
        &mut browser,
        &client,
        &again,
        "advanced",
        &[("scopes", &scope)],
    )
    .await;
    let access = second["access_token"].as_str().unwrap();
    let asked = h
        .provider
        .lock()
        .unwrap()
        .asked_scopes
        .last()
        .cloned()
        .unwrap();
    assert_eq!(asked, "dns_records:read offline_access zone:read");
    let (status, header, body) = h.list_records(access, "", "z1").await;
    assert_eq!((status, header), (200, None), "{body}");
    assert_ne!(body["result"]["isError"], true, "{body}");
}

/// A step-up keeps a read-only exposure approved before in this browser.
#[tokio::test]
async fn a_step_up_keeps_the_approved_exposure() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    finish(&h, &mut browser, &client, &consent, "read_only", &[]).await;
    let challenge_s256 = toolforge_runtime::oauth::crypto::s256_challenge(VERIFIER);
    let mut params = h.standard_params(&client, &challenge_s256);
    params.push(("scope", "dns_records:read offline_access".to_owned()));
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let again = browser.get(&h.authorize_url(&params)).await;
    assert_eq!(again.status, 200);
    let tokens = finish(
        &h,
        &mut browser,
        &client,
        &again,
        "advanced",
        &[("scopes", "dns_records:read")],
    )
    .await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(
        h.listed(access).await,
        ["dns_records_list"],
        "still read only"
    );
}

/// Asking for every catalogue scope (what clients take from
/// `scopes_supported` on a first sign-in) is no particular choice: the
/// page keeps its default, and a remembered approval still applies.
#[tokio::test]
async fn asking_for_every_scope_keeps_the_default_page() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let all: Vec<String> = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/oauth/cloudflare-scopes.json"
        ))
        .unwrap(),
    )
    .unwrap()
    .as_array()
    .unwrap()
    .iter()
    .map(|s| s["id"].as_str().unwrap().to_owned())
    .collect();
    let challenge_s256 = toolforge_runtime::oauth::crypto::s256_challenge(VERIFIER);
    let mut params = h.standard_params(&client, &challenge_s256);
    params.push(("scope", all.join(" ")));
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = browser.get(&h.authorize_url(&params)).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("value=\"minimal\" checked"),
        "{}",
        page.body
    );
}

/// ChatGPT (a registered chatgpt.com redirect URI) steps up on a tool
/// result: the challenge comes in `_meta["mcp/www_authenticate"]`, unless
/// the query asks for the HTTP one.
#[tokio::test]
async fn a_chatgpt_client_gets_the_challenge_in_the_tool_result() {
    const CHATGPT: &str = "https://chatgpt.com/connector_platform_oauth_redirect";
    let h = start(Options::default()).await;
    let client = h.register(&[CHATGPT]).await;
    let mut browser = Browser::default();
    let challenge_s256 = toolforge_runtime::oauth::crypto::s256_challenge(VERIFIER);
    let params: Vec<(&str, String)> = h
        .standard_params(&client, &challenge_s256)
        .into_iter()
        .map(|(k, v)| {
            if k == "redirect_uri" {
                (k, CHATGPT.to_owned())
            } else {
                (k, v)
            }
        })
        .collect();
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let consent = browser.get(&h.authorize_url(&params)).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    let to_provider = h.approve_with(&mut browser, &consent, "minimal", &[]).await;
    let back = browser.get(to_provider.location.as_deref().unwrap()).await;
    let done = browser.get(back.location.as_deref().unwrap()).await;
    let code = query_of(&done.location.unwrap())["code"].clone();
    let resource = h.resource();
    let (status, tokens) = h
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("redirect_uri", CHATGPT),
            ("code_verifier", VERIFIER),
            ("resource", &resource),
        ])
        .await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();

    let (status, header, body) = h.list_records(access, "", "forbidden").await;
    assert_eq!((status, header), (200, None), "{body}");
    let carried = body["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap_or_default();
    assert!(carried.contains("error=\"insufficient_scope\""), "{body}");
    let (status, header, _) = h
        .list_records(access, "scopeChallenge=http", "forbidden")
        .await;
    assert_eq!(status, 403);
    assert_eq!(header.as_deref(), Some(carried));
}

/// The 2026-07-28 era gets the same challenge, either way it is delivered.
#[tokio::test]
async fn the_2026_era_is_challenged_the_same_way() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("minimal").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, header, body) = h
        .list_records_in("2026-07-28", access, "", "forbidden")
        .await;
    assert_eq!(status, 403, "{body}");
    let header = header.unwrap();
    assert!(
        header.contains("scope=\"dns_records:read offline_access\""),
        "{header}"
    );
    let (status, _, body) = h
        .list_records_in("2026-07-28", access, "scopeChallenge=tool", "forbidden")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["_meta"]["mcp/www_authenticate"][0],
        header.as_str(),
        "{body}"
    );
    let (status, header, body) = h.list_records_in("2026-07-28", access, "", "z1").await;
    assert_eq!((status, header), (200, None), "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
}
