#![allow(clippy::unwrap_used, clippy::panic)]
//! Step-up end to end: the real server with `--auth oauth` in front of
//! oidc-provider (whose API mock answers 403 without `api:read`), and the
//! official TypeScript SDK client. The user picks the *minimal* template,
//! so the first `zones_list` is refused upstream; the server answers 403
//! `insufficient_scope` naming `api:read`; the SDK's transport authorizes
//! again with that scope (the consent page preselects it), and the retry
//! succeeds with a grant holding the old scopes plus the new one.

use std::time::Duration;

use toolforge_tests::clients;
use toolforge_tests::oauth::UpstreamOptions;
use toolforge_tests::step_up_run::{run_step_up, step};
use toolforge_tests::with_deadline;

#[test]
fn the_typescript_sdk_steps_up_on_insufficient_scope_and_retries() {
    let label = "the_typescript_sdk_steps_up_on_insufficient_scope_and_retries";
    if !clients::require_oidc_provider(label).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        // The user starts minimal.
        let run = run_step_up(&UpstreamOptions::default(), "minimal")
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let (report, sign_ins, up) = (run.report, run.sign_ins, run.upstream);
        let challenged = step(&report, "challenged");
        assert_eq!(challenged["pending"], true, "{label}: {report}");
        let second = step(&report, "second-sign-in");
        let asked: Vec<&str> = second["scope"]
            .as_str()
            .unwrap_or_default()
            .split(' ')
            .collect();
        assert!(
            asked.contains(&"api:read"),
            "{label}: the step-up asks for api:read: {report}"
        );
        assert!(
            asked.contains(&"offline_access"),
            "{label}: and keeps the old scopes: {report}"
        );
        let retry = step(&report, "retry");
        assert_eq!(
            retry["isError"], false,
            "{label}: the retry succeeds: {report}"
        );
        assert!(sign_ins == 2, "{label}: two sign-ins, got {sign_ins}");
        let requests = up.requests().unwrap();
        let last = requests
            .last()
            .cloned()
            .expect("the API mock saw the retry");
        assert_eq!(last["status"], 200, "{label}: {last}");
        let scope = last["token"]["scope"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            scope.split(' ').any(|s| s == "api:read"),
            "{label}: upstream scope {scope:?}"
        );
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
