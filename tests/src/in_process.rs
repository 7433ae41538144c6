//! An in-process server core over a generated catalogue against a
//! loopback upstream, and the server credential of one variable: the
//! builder the in-process catalogue tests (`test_till.rs`,
//! `test_whoami_generic.rs`) share.

use std::sync::Arc;
use std::time::Duration;

use toolforge_runtime::catalogue::Catalogue;
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::credential::{Credential, ServerSecrets};
use toolforge_runtime::server::{Core, CoreOptions};

use crate::upstream::Upstream;

/// A core serving `catalogue` with default exposure against `upstream`
/// (10 s timeout, 1 MiB bodies); `output_schemas` lists them,
/// `credential_hint` is what a call without a credential is told.
///
/// # Errors
///
/// The upstream URL is refused or the core cannot be built.
pub fn core(
    catalogue: &'static Catalogue,
    upstream: &Upstream,
    output_schemas: bool,
    credential_hint: &str,
) -> Result<Core, String> {
    let base = validate_upstream(&upstream.url(), true).map_err(|e| e.to_string())?;
    Core::new(
        catalogue,
        CoreOptions {
            exposure: Exposure::default(),
            upstream: UpstreamConfig {
                base,
                timeout: Duration::from_secs(10),
                max_body_bytes: 1 << 20,
            },
            output_schemas,
            max_argument_bytes: 100_000,
            credential_hint: credential_hint.to_owned(),
        },
    )
    .map_err(|e| e.to_string())
}

/// The server credential of `catalogue` when only the variable `var` is
/// set, to `value`.
///
/// # Errors
///
/// The value is refused by the catalogue's schemes.
pub fn credential(
    catalogue: &'static Catalogue,
    var: &str,
    value: &str,
) -> Result<Credential, String> {
    let profile = &catalogue.profile;
    let secrets = ServerSecrets::from_env(profile, profile.token_env, |n| {
        (n == var).then(|| value.to_owned())
    })
    .map_err(|e| e.to_string())?;
    Credential::with_secrets(None, "test environment", Arc::new(secrets)).map_err(|e| e.to_string())
}
