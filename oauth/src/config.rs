//! The `--oauth-config` file (JSON or TOML; JSON Schema in
//! `runtime/oauth/oauth-config.schema.json`): the public base URL every
//! issued URL derives from, the upstream provider, the scope catalogue,
//! lifetimes, the grant store and the Client ID Metadata Document fetcher.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

/// A configuration the server refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("--oauth-config {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON / TOML for this schema.
    #[error("--oauth-config {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (the file holds no secrets: they are named
        /// by environment variable).
        message: String,
    },
    /// A field has a value the server cannot use.
    #[error("--oauth-config {path}: `{field}` {problem}")]
    Invalid {
        /// The file.
        path: String,
        /// The field (dotted).
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// The whole file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// JSON Schema reference for editors; ignored.
    #[serde(default, rename = "$schema")]
    pub schema: Option<String>,
    /// The server's public origin, e.g. `https://mcp.example.com` (no path).
    /// Every issued URL, `iss`, the audience and the metadata derive from
    /// it, never from request headers. `http://` only for loopback hosts,
    /// where `{port}` is replaced with the bound port.
    pub public_url: String,
    /// Environment variable holding the server secret: at least 32 random
    /// bytes, base64url. Every instance sharing a store needs the same one.
    #[serde(default = "default_secret_env")]
    pub secret_env: String,
    /// Grant store URL: `sqlite:PATH` (created on start) or `postgres://…`.
    #[serde(default = "default_store")]
    pub store: String,
    /// Accept RFC 7591 dynamic client registration at `/register`.
    #[serde(default)]
    pub dynamic_registration: bool,
    /// The upstream OAuth provider users sign in with.
    pub upstream: UpstreamProvider,
    /// Upstream scopes and what each covers: a JSON file (a path relative
    /// to this file; the repository ships the flagship API's in
    /// `runtime/oauth/`) or the list itself. Without
    /// one, only `upstream.scopes` are requested.
    #[serde(default = "default_catalogue")]
    pub scope_catalogue: ScopeCatalogue,
    /// The catalogue's entries, read by [`OAuthConfig::load`].
    #[serde(skip)]
    #[schemars(skip)]
    pub resolved_scopes: Vec<ScopeEntry>,
    /// Token lifetimes.
    #[serde(default)]
    pub lifetimes: Lifetimes,
    /// Client ID Metadata Document fetching.
    #[serde(default)]
    pub cimd: CimdConfig,
    /// Seconds a validated access token may be served from this
    /// instance's cache: a revocation made on another instance takes
    /// effect within this bound (on the same instance, at once).
    #[serde(default = "default_token_cache_secs")]
    pub token_cache_secs: u64,
    /// Bounds on what one address, and everyone together, may create.
    #[serde(default)]
    pub limits: super::limits::Limits,
    /// The scheduled purge and registered clients' lifetimes.
    #[serde(default)]
    pub retention: super::limits::Retention,
}

fn default_secret_env() -> String {
    "TOOLFORGE_OAUTH_SECRET".into()
}

fn default_store() -> String {
    "sqlite:toolforge-grants.db".into()
}

fn default_catalogue() -> ScopeCatalogue {
    ScopeCatalogue::List(Vec::new())
}

fn default_token_cache_secs() -> u64 {
    5
}

/// How the server authenticates to the upstream token endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenAuth {
    /// HTTP Basic with the client id and secret.
    #[default]
    ClientSecretBasic,
    /// Client id and secret in the form body.
    ClientSecretPost,
}

/// The upstream provider.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamProvider {
    /// Shown on the consent page ("sign in with …").
    pub name: String,
    /// The provider's authorization endpoint.
    pub authorize_url: String,
    /// The provider's token endpoint.
    pub token_url: String,
    /// The provider's RFC 7009 revocation endpoint, if any.
    #[serde(default)]
    pub revoke_url: Option<String>,
    /// This server's client id at the provider.
    pub client_id: String,
    /// Environment variable holding the client secret.
    pub client_secret_env: String,
    /// Scopes always requested (e.g. `offline_access`), besides the ones
    /// the consent choice selects from the catalogue.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Client authentication at the token endpoint.
    #[serde(default)]
    pub token_auth: TokenAuth,
    /// Extra query parameters for the provider's authorization URL.
    #[serde(default)]
    pub extra_authorize_params: BTreeMap<String, String>,
}

/// The scope catalogue: a file, or listed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ScopeCatalogue {
    /// A JSON file holding the list, relative to the config file.
    File(String),
    /// The scopes themselves.
    List(Vec<ScopeEntry>),
}

/// One upstream scope.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeEntry {
    /// The upstream scope id.
    pub id: String,
    /// What it allows, for the consent page.
    pub description: String,
    /// Requested for a read-only session.
    #[serde(default)]
    pub read_only: bool,
    /// Tool permissions (the catalogue's permission names) it covers.
    #[serde(default)]
    pub permissions: Vec<String>,
}

/// Token lifetimes in seconds.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Lifetimes {
    /// Downstream access tokens.
    pub access_token_secs: u64,
    /// Downstream refresh tokens (and the grant's end).
    pub refresh_token_secs: u64,
    /// Downstream authorization codes.
    pub code_secs: u64,
    /// From consent to the upstream callback (the signed `state`).
    pub sign_in_secs: u64,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self {
            access_token_secs: 3600,
            refresh_token_secs: 30 * 24 * 3600,
            code_secs: 60,
            sign_in_secs: 600,
        }
    }
}

/// Client ID Metadata Document fetching.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CimdConfig {
    /// Largest document accepted, in bytes.
    pub max_bytes: usize,
    /// Whole fetch timeout, in milliseconds.
    pub timeout_ms: u64,
    /// Seconds a fetched document is reused.
    pub cache_secs: u64,
    /// Seconds a failed fetch is answered from the cache.
    pub negative_cache_secs: u64,
    /// Documents (and failures) cached at once; past it the least
    /// recently used entry goes.
    pub max_cached: usize,
    /// The host name lookup's own timeout, in milliseconds.
    pub dns_timeout_ms: u64,
    /// TESTING ONLY: allow loopback and private addresses.
    pub allow_private_addresses: bool,
    /// TESTING ONLY: allow `http://` client ids.
    pub allow_http: bool,
}

impl Default for CimdConfig {
    fn default() -> Self {
        Self {
            max_bytes: 16 * 1024,
            timeout_ms: 5000,
            cache_secs: 300,
            negative_cache_secs: 30,
            max_cached: 1024,
            dns_timeout_ms: 2000,
            allow_private_addresses: false,
            allow_http: false,
        }
    }
}

impl OAuthConfig {
    /// Reads a `.json` or `.toml` file (by extension; anything else is
    /// tried as JSON) and checks it.
    ///
    /// # Errors
    ///
    /// Unreadable, unparsable, or a value the server cannot use.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        let is_toml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let mut config: Self = if is_toml {
            toml::from_str(&text).map_err(|e| ConfigError::Parse {
                path: shown.clone(),
                message: e.message().to_owned(),
            })?
        } else {
            serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
                path: shown.clone(),
                message: e.to_string(),
            })?
        };
        config.resolved_scopes = match &config.scope_catalogue {
            ScopeCatalogue::List(list) => list.clone(),
            ScopeCatalogue::File(file) => {
                let base = path.parent().unwrap_or(Path::new("."));
                let file_path = base.join(file);
                let text =
                    std::fs::read_to_string(&file_path).map_err(|e| ConfigError::Invalid {
                        path: shown.clone(),
                        field: "scope_catalogue".into(),
                        problem: format!(
                            "names {}, which cannot be read: {e}",
                            file_path.display()
                        ),
                    })?;
                serde_json::from_str(&text).map_err(|e| ConfigError::Invalid {
                    path: shown.clone(),
                    field: "scope_catalogue".into(),
                    problem: format!(
                        "names {}, which is not a scope list: {e}",
                        file_path.display()
                    ),
                })?
            }
        };
        config.check(&shown)?;
        Ok(config)
    }

    fn check(&self, path: &str) -> Result<(), ConfigError> {
        let invalid = |field: &str, problem: &str| ConfigError::Invalid {
            path: path.to_owned(),
            field: field.to_owned(),
            problem: problem.to_owned(),
        };
        let public = self.public_url.replace("{port}", "1");
        let url = url::Url::parse(&public)
            .map_err(|_| invalid("public_url", "is not an absolute URL"))?;
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(invalid(
                "public_url",
                "must be an origin without path, query or fragment (e.g. https://mcp.example.com)",
            ));
        }
        if !secure_or_loopback(&url) {
            return Err(invalid(
                "public_url",
                "must be https (http only for a loopback host)",
            ));
        }
        if self.public_url.contains("{port}") && url.scheme() != "http" {
            return Err(invalid(
                "public_url",
                "may contain `{port}` only for a loopback http URL",
            ));
        }
        for (field, value) in [
            ("upstream.authorize_url", Some(&self.upstream.authorize_url)),
            ("upstream.token_url", Some(&self.upstream.token_url)),
            ("upstream.revoke_url", self.upstream.revoke_url.as_ref()),
        ] {
            let Some(value) = value else { continue };
            let url =
                url::Url::parse(value).map_err(|_| invalid(field, "is not an absolute URL"))?;
            if !secure_or_loopback(&url) {
                return Err(invalid(
                    field,
                    "must be https (http only for a loopback host)",
                ));
            }
        }
        if self.upstream.client_id.is_empty() {
            return Err(invalid("upstream.client_id", "is empty"));
        }
        if self.lifetimes.access_token_secs == 0
            || self.lifetimes.code_secs == 0
            || self.lifetimes.sign_in_secs == 0
            || self.lifetimes.refresh_token_secs < self.lifetimes.access_token_secs
        {
            return Err(invalid(
                "lifetimes",
                "need positive lifetimes, and refresh_token_secs ≥ access_token_secs",
            ));
        }
        self.scopes()
            .map_err(|problem| invalid("scope_catalogue", &problem))?;
        if self.limits.max_body_bytes < 16 * 1024 {
            return Err(invalid(
                "limits.max_body_bytes",
                "must be at least 16384 (a registration may be 16 KiB)",
            ));
        }
        if self.limits.max_redirect_uris == 0 || self.limits.max_redirect_uri_bytes < 32 {
            return Err(invalid(
                "limits",
                "max_redirect_uris must be positive and max_redirect_uri_bytes at least 32",
            ));
        }
        if self.cimd.max_cached == 0 {
            return Err(invalid("cimd.max_cached", "must be positive"));
        }
        Ok(())
    }

    /// The scope catalogue's entries.
    ///
    /// # Errors
    ///
    /// A repeated scope id.
    pub fn scopes(&self) -> Result<Vec<ScopeEntry>, String> {
        let mut seen = std::collections::BTreeSet::new();
        for entry in &self.resolved_scopes {
            if !seen.insert(entry.id.as_str()) {
                return Err(format!("repeats the scope `{}`", entry.id));
            }
        }
        Ok(self.resolved_scopes.clone())
    }

    /// The public origin with `{port}` filled in, without a trailing slash.
    pub fn public_origin(&self, port: u16) -> String {
        self.public_url
            .replace("{port}", &port.to_string())
            .trim_end_matches('/')
            .to_owned()
    }

    /// The JSON Schema of this file.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(OAuthConfig)).unwrap_or_default()
    }
}

/// `https`, or `http` to a loopback host.
pub fn secure_or_loopback(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    const UPSTREAM: &str = r#""upstream": {"name": "P", "authorize_url": "https://p.example/auth",
        "token_url": "https://p.example/token", "client_id": "c", "client_secret_env": "S"}"#;

    #[test]
    fn json_and_toml_give_the_same_config() {
        let (_d, json) = write(
            "c.json",
            &format!(r#"{{"public_url": "https://mcp.example.com", {UPSTREAM}}}"#),
        );
        let (_e, toml) = write(
            "c.toml",
            "public_url = \"https://mcp.example.com\"\n[upstream]\nname = \"P\"\nauthorize_url = \"https://p.example/auth\"\ntoken_url = \"https://p.example/token\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\n",
        );
        let a = OAuthConfig::load(&json).expect("json");
        let b = OAuthConfig::load(&toml).expect("toml");
        assert_eq!(a.public_origin(0), b.public_origin(0));
        assert_eq!(a.store, "sqlite:toolforge-grants.db");
        assert_eq!(
            a.scopes().expect("scopes").len(),
            b.scopes().expect("scopes").len()
        );
    }

    #[test]
    fn insecure_or_pathful_public_urls_are_refused() {
        for bad in [
            "http://mcp.example.com",
            "https://mcp.example.com/mcp",
            "https://{port}.example.com",
            "ftp://x",
        ] {
            let (_d, path) = write(
                "c.json",
                &format!(r#"{{"public_url": "{bad}", {UPSTREAM}}}"#),
            );
            let err = OAuthConfig::load(&path).expect_err(bad).to_string();
            assert!(err.contains("public_url"), "{bad}: {err}");
        }
        let (_d, path) = write(
            "c.json",
            &format!(r#"{{"public_url": "http://127.0.0.1:{{port}}", {UPSTREAM}}}"#),
        );
        let config = OAuthConfig::load(&path).expect("loopback");
        assert_eq!(config.public_origin(8080), "http://127.0.0.1:8080");
    }

    #[test]
    fn a_missing_scope_catalogue_file_is_refused() {
        let (_e, path) = write(
            "c.json",
            &format!(
                r#"{{"public_url": "https://mcp.example.com", "scope_catalogue": "missing.json", {UPSTREAM}}}"#
            ),
        );
        let err = OAuthConfig::load(&path).expect_err("missing").to_string();
        assert!(err.contains("scope_catalogue"), "{err}");
    }

    #[test]
    fn the_committed_schema_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../runtime/oauth/oauth-config.schema.json"
        );
        let want = serde_json::to_string_pretty(&OAuthConfig::json_schema()).expect("json") + "\n";
        if std::env::var_os("TOOLFORGE_BLESS").is_some() {
            std::fs::write(path, &want).expect("write schema");
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(have, want, "rerun with TOOLFORGE_BLESS=1 to update {path}");
    }
}
