//! One authorization decision, three surfaces: a 403 from the upstream is
//! explained the same way by a direct tool, a `code` run and an `execute`
//! run, from the connection the call came on (an OAuth grant lacking the
//! scope: ask for it; a static client token: the operator must grant the
//! permission; a grant holding the scope: the account itself lacks access).
#![allow(clippy::unwrap_used, clippy::panic)]

mod test_codemode_fixture;

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::json;
use test_codemode_fixture::{code_args, core, credential, text, upstream};
use tokio_util::sync::CancellationToken;
use toolforge_runtime::authz::{Connection, GrantAccess, ScopeRule, ScopeTable};
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::server::Core;

fn grant(scopes: &[&str]) -> Connection {
    let rule = |id: &str, read_only: bool, permissions: &[&str]| ScopeRule {
        id: id.into(),
        read_only,
        permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
    };
    Connection::OAuth(Arc::new(GrantAccess {
        grant_id: "g1".to_owned(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        read_only: false,
        products: None,
        catalogue: Arc::new(ScopeTable {
            scopes: vec![
                rule("zone:read", true, &["Zone Read"]),
                rule("firewall:read", true, &["Firewall Services Read"]),
                // An edit scope that also reads, so a read accepts both.
                rule(
                    "firewall:edit",
                    false,
                    &["Firewall Services Read", "Firewall Services Write"],
                ),
            ],
        }),
        step_up: Default::default(),
        path: None,
        groups: &[],
    }))
}

async fn refused_on(
    core: &Core,
    tool: &str,
    args: Option<JsonObject>,
    conn: &Connection,
) -> String {
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
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    text(&result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_code_and_execute_explain_a_refusal_from_the_same_decision() {
    let up = upstream().await;
    let direct = core(Mode::Direct, &up, Exposure::default());
    let code = core(Mode::Code, &up, Exposure::default());
    let execute = core(Mode::CodeMode, &up, Exposure::default());
    let cases = [
        (
            grant(&["zone:read"]),
            vec![
                "accepted: `firewall:read`, `firewall:edit`",
                "grant `firewall:read`",
            ],
        ),
        (
            grant(&["firewall:edit"]),
            vec!["holds the scope `firewall:edit`", "will not help"],
        ),
        (
            Connection::ClientToken,
            vec!["`Firewall Services Read`", "ask the operator"],
        ),
        (
            Connection::ServerCredential,
            vec!["`Firewall Services Read`", "dash.cloudflare.com"],
        ),
    ];
    for (conn, fix) in &cases {
        let texts = [
            (
                "direct",
                refused_on(
                    &direct,
                    "firewall_rules_list",
                    json!({"zone_id": "z1"}).as_object().cloned(),
                    conn,
                )
                .await,
            ),
            (
                "code",
                refused_on(
                    &code,
                    "code",
                    code_args(
                        r#"async () => codemode.firewall_rules_list({ zone_id: "z1" })"#,
                        json!({}),
                    ),
                    conn,
                )
                .await,
            ),
            (
                "execute",
                refused_on(
                    &execute,
                    "execute",
                    code_args(
                        r#"async () => api.request({ method: "GET", path: "/zones/z1/firewall/rules" })"#,
                        json!({}),
                    ),
                    conn,
                )
                .await,
            ),
        ];
        for (surface, text) in &texts {
            for want in [
                "GET /zones/z1/firewall/rules",
                "403 Forbidden",
                "code 10000",
            ]
            .iter()
            .chain(fix.iter())
            {
                assert!(text.contains(want), "{surface}: missing {want:?} in {text}");
            }
            assert!(
                !text.contains(test_codemode_fixture::TOKEN),
                "{surface}: {text}"
            );
        }
    }
}

fn read_only_grant() -> Arc<GrantAccess> {
    let Connection::OAuth(grant) = grant(&["zone:read"]) else {
        unreachable!("grant() builds an OAuth connection")
    };
    Arc::new(GrantAccess {
        read_only: true,
        ..(*grant).clone()
    })
}

/// A read-only grant: `tools/list` (direct) and the `code` declarations
/// leave out every write tool, and a write is refused by name on every
/// surface, before any upstream request, with a text saying how to widen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_grant_sees_and_calls_no_write_tool_on_any_surface() {
    let up = upstream().await;
    let grant = read_only_grant();
    let conn = Connection::OAuth(Arc::clone(&grant));

    let direct = core(Mode::Direct, &up, Exposure::default());
    let names: Vec<String> = direct
        .listed_for(&conn, toolforge_runtime::listing::Variant::DEFAULT)
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"dns_records_list".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"dns_records_create".to_owned()),
        "{names:?}"
    );

    let code = core(Mode::Code, &up, Exposure::default());
    let listed = code.listed_for(&conn, toolforge_runtime::listing::Variant::DEFAULT);
    let description = listed[0].description.as_deref().unwrap_or_default();
    assert!(description.contains("dns_records_list("), "{description}");
    assert!(
        !description.contains("dns_records_create("),
        "{description}"
    );

    let execute = core(Mode::CodeMode, &up, Exposure::default());
    let create = json!({"zone_id": "z1", "type": "A", "name": "www", "content": "192.0.2.1"});
    up.clear();
    let refusals = [
        refused_on(
            &direct,
            "dns_records_create",
            create.as_object().cloned(),
            &conn,
        )
        .await,
        refused_on(
            &code,
            "code",
            code_args(
                &format!("async () => codemode.dns_records_create({create})"),
                json!({}),
            ),
            &conn,
        )
        .await,
        refused_on(
            &execute,
            "execute",
            code_args(
                &format!(
                    r#"async () => api.request({{ method: "POST", path: "/zones/z1/dns_records", body: {create} }})"#
                ),
                json!({}),
            ),
            &conn,
        )
        .await,
    ];
    for text in &refusals {
        assert!(
            text.contains("outside what this session was authorized for"),
            "{text}"
        );
        assert!(text.contains("consent page"), "{text}");
    }
    assert!(
        up.seen().is_empty(),
        "no upstream request: {:?}",
        up.seen().len()
    );

    // The same grant still reads on every surface.
    let read = direct
        .call_observed(
            "dns_records_list",
            json!({"zone_id": "z1"}).as_object().cloned(),
            Some(&credential()),
            &conn,
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
}

/// Runs `tool` with `args` for a fresh grant holding only `zone:read` and
/// returns the step-up the call left for the HTTP layer.
async fn step_up_after(core: &Core, tool: &str, args: Option<JsonObject>) -> Option<String> {
    let conn = grant(&["zone:read"]);
    let _ = core
        .call_observed(
            tool,
            args,
            Some(&credential()),
            &conn,
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    let Connection::OAuth(grant) = conn else {
        unreachable!("grant() builds an OAuth connection")
    };
    grant.step_up.take().map(|s| s.scope)
}

/// Only a call safe to retry asks to step up: a direct tool, or an
/// `execute` run that wrote nothing and did not catch the refusal; never a
/// `code` run, a caught refusal, a run after a write, or an error the
/// code made up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_calls_safe_to_retry_ask_to_step_up() {
    let up = upstream().await;
    let direct = core(Mode::Direct, &up, Exposure::default());
    let code = core(Mode::Code, &up, Exposure::default());
    let execute = core(Mode::CodeMode, &up, Exposure::default());
    let args = |code: &str| code_args(code, json!({}));
    const REFUSED: &str = r#"api.request({ method: "GET", path: "/zones/z1/firewall/rules" })"#;

    assert_eq!(
        step_up_after(
            &direct,
            "firewall_rules_list",
            json!({"zone_id": "z1"}).as_object().cloned()
        )
        .await
        .as_deref(),
        Some("firewall:read")
    );
    let uncaught = format!(
        "async () => {{ await api.request({{ method: \"GET\", path: \"/zones\" }}); return await {REFUSED}; }}"
    );
    assert_eq!(
        step_up_after(&execute, "execute", args(&uncaught))
            .await
            .as_deref(),
        Some("firewall:read"),
        "reads only, refusal uncaught"
    );
    let caught = format!(
        "async () => {{ try {{ return await {REFUSED}; }} catch (e) {{ return 'caught'; }} }}"
    );
    assert_eq!(
        step_up_after(&execute, "execute", args(&caught)).await,
        None,
        "caught"
    );
    let rethrown = format!(
        "async () => {{ try {{ return await {REFUSED}; }} catch (e) {{ throw new Error('something else'); }} }}"
    );
    assert_eq!(
        step_up_after(&execute, "execute", args(&rethrown)).await,
        None,
        "rethrown as another error"
    );
    let after_write = format!(
        "async () => {{ await api.request({{ method: \"POST\", path: \"/zones/z1/dns_records\", body: {{ type: \"A\", name: \"w\", content: \"192.0.2.1\" }} }}); return await {REFUSED}; }}"
    );
    assert_eq!(
        step_up_after(&execute, "execute", args(&after_write)).await,
        None,
        "after a write"
    );
    let forged = r#"async () => { throw new Error('insufficient_scope: this call needs the scope firewall:edit'); }"#;
    assert_eq!(
        step_up_after(&execute, "execute", args(forged)).await,
        None,
        "forged by the code"
    );
    let in_code = r#"async () => codemode.firewall_rules_list({ zone_id: "z1" })"#;
    assert_eq!(
        step_up_after(&code, "code", args(in_code)).await,
        None,
        "a code run"
    );
}
