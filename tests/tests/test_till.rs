#![allow(clippy::unwrap_used, clippy::panic)]
//! The Stripe-shaped sample (`forge.till.json`: the generic policy plus
//! forge.json `envelope` `{errors: "/error", items: "/data"}`, no policy
//! code, no runtime edit) served by an in-process server core against a
//! loopback fake Till: lists come back as the API's `{object, data,
//! has_more}` object, a refused call quotes the API's own
//! `{error: {code, message}}`, and `whoami` reads `GET /account`.

use serde_json::{Value, json};
use till_tools::CATALOGUE;
use toolforge_runtime::catalogue::Catalogue;
use toolforge_runtime::credential::Credential;
use toolforge_runtime::server::Core;
use toolforge_tests::in_process;
use toolforge_tests::upstream::{Reply, Upstream};

const KEY: &str = "sk_test_till_Qm84vXr2";

fn core(catalogue: &'static Catalogue, upstream: &Upstream) -> Core {
    in_process::core(catalogue, upstream, true, "set `TILL_BEARER_AUTH`").unwrap()
}

/// The server's credential: only `TILL_BEARER_AUTH` is set.
fn credential() -> Credential {
    in_process::credential(&CATALOGUE, "TILL_BEARER_AUTH", KEY).unwrap()
}

/// A fake Till: two customers, the account, and the API's error shape for
/// anything else.
fn fake_till() -> Upstream {
    Upstream::start(|req| {
        if req.header("authorization") != Some(format!("Bearer {KEY}").as_str()) {
            return Reply::json(
                401,
                &json!({"error": {"type": "invalid_request_error", "message": "Invalid API key"}}),
            );
        }
        match req.path() {
            "/customers" => Reply::json(
                200,
                &json!({"object": "list", "url": "/v1/customers", "has_more": false,
                        "data": [{"id": "cus_1", "object": "customer", "created": 1},
                                 {"id": "cus_2", "object": "customer", "created": 2}]}),
            ),
            "/account" => Reply::json(
                200,
                &json!({"id": "acct_9", "object": "account", "business_name": "Corner Shop"}),
            ),
            other => Reply::json(
                404,
                &json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                                  "message": format!("No such object: '{other}'"), "param": "id"}}),
            ),
        }
    })
    .unwrap()
}

async fn call(core: &Core, tool: &str, args: Value) -> Value {
    let args = args.as_object().cloned().filter(|a| !a.is_empty());
    let result = core.call(tool, args, Some(&credential())).await.unwrap();
    serde_json::to_value(result).unwrap()
}

#[tokio::test]
async fn lists_errors_and_identity_follow_the_forge_json_envelope() {
    let upstream = fake_till();
    let core = core(&CATALOGUE, &upstream);

    let list = call(&core, "customers_list", json!({"limit": 2})).await;
    assert_eq!(list["isError"], false, "{list}");
    assert_eq!(
        list["structuredContent"]["data"][1]["id"], "cus_2",
        "{list}"
    );
    assert_eq!(list["structuredContent"]["has_more"], false, "{list}");

    let missing = call(&core, "customers_get", json!({"customer": "cus_404"})).await;
    assert_eq!(missing["isError"], true, "{missing}");
    let text = missing["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("code resource_missing: No such object: '/customers/cus_404'"),
        "{text}"
    );

    let who = call(&core, "whoami", json!({})).await;
    assert_eq!(
        who["structuredContent"],
        json!({"identity": "account:acct_9", "name": "Corner Shop"}),
        "{who}"
    );
    for result in [&list, &missing, &who] {
        assert!(!result.to_string().contains(KEY), "{result}");
    }
}

#[test]
fn the_profile_is_the_generic_one_plus_the_forge_json_envelope() {
    let envelope = CATALOGUE.profile.envelope;
    assert_eq!((envelope.errors, envelope.items), ("/error", Some("/data")));
    assert_eq!(envelope.payload, "");
    assert_eq!(envelope.failure_flag, None);
}
