//! A session connected at a scoped URL (`/mcp/accounts/A`) on every
//! surface: a direct call, a `code` run and an `execute` request naming
//! another account are refused before any upstream request; the scoped
//! values fill what the caller leaves out; `tools/list` drops the fixed
//! arguments. The same holds for a static client token (constraint from
//! the URL alone) and an OAuth grant made for the scoped resource.
#![allow(clippy::unwrap_used, clippy::panic)]

mod test_codemode_fixture;

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::json;
use test_codemode_fixture::{code_args, core, credential, text, upstream};
use tokio_util::sync::CancellationToken;
use toolforge_runtime::authz::{Connection, GrantAccess, PathScope, parse_scope};
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::profile::ScopedPath;
use toolforge_runtime::server::Core;

const PATHS: &[ScopedPath] = &[ScopedPath {
    template: "/accounts/{account_id}",
    check: None,
}];

fn scope(account: &str) -> Arc<PathScope> {
    Arc::new(parse_scope(PATHS, &format!("/accounts/{account}")).unwrap())
}

fn connections() -> [Connection; 2] {
    [
        Connection::ScopedClientToken(scope("a1")),
        Connection::OAuth(Arc::new(GrantAccess {
            path: Some(scope("a1")),
            ..GrantAccess::default()
        })),
    ]
}

async fn run(
    core: &Core,
    tool: &str,
    args: Option<JsonObject>,
    conn: &Connection,
) -> (bool, String) {
    let result = core
        .call_observed(
            tool,
            args,
            Some(&credential()),
            conn,
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    (result.is_error == Some(true), text(&result))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_is_refused_on_every_surface_before_any_request() {
    let up = upstream().await;
    let direct = core(Mode::Direct, &up, Exposure::default());
    let code = core(Mode::Code, &up, Exposure::default());
    let execute = core(Mode::CodeMode, &up, Exposure::default());
    for conn in &connections() {
        up.clear();
        let attempts = [
            run(
                &direct,
                "rulesets_list",
                json!({"account_or_zone": "accounts", "account_or_zone_id": "b2"})
                    .as_object()
                    .cloned(),
                conn,
            )
            .await,
            run(
                &code,
                "code",
                code_args(
                    r#"async () => codemode.rulesets_list({ account_or_zone: "accounts", account_or_zone_id: "b2" })"#,
                    json!({}),
                ),
                conn,
            )
            .await,
            run(
                &execute,
                "execute",
                code_args(
                    r#"async () => api.request({ method: "GET", path: "/accounts/b2/rulesets" })"#,
                    json!({}),
                ),
                conn,
            )
            .await,
        ];
        for (refused, text) in &attempts {
            assert!(refused, "{text}");
            assert!(text.contains("`account_id` = `a1`"), "{text}");
            assert!(text.contains("`b2`"), "{text}");
            assert!(text.contains("/mcp/accounts/a1"), "{text}");
        }
        assert!(
            up.seen().is_empty(),
            "no upstream request: {:?}",
            up.seen().iter().map(|s| s.uri.clone()).collect::<Vec<_>>()
        );

        // The scoped account fills an omitted ID, and naming it works.
        let (refused, text) = run(
            &direct,
            "rulesets_list",
            json!({"account_or_zone": "accounts"}).as_object().cloned(),
            conn,
        )
        .await;
        assert!(!refused, "{text}");
        let (refused, text) = run(
            &execute,
            "execute",
            code_args(
                r#"async () => (await api.request({ method: "GET", path: "/accounts/a1/rulesets" })).status"#,
                json!({}),
            ),
            conn,
        )
        .await;
        assert!(!refused, "{text}");
        let uris: Vec<String> = up.seen().iter().map(|s| s.uri.clone()).collect();
        assert_eq!(
            uris,
            ["/accounts/a1/rulesets", "/accounts/a1/rulesets"],
            "{uris:?}"
        );
        // A zone is not constrained at an account's URL.
        let (refused, text) = run(
            &direct,
            "rulesets_list",
            json!({"account_or_zone": "zones", "account_or_zone_id": "z1"})
                .as_object()
                .cloned(),
            conn,
        )
        .await;
        assert!(!refused, "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unscoped_session_is_unchanged() {
    let up = upstream().await;
    let direct = core(Mode::Direct, &up, Exposure::default());
    let (refused, text) = run(
        &direct,
        "rulesets_list",
        json!({"account_or_zone": "accounts", "account_or_zone_id": "b2"})
            .as_object()
            .cloned(),
        &Connection::ClientToken,
    )
    .await;
    assert!(!refused, "{text}");
    assert!(!Core::lists_differently(&Connection::ClientToken));
    assert!(Core::lists_differently(&Connection::ScopedClientToken(
        scope("a1")
    )));
}
