//! Code Mode `search` per session: a narrowed OAuth grant searches only
//! the operations it may call (a read-only grant finds no write), a
//! scoped URL's view has its values in the paths and no constrained
//! parameter, and an unnarrowed session's search is unchanged.
#![allow(clippy::unwrap_used, clippy::panic)]

mod test_codemode_fixture;

use std::sync::Arc;

use serde_json::{Value, json};
use test_codemode_fixture::{code_args, core, credential, upstream, value};
use tokio_util::sync::CancellationToken;
use toolforge_runtime::authz::{Connection, GrantAccess, parse_scope};
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::profile::ScopedPath;
use toolforge_runtime::server::Core;

/// Every `METHOD path` the session's `search` sees.
const OPERATIONS: &str = r#"async () => Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.keys(item).filter((k) => k !== "parameters").map((m) => m.toUpperCase() + " " + path)).sort()"#;

async fn search(core: &Core, code: &str, conn: &Connection) -> Value {
    let result = core
        .call_observed(
            "search",
            code_args(code, json!({})),
            Some(&credential()),
            conn,
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    value(&result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_grant_searches_no_write_and_others_see_everything() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let everything = search(&core, OPERATIONS, &Connection::ClientToken).await;
    assert!(
        everything
            .as_array()
            .unwrap()
            .contains(&json!("POST /zones/{zone_id}/dns_records")),
        "{everything}"
    );
    let unnarrowed = Connection::OAuth(Arc::new(GrantAccess::default()));
    assert_eq!(search(&core, OPERATIONS, &unnarrowed).await, everything);

    let read_only = Connection::OAuth(Arc::new(GrantAccess {
        read_only: true,
        ..GrantAccess::default()
    }));
    let seen = search(&core, OPERATIONS, &read_only).await;
    let seen: Vec<&str> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        seen.contains(&"GET /zones/{zone_id}/dns_records"),
        "{seen:?}"
    );
    assert!(seen.iter().all(|op| op.starts_with("GET ")), "{seen:?}");
    // No write is reachable through the view in any form.
    let anywhere = search(
        &core,
        r#"async () => JSON.stringify(globalThis.spec).includes('"post"') || JSON.stringify(spec.paths).includes("dns-create")"#,
        &read_only,
    )
    .await;
    assert_eq!(anywhere, false);
    // Components stay; the global is the narrowed view for the whole run.
    let info = search(&core, "async () => spec.info.title", &read_only).await;
    assert_eq!(info, "fixture");
    let again = search(
        &core,
        r#"async () => Object.keys(globalThis.spec.paths["/zones/{zone_id}/dns_records"])"#,
        &read_only,
    )
    .await;
    assert_eq!(again, json!(["get"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_url_searches_its_own_account() {
    const PATHS: &[ScopedPath] = &[ScopedPath {
        template: "/accounts/{account_id}",
        check: None,
    }];
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let scoped =
        Connection::ScopedClientToken(Arc::new(parse_scope(PATHS, "/accounts/a1").unwrap()));
    let seen = search(&core, OPERATIONS, &scoped).await;
    let seen: Vec<&str> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(seen.contains(&"GET /accounts/a1/rulesets"), "{seen:?}");
    assert!(
        !seen.iter().any(|op| op.contains("{account_id}")),
        "{seen:?}"
    );
    // Zones are untouched at an account's URL.
    assert!(seen.contains(&"GET /zones/{zone_id}/rulesets"), "{seen:?}");

    // The constrained parameter leaves the view, at both levels.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    let param =
        |name: &str, place: &str| json!({"name": name, "in": place, "schema": {"type": "string"}});
    std::fs::write(
        &spec,
        json!({
            "openapi": "3.0.3",
            "info": {"title": "fixture", "version": "1"},
            "paths": {"/accounts/{account_id}/rulesets": {
                "parameters": [param("account_id", "path")],
                "get": {"parameters": [param("account_id", "path"), param("per_page", "query")]}
            }}
        })
        .to_string(),
    )
    .unwrap();
    let core = test_codemode_fixture::core_searching(
        Mode::CodeMode,
        &up,
        Exposure::default(),
        test_codemode_fixture::limits(),
        Some(spec),
    );
    let item = search(
        &core,
        r#"async () => spec.paths["/accounts/a1/rulesets"]"#,
        &scoped,
    )
    .await;
    assert_eq!(item["parameters"], json!([]), "{item}");
    assert_eq!(
        item["get"]["parameters"],
        json!([param("per_page", "query")]),
        "{item}"
    );
}
