//! An empty 2xx list in `execute`, for an OAuth session whose decision is
//! `missing` (no held scope covers the call): the API may have filtered
//! it, so the request is refused like a 403, with the same explanation
//! and a step-up when the run may ask. A list with rows is never doubted,
//! nor an empty one for a grant holding the scope or a static token.
#![allow(clippy::unwrap_used, clippy::panic)]

mod test_codemode_fixture;

use std::sync::Arc;

use rmcp::model::CallToolResult;
use serde_json::json;
use test_codemode_fixture::{code_args, core, credential, text, upstream};
use tokio_util::sync::CancellationToken;
use toolforge_runtime::authz::{Connection, GrantAccess, ScopeRule, ScopeTable};
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::server::Core;

fn grant(scopes: &[&str]) -> Arc<GrantAccess> {
    Arc::new(GrantAccess {
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        catalogue: Arc::new(ScopeTable {
            scopes: vec![ScopeRule {
                id: "dns:read".into(),
                read_only: true,
                permissions: vec!["DNS Read".into()],
            }],
        }),
        ..GrantAccess::default()
    })
}

async fn execute(core: &Core, code: &str, conn: &Connection) -> CallToolResult {
    core.call_observed(
        "execute",
        code_args(code, json!({})),
        Some(&credential()),
        conn,
        CancellationToken::new(),
        None,
    )
    .await
    .unwrap()
}

const EMPTY: &str = r#"async () => (await api.request({ method: "GET", path: "/zones/empty/dns_records" })).result"#;
const ROWS: &str =
    r#"async () => (await api.request({ method: "GET", path: "/zones/z1/dns_records" })).result"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_list_for_a_missing_scope_is_a_refusal_that_steps_up() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let lacking = grant(&[]);
    let result = execute(&core, EMPTY, &Connection::OAuth(Arc::clone(&lacking))).await;
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    let said = text(&result);
    assert!(said.contains("GET /zones/empty/dns_records"), "{said}");
    assert!(said.contains("200 OK with an empty list"), "{said}");
    assert!(said.contains("grant `dns:read`"), "{said}");
    assert_eq!(
        lacking.step_up.take().map(|s| s.scope).as_deref(),
        Some("dns:read")
    );

    // Caught by the code: refused for the code, but no step-up.
    let caught = format!(
        "async () => {{ try {{ return await ({EMPTY})(); }} catch (e) {{ return 'caught: ' + e.status; }} }}"
    );
    let result = execute(&core, &caught, &Connection::OAuth(Arc::clone(&lacking))).await;
    assert_eq!(text(&result), "\"caught: 200\"");
    assert!(lacking.step_up.take().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_with_rows_held_scopes_and_static_tokens_are_never_doubted() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let lacking = grant(&[]);
    let rows = execute(&core, ROWS, &Connection::OAuth(Arc::clone(&lacking))).await;
    assert_eq!(rows.is_error, Some(false), "{}", text(&rows));
    assert!(lacking.step_up.take().is_none());
    let holding = grant(&["dns:read"]);
    let empty = execute(&core, EMPTY, &Connection::OAuth(Arc::clone(&holding))).await;
    assert_eq!(empty.is_error, Some(false), "{}", text(&empty));
    assert!(holding.step_up.take().is_none());
    let empty = execute(&core, EMPTY, &Connection::ClientToken).await;
    assert_eq!(empty.is_error, Some(false), "{}", text(&empty));
}
