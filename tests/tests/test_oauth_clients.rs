#![allow(clippy::unwrap_used, clippy::panic)]
//! `--auth oauth` end to end (issue 11), with a real upstream OAuth provider
//! (`oidc-provider`, `tests/js/oauth-upstream.mjs`) and real MCP clients:
//!
//! - the harness against the provider alone: the HTTP walker and the
//!   Chromium driver sign in, the code is exchanged with PKCE, the API mock
//!   accepts only that provider's tokens (401 otherwise, 403 without the
//!   scope), expiry, refresh and revocation behave;
//! - the TypeScript SDK client (its OAuthClientProvider, dynamic
//!   registration) with the consent page driven in headless Chromium
//!   through WebDriver;
//! - the Python `mcp` client (its OAuthClientProvider) with the consent page
//!   walked over plain HTTP.
//!
//! Each client flow asserts every step: metadata, the authorization request
//! (S256, state, resource), the redirect (code, state, `iss`), tokens,
//! tools/list, tool calls whose upstream requests carry tokens the provider
//! issued for our upstream client and the signed-in user, an upstream
//! refresh after the upstream token expired, a forced downstream refresh,
//! RFC 7009 revocation, and refusal (401 with `WWW-Authenticate`) after it.
//!
//! Needs Node and `npm ci --prefix tests` (`TOOLFORGE_SKIP_NODE=1` skips),
//! the Python venv (`TOOLFORGE_SKIP_PYTHON=1`), and Debian's `chromium` and
//! `chromium-driver` (`TOOLFORGE_SKIP_BROWSER=1`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cloudflare_tools::CATALOGUE;
use serde_json::{Value, json};
use toolforge_tests::browser::{Browser, Consent, query_param};
use toolforge_tests::clients;
use toolforge_tests::oauth::{
    self, LOGIN, OAuthOptions, OAuthServer, OAuthUpstream, PASSWORD, Pkce, UpstreamOptions,
};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::webdriver::{self, ChromeDriver};
use toolforge_tests::with_deadline;

const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";
/// Upstream access-token lifetime in the client flows: short, so the test
/// can wait for it to lapse and see the server refresh upstream.
const SHORT_TTL: u64 = 3;
const CLIENT_LIMIT: Duration = Duration::from_secs(240);
const TEST_LIMIT: Duration = Duration::from_secs(420);

fn tests_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Node, the SDK and oidc-provider present (or a loud skip).
fn require_node(test: &str) -> bool {
    clients::require_oidc_provider(test).unwrap_or_else(|e| panic!("{e}"))
}

/// A loopback page standing in for a client's redirect URI.
fn redirect_catcher() -> Upstream {
    Upstream::start(|_| Reply::text(200, "text/html", "<p id=\"done\">signed in</p>")).unwrap()
}

/// Requests for `path` the catcher received (a browser also asks for /favicon.ico).
fn landings(catcher: &Upstream, path: &str) -> usize {
    catcher
        .requests()
        .iter()
        .filter(|r| r.path() == path)
        .count()
}

fn run<F: FnOnce() + Send + 'static>(body: F) {
    with_deadline(TEST_LIMIT, body).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn upstream_provider_alone_issues_tokens_the_api_mock_checks() {
    if !require_node("upstream_provider_alone") {
        return;
    }
    run(|| {
        let up = OAuthUpstream::start(&UpstreamOptions {
            access_ttl_secs: 2,
            rotate_refresh: true,
            withhold_once: None,
        })
        .unwrap();
        let redirect = "http://127.0.0.1:9/cb".to_owned();
        up.add_redirect_uri(&redirect).unwrap();
        let pkce = Pkce::new();
        let authorize = format!(
            "{}?client_id={}&response_type=code&redirect_uri={}&scope=openid%20offline_access%20api%3Aread&state=s1&prompt=consent&code_challenge={}&code_challenge_method=S256",
            up.url("authorize_url"),
            oauth::UPSTREAM_CLIENT_ID,
            toolforge_tests::browser::percent_encode(&redirect),
            pkce.challenge
        );
        // A wrong password is refused by the login page, not let through.
        let mut browser = Browser::new();
        let err = browser
            .sign_in(&authorize, &redirect, &Consent::default(), LOGIN, "wrong")
            .unwrap_err();
        assert!(
            err.contains("Wrong login or password") || err.contains("within"),
            "{err}"
        );
        let mut browser = Browser::new();
        let signed = browser
            .sign_in(&authorize, &redirect, &Consent::default(), LOGIN, PASSWORD)
            .unwrap();
        assert_eq!(
            query_param(&signed.final_url, "state").as_deref(),
            Some("s1")
        );
        assert_eq!(
            query_param(&signed.final_url, "iss"),
            Some(up.url("issuer"))
        );
        let code = query_param(&signed.final_url, "code").expect("a code");
        let basic = Some((oauth::UPSTREAM_CLIENT_ID, up.client_secret.as_str()));
        let token_url = up.url("token_url");
        let exchange = |verifier: &str| {
            oauth::post_form(
                &token_url,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", &redirect),
                    ("code_verifier", verifier),
                ],
                basic,
            )
            .unwrap()
        };
        // The provider really checks PKCE: a wrong verifier fails (and burns the code).
        let wrong = exchange(&Pkce::new().verifier);
        assert_eq!(wrong.status, 400, "{}", wrong.text());
        let signed = Browser::new()
            .sign_in(&authorize, &redirect, &Consent::default(), LOGIN, PASSWORD)
            .unwrap();
        let code = query_param(&signed.final_url, "code").unwrap();
        let response = oauth::post_form(
            &token_url,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &redirect),
                ("code_verifier", &pkce.verifier),
            ],
            basic,
        )
        .unwrap();
        assert_eq!(response.status, 200, "{}", response.text());
        let tokens: Value = serde_json::from_slice(&response.body).unwrap();
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let refresh = tokens["refresh_token"]
            .as_str()
            .expect("a refresh token (offline_access)")
            .to_owned();
        assert_eq!(tokens["scope"], "openid offline_access api:read");
        let api = up.url("api");
        let call = |method: &str, path: &str, token: &str| {
            let auth = format!("Bearer {token}");
            oauth::send(
                method,
                &format!("{api}{path}"),
                &[
                    ("Authorization", &auth),
                    ("Content-Type", "application/json"),
                ],
                Some(b"{}".to_vec()),
            )
            .unwrap()
            .status
        };
        assert_eq!(call("GET", "/zones", &access), 200);
        assert_eq!(
            call("POST", &format!("/zones/{ZONE}/dns_records"), &access),
            403,
            "api:write is missing"
        );
        assert_eq!(
            call("GET", "/zones", "not-a-token-the-provider-issued"),
            401
        );
        let requests = up.requests().unwrap();
        assert_eq!(requests.len(), 3, "{requests:?}");
        assert_eq!(requests[0]["token"]["sub"], LOGIN);
        assert_eq!(requests[0]["token"]["client_id"], oauth::UPSTREAM_CLIENT_ID);
        assert!(
            !serde_json::to_string(&requests).unwrap().contains(&access),
            "the record holds the token"
        );
        // Expiry, then refresh (rotated), then revocation of the user.
        let fp = requests[0]["token"]["fp"].as_str().unwrap().to_owned();
        up.wait_token_expired(&fp, Duration::from_secs(20)).unwrap();
        assert_eq!(
            call("GET", "/zones", &access),
            401,
            "an expired token is refused"
        );
        let response = oauth::post_form(
            &token_url,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
            basic,
        )
        .unwrap();
        assert_eq!(response.status, 200, "{}", response.text());
        let renewed: Value = serde_json::from_slice(&response.body).unwrap();
        let access2 = renewed["access_token"].as_str().unwrap().to_owned();
        assert_ne!(renewed["refresh_token"], tokens["refresh_token"], "rotated");
        assert_eq!(call("GET", "/zones", &access2), 200);
        assert_eq!(up.events().unwrap()["refresh_token"], 1);
        // Two sign-ins granted (the first code was burned by the wrong verifier).
        assert_eq!(up.revoke_user(LOGIN).unwrap(), 2);
        assert_eq!(
            call("GET", "/zones", &access2),
            401,
            "a revoked token is refused"
        );
        let response = oauth::post_form(
            &token_url,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", renewed["refresh_token"].as_str().unwrap()),
            ],
            basic,
        )
        .unwrap();
        assert_eq!(response.status, 400, "{}", response.text());
        assert!(!up.log().contains(&access), "the provider logged a token");
    });
}

#[test]
fn upstream_sign_in_in_chromium() {
    if !require_node("upstream_sign_in_in_chromium")
        || !webdriver::require_browser("upstream_sign_in_in_chromium")
            .unwrap_or_else(|e| panic!("{e}"))
    {
        return;
    }
    run(|| {
        let up = OAuthUpstream::start(&UpstreamOptions::default()).unwrap();
        let catcher = redirect_catcher();
        let redirect = format!("{}/cb", catcher.url());
        up.add_redirect_uri(&redirect).unwrap();
        let pkce = Pkce::new();
        let authorize = format!(
            "{}?client_id={}&response_type=code&redirect_uri={}&scope=openid%20api%3Aread&state=s2&code_challenge={}&code_challenge_method=S256",
            up.url("authorize_url"),
            oauth::UPSTREAM_CLIENT_ID,
            toolforge_tests::browser::percent_encode(&redirect),
            pkce.challenge
        );
        let driver = ChromeDriver::start().unwrap();
        let session = driver.session().unwrap();
        let step = Duration::from_secs(30);
        session.goto(&authorize).unwrap();
        session
            .type_text(&session.wait_for("#login", step).unwrap(), LOGIN)
            .unwrap();
        session
            .type_text(&session.wait_for("#password", step).unwrap(), PASSWORD)
            .unwrap();
        session
            .click(&session.wait_for("#sign-in", step).unwrap())
            .unwrap();
        session
            .click(&session.wait_for("#continue", step).unwrap())
            .unwrap();
        let url = session.wait_url(&redirect, step).unwrap();
        session.wait_for("#done", step).unwrap();
        assert_eq!(query_param(&url, "state").as_deref(), Some("s2"));
        assert!(query_param(&url, "code").is_some());
        // At least once: Chromium may repeat a GET whose connection the catcher closed.
        assert!(
            landings(&catcher, "/cb") >= 1,
            "the browser never reached the redirect URI"
        );
    });
}

/// The calls each client makes: a read and a write.
fn plan(server: &OAuthServer, redirect: &str) -> Value {
    json!({
        "url": server.mcp_url(),
        "redirectUrl": redirect,
        "calls": [
            {"name": "zones_list", "arguments": {"per_page": 5}},
            {"name": "dns_records_create", "arguments": {"zone_id": ZONE, "body": {"type": "A", "name": "www.example.com", "content": "192.0.2.1", "ttl": 3600, "proxied": false}}},
        ],
        "afterRefreshCall": {"name": "zones_list", "arguments": {}},
        "timeoutSeconds": 240,
    })
}

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == name))
        .unwrap_or_else(|| panic!("no `{name}` step in the report: {report}"))
}

/// The pause: wait until the upstream token the API mock last saw has expired.
fn wait_upstream_expiry(up: &OAuthUpstream) -> Result<(), String> {
    let requests = up.requests()?;
    let last = requests
        .iter()
        .rev()
        .find(|r| r["status"] == 200)
        .ok_or("the API mock saw no accepted request")?;
    let fp = last["token"]["fp"].as_str().ok_or("no token fingerprint")?;
    up.wait_token_expired(fp, Duration::from_secs(30))
}

/// Every assertion of one client flow.
fn check_flow(
    label: &str,
    report: &Value,
    up: &OAuthUpstream,
    server: &OAuthServer,
    redirect: &str,
) {
    let public = &server.public_url;
    let text = report.to_string();
    for secret in [&up.client_secret, &server.secret] {
        assert!(
            !text.contains(secret.as_str()),
            "{label}: a secret reached the client"
        );
    }
    // Metadata (RFC 8414 and RFC 9728, as the SDK discovered it).
    let asm = &report["metadata"]["as"];
    assert_eq!(
        asm["issuer"].as_str().map(|s| s.trim_end_matches('/')),
        Some(public.as_str()),
        "{label}: {asm}"
    );
    assert_eq!(
        asm["code_challenge_methods_supported"],
        json!(["S256"]),
        "{label}: {asm}"
    );
    assert_eq!(
        asm["authorization_response_iss_parameter_supported"], true,
        "{label}: {asm}"
    );
    assert_eq!(
        asm["registration_endpoint"],
        format!("{public}/register"),
        "{label}: {asm}"
    );
    if let Some(resource) = report["metadata"].get("resource") {
        assert_eq!(
            resource,
            &json!(server.mcp_url()),
            "{label}: protected-resource metadata"
        );
    }
    assert_eq!(
        step(report, "registered")["client_id_issued"],
        true,
        "{label}"
    );
    let authorize = step(report, "authorize");
    assert_eq!(
        authorize["endpoint"],
        format!("{public}/authorize"),
        "{label}: {authorize}"
    );
    assert_eq!(
        authorize["code_challenge_method"], "S256",
        "{label}: {authorize}"
    );
    assert_eq!(authorize["has_code_challenge"], true, "{label}");
    assert_eq!(authorize["has_state"], true, "{label}");
    assert_eq!(
        authorize["resource"],
        json!(server.mcp_url()),
        "{label}: RFC 8707 resource: {authorize}"
    );
    let back = step(report, "redirect");
    assert_eq!(back["to"], redirect, "{label}: {back}");
    assert_eq!(back["has_code"], true, "{label}: {back}");
    assert_eq!(back["state_matches"], true, "{label}: {back}");
    assert_eq!(
        back["iss"].as_str().map(|s| s.trim_end_matches('/')),
        Some(public.as_str()),
        "{label}: RFC 9207 iss: {back}"
    );
    let tokens = step(report, "tokens");
    assert!(
        tokens["token_type"]
            .as_str()
            .is_some_and(|t| t.eq_ignore_ascii_case("bearer")),
        "{label}: {tokens}"
    );
    assert_eq!(tokens["has_access"], true, "{label}: {tokens}");
    assert_eq!(tokens["has_refresh"], true, "{label}: {tokens}");
    // tools/list: everything (exposure `all`).
    let listed: Vec<&str> = step(report, "list")["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in CATALOGUE.tools() {
        assert!(
            listed.contains(&tool.name),
            "{label}: {} not listed: {listed:?}",
            tool.name
        );
    }
    // The calls, and what the API mock saw for them.
    let calls: Vec<&Value> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "call")
        .collect();
    assert_eq!(calls.len(), 2, "{label}: {report}");
    for call in &calls {
        assert!(
            call.get("error").is_none() && call["isError"] == false,
            "{label}: {call}"
        );
    }
    assert!(
        calls[0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("example.com")
            || calls[0]["structured"].to_string().contains("example.com"),
        "{label}: {}",
        calls[0]
    );
    let requests = up.requests().unwrap();
    let seen = |method: &str, path: &str| -> Vec<Value> {
        requests
            .iter()
            .filter(|r| r["method"] == method && r["path"] == path)
            .cloned()
            .collect()
    };
    let zones = seen("GET", "/zones");
    let dns = seen("POST", &format!("/zones/{ZONE}/dns_records"));
    assert!(
        zones.len() >= 2,
        "{label}: GET /zones twice (before and after the refresh): {requests:?}"
    );
    assert_eq!(dns.len(), 1, "{label}: {requests:?}");
    for record in zones.iter().chain(&dns) {
        assert_eq!(
            record["status"], 200,
            "{label}: the API mock refused an upstream request: {record}"
        );
        assert_eq!(
            record["token"]["client_id"],
            oauth::UPSTREAM_CLIENT_ID,
            "{label}: {record}"
        );
        assert_eq!(record["token"]["sub"], LOGIN, "{label}: {record}");
    }
    // The server refreshed upstream once the upstream token had expired.
    let first_fp = &zones[0]["token"]["fp"];
    let last = zones.last().unwrap();
    assert_ne!(
        &last["token"]["fp"], first_fp,
        "{label}: the call after expiry used the old upstream token"
    );
    assert_eq!(
        last["token"]["grant"], zones[0]["token"]["grant"],
        "{label}: a refresh keeps the upstream grant"
    );
    let events = up.events().unwrap();
    assert!(
        events["refresh_token"].as_u64().unwrap_or(0) >= 1,
        "{label}: no upstream refresh: {events}"
    );
    assert_eq!(
        events["authorization_code"], 1,
        "{label}: one upstream sign-in: {events}"
    );
    // The downstream refresh.
    let refresh = step(report, "refresh");
    assert_eq!(refresh["access_changed"], true, "{label}: {refresh}");
    assert_eq!(refresh["has_refresh"], true, "{label}: {refresh}");
    if let Some(result) = refresh.get("result") {
        assert_eq!(result, "AUTHORIZED", "{label}: {refresh}");
    }
    let after = step(report, "call-after-refresh");
    assert!(
        after.get("error").is_none() && after["isError"] == false,
        "{label}: {after}"
    );
    // Revocation and refusal.
    let revoke = step(report, "revoke");
    assert_eq!(
        revoke["endpoint"],
        format!("{public}/revoke"),
        "{label}: {revoke}"
    );
    assert_eq!(revoke["refresh_status"], 200, "{label}: {revoke}");
    assert_eq!(revoke["access_status"], 200, "{label}: {revoke}");
    let raw = step(report, "after-revoke-raw");
    assert_eq!(
        raw["status"], 401,
        "{label}: the revoked access token still works: {raw}"
    );
    let expected =
        format!("resource_metadata=\"{public}/.well-known/oauth-protected-resource/mcp\"");
    assert!(
        raw["www_authenticate"]
            .as_str()
            .is_some_and(|h| h.starts_with("Bearer") && h.contains(&expected)),
        "{label}: {raw}"
    );
    let refused = step(report, "after-revoke-call");
    assert_eq!(
        refused["refused"], true,
        "{label}: a call after revocation went through: {refused}"
    );
    // Nothing secret in the server's log.
    let log = server.server.log();
    assert!(
        !log.contains(&up.client_secret) && !log.contains(&server.secret),
        "{label}: a secret in the server log"
    );
}

/// The consent page as served (walker) — names the client, its redirect
/// host and the upstream, and is framed and scripted by nobody.
fn check_consent_page(label: &str, html: &str, headers: &[(String, String)], client_name: &str) {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    assert!(header("x-frame-options").is_some_and(|v| v.eq_ignore_ascii_case("DENY") || v.eq_ignore_ascii_case("SAMEORIGIN")), "{label}: {headers:?}");
    assert!(
        header("content-security-policy").is_some(),
        "{label}: no CSP: {headers:?}"
    );
    assert!(
        header("set-cookie").is_some(),
        "{label}: the consent page sets no cookie"
    );
    for needle in [
        client_name,
        "127.0.0.1",
        "Test Provider",
        "id=\"approve\"",
        "id=\"deny\"",
        "id=\"exposure-read_only\"",
        "id=\"exposure-products\"",
    ] {
        assert!(
            html.contains(needle),
            "{label}: the consent page lacks {needle:?}:\n{}",
            toolforge_tests::mcp::clip(html, 3000)
        );
    }
}

fn start_pair(label: &str) -> (OAuthUpstream, OAuthServer) {
    let up = OAuthUpstream::start(&UpstreamOptions {
        access_ttl_secs: SHORT_TTL,
        rotate_refresh: true,
        withhold_once: None,
    })
    .unwrap();
    let server = OAuthServer::start(&up, &OAuthOptions::default())
        .unwrap_or_else(|e| panic!("{label}: {e}\nupstream log:\n{}", up.log()));
    (up, server)
}

#[test]
fn typescript_sdk_signs_in_through_chromium() {
    let label = "typescript_sdk_signs_in_through_chromium";
    if !require_node(label) || !webdriver::require_browser(label).unwrap_or_else(|e| panic!("{e}"))
    {
        return;
    }
    run(move || {
        let (up, server) = start_pair(label);
        let catcher = redirect_catcher();
        let redirect = format!("{}/callback", catcher.url());
        let driver = ChromeDriver::start().unwrap();
        let session = driver.session().unwrap();
        let mut consent = None;
        let mut command = Command::new("node");
        command
            .arg(tests_dir().join("js/oauth-client.mjs"))
            .current_dir(tests_dir());
        let report = toolforge_tests::oauth_driver::drive_client(
            command,
            &plan(&server, &redirect),
            CLIENT_LIMIT,
            &mut |url| {
                // The user widens the preselected *minimal* template:
                // this client does not step up.
                let signed = webdriver::sign_in_choosing(
                    &session,
                    url,
                    &redirect,
                    LOGIN,
                    PASSWORD,
                    Some("all"),
                )?;
                let final_url = signed.final_url.clone();
                consent = Some(signed);
                Ok(final_url)
            },
            &mut |_| wait_upstream_expiry(&up),
        )
        .unwrap_or_else(|e| {
            panic!(
                "{label}: {e}\nserver log:\n{}\nupstream log:\n{}",
                server.server.log(),
                up.log()
            )
        });
        let consent = consent.expect("the browser signed in");
        assert!(
            consent.minimal_checked_by_default,
            "{label}: `minimal` is not the default exposure"
        );
        assert!(
            consent
                .consent_html
                .contains("toolforge e2e (TypeScript SDK)"),
            "{label}: the consent page does not name the client"
        );
        assert!(
            landings(&catcher, "/callback") >= 1,
            "{label}: the browser never reached the redirect URI"
        );
        check_flow(label, &report, &up, &server, &redirect);
    });
}

#[test]
fn python_client_signs_in_through_the_http_walker() {
    let label = "python_client_signs_in_through_the_http_walker";
    if !require_node(label) || !clients::require_python(label).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    run(move || {
        let (up, server) = start_pair(label);
        let redirect = "http://127.0.0.1:9/callback".to_owned();
        let mut signed = None;
        let mut command = Command::new(clients::python());
        command
            .arg(tests_dir().join("py/oauth_client.py"))
            .current_dir(tests_dir())
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        let report = toolforge_tests::oauth_driver::drive_client(
            command,
            &plan(&server, &redirect),
            CLIENT_LIMIT,
            &mut |url| {
                let mut browser = Browser::new();
                let done = browser.sign_in(url, &redirect, &Consent::default(), LOGIN, PASSWORD)?;
                let final_url = done.final_url.clone();
                signed = Some(done);
                Ok(final_url)
            },
            &mut |_| wait_upstream_expiry(&up),
        )
        .unwrap_or_else(|e| {
            panic!(
                "{label}: {e}\nserver log:\n{}\nupstream log:\n{}",
                server.server.log(),
                up.log()
            )
        });
        let signed = signed.expect("the walker signed in");
        check_consent_page(
            label,
            &signed.consent_html,
            &signed.consent_headers,
            "toolforge e2e (Python mcp)",
        );
        let public = &server.public_url;
        let trace = signed.trace.join("\n");
        for hop in [
            format!("GET {public}/authorize 200"),
            format!("POST {public}/authorize 302"),
            format!("GET {public}/oauth/callback 302"),
        ] {
            assert!(
                signed.trace.contains(&hop),
                "{label}: no `{hop}` in the sign-in:\n{trace}"
            );
        }
        check_flow(label, &report, &up, &server, &redirect);
    });
}
