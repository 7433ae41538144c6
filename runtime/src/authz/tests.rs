//! The decision rules, and the refusal texts of every decision for a 401
//! and a 403 (the surfaces all word them through `outcome::map_response`;
//! `runtime/tests/test_authz_surfaces.rs` checks they do).

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use super::*;
use crate::catalogue::{Annotations, ToolDef};
use crate::outcome::{Call, map_response};
use crate::profile::testing::{ENVELOPED, TOKENS_URL};
use crate::request::testing::custom;
use crate::upstream::UpstreamResponse;

const READ: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};

fn rule(id: &str, read_only: bool, permissions: &[&str]) -> ScopeRule {
    ScopeRule {
        id: id.into(),
        read_only,
        permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
    }
}

fn catalogue() -> Arc<ScopeTable> {
    Arc::new(ScopeTable {
        scopes: vec![
            rule("account:read", true, &["Account Settings Read"]),
            rule("zone:read", true, &["Zone Read"]),
            rule("dns_records:read", true, &["DNS Read"]),
            rule("dns_records:edit", false, &["DNS Write"]),
            rule("alpha:read", true, &["Shared Read"]),
            rule("beta:read", true, &["Shared Read"]),
        ],
    })
}

fn oauth(scopes: &[&str], read_only: bool, products: Option<&[&str]>) -> Connection {
    Connection::OAuth(Arc::new(GrantAccess {
        grant_id: "g1".to_owned(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        read_only,
        products: products.map(|p| p.iter().map(|s| (*s).to_owned()).collect()),
        catalogue: catalogue(),
        step_up: ChallengeSlot::default(),
        path: None,
        groups: &[],
    }))
}

fn dns_list() -> &'static ToolDef {
    custom(|t| {
        t.name = "dns_records_list";
        t.product = "dns";
        t.annotations = READ;
        t.permissions = &["DNS Read", "DNS Write"];
    })
}

fn dns_create() -> &'static ToolDef {
    custom(|t| {
        t.name = "dns_records_create";
        t.product = "dns";
        t.method = Method::Post;
        t.permissions = &["DNS Write"];
    })
}

const DNS_PATH: &str = "/zones/z1/dns_records";

#[test]
fn static_credentials_get_the_tools_permissions() {
    for conn in [Connection::ServerCredential, Connection::ClientToken] {
        assert_eq!(
            decide(&conn, dns_list(), DNS_PATH),
            Decision::Direct {
                permissions: &["DNS Read", "DNS Write"]
            }
        );
    }
}

#[test]
fn a_grant_holding_an_accepted_scope_is_granted() {
    let conn = oauth(&["dns_records:edit"], false, None);
    assert_eq!(
        decide(&conn, dns_list(), DNS_PATH),
        Decision::Granted {
            scope: Some("dns_records:edit".into())
        }
    );
}

#[test]
fn exposure_hides_writes_and_other_products() {
    let read_only = oauth(&["dns_records:edit"], true, None);
    assert_eq!(
        decide(&read_only, dns_create(), DNS_PATH),
        Decision::Hidden(HiddenBy::ReadOnly)
    );
    assert!(matches!(
        decide(&read_only, dns_list(), DNS_PATH),
        Decision::Granted { .. }
    ));
    let workers_only = oauth(&["dns_records:edit"], false, Some(&["workers"]));
    assert_eq!(
        decide(&workers_only, dns_list(), DNS_PATH),
        Decision::Hidden(HiddenBy::Product)
    );
}

#[test]
fn a_missing_read_asks_for_the_read_scope() {
    let conn = oauth(&["zone:read"], false, None);
    assert_eq!(
        decide(&conn, dns_list(), DNS_PATH),
        Decision::Missing {
            accepted: vec!["dns_records:read".into(), "dns_records:edit".into()],
            ask_for: Some("dns_records:read".into()),
            options: vec![],
        }
    );
    assert!(matches!(
        decide(&conn, dns_create(), DNS_PATH),
        Decision::Missing { ask_for: Some(s), .. } if s == "dns_records:edit"
    ));
}

#[test]
fn a_tie_names_no_scope_and_lists_the_options() {
    let shared = custom(|t| {
        t.permissions = &["Shared Read"];
        t.annotations = READ;
    });
    let conn = oauth(&[], false, None);
    assert_eq!(
        decide(&conn, shared, "/things"),
        Decision::Missing {
            accepted: vec!["alpha:read".into(), "beta:read".into()],
            ask_for: None,
            options: vec!["alpha:read".into(), "beta:read".into()],
        }
    );
}

#[test]
fn no_scope_covering_the_permissions_is_unreachable() {
    let billing = custom(|t| t.permissions = &["Billing Read"]);
    assert_eq!(
        decide(&oauth(&[], false, None), billing, "/billing"),
        Decision::Unreachable {
            permissions: &["Billing Read"]
        }
    );
    // Without permissions there is nothing to judge.
    let bare = custom(|t| t.permissions = &[]);
    assert_eq!(
        decide(&oauth(&[], false, None), bare, "/t"),
        Decision::Granted { scope: None }
    );
}

#[test]
fn at_most_eight_permissions_are_listed() {
    let many = custom(|t| {
        t.permissions = &["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10"];
    });
    let text = explain(&Connection::ServerCredential, many, "/t", &ENVELOPED);
    assert!(text.contains("`P8` and 2 more"), "{text}");
    assert!(!text.contains("`P9`"), "{text}");
}

fn refused(status: u16) -> UpstreamResponse {
    UpstreamResponse {
        status: StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
        content_type: Some("application/json".into()),
        retry_after: None,
        location_host: None,
        next_link: None,
        body: br#"{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}"#.to_vec(),
        elapsed: Duration::ZERO,
    }
}

/// Each decision × 401/403: the text names method, path, status, the
/// API's error code and the fix for that decision.
#[test]
fn every_decision_and_status_is_explained_with_its_fix() {
    let billing = custom(|t| {
        t.name = "billing_get";
        t.permissions = &["Billing Read"];
    });
    let cases: Vec<(&str, Connection, &'static ToolDef, Vec<&str>)> = vec![
        (
            "direct (server credential)",
            Connection::ServerCredential,
            dns_list(),
            vec!["`DNS Read`, `DNS Write`", TOKENS_URL],
        ),
        (
            "direct (client token)",
            Connection::ClientToken,
            dns_list(),
            vec!["`DNS Read`", "ask the operator"],
        ),
        (
            "granted",
            oauth(&["dns_records:read"], false, None),
            dns_list(),
            vec!["holds the scope `dns_records:read`", "will not help"],
        ),
        (
            "hidden (read only)",
            oauth(&["dns_records:edit"], true, None),
            dns_create(),
            vec![
                "`dns_records_create` is outside",
                "read only",
                "consent page",
            ],
        ),
        (
            "hidden (product)",
            oauth(&["dns_records:edit"], false, Some(&["workers"])),
            dns_list(),
            vec!["other products", "include `dns`"],
        ),
        (
            "missing",
            oauth(&["zone:read"], false, None),
            dns_list(),
            vec![
                "accepted: `dns_records:read`, `dns_records:edit`",
                "grant `dns_records:read`",
                "Re-authorize",
            ],
        ),
        (
            "unreachable",
            oauth(&[], false, None),
            billing,
            vec!["No OAuth scope", "`Billing Read`", "--auth tokens"],
        ),
    ];
    for (name, conn, tool, fix) in &cases {
        for (status, status_text) in [(401, "401 Unauthorized"), (403, "403 Forbidden")] {
            let call = Call {
                tool,
                path: DNS_PATH,
                credential: None,
                profile: &ENVELOPED,
                connection: conn,
            };
            let result = map_response(call, refused(status));
            assert_eq!(result.is_error, Some(true));
            let text: String = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            let method = tool.method.as_str();
            for want in [&format!("{method} {DNS_PATH}"), status_text, "code 10000"]
                .into_iter()
                .chain(fix.iter().copied())
            {
                assert!(
                    text.contains(want),
                    "{name} {status}: missing {want:?} in {text}"
                );
            }
        }
    }
}

fn listed(status: u16, body: &str) -> UpstreamResponse {
    UpstreamResponse {
        body: body.as_bytes().to_vec(),
        ..refused(status)
    }
}

/// An empty list for a grant lacking the scope is a refusal with the same
/// explanation (and asks to step up); a list with rows, or an empty list
/// for a grant holding the scope or a static token, is not doubted.
#[test]
fn an_empty_list_for_a_missing_scope_is_a_refusal() {
    let empty = r#"{"success":true,"errors":[],"messages":[],"result":[]}"#;
    let rows = r#"{"success":true,"errors":[],"messages":[],"result":[{"id":"r1"}]}"#;
    let run = |conn: &Connection, body: &str| {
        let call = Call {
            tool: dns_list(),
            path: DNS_PATH,
            credential: None,
            profile: &ENVELOPED,
            connection: conn,
        };
        map_response(call, listed(200, body))
    };
    let missing = oauth(&["zone:read"], false, None);
    let result = run(&missing, empty);
    assert_eq!(result.is_error, Some(true));
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    for want in [
        "GET /zones/z1/dns_records",
        "200 OK",
        "empty list",
        "grant `dns_records:read`",
    ] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
    let Connection::OAuth(grant) = &missing else {
        unreachable!()
    };
    assert_eq!(
        grant.step_up.take().map(|s| s.scope).as_deref(),
        Some("dns_records:read")
    );
    assert_eq!(
        run(&missing, rows).is_error,
        Some(false),
        "rows are not doubted"
    );
    let held = oauth(&["dns_records:read"], false, None);
    assert_eq!(run(&held, empty).is_error, Some(false));
    assert_eq!(run(&Connection::ClientToken, empty).is_error, Some(false));
}
