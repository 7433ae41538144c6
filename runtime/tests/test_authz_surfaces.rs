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
