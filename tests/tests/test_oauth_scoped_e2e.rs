#![allow(clippy::unwrap_used, clippy::panic)]
//! A path-scoped session end to end: the real server with `--auth oauth`
//! in front of oidc-provider, and the official TypeScript SDK client
//! connecting to `/mcp/accounts/A`. The SDK discovers the path-suffixed
//! protected-resource metadata, authorizes for that resource, and calls
//! `accounts_get` without `account_id`: the server checks once that the
//! user's token sees account A, fills the argument and the call succeeds.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::browser::{Browser, Consent};
use toolforge_tests::clients;
use toolforge_tests::oauth::{
    LOGIN, OAuthOptions, OAuthServer, OAuthUpstream, PASSWORD, UpstreamOptions,
};
use toolforge_tests::with_deadline;

const LIMIT: Duration = Duration::from_secs(240);
/// The account the API mock knows.
const ACCOUNT: &str = "01a7362d577a6c3019a474fd6f485823";

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == name))
        .unwrap_or_else(|| panic!("no `{name}` step in the report: {report}"))
}

#[test]
fn the_typescript_sdk_signs_in_for_one_account_and_calls_there() {
    let label = "the_typescript_sdk_signs_in_for_one_account_and_calls_there";
    if !clients::require_oidc_provider(label).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        let up = OAuthUpstream::start(&UpstreamOptions::default()).unwrap();
        let options = OAuthOptions {
            scope_catalogue: Some(json!([
                {"id": "api:read", "description": "Read", "read_only": true, "permissions": ["Account Settings Read", "Zone Read"]},
                {"id": "api:write", "description": "Write", "read_only": false, "permissions": ["Account Settings Write", "Zone Write"]},
            ])),
            ..OAuthOptions::default()
        };
        let server = OAuthServer::start(&up, &options)
            .unwrap_or_else(|e| panic!("{label}: {e}\nupstream log:\n{}", up.log()));
        let redirect = "http://127.0.0.1:9/cb".to_owned();
        let url = format!("{}/accounts/{ACCOUNT}", server.mcp_url());
        let plan = json!({
            "url": url,
            "redirectUrl": redirect,
            "call": {"name": "accounts_get", "arguments": {}},
        });
        let mut command = Command::new("node");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        command.arg(dir.join("js/oauth-step-up.mjs")).current_dir(dir);
        let mut authorize_urls = Vec::new();
        let report = toolforge_tests::oauth_driver::drive_client(
            command,
            &plan,
            LIMIT,
            &mut |authorize| {
                authorize_urls.push(authorize.to_owned());
                Browser::new()
                    .sign_in(authorize, &redirect, &Consent::default(), LOGIN, PASSWORD)
                    .map(|s| s.final_url)
            },
            &mut |_| Ok(()),
        )
        .unwrap_or_else(|e| {
            panic!("{label}: {e}\nserver log:\n{}\nupstream log:\n{}", server.server.log(), up.log())
        });
        assert_eq!(authorize_urls.len(), 1, "{label}: one sign-in: {report}");
        let resource = url::Url::parse(&authorize_urls[0])
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "resource")
            .map(|(_, v)| v.into_owned());
        assert_eq!(resource.as_deref(), Some(url.as_str()), "{label}: the SDK asked for the scoped resource");
        let call = step(&report, "call");
        assert_eq!(call["isError"], false, "{label}: {report}");
        assert!(call["text"].as_str().unwrap_or_default().contains(ACCOUNT), "{label}: {report}");
        let paths: Vec<String> = up
            .requests()
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {}", r["method"], r["path"].as_str().unwrap_or_default(), r["status"]))
            .collect();
        let account = format!("\"GET\" /accounts/{ACCOUNT} 200");
        assert_eq!(
            paths.iter().filter(|p| **p == account).count(),
            2,
            "{label}: the visibility check, then the call: {paths:?}"
        );
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
