//! One step-up run end to end, shared by the TypeScript SDK step-up tests:
//! the real server with `--auth oauth` in front of oidc-provider, a scope
//! catalogue of `api:read`/`api:write`, and `tests/js/oauth-step-up.mjs`
//! calling `zones_list`; the first sign-in picks a consent template, the
//! step-up's sign-in keeps the preselected *advanced* one.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{Browser, Consent};
use crate::oauth::{LOGIN, OAuthOptions, OAuthServer, OAuthUpstream, PASSWORD, UpstreamOptions};

/// How long the client script may run.
const LIMIT: Duration = Duration::from_secs(240);

/// What a step-up run leaves for the test to check.
pub struct StepUpRun {
    /// The client script's report (its `steps`).
    pub report: Value,
    /// How many times the browser signed in.
    pub sign_ins: usize,
    /// The upstream, whose API mock logged every request.
    pub upstream: OAuthUpstream,
}

/// Runs the step-up client against a fresh upstream (`upstream`) and
/// server, signing in first with the consent template `first_exposure`.
///
/// # Errors
///
/// A start-up or client failure, with the server's and upstream's logs.
pub fn run_step_up(upstream: &UpstreamOptions, first_exposure: &str) -> Result<StepUpRun, String> {
    run_step_up_with(upstream, first_exposure, false)
}

/// [`run_step_up`], the client keeping its refresh token when
/// `keep_refresh` (then it refreshes before it re-authorizes, as the
/// SDK does); `first_exposure` empty takes the consent page's default.
///
/// # Errors
///
/// As [`run_step_up`].
pub fn run_step_up_with(
    upstream: &UpstreamOptions,
    first_exposure: &str,
    keep_refresh: bool,
) -> Result<StepUpRun, String> {
    let up = OAuthUpstream::start(upstream)?;
    let options = OAuthOptions {
        scope_catalogue: Some(json!([
            {"id": "api:read", "description": "Read", "read_only": true, "permissions": ["Zone Read", "DNS Read"]},
            {"id": "api:write", "description": "Write", "read_only": false, "permissions": ["Zone Write", "DNS Write"]},
        ])),
        ..OAuthOptions::default()
    };
    let server = OAuthServer::start(&up, &options)
        .map_err(|e| format!("{e}\nupstream log:\n{}", up.log()))?;
    let redirect = "http://127.0.0.1:9/cb".to_owned();
    let plan = json!({
        "url": server.mcp_url(),
        "redirectUrl": redirect,
        "call": {"name": "zones_list", "arguments": {"per_page": 5}},
        "keepRefresh": keep_refresh,
    });
    let mut command = Command::new("node");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    command
        .arg(dir.join("js/oauth-step-up.mjs"))
        .current_dir(dir);
    let mut sign_ins = 0;
    let report = crate::oauth_driver::drive_client(
        command,
        &plan,
        LIMIT,
        &mut |url| {
            sign_ins += 1;
            // The step-up's consent page comes with the asked scopes
            // preselected (advanced).
            let consent = Consent {
                exposure: if sign_ins == 1 {
                    first_exposure
                } else {
                    "advanced"
                }
                .to_owned(),
                ..Consent::default()
            };
            Browser::new()
                .sign_in(url, &redirect, &consent, LOGIN, PASSWORD)
                .map(|s| s.final_url)
        },
        &mut |_| Ok(()),
    )
    .map_err(|e| {
        format!(
            "{e}\nserver log:\n{}\nupstream log:\n{}",
            server.server.log(),
            up.log()
        )
    })?;
    Ok(StepUpRun {
        report,
        sign_ins,
        upstream: up,
    })
}

/// The report's step named `name`.
///
/// # Panics
///
/// When the report has no such step (a test helper).
#[allow(clippy::panic)]
pub fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == name))
        .unwrap_or_else(|| panic!("no `{name}` step in the report: {report}"))
}
