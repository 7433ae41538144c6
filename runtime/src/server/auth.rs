//! Client authentication for the HTTP transport.
//!
//! Client bearer tokens are configured server-side as SHA-256 digests
//! (`--tokens-file` JSON or `TOOLFORGE_HTTP_TOKENS`), each mapped to an
//! upstream credential. A presented token is hashed and compared with every
//! configured digest in constant time.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::credential::{Credential, CredentialError};

/// Environment variable with `sha256hex=ENV_NAME,...` token mappings.
pub const TOKENS_ENV: &str = "TOOLFORGE_HTTP_TOKENS";

/// A token configuration the server refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The tokens file cannot be read.
    #[error("--tokens-file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The tokens file is not the expected JSON. Only the position and the
    /// kind of problem are kept: the parser's own message quotes the
    /// offending value, which may be a token.
    #[error(
        "--tokens-file {path}: {problem} at line {line}, column {column} (expected {{\"tokens\":[{{\"sha256\":\"<64 hex>\",\"upstream_token_env\":\"NAME\"}} or {{\"sha256\":\"…\",\"upstream_token\":\"…\"}}]}})"
    )]
    Parse {
        /// The file.
        path: String,
        /// What kind of problem, without any value from the file.
        problem: &'static str,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
    },
    /// An entry of `TOOLFORGE_HTTP_TOKENS` is not `sha256hex=ENV_NAME`.
    #[error("{TOKENS_ENV}: entry {index} is not `sha256hex=ENV_NAME`")]
    EnvEntry {
        /// 1-based entry number.
        index: usize,
    },
    /// A digest is not 64 hex digits.
    #[error(
        "{origin}: `sha256` of entry {index} must be 64 hex digits (the SHA-256 of the client token)"
    )]
    Digest {
        /// Which configuration.
        origin: &'static str,
        /// 1-based entry number.
        index: usize,
    },
    /// The same digest appears twice.
    #[error("{origin}: entry {index} repeats a client token digest")]
    Duplicate {
        /// Which configuration.
        origin: &'static str,
        /// 1-based entry number.
        index: usize,
    },
    /// An entry names both or neither of `upstream_token_env` and `upstream_token`.
    #[error(
        "{origin}: entry {index} must have exactly one of `upstream_token_env` and `upstream_token`"
    )]
    Upstream {
        /// Which configuration.
        origin: &'static str,
        /// 1-based entry number.
        index: usize,
    },
    /// The environment variable an entry names is not set.
    #[error("{origin}: entry {index} names the environment variable `{name}`, which is not set")]
    MissingEnv {
        /// Which configuration.
        origin: &'static str,
        /// 1-based entry number.
        index: usize,
        /// The variable.
        name: String,
    },
    /// The upstream token of an entry is unusable.
    #[error("{origin}: entry {index}: {source}")]
    Credential {
        /// Which configuration.
        origin: &'static str,
        /// 1-based entry number.
        index: usize,
        /// Why.
        #[source]
        source: CredentialError,
    },
    /// No client token is configured at all.
    #[error(
        "the HTTP transport needs client tokens: pass --tokens-file FILE or set {TOKENS_ENV}=sha256hex=ENV_NAME,..."
    )]
    NoTokens,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    tokens: Vec<FileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    sha256: String,
    #[serde(default)]
    upstream_token_env: Option<String>,
    #[serde(default)]
    upstream_token: Option<String>,
}

/// Configured client tokens (digests) and their upstream credentials.
#[derive(Debug, Default, Clone)]
pub struct TokenTable {
    entries: Vec<([u8; 32], Credential)>,
}

impl TokenTable {
    /// Number of configured client tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No client token is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Loads a `--tokens-file`, reading named variables with `env`.
    ///
    /// # Errors
    ///
    /// Unreadable file, bad JSON, bad digest, duplicate, or an unusable
    /// upstream token.
    pub fn load_file(
        &mut self,
        path: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(), AuthError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::Read {
            path: shown.clone(),
            source,
        })?;
        let file: TokensFile = serde_json::from_str(&text).map_err(|e| AuthError::Parse {
            path: shown,
            problem: match e.classify() {
                serde_json::error::Category::Io => "unreadable",
                serde_json::error::Category::Syntax => "not valid JSON",
                serde_json::error::Category::Eof => "JSON cut short",
                serde_json::error::Category::Data => {
                    "an unknown field, a missing field or a value of the wrong type"
                }
            },
            line: e.line(),
            column: e.column(),
        })?;
        const ORIGIN: &str = "--tokens-file";
        for (i, entry) in file.tokens.into_iter().enumerate() {
            let index = i + 1;
            let (token, label) = match (entry.upstream_token_env, entry.upstream_token) {
                (Some(name), None) => {
                    let value = env(&name).ok_or_else(|| AuthError::MissingEnv {
                        origin: ORIGIN,
                        index,
                        name: name.clone(),
                    })?;
                    (value, format!("env `{name}` (tokens-file entry {index})"))
                }
                (None, Some(token)) => (token, format!("tokens-file entry {index}")),
                _ => {
                    return Err(AuthError::Upstream {
                        origin: ORIGIN,
                        index,
                    });
                }
            };
            self.add(ORIGIN, index, &entry.sha256, &token, label)?;
        }
        Ok(())
    }

    /// Loads `sha256hex=ENV_NAME,...` (the `TOOLFORGE_HTTP_TOKENS` format).
    ///
    /// # Errors
    ///
    /// A malformed entry, bad digest, duplicate or unset variable.
    pub fn load_env_spec(
        &mut self,
        spec: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(), AuthError> {
        const ORIGIN: &str = TOKENS_ENV;
        for (i, part) in spec
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .enumerate()
        {
            let index = i + 1;
            let Some((digest, name)) = part.split_once('=') else {
                return Err(AuthError::EnvEntry { index });
            };
            let name = name.trim();
            let token = env(name).ok_or_else(|| AuthError::MissingEnv {
                origin: ORIGIN,
                index,
                name: name.to_owned(),
            })?;
            let label = format!("env `{name}` ({TOKENS_ENV} entry {index})");
            self.add(ORIGIN, index, digest.trim(), &token, label)?;
        }
        Ok(())
    }

    fn add(
        &mut self,
        origin: &'static str,
        index: usize,
        digest_hex: &str,
        token: &str,
        label: String,
    ) -> Result<(), AuthError> {
        let mut digest = [0u8; 32];
        hex::decode_to_slice(digest_hex.trim(), &mut digest)
            .map_err(|_| AuthError::Digest { origin, index })?;
        if self.entries.iter().any(|(d, _)| *d == digest) {
            return Err(AuthError::Duplicate { origin, index });
        }
        let credential = Credential::new(token, label).map_err(|source| AuthError::Credential {
            origin,
            index,
            source,
        })?;
        self.entries.push((digest, credential));
        Ok(())
    }

    /// Joins every entry's upstream token to the server's other
    /// credentials (a profile with schemes; see [`Credential::bind`]).
    pub fn bind(&mut self, secrets: &std::sync::Arc<crate::credential::ServerSecrets>) {
        for (_, credential) in &mut self.entries {
            *credential = credential.bind(secrets);
        }
    }

    /// The upstream credential of a presented client token, comparing its
    /// digest with every configured one in constant time.
    pub fn authenticate(&self, client_token: &str) -> Option<Credential> {
        let digest: [u8; 32] = Sha256::digest(client_token.as_bytes()).into();
        let mut found = None;
        for (d, credential) in &self.entries {
            if bool::from(d.ct_eq(&digest)) {
                found = Some(credential.clone());
            }
        }
        found
    }
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Hex SHA-256 of a client token, as written in the tokens file.
pub fn digest_hex(client_token: &str) -> String {
    hex::encode(Sha256::digest(client_token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "UP_A" => Some("upstream-a".into()),
            "UP_B" => Some("upstream-b".into()),
            _ => None,
        }
    }

    #[test]
    fn file_and_env_tokens_map_to_credentials() {
        let dir = std::env::temp_dir().join(format!("tf-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        std::fs::write(
            &path,
            format!(
                r#"{{"tokens":[{{"sha256":"{}","upstream_token_env":"UP_A"}},{{"sha256":"{}","upstream_token":"inline-up"}}]}}"#,
                digest_hex("client-1"),
                digest_hex("client-2").to_uppercase()
            ),
        )
        .unwrap();
        let mut table = TokenTable::default();
        table.load_file(&path, env).unwrap();
        table
            .load_env_spec(&format!("{}=UP_B", digest_hex("client-3")), env)
            .unwrap();
        assert_eq!(table.len(), 3);
        assert!(
            table
                .authenticate("client-1")
                .unwrap()
                .label()
                .contains("UP_A")
        );
        assert!(table.authenticate("client-2").is_some());
        assert!(
            table
                .authenticate("client-3")
                .unwrap()
                .label()
                .contains("UP_B")
        );
        assert!(table.authenticate("client-4").is_none());
        assert!(table.authenticate("").is_none());
        // the same digest twice is refused
        let err = table
            .load_env_spec(&format!("{}=UP_A", digest_hex("client-1")), env)
            .unwrap_err();
        assert!(matches!(err, AuthError::Duplicate { .. }), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_configurations_are_named_without_secrets() {
        let mut t = TokenTable::default();
        let err = t.load_env_spec("nothex=UP_A", env).unwrap_err();
        assert!(matches!(err, AuthError::Digest { .. }), "{err}");
        let err = t
            .load_env_spec(&format!("{}=UNSET", digest_hex("x")), env)
            .unwrap_err();
        assert!(err.to_string().contains("UNSET"), "{err}");
        let err = t.load_env_spec("justtext", env).unwrap_err();
        assert!(matches!(err, AuthError::EnvEntry { index: 1 }), "{err}");
        let err = t
            .load_file(Path::new("/nonexistent/tokens.json"), env)
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tokens.json"));
    }

    #[test]
    fn malformed_tokens_files_never_echo_their_values() {
        let dir = std::env::temp_dir().join(format!("tf-auth-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        for text in [
            r#"{"tokens":"sk-live-SECRET-1"}"#,
            r#"{"tokens":[{"sha256":"sk-live-SECRET-1","upstream_token":7}]}"#,
            r#"{"tokens":[{"sha256":"ab","upstream_token":"sk-live-SECRET-1","sk-live-SECRET-1":1}]}"#,
            r#"{"tokens":[{"upstream_token":"sk-live-SECRET-1"}]}"#,
            r#"{"tokens":[{"sha256":"sk-live-SECRET-1"#,
            r#"sk-live-SECRET-1"#,
            r#"{"tokens":[{"sha256":"00","upstream_token":"sk-live-SECRET-1"}]}"#,
        ] {
            std::fs::write(&path, text).unwrap();
            let err = TokenTable::default().load_file(&path, env).unwrap_err();
            let shown = format!("{err} {err:?}");
            let chain = std::iter::successors(std::error::Error::source(&err), |e| e.source())
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                !shown.contains("SECRET") && !chain.contains("SECRET"),
                "{text}: {shown} / {chain}"
            );
            if matches!(err, AuthError::Parse { .. }) {
                assert!(shown.contains("tokens.json"), "{shown}");
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearer"), None);
    }
}
