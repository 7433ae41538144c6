//! The generated profile, not the API name, decides API behaviour: the
//! Cloudflare sample's own profile under another name still fills the
//! default account and unwraps the envelope, and the generic profile under
//! the name `cloudflare` does neither. In-process server cores over the
//! generated catalogue's tools, against a scripted loopback upstream.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolforge_runtime::catalogue::Catalogue;
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::credential::Credential;
use toolforge_runtime::profile::Profile;
use toolforge_runtime::server::{Core, CoreOptions};
use toolforge_tests::upstream::{Reply, Upstream};

/// A tool whose only path argument is an account (optional in its schema).
const TOOL: &str = "account_d1_database_get";
const ACCOUNT: &str = "acc0000000000000000000000000001";

/// The sample's tools under another API name and `profile`.
fn catalogue(api: &'static str, profile: Profile) -> &'static Catalogue {
    let sample = &cloudflare_tools::CATALOGUE;
    Box::leak(Box::new(Catalogue {
        api,
        profile,
        products: sample.products,
        source: sample.source,
        spec: "",
        skills: &[],
    }))
}

/// An account the upstream refuses.
const DENIED: &str = "denied";

/// Answers the account listing with one account, calls for [`DENIED`] with
/// a 403, and everything else with an empty enveloped list.
fn upstream() -> Upstream {
    Upstream::start(|req| {
        if req.path() == "/accounts" {
            Reply::envelope(json!([{"id": ACCOUNT, "name": "Main"}]))
        } else if req.path().starts_with(&format!("/accounts/{DENIED}/")) {
            Reply::cf_error(403, 10000, "Authentication error")
        } else {
            Reply::json(
                200,
                &json!({"success": true, "errors": [], "messages": [], "result": [], "result_info": {"count": 0}}),
            )
        }
    })
    .unwrap()
}

fn core(catalogue: &'static Catalogue, upstream: &Upstream) -> Core {
    Core::new(
        catalogue,
        CoreOptions {
            exposure: Exposure::default(),
            upstream: UpstreamConfig {
                base: validate_upstream(&upstream.url(), true).unwrap(),
                timeout: Duration::from_secs(10),
                max_body_bytes: 1 << 20,
            },
            output_schemas: false,
            max_argument_bytes: 100_000,
            credential_hint: "set `TEST_TOKEN`".into(),
        },
    )
    .unwrap()
}

/// Calls `TOOL` with `account_id` (omitted when `None`); the result as MCP JSON.
async fn call(core: &Core, account: Option<&str>) -> Value {
    let credential = Credential::new("profile-test-token", "test").unwrap();
    let mut args = Map::new();
    if let Some(account) = account {
        args.insert("account_id".into(), json!(account));
    }
    let result = core
        .call(TOOL, Some(args), Some(&credential))
        .await
        .unwrap();
    serde_json::to_value(result).unwrap()
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn instructions(core: &Core) -> String {
    core.info().instructions.unwrap_or_default()
}

#[tokio::test]
async fn the_cloudflare_profile_under_another_name_fills_the_account() {
    let upstream = upstream();
    let core = core(
        catalogue("something-else", cloudflare_tools::CATALOGUE.profile),
        &upstream,
    );
    let result = call(&core, None).await;
    assert_eq!(result["isError"], false, "{result}");
    let paths: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.target.clone())
        .collect();
    assert_eq!(
        paths,
        [
            "/accounts?per_page=50".to_owned(),
            format!("/accounts/{ACCOUNT}/d1/database")
        ]
    );
    // The envelope is unwrapped and the empty list flagged with the permission.
    assert_eq!(
        result["structuredContent"],
        json!({"result": [], "result_info": {"count": 0}}),
        "{result}"
    );
    let t = text(&result);
    assert!(
        t.contains("the list is empty") && t.contains("`D1 Read`"),
        "{t}"
    );
    assert!(
        instructions(&core).contains("when `account_id` is omitted"),
        "{}",
        instructions(&core)
    );
    // A refusal names the permission and where API tokens are managed.
    let refused = text(&call(&core, Some(DENIED)).await);
    assert!(
        refused.contains("needs the token permission(s) `D1 Read`")
            && refused.contains("dash.cloudflare.com/profile/api-tokens"),
        "{refused}"
    );
}

#[tokio::test]
async fn the_generic_profile_under_the_name_cloudflare_fills_nothing() {
    let upstream = upstream();
    let core = core(
        catalogue("cloudflare", Profile::generic("CLOUDFLARE_API_TOKEN")),
        &upstream,
    );
    let result = call(&core, None).await;
    assert_eq!(result["isError"], true, "{result}");
    let t = text(&result);
    assert!(t.contains("account_id"), "{t}");
    assert!(
        upstream.requests().is_empty(),
        "no account lookup, no call: {:?}",
        upstream.requests()
    );
    assert!(
        !instructions(&core).contains("account"),
        "{}",
        instructions(&core)
    );
    // With the account given: no empty-list note, and a refusal explained
    // in the generic words.
    let result = call(&core, Some(ACCOUNT)).await;
    assert_eq!(result["isError"], false, "{result}");
    assert!(!text(&result).contains("the list is empty"), "{result}");
    let refused = text(&call(&core, Some(DENIED)).await);
    assert!(
        refused.contains("grant them to the credential the server uses")
            && !refused.contains("dash.cloudflare.com"),
        "{refused}"
    );
}
