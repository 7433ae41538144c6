//! `forge.json`: the pin (which spec release), the policy, the generated
//! crate's names and generator options.
//!
//! The types derive their JSON Schema ([`json_schema`]); the committed
//! `generator/forge.schema.json` is that text (a test keeps it up to date)
//! and `forge.json` names it in `$schema` for editors. Unknown fields are
//! refused with their name, the file, a JSON pointer and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{GenerateError, Result};
pub use crate::policy::PolicyKind;

/// The whole `forge.json` file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(title = "forge.json")]
pub struct ForgeConfig {
    /// The JSON Schema of this file, for editors (the repository uses
    /// `generator/forge.schema.json`); the generator ignores it.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
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
    /// How the `whoami` tool finds the credential's identity; replaces the
    /// policy's (Cloudflare declares `GET /user`, then the only account).
    /// Without it a generic API has no `whoami` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityConfig>,
    /// Where payload, failure flag, errors and page metadata are in the
    /// API's response bodies; each field given replaces the policy's (an
    /// API that differs from another only in these names needs no code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<EnvelopeConfig>,
    /// How the API pages its lists; replaces the convention inferred from
    /// the spec (`{"convention": "none"}` turns paging hints off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pagination: Option<crate::ir::Pagination>,
    /// The pinned skills served over MCP (the Skills extension), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<SkillsPin>,
    /// Scoped URLs besides `/mcp` under `--transport http`, e.g.
    /// `["/{org}/{project}"]`: a session connected at `/mcp/acme/web` is
    /// bound to those path parameters (the spec's names), which leave the
    /// tool schemas and are filled by the server. Segments are literals
    /// (`[A-Za-z0-9_-]`) or `{name}`. Replaces the policy's (Cloudflare:
    /// `/accounts/{account_id}` and `/accounts/{account_id}/zones/{zone_id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoped_paths: Option<Vec<String>>,
    /// The skills the OAuth consent page offers (`--auth oauth`), each a
    /// list of tool-name patterns (`*` matches any run of characters), e.g.
    /// `{"dns": ["dns_records_*"], "workers": ["workers_*", "kv_*"]}`.
    /// Without it the page offers one skill per product.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_groups: Option<BTreeMap<String, Vec<String>>>,
}

mod scoped;
mod skill_groups;
pub use scoped::scoped_paths;
pub use skill_groups::skill_groups;

/// The response envelope of forge.json: RFC 6901 JSON pointers (`""` is
/// the whole body). Fields left out keep the policy's values.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeConfig {
    /// The payload of a successful body: `/result` (`""`: the whole body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub payload: Option<String>,
    /// A boolean that is `false` when the API reports a failure with a
    /// 2xx status: `/success`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub failure_flag: Option<String>,
    /// The errors of a failed body, an array of error objects or one
    /// object: `/errors`, `/error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub errors: Option<String>,
    /// In an error object, its message: `/message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub error_message: Option<String>,
    /// In an error object, its code: `/code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub error_code: Option<String>,
    /// Page metadata beside the payload: `/result_info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub page: Option<String>,
    /// In a list payload that is an object, its items: `/data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub items: Option<String>,
}

/// `pagination` if its pointers are JSON pointers, else why not (`file`
/// for the message).
pub fn checked_pagination(
    pagination: &crate::ir::Pagination,
    file: &Path,
) -> Result<crate::ir::Pagination> {
    if let Some(bad) = pagination
        .pointers()
        .into_iter()
        .find(|p| !(p.is_empty() || p.starts_with('/')))
    {
        return Err(GenerateError::Config {
            file: file.to_path_buf(),
            message: format!(
                "/pagination: `{bad}` must be a JSON pointer (empty or starting with `/`)"
            ),
        });
    }
    Ok(pagination.clone())
}

impl EnvelopeConfig {
    /// `envelope` with the fields this config sets replaced, or why a
    /// field is refused (`file` for the message).
    pub fn apply(
        &self,
        mut envelope: crate::ir::BodyEnvelope,
        file: &Path,
    ) -> Result<crate::ir::BodyEnvelope> {
        let fields = [
            ("payload", &self.payload),
            ("failure_flag", &self.failure_flag),
            ("errors", &self.errors),
            ("error_message", &self.error_message),
            ("error_code", &self.error_code),
            ("page", &self.page),
            ("items", &self.items),
        ];
        for (name, value) in fields {
            if let Some(v) = value
                && !(v.is_empty() || v.starts_with('/'))
            {
                return Err(GenerateError::Config {
                    file: file.to_path_buf(),
                    message: format!(
                        "/envelope/{name}: must be a JSON pointer (empty or starting with `/`)"
                    ),
                });
            }
        }
        let set = |field: &mut String, value: &Option<String>| {
            if let Some(v) = value {
                field.clone_from(v);
            }
        };
        set(&mut envelope.payload, &self.payload);
        set(&mut envelope.errors, &self.errors);
        set(&mut envelope.error_message, &self.error_message);
        set(&mut envelope.error_code, &self.error_code);
        let set_optional = |field: &mut Option<String>, value: &Option<String>| {
            if value.is_some() {
                field.clone_from(value);
            }
        };
        set_optional(&mut envelope.failure_flag, &self.failure_flag);
        set_optional(&mut envelope.page, &self.page);
        set_optional(&mut envelope.items, &self.items);
        Ok(envelope)
    }
}

/// The identity endpoint of forge.json: one `GET` whose answer holds the
/// credential's ID; `whoami` answers `<prefix>:<id>`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    /// Path (and query) of the `GET`, relative to the base URL: `/me`.
    #[schemars(regex(pattern = r"^/"))]
    pub path: String,
    /// JSON pointer to the ID in the answer (inside the envelope's
    /// `result` for enveloped APIs): `/id`.
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub id: String,
    /// JSON pointer to a display name shown beside the ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub name: Option<String>,
    /// What the ID names (`user`, `account`): the identity string is
    /// `<prefix>:<id>`.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_-]{0,31}$"))]
    pub prefix: String,
    /// JSON pointer to a list in the answer that must hold exactly one
    /// item; `id` and `name` then point into that item (`""`: the answer
    /// is the list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/.*)?$"))]
    pub only: Option<String>,
}

impl IdentityConfig {
    /// The probe, or why the setting is refused (`file` for the message).
    pub fn probe(&self, file: &Path) -> Result<crate::ir::IdentityProbe> {
        let pointer = |p: &str| p.is_empty() || p.starts_with('/');
        let prefix_ok = self.prefix.len() <= 32
            && self.prefix.starts_with(|c: char| c.is_ascii_lowercase())
            && self
                .prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        let problem = if !self.path.starts_with('/') {
            Some("/identity/path: must start with `/`")
        } else if !pointer(&self.id) {
            Some("/identity/id: must be a JSON pointer (empty or starting with `/`)")
        } else if !self.name.as_deref().is_none_or(pointer) {
            Some("/identity/name: must be a JSON pointer (empty or starting with `/`)")
        } else if !self.only.as_deref().is_none_or(pointer) {
            Some("/identity/only: must be a JSON pointer (empty or starting with `/`)")
        } else if !prefix_ok {
            Some("/identity/prefix: must match ^[a-z][a-z0-9_-]{0,31}$")
        } else {
            None
        };
        if let Some(message) = problem {
            return Err(GenerateError::Config {
                file: file.to_path_buf(),
                message: message.into(),
            });
        }
        Ok(crate::ir::IdentityProbe {
            path: self.path.clone(),
            only: self.only.clone(),
            id: self.id.clone(),
            name: self.name.clone(),
            prefix: self.prefix.clone(),
        })
    }
}

/// The pinned skills: a directory holding one directory per skill, or a
/// `.tar.gz` archive with a `skills/` directory (at its top or below one
/// top-level directory), local or published at a URL.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SkillsPin {
    /// Directory or `.tar.gz` file (relative to the config file). For URL
    /// pins this is where `toolforge fetch` stores the download.
    pub path: PathBuf,
    /// Published archive URL, when the pin names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Lower-case hex sha256: of the archive's bytes, or for a directory
    /// of its manifest (the `sha256sum` lines `<sha256>  <path>` of the
    /// skills' files, sorted by path; `toolforge pin` records it).
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{64}$"))]
    pub sha256: String,
}

fn default_output() -> PathBuf {
    PathBuf::from("generated")
}

/// The pinned release: a file owned by the project or a published URL.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
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
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{64}$"))]
    pub sha256: String,
}

/// Package and binary names of the generated crate.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CrateNames {
    /// Cargo package name.
    pub package: String,
    /// Binary name.
    pub binary: String,
    /// Path from the output directory (or absolute) to a local
    /// `toolforge-runtime` crate, used beside the version requirement: for
    /// this repository and local development. Without it the crate depends
    /// on the published `toolforge-runtime` by version only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_path: Option<String>,
}

/// Knobs of the generator.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
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
    /// (full profile only; see `schema::share_repeated`).
    pub share_subschemas: bool,
}

/// The JSON Schema profile of tool input schemas.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum SchemaProfile {
    /// JSON Schema 2020-12 as converted (`$defs` for recursion, `oneOf`,
    /// type arrays, every `format`).
    #[default]
    Full,
    /// Inlined and simplified for strict clients (OpenAI strict, Gemini):
    /// see `schema::strict`.
    Strict,
}

/// Policy for operations that are malformed (dangling refs, bad schemas…).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
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
    ///
    /// Errors name the JSON pointer of the offending value (for an unknown
    /// field, the field itself) and serde's message with the line and
    /// column: ``forge.json: /options/naem_lock: unknown field `naem_lock`,
    /// expected one of … at line 19 column 15``.
    pub fn parse(text: &str, file: &Path) -> Result<Self> {
        let fail = |pointer: String, e: serde_json::Error| GenerateError::Config {
            file: file.to_path_buf(),
            message: if pointer.is_empty() {
                e.to_string()
            } else {
                format!("{pointer}: {e}")
            },
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let config: Self = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| fail(json_pointer(e.path()), e.into_inner()))?;
        de.end().map_err(|e| fail(String::new(), e))?;
        Ok(config)
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
            schema: None,
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
                runtime_path: None,
            },
            output: default_output(),
            options: GeneratorOptions::default(),
            identity: None,
            envelope: None,
            pagination: None,
            skills: None,
            scoped_paths: None,
            skill_groups: None,
        }
    }
}

/// The JSON pointer of a deserialisation path (`""` for the document).
fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        out.push('/');
        match seg {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// The JSON Schema (2020-12) of `forge.json`, derived from [`ForgeConfig`]:
/// pretty-printed, object keys sorted, ending in a newline, so the text is
/// the same whatever order the types list their fields in or `serde_json`
/// keeps maps in. `toolforge schema` prints it; the committed
/// `generator/forge.schema.json` is this text.
pub fn json_schema() -> String {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<ForgeConfig>();
    let sorted = sort_keys(schema.to_value());
    let mut text = serde_json::to_string_pretty(&sorted).unwrap_or_default();
    text.push('\n');
    text
}

/// Sorts object keys and unwraps doc-comment lines in descriptions (editors
/// show them as one paragraph).
fn sort_keys(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| match (k.as_str(), v) {
                        ("description", Value::String(d)) => {
                            let d = d.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
                            (k, Value::String(d))
                        }
                        (_, v) => (k, sort_keys(v)),
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
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
    fn pagination_settings_are_read_and_checked() {
        let set: crate::ir::Pagination = serde_json::from_str(
            r#"{"convention": "cursor_field", "param": "after", "cursor": "/paging/next"}"#,
        )
        .unwrap();
        let got = checked_pagination(&set, Path::new("forge.json")).unwrap();
        assert_eq!(
            got,
            crate::ir::Pagination::CursorField {
                param: "after".into(),
                cursor: "/paging/next".into()
            }
        );
        let bad: crate::ir::Pagination =
            serde_json::from_str(r#"{"convention": "next_url", "next": "links.next"}"#).unwrap();
        let err = checked_pagination(&bad, Path::new("forge.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/pagination"), "{err}");
        let link: crate::ir::Pagination =
            serde_json::from_str(r#"{"convention": "link_header"}"#).unwrap();
        assert_eq!(link, crate::ir::Pagination::LinkHeader);
        assert!(
            serde_json::from_str::<crate::ir::Pagination>(r#"{"convention": "link_headers"}"#)
                .is_err()
        );
    }

    #[test]
    fn envelope_settings_replace_the_policys_fields() {
        let config: EnvelopeConfig =
            serde_json::from_str(r#"{"errors": "/error", "items": "/data"}"#).unwrap();
        let mut policy = crate::ir::BodyEnvelope::bare();
        policy.page = Some("/paging".into());
        let got = config.apply(policy, Path::new("forge.json")).unwrap();
        assert_eq!(got.errors, "/error");
        assert_eq!(got.items.as_deref(), Some("/data"));
        // What the config leaves out keeps the policy's value.
        assert_eq!(got.page.as_deref(), Some("/paging"));
        assert_eq!(got.error_message, "/message");
        let bad: EnvelopeConfig = serde_json::from_str(r#"{"payload": "result"}"#).unwrap();
        let err = bad
            .apply(crate::ir::BodyEnvelope::bare(), Path::new("forge.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/envelope/payload"), "{err}");
        assert!(serde_json::from_str::<EnvelopeConfig>(r#"{"pages": "/x"}"#).is_err());
    }

    #[test]
    fn identity_settings_are_checked() {
        let ok: IdentityConfig = serde_json::from_str(
            r#"{"path": "/me", "id": "/id", "name": "/display_name", "prefix": "account"}"#,
        )
        .unwrap();
        let probe = ok.probe(Path::new("forge.json")).unwrap();
        assert_eq!(
            (probe.path.as_str(), probe.prefix.as_str()),
            ("/me", "account")
        );
        for bad in [
            r#"{"path": "me", "id": "/id", "prefix": "user"}"#,
            r#"{"path": "/me", "id": "id", "prefix": "user"}"#,
            r#"{"path": "/me", "id": "/id", "prefix": "User:"}"#,
        ] {
            let c: IdentityConfig = serde_json::from_str(bad).unwrap();
            let err = c.probe(Path::new("forge.json")).unwrap_err().to_string();
            assert!(err.contains("/identity/"), "{err}");
        }
        assert!(
            serde_json::from_str::<IdentityConfig>(
                r#"{"path": "/me", "id": "/id", "prefix": "u", "x": 1}"#
            )
            .is_err()
        );
    }

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
    fn type_errors_name_the_file() {
        let err = ForgeConfig::parse("{\"api\":1}", Path::new("forge.json")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("forge.json: /api: invalid type"), "{msg}");
        assert!(msg.contains("line 1"), "{msg}");
    }

    fn minimal(extra_top: &str, extra_options: &str) -> String {
        format!(
            r#"{{
  {extra_top}"api": "x",
  "spec": {{"release": "r", "path": "a.yaml", "sha256": "00"}},
  "policy": "generic",
  "crate": {{"package": "x-tools", "binary": "x-mcp"}},
  "options": {{{extra_options}}}
}}"#
        )
    }

    #[test]
    fn unknown_fields_are_refused_with_their_name_pointer_and_line() {
        let file = Path::new("forge.json");
        let err = ForgeConfig::parse(&minimal("", r#""naem_lock": {}"#), file).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("forge.json: /options/naem_lock: unknown field `naem_lock`, expected one of `max_schema_depth`"),
            "{msg}"
        );
        assert!(msg.ends_with("at line 6 column 25"), "{msg}");
        let err = ForgeConfig::parse(&minimal(r#""polcy": "x", "#, ""), file).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("forge.json: /polcy: unknown field `polcy`"),
            "{msg}"
        );
        // `$schema` is the one extra top-level key, and only at the top.
        let c = ForgeConfig::parse(&minimal(r#""$schema": "s.json", "#, ""), file).unwrap();
        assert_eq!(c.schema.as_deref(), Some("s.json"));
        let err = ForgeConfig::parse(&minimal("", r#""$schema": "s.json""#), file).unwrap_err();
        assert!(err.to_string().contains("unknown field `$schema`"), "{err}");
    }

    #[test]
    fn schema_key_survives_a_rewrite() {
        let file = Path::new("forge.json");
        let c = ForgeConfig::parse(&minimal(r#""$schema": "s.json", "#, ""), file).unwrap();
        let text = serde_json::to_string_pretty(&c).unwrap();
        assert!(
            text.starts_with("{\n  \"$schema\": \"s.json\",\n"),
            "{text}"
        );
        assert_eq!(ForgeConfig::parse(&text, file).unwrap(), c);
        let c = ForgeConfig::parse(&minimal("", ""), file).unwrap();
        let text = serde_json::to_string_pretty(&c).unwrap();
        assert!(!text.contains("$schema"), "{text}");
    }

    #[test]
    fn trailing_text_is_refused() {
        let err = ForgeConfig::parse(&(minimal("", "") + " x"), Path::new("f.json")).unwrap_err();
        assert!(
            err.to_string().starts_with("f.json: trailing characters"),
            "{err}"
        );
    }
}
