#![allow(clippy::unwrap_used, clippy::panic)]
//! Two `--auth oauth` server processes sharing one PostgreSQL (a real
//! server from Debian's `postgresql`, tests/src/postgres.rs) and one secret,
//! as behind a load balancer: one public URL (the first instance's), the
//! real upstream provider (`tests/js/oauth-upstream.mjs`).
//!
//! The client registers and authorizes on instance A (consent page and
//! upstream callback), exchanges the code and calls a tool on instance B
//! (the upstream request carries the provider's token for the signed-in
//! user), refreshes on A, revokes on B, and the revocation is seen by both:
//! B at once, A within its token cache bound (`token_cache_secs`, 5 s by
//! default), and the revoked refresh token is refused on A.
//!
//! Needs Node and `npm ci --prefix tests` (`TOOLFORGE_SKIP_NODE=1` skips)
//! and PostgreSQL (`TOOLFORGE_SKIP_POSTGRES=1` skips).

use std::time::{Duration, Instant};

use serde_json::json;
use toolforge_tests::browser::{Browser, Consent, query_param};
use toolforge_tests::clients;
use toolforge_tests::mcp::RawClient;
use toolforge_tests::oauth::{
    self, LOGIN, OAuthOptions, OAuthServer, OAuthUpstream, PASSWORD, Pkce, UpstreamOptions,
};
use toolforge_tests::oauth_flow;
use toolforge_tests::postgres::Postgres;
use toolforge_tests::with_deadline;

/// Longer than the default `token_cache_secs` (5 s) with room to spare.
const REVOCATION_BOUND: Duration = Duration::from_secs(15);

fn require_node(test: &str) -> bool {
    clients::require_oidc_provider(test).unwrap_or_else(|e| panic!("{e}"))
}

/// `initialize` with `token` at `server`: the HTTP status of the reply.
fn status_with(server: &OAuthServer, token: &str) -> u16 {
    let client = RawClient::new(server.server.addr(), token);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": client.protocol_version, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}});
    client
        .post_raw(body.to_string().as_bytes(), &[])
        .unwrap()
        .status
}

#[test]
fn two_instances_share_one_postgres_store() {
    let label = "two_instances_share_one_postgres_store";
    if !require_node(label) {
        return;
    }
    let Some(pg) = Postgres::start_or_skip().unwrap_or_else(|e| panic!("{label}: {e}")) else {
        return;
    };
    let store = pg.create_database("grants").unwrap();
    with_deadline(Duration::from_secs(300), move || {
        let up = OAuthUpstream::start(&UpstreamOptions::default()).unwrap();
        let secret = oauth::random_token(32);
        let a = OAuthServer::start(
            &up,
            &OAuthOptions {
                store: Some(store.clone()),
                secret: Some(secret.clone()),
                ..OAuthOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{label}: instance A: {e}"));
        let b = OAuthServer::start(
            &up,
            &OAuthOptions {
                store: Some(store.clone()),
                secret: Some(secret.clone()),
                public_url: Some(a.public_url.clone()),
                ..OAuthOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{label}: instance B: {e}"));
        let logs = || {
            format!(
                "A log:\n{}\nB log:\n{}\nupstream log:\n{}",
                a.server.log(),
                b.server.log(),
                up.log()
            )
        };
        // Register and authorize on A.
        let redirect = "http://127.0.0.1:9/cb";
        let client_id = oauth_flow::register(&a, redirect, "two-instance client").unwrap();
        let pkce = Pkce::new();
        let state = oauth::random_token(16);
        let signed = Browser::new()
            .sign_in(
                &oauth_flow::authorize_url(&a, &client_id, redirect, &pkce, &state),
                redirect,
                &Consent::default(),
                LOGIN,
                PASSWORD,
            )
            .unwrap_or_else(|e| panic!("{label}: {e}\n{}", logs()));
        assert_eq!(query_param(&signed.final_url, "state"), Some(state));
        let code = query_param(&signed.final_url, "code").expect("a code");
        // Token and tool call on B.
        let tokens = oauth_flow::exchange(&b, &client_id, &code, redirect, &pkce.verifier)
            .unwrap_or_else(|e| panic!("{label}: the code from A at B's /token: {e}\n{}", logs()));
        let on_b = RawClient::new(b.server.addr(), &tokens.access);
        on_b.initialize()
            .unwrap_or_else(|e| panic!("{label}: {e}\n{}", logs()));
        let result = on_b.call_tool("zones_list", json!({})).unwrap();
        assert_ne!(result["isError"], true, "{label}: {result}");
        let seen = up.requests().unwrap();
        let last = seen.last().expect("the API mock saw the call");
        assert_eq!(
            (&last["path"], &last["status"]),
            (&json!("/zones"), &json!(200)),
            "{label}: {last}"
        );
        assert_eq!(last["token"]["sub"], LOGIN, "{label}: {last}");
        // The same token works on A; refresh on A, use the new one on B.
        assert_eq!(
            status_with(&a, &tokens.access),
            200,
            "{label}: A refuses B's token"
        );
        let renewed = oauth_flow::refresh(
            &a,
            &client_id,
            tokens.refresh.as_deref().expect("a refresh token"),
        )
        .unwrap();
        assert_eq!(
            status_with(&b, &renewed.access),
            200,
            "{label}: B refuses the token refreshed on A"
        );
        // Revoke on B (the refresh token: the whole grant); both refuse.
        let refresh = renewed.refresh.as_deref().expect("a rotated refresh token");
        assert_eq!(
            oauth_flow::revoke(&b, &client_id, refresh, "refresh_token").unwrap(),
            200
        );
        assert_eq!(
            status_with(&b, &renewed.access),
            401,
            "{label}: B still takes a token of the revoked grant"
        );
        let deadline = Instant::now() + REVOCATION_BOUND;
        loop {
            let status = status_with(&a, &renewed.access);
            if status == 401 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{label}: A still answers {status} {REVOCATION_BOUND:?} after the revocation on B"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        let err = oauth_flow::refresh(&a, &client_id, refresh).unwrap_err();
        assert!(err.contains("invalid_grant"), "{label}: {err}");
    })
    .unwrap_or_else(|e| panic!("{e}"));
    drop(pg);
}
