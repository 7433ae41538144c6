//! The command line's view of the catalogue's credentials: the `--help`
//! listing of the variables to set, and reading them at start-up.

use std::sync::Arc;

use anyhow::Context as _;

use crate::catalogue::Catalogue;
use crate::credential::{Credential, ServerSecrets};
use crate::security::SchemeKind;

/// The `--help` section naming every credential variable, what it holds,
/// and how many tools need it.
pub(super) fn help(catalogue: &Catalogue) -> String {
    let profile = &catalogue.profile;
    if profile.schemes.is_empty() {
        return format!(
            "Credentials:\n  {}  the API token, sent as a bearer token with every call (over HTTP, --tokens-file maps client tokens to upstream tokens instead)",
            profile.token_env
        );
    }
    let mut lines = vec![
        "Credentials (environment variables; unset or empty means not configured):".to_owned(),
    ];
    for (index, scheme) in profile.schemes.iter().enumerate() {
        let index = u16::try_from(index).unwrap_or(u16::MAX);
        let tools = catalogue
            .tools()
            .filter(|t| t.security.iter().any(|alt| alt.contains(&index)))
            .count();
        if let SchemeKind::Unsupported { what } = scheme.kind {
            lines.push(format!(
                "  (scheme `{}`: {what} cannot be sent; {tools} tools accept it)",
                scheme.name
            ));
            continue;
        }
        let primary = if profile.primary == Some(index) {
            " (--token-env renames it; over HTTP, --tokens-file supplies it per client)"
        } else {
            ""
        };
        for (var, part) in scheme.env.iter().zip(scheme.kind.env_parts()) {
            let var = if profile.primary == Some(index) && *var == scheme.env[0] {
                profile.token_env
            } else {
                var
            };
            lines.push(format!(
                "  {var}  {part} of scheme `{}`, {}; {tools} tools accept it{primary}",
                scheme.name,
                scheme.kind.describe()
            ));
        }
    }
    lines.join("\n")
}

/// The profile's credentials read from the process environment (`None`
/// for a profile without schemes), logging which variables are set.
pub(super) fn server_secrets(
    catalogue: &'static Catalogue,
    token_env: &str,
) -> anyhow::Result<Option<Arc<ServerSecrets>>> {
    if catalogue.profile.schemes.is_empty() {
        return Ok(None);
    }
    let secrets = ServerSecrets::from_env(&catalogue.profile, token_env, |name| {
        std::env::var(name).ok()
    })
    .context("upstream credentials")?;
    let tools = catalogue.tools().map(|t| (t.name, t.security));
    for unset in secrets.disabled_tools(tools) {
        tracing::info!(
            "credentials: {}; those tools answer with an error naming the variables",
            unset.describe(5)
        );
    }
    Ok(Some(Arc::new(secrets)))
}

/// The server's own credential over stdio (and unauthenticated HTTP):
/// every scheme from the environment, or the one token of a profile
/// without schemes.
pub(super) fn server_credential(
    token_env: &str,
    secrets: Option<&Arc<ServerSecrets>>,
) -> anyhow::Result<Option<Credential>> {
    match secrets {
        Some(secrets) => Ok(Some(
            Credential::with_secrets(None, "the server's environment", secrets.clone())
                .context("upstream credential")?,
        )),
        None => {
            let credential = match std::env::var(token_env) {
                Ok(value) => Some(
                    Credential::new(&value, format!("env `{token_env}`"))
                        .context("upstream credential")?,
                ),
                Err(_) => None,
            };
            if credential.is_none() {
                tracing::warn!(
                    "`{token_env}` is not set: tools are listed, but calls will fail until the server runs with it"
                );
            }
            Ok(credential)
        }
    }
}
