//! Unit tests of profile reads: account slots, envelopes, refusal texts.

use serde_json::json;

use super::testing::{ENVELOPED, GENERIC, MERGED, TOKENS_URL};
use super::*;
use crate::catalogue::{ParamDef, ParamLocation, ParamStyle, ToolDef};
use crate::request::testing::{args, custom};

fn with_path_params(names: &'static [&'static str]) -> &'static ToolDef {
    let params: Vec<ParamDef> = names
        .iter()
        .map(|&n| ParamDef {
            arg: n,
            name: n,
            location: ParamLocation::Path,
            style: ParamStyle::Simple,
            explode: false,
            required: false,
            allow_reserved: false,
        })
        .collect();
    custom(move |t| t.params = params.leak())
}

#[test]
fn account_slot_finds_omitted_account_arguments() {
    let p = &ENVELOPED;
    let t = with_path_params(&["account_id", "zone_id"]);
    assert_eq!(p.account_slot(t, &args(json!({}))), Some("account_id"));
    assert_eq!(
        p.account_slot(t, &args(json!({"account_id": ""}))),
        Some("account_id")
    );
    assert_eq!(p.account_slot(t, &args(json!({"account_id": "a"}))), None);
    let t = with_path_params(&["accountId"]);
    assert_eq!(
        p.account_slot(t, &args(json!({"accountId": null}))),
        Some("accountId")
    );
    let merged = with_path_params(&["account_or_zone_id"]);
    assert_eq!(
        p.account_slot(merged, &args(json!({"account_or_zone": "accounts"}))),
        Some("account_or_zone_id")
    );
    assert_eq!(
        p.account_slot(merged, &args(json!({"account_or_zone": "zones"}))),
        None
    );
    assert_eq!(p.account_slot(merged, &args(json!({}))), None);
    assert_eq!(
        p.account_slot(with_path_params(&["zone_id"]), &args(json!({}))),
        None
    );
}

#[test]
fn a_generic_profile_fills_nothing() {
    let t = with_path_params(&["account_id"]);
    assert_eq!(GENERIC.account_slot(t, &args(json!({}))), None);
    assert!(!GENERIC.is_account_arg("account_id", None));
    assert_eq!(GENERIC.account_note(), None);
    assert!(!GENERIC.envelope.reports_failure(&json!({"success": false})));
}

#[test]
fn account_arguments_of_merged_routes() {
    let p = &ENVELOPED;
    assert!(p.is_account_arg("account_id", None));
    assert!(p.is_account_arg("account_or_zone_id", Some(("account_or_zone", "accounts"))));
    assert!(!p.is_account_arg("account_or_zone_id", Some(("account_or_zone", "zones"))));
    assert!(!p.is_account_arg("account_or_zone_id", None));
    assert!(!p.is_account_arg("zone_id", None));
    assert_eq!(
        p.account_note().as_deref(),
        Some("Account-scoped tools use the token's only account when `account_id` is omitted.")
    );
}

#[test]
fn the_enveloped_profile_reads_its_wrapper() {
    let e = ENVELOPED.envelope;
    assert!(e.reports_failure(&json!({"success": false, "errors": []})));
    assert!(!e.reports_failure(&json!({"success": true})));
    assert_eq!(e.failure_text(), "`success: false`");
    assert_eq!(e.list(&json!({"result": []})), Some(&vec![]));
    assert_eq!(e.list(&json!([])), None);
    let mut body = json!({"success": true, "result": [1], "result_info": null});
    assert_eq!(e.unwrap(&mut body), Some((json!([1]), None)));
    let mut body = json!({"result": 2, "result_info": {"page": 1}});
    assert_eq!(
        e.unwrap(&mut body),
        Some((json!(2), Some(json!({"page": 1}))))
    );
    assert_eq!(e.page_key().as_deref(), Some("result_info"));
}

#[test]
fn refusal_texts_name_the_permissions() {
    let needs = custom(|t| t.permissions = &["DNS Read", "DNS Write"]);
    let none = custom(|_| {});
    let text = ENVELOPED.refusals.advice(needs.permissions);
    assert!(text.contains("`DNS Read`, `DNS Write`"), "{text}");
    assert!(text.contains(TOKENS_URL), "{text}");
    assert!(!text.contains(PERMISSIONS_PLACEHOLDER), "{text}");
    assert!(
        ENVELOPED
            .refusals
            .advice(none.permissions)
            .contains(TOKENS_URL)
    );
    let generic = GENERIC.refusals.advice(needs.permissions);
    assert!(generic.contains("`DNS Read`, `DNS Write`"), "{generic}");
    assert!(generic.contains("credential the server uses"), "{generic}");
    assert!(
        ENVELOPED
            .refusals
            .empty_list_note(needs.permissions)
            .is_some()
    );
    assert_eq!(ENVELOPED.refusals.empty_list_note(none.permissions), None);
    assert_eq!(GENERIC.refusals.empty_list_note(needs.permissions), None);
}

#[test]
fn the_search_note_lists_the_variants() {
    assert_eq!(
        MERGED.search_note(),
        "Account and zone variants are separate paths (/accounts/{account_id}/…, /zones/{zone_id}/…)."
    );
    let three = MergedSelector {
        variants: &[
            MergedVariant {
                value: "a",
                id: "a_id",
                noun: "apple",
            },
            MergedVariant {
                value: "b",
                id: "b_id",
                noun: "bean",
            },
            MergedVariant {
                value: "c",
                id: "c_id",
                noun: "corn",
            },
        ],
        ..MERGED
    };
    assert!(
        three
            .search_note()
            .starts_with("Apple, bean and corn variants"),
        "{}",
        three.search_note()
    );
}
