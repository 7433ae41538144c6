#![allow(clippy::unwrap_used, clippy::panic)]
//! Step-up for a client that keeps its refresh token, end to end: the
//! official TypeScript SDK client (which answers `insufficient_scope` by
//! refreshing first) signs in through the consent page's default
//! template (*minimal*), keeps the refresh token, and calls `zones_list`.
//! The server challenges; the SDK's refresh is refused with
//! `invalid_grant` (a step-up is pending), never returning a token; the
//! SDK drops its tokens, authorizes again with the challenge's scope, and
//! the retry succeeds with a grant holding the old scopes plus the new one.

use std::time::Duration;

use serde_json::Value;
use toolforge_tests::clients;
use toolforge_tests::oauth::UpstreamOptions;
use toolforge_tests::step_up_run::{run_step_up_with, step};
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
fn a_client_holding_a_refresh_token_steps_up_from_the_default_consent() {
    let label = "a_client_holding_a_refresh_token_steps_up_from_the_default_consent";
    if !clients::require_oidc_provider(label).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    with_deadline(Duration::from_secs(300), move || {
        // "": the consent page's preselected template.
        let run = run_step_up_with(&UpstreamOptions::default(), "", true)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let (report, sign_ins, up) = (run.report, run.sign_ins, run.upstream);
        let first = scopes(&step(&report, "first-sign-in")["token_scope"]);
        assert!(
            !first.iter().any(|s| s == "api:read" || s == "api:write"),
            "{label}: the default template is minimal: {report}"
        );
        assert_eq!(
            step(&report, "refresh-held")["held"],
            true,
            "{label}: {report}"
        );
        assert_eq!(
            step(&report, "challenged")["pending"],
            true,
            "{label}: {report}"
        );

        // The token endpoint saw: the first code, the refused refresh, the
        // second code; no refresh ever returned a token.
        let calls = report["tokenCalls"].as_array().cloned().unwrap_or_default();
        let kinds: Vec<(&str, u64)> = calls
            .iter()
            .map(|c| {
                (
                    c["grant_type"].as_str().unwrap_or_default(),
                    c["status"].as_u64().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("authorization_code", 200),
                ("refresh_token", 400),
                ("authorization_code", 200),
            ],
            "{label}: {report}"
        );
        let refused = &calls[1];
        assert_eq!(refused["error"], "invalid_grant", "{label}: {report}");
        assert!(
            refused["error_description"]
                .as_str()
                .unwrap_or_default()
                .contains("api:read"),
            "{label}: the refusal names the scope: {report}"
        );
        assert!(refused["scope"].is_null(), "{label}: {report}");

        let second = step(&report, "second-sign-in");
        let asked = scopes(&second["scope"]);
        assert!(asked.iter().any(|s| s == "api:read"), "{label}: {report}");
        let granted = scopes(&second["token_scope"]);
        for old in &first {
            assert!(
                granted.contains(old),
                "{label}: the new grant keeps {old}: {report}"
            );
        }
        assert!(
            granted.iter().any(|s| s == "api:read"),
            "{label}: and adds api:read: {report}"
        );
        assert_eq!(
            step(&report, "retry")["isError"],
            false,
            "{label}: {report}"
        );
        assert_eq!(sign_ins, 2, "{label}: two sign-ins");
        let requests = up.requests().unwrap();
        let last = requests
            .last()
            .cloned()
            .expect("the API mock saw the retry");
        assert_eq!(last["status"], 200, "{label}: {last}");
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
