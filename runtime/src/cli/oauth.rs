//! `--auth oauth`: builds the authorization server's setup from
//! `--oauth-config` and the environment before the listener binds.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};

use crate::catalogue::Catalogue;
use crate::oauth::config::OAuthConfig;
use crate::oauth::crypto::ServerKeys;
use crate::oauth::upstream::UpstreamClient;
use crate::oauth::{OAuthSetup, store};

/// Loads the config, reads the secrets it names, opens (and migrates) the
/// grant store.
///
/// # Errors
///
/// A bad config, a missing or short secret, or a store that cannot open.
pub async fn setup(catalogue: &Catalogue, path: &Path) -> anyhow::Result<Arc<OAuthSetup>> {
    let config = OAuthConfig::load(path)?;
    let secret = std::env::var(&config.secret_env)
        .ok()
        .filter(|v| !v.is_empty())
        .with_context(|| {
            format!(
                "--auth oauth: set `{}` to the server secret (at least 32 random bytes, base64url; the same on every instance)",
                config.secret_env
            )
        })?;
    let keys = ServerKeys::from_secret(&secret)
        .with_context(|| format!("--auth oauth: `{}`", config.secret_env))?;
    let client_secret = std::env::var(&config.upstream.client_secret_env)
        .ok()
        .filter(|v| !v.is_empty())
        .with_context(|| {
            format!(
                "--auth oauth: set `{}` to the upstream client secret",
                config.upstream.client_secret_env
            )
        })?;
    if client_secret.chars().any(char::is_control) {
        bail!(
            "--auth oauth: `{}` holds a control character",
            config.upstream.client_secret_env
        );
    }
    let scopes = config
        .scopes()
        .map_err(|problem| anyhow::anyhow!("--oauth-config: `scope_catalogue` {problem}"))?;
    let store = store::open(&config.store).await?;
    tracing::info!(backend = store.backend(), "grant store open");
    let upstream = UpstreamClient::new(config.upstream.clone(), client_secret)?;
    Ok(Arc::new(OAuthSetup {
        config,
        keys,
        store,
        upstream,
        scopes,
        products: crate::server::oauth_front::skills_of(catalogue),
    }))
}
