//! The optional cargo features' part of `serve` (`http` for the metrics
//! listener, `codemode` for the sandboxed modes, `oauth` for `--auth
//! oauth`), decided once from the flags: [`Extensions::from_args`] builds
//! each part the flags ask for, or refuses the flag with the feature it
//! needs, before anything starts. `serve` then reads the value and names
//! no feature but the transport's.

use std::net::SocketAddr;
#[cfg(feature = "oauth")]
use std::path::PathBuf;
#[cfg(feature = "http")]
use std::sync::Arc;

#[cfg(feature = "codemode")]
use anyhow::Context as _;

use super::ServeArgs;
#[cfg(feature = "oauth")]
use super::oauth;
#[cfg(feature = "http")]
use crate::catalogue::Catalogue;
use crate::codemode::{Mode, ModeSetup};
#[cfg(feature = "codemode")]
use crate::sandbox::{Limits, SandboxConfig, WorkerCommand};
#[cfg(feature = "http")]
use crate::server::http::ClientAuth;

/// What the optional features add to one `serve`, built once.
#[derive(Debug)]
pub(super) struct Extensions {
    /// `--metrics-listen` and its connection cap, served by
    /// [`Extensions::start_metrics`].
    metrics: Option<(SocketAddr, u64)>,
    /// The sandbox setup of `--mode codemode|code` (`None`: direct).
    pub mode: Option<ModeSetup>,
    /// `--oauth-config` of `--auth oauth`, checked present.
    #[cfg(feature = "oauth")]
    oauth_config: Option<PathBuf>,
}

impl Extensions {
    /// The parts `args` asks for.
    ///
    /// # Errors
    ///
    /// A flag whose feature this runtime was built without, `--auth oauth`
    /// without `--oauth-config` or with `--tokens-file`, or a sandbox that
    /// cannot locate this binary for its workers.
    pub fn from_args(args: &ServeArgs) -> anyhow::Result<Self> {
        let metrics = match args.metrics_listen {
            None => None,
            #[cfg(not(feature = "http"))]
            Some(_) => return Err(unavailable("--metrics-listen", "http")),
            #[cfg(feature = "http")]
            Some(listen) => Some((listen, args.metrics_max_connections)),
        };
        let oauth = args.auth == super::AuthMode::Oauth;
        #[cfg(not(feature = "oauth"))]
        if oauth {
            return Err(unavailable("--auth oauth", "oauth"));
        }
        #[cfg(feature = "oauth")]
        let oauth_config = if oauth {
            if args.tokens_file.is_some() {
                anyhow::bail!("--auth oauth issues its own client tokens: leave out --tokens-file");
            }
            let Some(path) = &args.oauth_config else {
                anyhow::bail!(
                    "--auth oauth needs --oauth-config FILE (JSON or TOML; see the README, OAuth)"
                );
            };
            Some(path.clone())
        } else {
            None
        };
        Ok(Self {
            metrics,
            mode: mode_setup(args)?,
            #[cfg(feature = "oauth")]
            oauth_config,
        })
    }

    /// Installs the recorder and serves `--metrics-listen`, before anything
    /// is counted.
    ///
    /// # Errors
    ///
    /// The recorder cannot be installed or the address cannot be bound.
    pub async fn start_metrics(&self) -> anyhow::Result<()> {
        let Some((listen, max_connections)) = self.metrics else {
            return Ok(());
        };
        #[cfg(not(feature = "http"))]
        {
            let _ = (listen, max_connections);
            Err(unavailable("--metrics-listen", "http"))
        }
        #[cfg(feature = "http")]
        {
            let handle = crate::metrics::install()?;
            let max = usize::try_from(max_connections).unwrap_or(usize::MAX);
            crate::server::prometheus::spawn_metrics(listen, handle, max).await?;
            Ok(())
        }
    }

    /// The client authentication of `--auth oauth`: the authorization
    /// server's setup from `--oauth-config`.
    ///
    /// # Errors
    ///
    /// A bad config, a missing secret, a store that cannot open.
    #[cfg(feature = "http")]
    pub async fn oauth_auth(
        &self,
        catalogue: &Catalogue,
        secrets: Option<Arc<crate::credential::ServerSecrets>>,
    ) -> anyhow::Result<ClientAuth> {
        #[cfg(not(feature = "oauth"))]
        {
            let _ = (catalogue, secrets);
            Err(unavailable("--auth oauth", "oauth"))
        }
        #[cfg(feature = "oauth")]
        {
            let Some(path) = &self.oauth_config else {
                anyhow::bail!(
                    "--auth oauth needs --oauth-config FILE (JSON or TOML; see the README, OAuth)"
                );
            };
            let setup = oauth::setup(catalogue, path).await?;
            Ok(ClientAuth::OAuth { setup, secrets })
        }
    }
}

/// The sandbox setup of `--mode codemode|code` (`None` for direct);
/// refused when the runtime was built without `codemode`.
fn mode_setup(args: &ServeArgs) -> anyhow::Result<Option<ModeSetup>> {
    if args.mode == Mode::Direct {
        return Ok(None);
    }
    #[cfg(not(feature = "codemode"))]
    {
        anyhow::bail!(
            "--mode {}: {}",
            args.mode.as_str(),
            crate::codemode::DISABLED
        )
    }
    #[cfg(feature = "codemode")]
    {
        let worker =
            WorkerCommand::current_exe().context("locating this binary for the sandbox workers")?;
        let limits = Limits {
            memory_bytes: args.sandbox_memory_mb.max(1).saturating_mul(1 << 20),
            cpu_ms: args.sandbox_cpu_ms.max(1),
            wall_ms: args.sandbox_wall_ms.max(1),
            max_requests: args.sandbox_max_requests,
            ..Limits::default()
        };
        let config = SandboxConfig::new(worker)
            .with_workers(args.sandbox_workers)
            .with_concurrency(args.sandbox_max_workers, args.sandbox_runs_per_client)
            .with_queue(args.sandbox_queue, args.sandbox_queue_per_client)
            .with_limits(limits);
        let mut setup = ModeSetup::new(args.mode, config);
        setup.spec_artifact = args.spec_artifact.clone();
        Ok(Some(setup))
    }
}

/// The refusal of `flag` by a runtime built without cargo feature `feature`.
#[cfg(any(not(feature = "http"), not(feature = "oauth")))]
fn unavailable(flag: &str, feature: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{flag}: this server was built without the `{feature}` feature of toolforge-runtime (rebuild with the feature on, the default)"
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::Cli;

    fn serve(args: &[&str]) -> ServeArgs {
        let argv = std::iter::once("bin").chain(args.iter().copied());
        Cli::try_parse_from(argv).map_or_else(|e| panic!("{e}"), |cli| cli.serve)
    }

    #[test]
    fn oauth_flags_are_checked_once_before_anything_starts() {
        let direct = Extensions::from_args(&serve(&["--transport", "http"]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(direct.mode.is_none() && direct.metrics.is_none());
        let refused = |args: &[&str]| {
            Extensions::from_args(&serve(args)).map_or_else(|e| e.to_string(), |_| String::new())
        };
        let oauth = ["--transport", "http", "--auth", "oauth"];
        let missing = refused(&oauth);
        let with_tokens = refused(&[&oauth[..], &["--tokens-file", "t.json"]].concat());
        if cfg!(feature = "oauth") {
            assert!(missing.contains("needs --oauth-config"), "{missing}");
            assert!(
                with_tokens.contains("leave out --tokens-file"),
                "{with_tokens}"
            );
        } else {
            assert!(missing.contains("without the `oauth` feature"), "{missing}");
        }
    }

    #[test]
    fn metrics_listen_is_kept_with_its_cap() {
        let args = serve(&[
            "--transport",
            "stdio",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-max-connections",
            "3",
        ]);
        let result = Extensions::from_args(&args);
        #[cfg(feature = "http")]
        assert_eq!(
            result
                .unwrap_or_else(|e| panic!("{e}"))
                .metrics
                .map(|(_, max)| max),
            Some(3)
        );
        #[cfg(not(feature = "http"))]
        assert!(result.is_err());
    }
}
