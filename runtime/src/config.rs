//! Server configuration: exposure policy and upstream base URL rules (the
//! per-API defaults are in the catalogue's [`crate::profile::Profile`]).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use url::{Host, Url};

use crate::catalogue::{Catalogue, ToolDef};

/// A configuration value the server refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The upstream URL does not parse.
    #[error("--upstream `{url}` is not a valid URL: {source}")]
    UpstreamUrl {
        /// The value given.
        url: String,
        /// The parser's complaint.
        #[source]
        source: url::ParseError,
    },
    /// The upstream URL is not https (or loopback http with the flag).
    #[error(
        "--upstream `{url}` must use https; plain http is allowed only for a loopback host (127.0.0.0/8, ::1, localhost) together with --allow-loopback-upstream"
    )]
    UpstreamNotHttps {
        /// The value given.
        url: String,
    },
    /// The upstream URL carries credentials, a query or a fragment.
    #[error("--upstream `{url}` must not contain {what}")]
    UpstreamExtra {
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
    let url = Url::parse(raw).map_err(|source| ConfigError::UpstreamUrl {
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
            url: shown(),
            what: "credentials (user:password@)",
        });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ConfigError::UpstreamExtra {
            url: shown(),
            what: "a query or fragment",
        });
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if allow_loopback && is_loopback_host(&url) => Ok(url),
        _ => Err(ConfigError::UpstreamNotHttps { url: shown() }),
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
}
