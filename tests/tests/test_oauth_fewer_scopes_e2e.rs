#![allow(clippy::unwrap_used, clippy::panic)]
//! The provider grants fewer scopes than asked, end to end: the user picks
//! *full* on the consent page but unticks `api:read` at oidc-provider's
//! own consent (`--withhold-once`). The grant records what the provider
//! granted (its token's `scope` lacks `api:read`), so the first
//! `zones_list` is refused upstream and answered with an
//! `insufficient_scope` challenge for `api:read`; the official TypeScript
//! SDK client authorizes again, the user allows it this time, and the
//! retry succeeds with a grant holding the old scopes plus the new one.

use std::time::Duration;

use serde_json::Value;
use toolforge_tests::clients;
use toolforge_tests::oauth::UpstreamOptions;
use toolforge_tests::step_up_run::{run_step_up, step};
use toolforge_tests::with_deadline;

fn scopes(value: &Value) -> Vec<String> {
    value
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_grant_of_fewer_scopes_is_recorded_and_the_missing_one_steps_up() {
    let label = "a_grant_of_fewer_scopes_is_recorded_and_the_missing_one_steps_up";
    if !clients::require_oidc_provider(label).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        // Full access asked; the provider withholds api:read once.
        let upstream = UpstreamOptions {
            withhold_once: Some("api:read"),
            ..UpstreamOptions::default()
        };
        let run = run_step_up(&upstream, "all").unwrap_or_else(|e| panic!("{label}: {e}"));
        let (report, sign_ins, up) = (run.report, run.sign_ins, run.upstream);
        let first = scopes(&step(&report, "first-sign-in")["token_scope"]);
        assert!(
            first.iter().any(|s| s == "api:write"),
            "{label}: granted api:write: {report}"
        );
        assert!(
            !first.iter().any(|s| s == "api:read"),
            "{label}: the grant records that api:read was not granted: {report}"
        );
        let challenged = step(&report, "challenged");
        assert_eq!(challenged["pending"], true, "{label}: {report}");
        let asked = scopes(&step(&report, "second-sign-in")["scope"]);
        assert!(
            asked.iter().any(|s| s == "api:read"),
            "{label}: asks for api:read: {report}"
        );
        assert!(
            asked.iter().any(|s| s == "api:write"),
            "{label}: keeps api:write: {report}"
        );
        let second = scopes(&step(&report, "second-sign-in")["token_scope"]);
        for scope in ["api:read", "api:write"] {
            assert!(
                second.iter().any(|s| s == scope),
                "{label}: new grant holds {scope}: {report}"
            );
        }
        assert_eq!(
            step(&report, "retry")["isError"],
            false,
            "{label}: {report}"
        );
        assert_eq!(sign_ins, 2, "{label}: two sign-ins");
        let requests = up.requests().unwrap();
        let statuses: Vec<i64> = requests
            .iter()
            .filter_map(|r| r["status"].as_i64())
            .collect();
        assert_eq!(
            statuses.first(),
            Some(&403),
            "{label}: first refused upstream: {statuses:?}"
        );
        assert_eq!(
            statuses.last(),
            Some(&200),
            "{label}: the retry: {statuses:?}"
        );
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
