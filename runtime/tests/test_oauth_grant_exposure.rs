//! Exposure per grant over HTTP: the consent page's choice, stored on the
//! grant, narrows `tools/list` and refuses a hidden tool by name with a
//! text saying how to widen the session; a refresh keeps the narrowing;
//! an unnarrowed grant still gets the whole (pre-encoded) listing.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;
use serde_json::json;

#[tokio::test]
async fn a_read_only_grant_lists_no_write_tool_and_refuses_one_by_name() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("read_only").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(h.listed(access).await, ["dns_records_list"]);

    let before = h.provider.lock().unwrap().api_tokens.len();
    let (status, body) = h
        .rpc(
            access,
            "tools/call",
            json!({"name": "dns_records_create", "arguments": {"zone_id": "z1"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("outside what this session was authorized for"),
        "{text}"
    );
    assert!(text.contains("consent page"), "{text}");
    assert_eq!(
        h.provider.lock().unwrap().api_tokens.len(),
        before,
        "no upstream request for a hidden tool"
    );

    // A refresh cannot widen it.
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, renewed) = h.refresh(&client, refresh).await;
    assert_eq!(status, 200, "{renewed}");
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(h.listed(access).await, ["dns_records_list"]);
}

#[tokio::test]
async fn an_unnarrowed_grant_gets_every_tool() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("all").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(
        h.listed(access).await,
        ["dns_records_list", "dns_records_create"]
    );
}

/// The scopes a consent template asks the upstream for.
async fn upstream_scopes(
    h: &Harness,
    exposure: &str,
    fields: &[(&str, &str)],
) -> Result<Vec<String>, String> {
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let page = h
        .approve_with(&mut browser, &consent, exposure, fields)
        .await;
    if page.status != 302 {
        return Err(format!("{} {}", page.status, page.body));
    }
    let q = query_of(page.location.as_deref().unwrap());
    Ok(q["scope"].split(' ').map(str::to_owned).collect())
}

#[tokio::test]
async fn consent_templates_choose_the_scopes_asked_for() {
    let h = start(Options::default()).await;
    let consent = h
        .consent(&mut Browser::default(), &h.register(&[REDIRECT]).await)
        .await;
    for id in [
        "exposure-minimal",
        "exposure-read_only",
        "exposure-products",
        "exposure-all",
        "exposure-advanced",
    ] {
        assert!(consent.body.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert_eq!(
        upstream_scopes(&h, "minimal", &[]).await.unwrap(),
        ["offline_access"]
    );
    assert_eq!(
        upstream_scopes(&h, "advanced", &[("scopes", "dns_records:read, zone:read")])
            .await
            .unwrap(),
        ["dns_records:read", "offline_access", "zone:read"]
    );
    let full = upstream_scopes(&h, "all", &[]).await.unwrap();
    assert!(full.contains(&"dns_records:edit".to_owned()), "{full:?}");
    let refused = upstream_scopes(
        &h,
        "advanced",
        &[("scopes", "dns_records:read <b>everything</b>")],
    )
    .await
    .unwrap_err();
    assert!(refused.starts_with("400"), "{refused}");
    assert!(
        refused.contains("&lt;b&gt;everything&lt;/b&gt;"),
        "escaped: {refused}"
    );
}

#[tokio::test]
async fn skills_from_forge_json_are_offered_and_narrow_the_grant() {
    let h = start_grouped().await;
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    for skill in ["dns-read", "dns-write"] {
        assert!(
            consent.body.contains(&format!("value=\"{skill}\"")),
            "{skill}: {}",
            consent.body
        );
    }
    assert!(
        !consent.body.contains("value=\"dns_records\""),
        "no product skill"
    );
    let to_provider = h
        .approve_with(
            &mut browser,
            &consent,
            "products",
            &[("products", "dns-read")],
        )
        .await;
    assert_eq!(to_provider.status, 302, "{}", to_provider.body);
    // Only the chosen skill's scopes are asked for.
    let asked = query_of(to_provider.location.as_deref().unwrap())["scope"].clone();
    assert!(asked.contains("dns_records:read"), "{asked}");
    assert!(!asked.contains("dns_records:edit"), "{asked}");
    let back = browser.get(to_provider.location.as_deref().unwrap()).await;
    let done = browser.get(back.location.as_deref().unwrap()).await;
    let code = query_of(&done.location.unwrap())["code"].clone();
    let (status, tokens) = h.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(h.listed(access).await, ["dns_records_list"]);
    let (_, body) = h
        .rpc(
            access,
            "tools/call",
            json!({"name": "dns_records_create", "arguments": {"zone_id": "z1"}}),
        )
        .await;
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("include `dns-write`"), "{text}");
}

/// A server whose consent page offers the grouped skills.
async fn start_grouped() -> Harness {
    start(Options {
        catalogue: Some(&oauth_support::scoped::GROUPED),
        ..Options::default()
    })
    .await
}

/// An access token of a grant whose consent chose `skill` only.
async fn token_for_skill(h: &Harness, skill: &str) -> String {
    let client = h.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let consent = h.consent(&mut browser, &client).await;
    let to_provider = h
        .approve_with(&mut browser, &consent, "products", &[("products", skill)])
        .await;
    assert_eq!(to_provider.status, 302, "{}", to_provider.body);
    let back = browser.get(to_provider.location.as_deref().unwrap()).await;
    let done = browser.get(back.location.as_deref().unwrap()).await;
    let code = query_of(&done.location.unwrap())["code"].clone();
    let (status, tokens) = h.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 200, "{tokens}");
    tokens["access_token"].as_str().unwrap().to_owned()
}

/// Narrowed listings are kept per exposure: sessions with different
/// exposures, listing in turn, each get their own tools every time, and
/// two grants with the same exposure get the same listing.
#[tokio::test]
async fn sessions_listing_in_turn_each_see_only_their_own_exposure() {
    let h = start_grouped().await;
    let read = token_for_skill(&h, "dns-read").await;
    let write = token_for_skill(&h, "dns-write").await;
    let read_again = token_for_skill(&h, "dns-read").await;
    let (_, all) = h.tokens_choosing("all").await;
    let all = all["access_token"].as_str().unwrap().to_owned();
    let write_listed = h.listed(&write).await;
    assert!(write_listed.contains(&"dns_records_create".to_owned()));
    for _ in 0..2 {
        assert_eq!(h.listed(&read).await, ["dns_records_list"]);
        assert_eq!(h.listed(&write).await, write_listed);
        assert_eq!(
            h.listed(&all).await,
            ["dns_records_list", "dns_records_create"]
        );
        assert_eq!(h.listed(&read_again).await, ["dns_records_list"]);
    }
}
