//! `forge.json`: the pin (which spec release), the policy, the generated
//! crate's names and generator options.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{GenerateError, Result};

/// The whole `forge.json` file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ForgeConfig {
    /// Short API name (`cloudflare`), used in docs and the catalogue.
    pub api: String,
    /// The pinned spec release.
    pub spec: SpecPin,
    /// Which API policy to apply.
    pub policy: PolicyKind,
    /// Names of the generated crate.
    #[serde(rename = "crate")]
    pub krate: CrateNames,
    /// Output directory of `generate`, relative to the config file.
    #[serde(default = "default_output")]
    pub output: PathBuf,
    /// Generator options.
    #[serde(default)]
    pub options: GeneratorOptions,
}

fn default_output() -> PathBuf {
    PathBuf::from("generated")
}

/// The pinned release: a file owned by the project or a published URL.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SpecPin {
    /// Human release name (tag, date or commit).
    pub release: String,
    /// Local file (relative to the config file). For URL pins this is where
    /// `toolforge fetch` stores the download (under the git-ignored cache).
    pub path: PathBuf,
    /// Published release URL, when the pin names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Lower-case hex sha256 of the file's bytes.
    pub sha256: String,
}

/// API-specific policy applied to the IR.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    /// Cloudflare rules (merged account/zone paths, permissions, envelope).
    Cloudflare,
    /// Any other OpenAPI 3.x API.
    Generic,
}

/// Package and binary names of the generated crate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CrateNames {
    /// Cargo package name.
    pub package: String,
    /// Binary name.
    pub binary: String,
    /// Path from the output directory to the `toolforge-runtime` crate.
    #[serde(default = "default_runtime_path")]
    pub runtime_path: String,
}

fn default_runtime_path() -> String {
    "../runtime".to_string()
}

/// Knobs of the generator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GeneratorOptions {
    /// Deepest schema nesting accepted.
    pub max_schema_depth: usize,
    /// Largest resolved schema (in JSON nodes) accepted per tool.
    pub max_schema_nodes: usize,
    /// Tool names to keep: operation key (`METHOD /path`) → name. Lets a
    /// release keep a tool's name when the naming rule would change it.
    pub name_lock: BTreeMap<String, String>,
    /// Emit the Code Mode resolved spec artifact.
    pub resolved_spec: bool,
    /// What to do with an operation the generator cannot read.
    pub on_invalid_operation: InvalidOperation,
    /// Which JSON Schema dialect tool input schemas use.
    pub schema_profile: SchemaProfile,
    /// Move subschemas repeated within one tool schema into its `$defs`
    /// (full profile only; see [`crate::schema::share_repeated`]).
    pub share_subschemas: bool,
}

/// The JSON Schema profile of tool input schemas.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum SchemaProfile {
    /// JSON Schema 2020-12 as converted (`$defs` for recursion, `oneOf`,
    /// type arrays, every `format`).
    #[default]
    Full,
    /// Inlined and simplified for strict clients (OpenAI strict, Gemini):
    /// see [`crate::schema::strict`].
    Strict,
}

/// Policy for operations that are malformed (dangling refs, bad schemas…).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum InvalidOperation {
    /// Refuse the whole spec with a typed error (default: nothing slips by).
    #[default]
    Fail,
    /// Skip the operation and list it, with the error, in the README.
    Skip,
}

impl Default for GeneratorOptions {
    fn default() -> Self {
        Self {
            max_schema_depth: 64,
            max_schema_nodes: 200_000,
            name_lock: BTreeMap::new(),
            resolved_spec: true,
            on_invalid_operation: InvalidOperation::Fail,
            schema_profile: SchemaProfile::Full,
            share_subschemas: true,
        }
    }
}

impl ForgeConfig {
    /// Parses `forge.json` text; `file` is used in error messages.
    pub fn parse(text: &str, file: &Path) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| GenerateError::Config {
            file: file.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// A config for an ad-hoc spec with the generic policy.
    pub fn generic(api: &str, spec_path: &Path, sha256: &str) -> Self {
        let mut stem = crate::naming::snake(api).replace('_', "-");
        // Cargo package names (and so crate identifiers) cannot start with a digit.
        if stem.is_empty() || stem.starts_with(|c: char| c.is_ascii_digit()) {
            stem = format!("api-{stem}");
        }
        let package = format!("{}-tools", stem.trim_end_matches('-'));
        Self {
            api: api.to_string(),
            spec: SpecPin {
                release: "unpinned".into(),
                path: spec_path.to_path_buf(),
                url: None,
                sha256: sha256.to_string(),
            },
            policy: PolicyKind::Generic,
            krate: CrateNames {
                binary: format!("{}-mcp", package.trim_end_matches("-tools")),
                package,
                runtime_path: default_runtime_path(),
            },
            output: default_output(),
            options: GeneratorOptions::default(),
        }
    }
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Refuses `bytes` unless their sha256 equals the pin.
pub fn verify_pin(bytes: &[u8], pin: &SpecPin, file: &Path) -> Result<()> {
    let actual = sha256_hex(bytes);
    if actual.eq_ignore_ascii_case(pin.sha256.trim()) {
        Ok(())
    } else {
        Err(GenerateError::ShaMismatch {
            file: file.to_path_buf(),
            expected: pin.sha256.clone(),
            actual,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha_mismatch_is_refused() {
        let pin = SpecPin {
            release: "x".into(),
            path: "a.yaml".into(),
            url: None,
            sha256: sha256_hex(b"one"),
        };
        assert!(verify_pin(b"one", &pin, Path::new("a.yaml")).is_ok());
        let err = verify_pin(b"two", &pin, Path::new("a.yaml")).unwrap_err();
        assert!(err.to_string().contains("sha256 mismatch"), "{err}");
    }

    #[test]
    fn generic_package_names_are_valid_crate_names() {
        let c = ForgeConfig::generic("1forge.com", Path::new("a.json"), "0");
        assert_eq!(c.krate.package, "api-1forge-com-tools");
        assert_eq!(c.krate.binary, "api-1forge-com-mcp");
        let c = ForgeConfig::generic("stripe.com", Path::new("a.json"), "0");
        assert_eq!(c.krate.package, "stripe-com-tools");
    }

    #[test]
    fn schema_profile_defaults_to_full() {
        let o: GeneratorOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(o.schema_profile, SchemaProfile::Full);
        let o: GeneratorOptions = serde_json::from_str(r#"{"schema_profile": "strict"}"#).unwrap();
        assert_eq!(o.schema_profile, SchemaProfile::Strict);
        assert!(serde_json::from_str::<GeneratorOptions>(r#"{"schema_profile": "x"}"#).is_err());
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = ForgeConfig::parse("{\"api\":1}", Path::new("forge.json")).unwrap_err();
        assert!(err.to_string().starts_with("forge.json:"), "{err}");
    }
}
