//! Server configuration: exposure policy and upstream base URL rules (the
//! per-API defaults are in the catalogue's [`crate::profile::Profile`]).

pub mod servers;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use url::{Host, Url};

use crate::catalogue::{Catalogue, ToolDef};

/// Where an upstream URL under check came from, named in its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamOrigin {
    /// `--upstream URL`.
    Flag,
    /// The profile's default: the spec's first server, filled in.
    Spec,
}

impl std::fmt::Display for UpstreamOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Flag => "--upstream",
            Self::Spec => "the default upstream (the spec's first server; --upstream overrides it)",
        })
    }
}

/// A configuration value the server refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The upstream URL does not parse.
    #[error("{origin} `{url}` is not a valid URL: {source}")]
    UpstreamUrl {
        /// Where it came from.
        origin: UpstreamOrigin,
        /// The value given.
        url: String,
        /// The parser's complaint.
        #[source]
        source: url::ParseError,
    },
    /// The upstream URL is not https (or loopback http with the flag).
    #[error(
        "{origin} `{url}` must use https; plain http is allowed only for a loopback host (127.0.0.0/8, ::1, localhost) together with --allow-loopback-upstream"
    )]
    UpstreamNotHttps {
        /// Where it came from.
        origin: UpstreamOrigin,
        /// The value given.
        url: String,
    },
    /// The upstream URL carries credentials, a query or a fragment.
    #[error("{origin} `{url}` must not contain {what}")]
    UpstreamExtra {
        /// Where it came from.
        origin: UpstreamOrigin,
        /// The value given (credentials removed).
        url: String,
        /// What it contains.
        what: &'static str,
    },
    /// No upstream given and the API has no default.
    #[error("--upstream is required: the `{api}` API has no default base URL")]
    NoUpstream {
        /// The catalogue's API name.
        api: String,
    },
    /// No upstream given and the spec's server is a relative URL.
    #[error(
        "--upstream is required: the `{api}` API's server `{url}` is relative (the spec names no host)"
    )]
    RelativeServer {
        /// The catalogue's API name.
        api: String,
        /// The server URL, variables filled.
        url: String,
    },
    /// `--server-var` names no variable of the default server.
    #[error("--server-var: unknown variable `{name}`; the server's variables are: {known}")]
    UnknownServerVar {
        /// The unknown name.
        name: String,
        /// Every variable, comma-separated (or why there is none).
        known: String,
    },
    /// `--server-var` gives a value outside the variable's `enum`.
    #[error(
        "--server-var: `{value}` is not allowed for `{name}`; the allowed values are: {allowed}"
    )]
    ServerVarValue {
        /// The variable.
        name: String,
        /// The value given.
        value: String,
        /// The allowed values, comma-separated.
        allowed: String,
    },
    /// `--server-var` together with `--upstream`, which it cannot affect.
    #[error(
        "--server-var fills the spec's server URL and has no effect with --upstream; give one or the other"
    )]
    ServerVarWithUpstream,
    /// `--products` names a product the catalogue does not have.
    #[error("--products: unknown product `{name}`; the products are: {known}")]
    UnknownProduct {
        /// The unknown name.
        name: String,
        /// Every product, comma-separated.
        known: String,
    },
    /// `--products` and `--read-only` leave no tool.
    #[error("--products / --read-only leave no tool to serve")]
    NothingExposed,
}

/// Checks and parses the upstream base URL.
///
/// # Errors
///
/// Refuses anything but `https://…`, except `http://` to a loopback host
/// when `allow_loopback` is set; refuses user info, query and fragment.
pub fn validate_upstream(raw: &str, allow_loopback: bool) -> Result<Url, ConfigError> {
    check_upstream(raw, allow_loopback, UpstreamOrigin::Flag)
}

/// The upstream base URL the server uses: `--upstream` (`upstream`) when
/// given, else the profile's default server with its variables filled from
/// their defaults and `server_vars` (`--server-var name=value`). Either is
/// checked by the rules of [`validate_upstream`].
///
/// # Errors
///
/// `--server-var` with `--upstream`; an unknown variable or a value
/// outside its `enum`; no default server, or a relative one, without
/// `--upstream`; and every refusal of [`validate_upstream`], naming where
/// the URL came from.
pub fn upstream_base(
    catalogue: &Catalogue,
    upstream: Option<&str>,
    server_vars: &[(String, String)],
    allow_loopback: bool,
) -> Result<Url, ConfigError> {
    if let Some(raw) = upstream {
        if !server_vars.is_empty() {
            return Err(ConfigError::ServerVarWithUpstream);
        }
        return validate_upstream(raw, allow_loopback);
    }
    let profile = &catalogue.profile;
    let Some(template) = profile.base_url else {
        if let Some((name, _)) = server_vars.first() {
            return Err(ConfigError::UnknownServerVar {
                name: name.clone(),
                known: "none (the API has no default server)".to_owned(),
            });
        }
        return Err(ConfigError::NoUpstream {
            api: catalogue.api.to_owned(),
        });
    };
    let raw = servers::server_url(template, profile.server_vars, server_vars)?;
    if let Err(url::ParseError::RelativeUrlWithoutBase) = Url::parse(&raw) {
        return Err(ConfigError::RelativeServer {
            api: catalogue.api.to_owned(),
            url: raw,
        });
    }
    check_upstream(&raw, allow_loopback, UpstreamOrigin::Spec)
}

fn check_upstream(
    raw: &str,
    allow_loopback: bool,
    origin: UpstreamOrigin,
) -> Result<Url, ConfigError> {
    let url = Url::parse(raw).map_err(|source| ConfigError::UpstreamUrl {
        origin,
        url: raw.to_owned(),
        source,
    })?;
    let shown = || {
        let mut u = url.clone();
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.to_string()
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConfigError::UpstreamExtra {
            origin,
            url: shown(),
            what: "credentials (user:password@)",
        });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ConfigError::UpstreamExtra {
            origin,
            url: shown(),
            what: "a query or fragment",
        });
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if allow_loopback && is_loopback_host(&url) => Ok(url),
        _ => Err(ConfigError::UpstreamNotHttps {
            origin,
            url: shown(),
        }),
    }
}

fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Which tools the server exposes (`--products`, `--read-only`).
#[derive(Debug, Clone, Default)]
pub struct Exposure {
    products: Option<BTreeSet<String>>,
    read_only: bool,
}

/// Why a tool is outside the exposure policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// Its product is not in `--products`.
    Product,
    /// It is not read-only and `--read-only` is set.
    NotReadOnly,
}

impl Exposure {
    /// Builds the policy, checking product names against `catalogue`.
    ///
    /// # Errors
    ///
    /// An unknown product name, or a policy that leaves no tool.
    pub fn new(
        catalogue: &Catalogue,
        products: Option<Vec<String>>,
        read_only: bool,
    ) -> Result<Self, ConfigError> {
        let products = match products {
            None => None,
            Some(names) => {
                let mut set = BTreeSet::new();
                for name in names {
                    let name = name.trim();
                    if name.is_empty() {
                        continue;
                    }
                    if !catalogue.products.iter().any(|p| p.name == name) {
                        return Err(ConfigError::UnknownProduct {
                            name: name.to_owned(),
                            known: catalogue
                                .products
                                .iter()
                                .map(|p| p.name)
                                .collect::<Vec<_>>()
                                .join(", "),
                        });
                    }
                    set.insert(name.to_owned());
                }
                Some(set)
            }
        };
        let policy = Self {
            products,
            read_only,
        };
        if !catalogue.tools().any(|t| policy.check(t).is_ok()) {
            return Err(ConfigError::NothingExposed);
        }
        Ok(policy)
    }

    /// Whether `tool` is served.
    ///
    /// # Errors
    ///
    /// Says why the tool is hidden.
    pub fn check(&self, tool: &ToolDef) -> Result<(), Hidden> {
        if let Some(products) = &self.products
            && !products.contains(tool.product)
        {
            return Err(Hidden::Product);
        }
        if self.read_only && !tool.annotations.read_only {
            return Err(Hidden::NotReadOnly);
        }
        Ok(())
    }
}

/// Limits and target of upstream calls.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Validated base URL (no trailing slash is required).
    pub base: Url,
    /// Total time allowed for one upstream call, body included.
    pub timeout: Duration,
    /// Largest upstream body read; larger bodies are an error.
    pub max_body_bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_rules() {
        assert!(validate_upstream("https://api.example.com/client/v4", false).is_ok());
        for bad in ["http://api.example.com", "ftp://x", "http://127.0.0.1:9/"] {
            let err = validate_upstream(bad, false).unwrap_err();
            assert!(matches!(err, ConfigError::UpstreamNotHttps { .. }), "{bad}");
        }
        for ok in [
            "http://127.0.0.1:9/v4",
            "http://[::1]:8/",
            "http://localhost:1",
            "http://127.9.9.9",
        ] {
            assert!(validate_upstream(ok, true).is_ok(), "{ok}");
        }
        assert!(validate_upstream("http://10.0.0.1/", true).is_err());
        assert!(validate_upstream("http://example.com/", true).is_err());
        let err = validate_upstream("https://u:pw@h/", false).unwrap_err();
        assert!(!err.to_string().contains("pw"), "{err}");
        assert!(validate_upstream("https://h/?k=1", false).is_err());
        assert!(validate_upstream("not a url", false).is_err());
    }

    use crate::profile::{Profile, ServerVar};

    fn catalogue(base_url: Option<&'static str>, server_vars: &'static [ServerVar]) -> Catalogue {
        Catalogue {
            api: "example",
            profile: Profile {
                base_url,
                server_vars,
                ..Profile::generic("EXAMPLE_API_TOKEN")
            },
            products: &[],
            source: "{}",
            spec: "",
            skills: &[],
        }
    }

    const REGION: &[ServerVar] = &[ServerVar {
        name: "region",
        default: "eu",
        allowed: &["eu", "us"],
    }];

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_default_upstream_is_the_filled_server() {
        let cat = catalogue(Some("https://{region}.api.example.com/v1"), REGION);
        let url = upstream_base(&cat, None, &[], false).unwrap();
        assert_eq!(url.as_str(), "https://eu.api.example.com/v1");
        let url = upstream_base(&cat, None, &vars(&[("region", "us")]), false).unwrap();
        assert_eq!(url.as_str(), "https://us.api.example.com/v1");
        let err = upstream_base(&cat, None, &vars(&[("region", "ap")]), false).unwrap_err();
        assert!(matches!(err, ConfigError::ServerVarValue { .. }), "{err}");
        let err = upstream_base(&cat, None, &vars(&[("zone", "a")]), false).unwrap_err();
        assert!(err.to_string().contains("`region`"), "{err}");
    }

    #[test]
    fn upstream_overrides_the_server_and_excludes_server_vars() {
        let cat = catalogue(Some("https://{region}.api.example.com/v1"), REGION);
        let url = upstream_base(&cat, Some("https://other.example/v9"), &[], false).unwrap();
        assert_eq!(url.as_str(), "https://other.example/v9");
        let err = upstream_base(
            &cat,
            Some("https://other.example/v9"),
            &vars(&[("region", "us")]),
            false,
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::ServerVarWithUpstream), "{err}");
        // --upstream is checked as before, whatever the default.
        let err = upstream_base(&cat, Some("http://other.example"), &[], true).unwrap_err();
        assert!(err.to_string().starts_with("--upstream `"), "{err}");
    }

    #[test]
    fn a_plain_http_server_is_refused_naming_the_flag() {
        let cat = catalogue(Some("http://api.example.com/v1"), &[]);
        let err = upstream_base(&cat, None, &[], false).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(
                err,
                ConfigError::UpstreamNotHttps {
                    origin: UpstreamOrigin::Spec,
                    ..
                }
            ),
            "{msg}"
        );
        assert!(msg.contains("--allow-loopback-upstream"), "{msg}");
        assert!(msg.contains("spec's first server"), "{msg}");
        // Loopback http is allowed with the flag, as for --upstream.
        let cat = catalogue(Some("http://127.0.0.1:8080/v1"), &[]);
        assert!(upstream_base(&cat, None, &[], false).is_err());
        assert!(upstream_base(&cat, None, &[], true).is_ok());
    }

    #[test]
    fn no_or_a_relative_server_requires_upstream() {
        let err = upstream_base(&catalogue(None, &[]), None, &[], false).unwrap_err();
        assert!(matches!(err, ConfigError::NoUpstream { .. }), "{err}");
        assert!(err.to_string().contains("--upstream"), "{err}");
        let err =
            upstream_base(&catalogue(None, &[]), None, &vars(&[("a", "b")]), false).unwrap_err();
        assert!(matches!(err, ConfigError::UnknownServerVar { .. }), "{err}");
        for relative in ["/v1", "v2", ""] {
            let err = upstream_base(&catalogue(Some(relative), &[]), None, &[], false).unwrap_err();
            assert!(matches!(err, ConfigError::RelativeServer { .. }), "{err}");
            assert!(
                err.to_string().starts_with("--upstream is required"),
                "{err}"
            );
        }
    }
}
