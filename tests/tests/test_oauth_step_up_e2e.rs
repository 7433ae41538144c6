#![allow(clippy::unwrap_used, clippy::panic)]
//! Step-up end to end: the real server with `--auth oauth` in front of
//! oidc-provider (whose API mock answers 403 without `api:read`), and the
//! official TypeScript SDK client. The user picks the *minimal* template,
//! so the first `zones_list` is refused upstream; the server answers 403
//! `insufficient_scope` naming `api:read`; the SDK's transport authorizes
//! again with that scope (the consent page preselects it), and the retry
//! succeeds with a grant holding the old scopes plus the new one.

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

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == name))
        .unwrap_or_else(|| panic!("no `{name}` step in the report: {report}"))
}

#[test]
fn the_typescript_sdk_steps_up_on_insufficient_scope_and_retries() {
    let label = "the_typescript_sdk_steps_up_on_insufficient_scope_and_retries";
    if !clients::require_oidc_provider(label).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        let up = OAuthUpstream::start(&UpstreamOptions::default()).unwrap();
        let options = OAuthOptions {
            scope_catalogue: Some(json!([
                {"id": "api:read", "description": "Read", "read_only": true, "permissions": ["Zone Read", "DNS Read"]},
                {"id": "api:write", "description": "Write", "read_only": false, "permissions": ["Zone Write", "DNS Write"]},
            ])),
            ..OAuthOptions::default()
        };
        let server = OAuthServer::start(&up, &options)
            .unwrap_or_else(|e| panic!("{label}: {e}\nupstream log:\n{}", up.log()));
        let redirect = "http://127.0.0.1:9/cb".to_owned();
        let plan = json!({
            "url": server.mcp_url(),
            "redirectUrl": redirect,
            "call": {"name": "zones_list", "arguments": {"per_page": 5}},
        });
        let mut command = Command::new("node");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        command.arg(dir.join("js/oauth-step-up.mjs")).current_dir(dir);
        let mut sign_ins = 0;
        let report = toolforge_tests::oauth_driver::drive_client(
            command,
            &plan,
            LIMIT,
            &mut |url| {
                sign_ins += 1;
                // The user starts minimal; the step-up's consent page comes
                // with the asked scopes preselected (advanced).
                let consent = Consent {
                    exposure: if sign_ins == 1 { "minimal" } else { "advanced" }.to_owned(),
                    ..Consent::default()
                };
                Browser::new()
                    .sign_in(url, &redirect, &consent, LOGIN, PASSWORD)
                    .map(|s| s.final_url)
            },
            &mut |_| Ok(()),
        )
        .unwrap_or_else(|e| {
            panic!("{label}: {e}\nserver log:\n{}\nupstream log:\n{}", server.server.log(), up.log())
        });
        let challenged = step(&report, "challenged");
        assert_eq!(challenged["pending"], true, "{label}: {report}");
        let second = step(&report, "second-sign-in");
        let asked: Vec<&str> = second["scope"].as_str().unwrap_or_default().split(' ').collect();
        assert!(asked.contains(&"api:read"), "{label}: the step-up asks for api:read: {report}");
        assert!(asked.contains(&"offline_access"), "{label}: and keeps the old scopes: {report}");
        let retry = step(&report, "retry");
        assert_eq!(retry["isError"], false, "{label}: the retry succeeds: {report}");
        assert!(sign_ins == 2, "{label}: two sign-ins, got {sign_ins}");
        let requests = up.requests().unwrap();
        let last = requests.last().cloned().expect("the API mock saw the retry");
        assert_eq!(last["status"], 200, "{label}: {last}");
        let scope = last["token"]["scope"].as_str().unwrap_or_default().to_owned();
        assert!(scope.split(' ').any(|s| s == "api:read"), "{label}: upstream scope {scope:?}");
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
