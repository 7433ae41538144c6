use serde_json::json;

use super::*;
use crate::catalogue::{Method, ParamLocation, ParamStyle};
use crate::profile::MergedVariant;
use crate::request::testing::{args, param, tool};

const PATHS: &[ScopedPath] = &[
    ScopedPath {
        template: "/accounts/{account_id}",
        check: Some("/accounts/{account_id}"),
    },
    ScopedPath {
        template: "/accounts/{account_id}/zones/{zone_id}",
        check: Some("/zones/{zone_id}"),
    },
];

static MERGED: MergedSelector = MergedSelector {
    arg: "account_or_zone",
    id_arg: "account_or_zone_id",
    variants: &[
        MergedVariant {
            value: "accounts",
            id: "account_id",
            noun: "account",
        },
        MergedVariant {
            value: "zones",
            id: "zone_id",
            noun: "zone",
        },
    ],
};

fn account_tool() -> &'static ToolDef {
    static ROUTES: [Route; 1] = [Route {
        when: None,
        template: "/accounts/{account_id}/workers/scripts",
    }];
    let params = vec![param(
        "account_id",
        ParamLocation::Path,
        ParamStyle::Simple,
        false,
    )];
    tool("workers_list", Method::Get, &ROUTES, params.leak(), None)
}

fn merged_tool() -> &'static ToolDef {
    static ROUTES: [Route; 2] = [
        Route {
            when: Some(("account_or_zone", "accounts")),
            template: "/accounts/{account_or_zone_id}/rulesets",
        },
        Route {
            when: Some(("account_or_zone", "zones")),
            template: "/zones/{account_or_zone_id}/rulesets",
        },
    ];
    let params = vec![param(
        "account_or_zone_id",
        ParamLocation::Path,
        ParamStyle::Simple,
        false,
    )];
    tool("rulesets_list", Method::Get, &ROUTES, params.leak(), None)
}

#[test]
fn only_a_defined_scoped_path_spelled_exactly_is_a_scope() {
    let a = parse(PATHS, "/accounts/a1").unwrap();
    assert_eq!(a.values, [("account_id", "a1".to_owned())]);
    assert_eq!(a.path.template, "/accounts/{account_id}");
    let z = parse(PATHS, "/accounts/a1/zones/z-9").unwrap();
    assert_eq!(z.value("zone_id"), Some("z-9"));
    assert_eq!(z.fill_template("/zones/{zone_id}"), "/zones/z-9");
    for bad in [
        "",
        "/",
        "/accounts",
        "/accounts/",
        "/accounts/a1/",
        "/Accounts/a1",
        "/ACCOUNTS/a1",
        "/accounts/a1%2Fb",
        "/accounts/a%31",
        "/accounts/..",
        "/accounts/.",
        "/accounts/a1/../b2",
        "/accounts/a1/zones",
        "/accounts/a1/other/z1",
        "/accounts/a1?x=1",
        "/accounts/a1#f",
        "/accounts//a1",
        "accounts/a1",
        "/zones/z1",
    ] {
        assert!(parse(PATHS, bad).is_none(), "{bad:?}");
    }
    let long = format!("/accounts/{}", "a".repeat(MAX_VALUE + 1));
    assert!(parse(PATHS, &long).is_none());
    assert!(parse(&[], "/accounts/a1").is_none());
}

#[test]
fn constrained_arguments_are_filled_and_another_value_refused() {
    let scope = parse(PATHS, "/accounts/a1").unwrap();
    let t = account_tool();
    let mut given = args(json!({}));
    scope.fill(t, &mut given, None).unwrap();
    assert_eq!(given["account_id"], "a1");
    let mut same = args(json!({"account_id": "a1"}));
    scope.fill(t, &mut same, None).unwrap();
    let mut other = args(json!({"account_id": "b2"}));
    let refused = scope.fill(t, &mut other, None).unwrap_err();
    assert!(refused.contains("`account_id` = `b2`"), "{refused}");
    assert!(refused.contains("/mcp/accounts/a1"), "{refused}");
    let mut number = args(json!({"account_id": 7}));
    assert!(scope.fill(t, &mut number, None).is_err());
}

#[test]
fn a_merged_route_is_constrained_by_its_selector() {
    let scope = parse(PATHS, "/accounts/a1").unwrap();
    let t = merged_tool();
    let mut account = args(json!({"account_or_zone": "accounts"}));
    scope.fill(t, &mut account, Some(&MERGED)).unwrap();
    assert_eq!(account["account_or_zone_id"], "a1");
    let mut other = args(json!({"account_or_zone": "accounts", "account_or_zone_id": "b2"}));
    assert!(scope.fill(t, &mut other, Some(&MERGED)).is_err());
    // A zone is not constrained at an account's URL.
    let mut zone = args(json!({"account_or_zone": "zones", "account_or_zone_id": "z1"}));
    scope.fill(t, &mut zone, Some(&MERGED)).unwrap();
    assert_eq!(zone["account_or_zone_id"], "z1");
    assert!(
        scope
            .check_path(t, "/accounts/a1/rulesets", Some(&MERGED))
            .is_ok()
    );
    assert!(
        scope
            .check_path(t, "/accounts/b2/rulesets", Some(&MERGED))
            .is_err()
    );
    assert!(
        scope
            .check_path(t, "/zones/z1/rulesets", Some(&MERGED))
            .is_ok()
    );
}

#[test]
fn built_paths_naming_another_value_are_refused() {
    let scope = parse(PATHS, "/accounts/a1").unwrap();
    let t = account_tool();
    assert!(
        scope
            .check_path(t, "/accounts/a1/workers/scripts", None)
            .is_ok()
    );
    let refused = scope
        .check_path(t, "/accounts/b2/workers/scripts", None)
        .unwrap_err();
    assert!(refused.contains("`b2`"), "{refused}");
    // Encoded or otherwise different spellings are another value.
    assert!(
        scope
            .check_path(t, "/accounts/a%31/workers/scripts", None)
            .is_err()
    );
    assert!(scope.check_path(t, "/elsewhere", None).is_err());
}

#[test]
fn schemas_lose_the_constrained_arguments() {
    let scope = parse(PATHS, "/accounts/a1").unwrap();
    let t = account_tool();
    let mut schema = args(json!({
        "type": "object",
        "properties": {"account_id": {"type": "string"}, "name": {"type": "string"}},
        "required": ["account_id", "name"]
    }));
    scope.narrow_schema(t, &mut schema);
    assert_eq!(
        serde_json::Value::Object(schema),
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );
}

#[test]
fn a_zone_check_confirms_the_zone_is_in_the_account() {
    let zone = parse(PATHS, "/accounts/a1/zones/z1").unwrap();
    let check = "/zones/{zone_id}";
    let mine = json!({"id": "z1", "account": {"id": "a1", "name": "A"}});
    assert!(zone.confirmed_by(check, Some(&mine)));
    let flat = json!({"id": "z1", "account_id": "a1"});
    assert!(zone.confirmed_by(check, Some(&flat)));
    // Another account's zone, an answer that names no account, a number
    // standing for the id, no payload at all: refused.
    let theirs = json!({"id": "z1", "account": {"id": "a2"}});
    assert!(!zone.confirmed_by(check, Some(&theirs)));
    assert!(!zone.confirmed_by(check, Some(&json!({"id": "z1"}))));
    assert!(!zone.confirmed_by(check, Some(&json!({"account": {"id": 1}}))));
    assert!(!zone.confirmed_by(check, None));
    // A check that names every value has nothing more to confirm.
    let account = parse(PATHS, "/accounts/a1").unwrap();
    assert!(account.confirmed_by("/accounts/{account_id}", None));
}
