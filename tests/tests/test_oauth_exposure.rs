#![allow(clippy::unwrap_used, clippy::panic)]
//! `--auth oauth` with a raw OAuth client (tests/src/oauth_flow.rs) and the
//! HTTP walker, against the real upstream provider
//! (`tests/js/oauth-upstream.mjs`): the consent page's "read only" choice
//! is kept on the grant: the upstream token the server obtained carries
//! `api:read` and not `api:write` (before and after a refresh, which never
//! widens), a read works, and a write is refused (by the server, or by the
//! API for want of `api:write`).
//!
//! Needs Node and `npm ci --prefix tests` (`TOOLFORGE_SKIP_NODE=1` skips).

use std::time::Duration;

use serde_json::json;
use toolforge_tests::browser::{Browser, Consent, query_param};
use toolforge_tests::clients;
use toolforge_tests::mcp::RawClient;
use toolforge_tests::oauth::{
    self, LOGIN, OAuthOptions, OAuthServer, OAuthUpstream, PASSWORD, Pkce, UpstreamOptions,
};
use toolforge_tests::oauth_flow;
use toolforge_tests::with_deadline;

fn require_node(test: &str) -> bool {
    clients::require_oidc_provider(test).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn read_only_consent_limits_tools_and_the_upstream_scope() {
    let label = "read_only_consent_limits_tools_and_the_upstream_scope";
    if !require_node(label) {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        let up = OAuthUpstream::start(&UpstreamOptions::default()).unwrap();
        let server = OAuthServer::start(&up, &OAuthOptions::default())
            .unwrap_or_else(|e| panic!("{label}: {e}\nupstream log:\n{}", up.log()));
        let redirect = "http://127.0.0.1:9/cb";
        let client_id = oauth_flow::register(&server, redirect, "raw e2e client").unwrap();
        let pkce = Pkce::new();
        let state = oauth::random_token(16);
        let start = oauth_flow::authorize_url(&server, &client_id, redirect, &pkce, &state);
        let consent = Consent {
            exposure: "read_only".to_owned(),
            ..Consent::default()
        };
        let signed = Browser::new()
            .sign_in(&start, redirect, &consent, LOGIN, PASSWORD)
            .unwrap_or_else(|e| panic!("{label}: {e}\nserver log:\n{}", server.server.log()));
        assert!(signed.consent_html.contains("raw e2e client"), "{label}: the consent page does not name the client");
        assert_eq!(query_param(&signed.final_url, "state"), Some(state.clone()));
        assert_eq!(
            query_param(&signed.final_url, "iss").map(|s| s.trim_end_matches('/').to_owned()),
            Some(server.public_url.clone())
        );
        let code = query_param(&signed.final_url, "code").expect("a code");
        let tokens = oauth_flow::exchange(&server, &client_id, &code, redirect, &pkce.verifier).unwrap();
        assert!(tokens.refresh.is_some(), "{label}: no refresh token: {tokens:?}");
        let client = RawClient::new(server.server.addr(), &tokens.access);
        client.initialize().unwrap();
        let listed: Vec<String> = client
            .list_tools()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        assert!(listed.iter().any(|n| n == "zones_list"), "{label}: {listed:?}");
        // The grant's exposure narrows the listing: no write tool.
        assert!(
            !listed.iter().any(|n| n == "dns_records_create"),
            "{label}: a read-only grant lists a write tool: {listed:?}"
        );
        let result = client.call_tool("zones_list", json!({})).unwrap();
        assert_ne!(result["isError"], true, "{label}: {result}");
        let check_scope = |what: &str| {
            let requests = up.requests().unwrap();
            let seen = requests.last().cloned().expect("the API mock saw the call");
            assert_eq!(seen["path"], "/zones", "{label}: {what}: {seen}");
            assert_eq!(seen["status"], 200, "{label}: {what}: {seen}");
            let scope = seen["token"]["scope"].as_str().unwrap_or_default().to_owned();
            assert!(scope.split(' ').any(|s| s == "api:read"), "{label}: {what}: upstream scope {scope:?}");
            assert!(
                !scope.split(' ').any(|s| s == "api:write"),
                "{label}: {what}: read-only consent, yet upstream scope {scope:?}"
            );
            requests.len()
        };
        let before = check_scope("first call");
        // A write is refused: by the server, or upstream for want of api:write.
        let reply = client
            .call_tool_raw("dns_records_create", json!({"zone_id": "023e105f4ecef8ad9ca31a8372d0c353", "body": {"type": "A", "name": "x", "content": "192.0.2.1"}}))
            .unwrap();
        assert_eq!(reply["result"]["isError"], true, "{label}: a write tool ran under read-only consent: {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("outside what this session was authorized for"), "{label}: {text}");
        assert_eq!(up.requests().unwrap().len(), before, "{label}: a hidden write reached the API");
        // Refresh never widens: the new token's upstream scope is the same.
        let renewed = oauth_flow::refresh(&server, &client_id, tokens.refresh.as_deref().unwrap()).unwrap();
        assert_eq!(renewed.body["scope"], tokens.body["scope"], "{label}: the refresh changed the scope");
        let again = RawClient::new(server.server.addr(), &renewed.access);
        again.initialize().unwrap();
        let relisted: Vec<String> = again
            .list_tools()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(relisted, listed, "{label}: the refresh widened the listing");
        let result = again.call_tool("zones_list", json!({})).unwrap();
        assert_ne!(result["isError"], true, "{label}: {result}");
        check_scope("after the refresh");
    })
    .unwrap_or_else(|e| panic!("{e}"));
}

/// The consent page driven in headless Chromium: choosing the *read only*
/// template narrows the session the same way.
#[test]
fn a_template_chosen_in_chromium_narrows_the_session() {
    let label = "a_template_chosen_in_chromium_narrows_the_session";
    if !require_node(label)
        || !toolforge_tests::webdriver::require_browser(label).unwrap_or_else(|e| panic!("{e}"))
    {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        let up = OAuthUpstream::start(&UpstreamOptions::default()).unwrap();
        let server = OAuthServer::start(&up, &OAuthOptions::default())
            .unwrap_or_else(|e| panic!("{label}: {e}\nupstream log:\n{}", up.log()));
        let catcher = toolforge_tests::upstream::Upstream::start(|_| {
            toolforge_tests::upstream::Reply::text(200, "text/html", "<p>signed in</p>")
        })
        .unwrap();
        let redirect = format!("{}/callback", catcher.url());
        let client_id = oauth_flow::register(&server, &redirect, "chromium e2e client").unwrap();
        let pkce = Pkce::new();
        let start = oauth_flow::authorize_url(&server, &client_id, &redirect, &pkce, "s-chromium");
        let driver = toolforge_tests::webdriver::ChromeDriver::start().unwrap();
        let session = driver.session().unwrap();
        let signed = toolforge_tests::webdriver::sign_in_choosing(
            &session,
            &start,
            &redirect,
            LOGIN,
            PASSWORD,
            Some("read_only"),
        )
        .unwrap_or_else(|e| panic!("{label}: {e}\nserver log:\n{}", server.server.log()));
        for template in ["minimal", "read_only", "products", "all", "advanced"] {
            assert!(
                signed
                    .consent_html
                    .contains(&format!("id=\"exposure-{template}\"")),
                "{label}: no {template} template"
            );
        }
        let code = query_param(&signed.final_url, "code").expect("a code");
        let tokens =
            oauth_flow::exchange(&server, &client_id, &code, &redirect, &pkce.verifier).unwrap();
        let client = RawClient::new(server.server.addr(), &tokens.access);
        client.initialize().unwrap();
        let listed: Vec<String> = client
            .list_tools()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        assert!(
            listed.iter().any(|n| n == "zones_list"),
            "{label}: {listed:?}"
        );
        assert!(
            !listed.iter().any(|n| n == "dns_records_create"),
            "{label}: the read-only template lists a write tool: {listed:?}"
        );
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
