//! Code Mode: the sandboxed server modes.
//!
//! - `--mode codemode` lists two tools. `search` runs model-written
//!   JavaScript against the resolved spec (the generator's
//!   `artifacts/spec.json`, embedded in the catalogue, or `--spec-artifact`)
//!   with no network and no credential. `execute` runs JavaScript whose only
//!   way out is `api.request({method, path, query, body, contentType})`,
//!   served by [`api::ApiHost`] in this process: the path must match one of
//!   the catalogue's route templates, the base URL and the credential are
//!   the server's, refusals are explained as for direct tools, and the code
//!   gets `{status, result}` (plus the envelope's page metadata) or a
//!   catchable Error.
//! - `--mode code` lists one `code` tool whose description declares the
//!   exposed tools as typed functions (`codemode.<tool>(args)`, from each
//!   tool's generated TypeScript declaration); every call runs through the
//!   direct pipeline ([`tools::ToolHost`]).
//!
//! Code runs in the [`sandbox`](crate::sandbox): QuickJS in warm worker
//! processes with an empty environment (the credential is never there),
//! fresh runtime per call, heap, stack, CPU and wall-clock limits and a cap
//! on host calls. Results are structurally truncated to about 24 KB unless
//! the call passes `truncate: false` (search results always are).

pub mod api;
pub mod describe;
pub mod examples;
mod narrow;
mod report;
pub mod routes;
mod statics;
pub mod step_up;
pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

use crate::authz::Connection;
use crate::catalogue::ToolDef;
use crate::credential::Credential;
use crate::direct::Direct;
use crate::outcome::tool_error;
use crate::progress::ProgressFn;
use crate::sandbox::{
    ClientKey, HostApi, JobKind, RunFor, SandboxConfig, SandboxError, SandboxPool, SpecSource,
};
use crate::truncate::DEFAULT_MAX_BYTES;
use tokio_util::sync::CancellationToken;

pub use crate::mode::Mode;
pub use api::ApiHost;
pub use describe::{CODE, EXECUTE, Facts, SEARCH};
pub use report::Notes;
pub use routes::{RouteError, RouteTable};
pub use tools::ToolHost;

/// What a sandboxed mode needs at start.
#[derive(Debug, Clone)]
pub struct ModeSetup {
    /// [`Mode::CodeMode`] or [`Mode::Code`] ([`Mode::Direct`] needs no setup).
    pub mode: Mode,
    /// The sandbox pool: worker command, workers, limits. Its spec is set
    /// here for codemode (from `spec_artifact` or the catalogue).
    pub sandbox: SandboxConfig,
    /// A resolved spec file to search instead of the catalogue's embedded one.
    pub spec_artifact: Option<PathBuf>,
    /// Truncation budget in bytes (default ~24 KB).
    pub truncate_bytes: usize,
}

impl ModeSetup {
    /// A setup with the default truncation budget and no spec override.
    pub fn new(mode: Mode, sandbox: SandboxConfig) -> Self {
        Self {
            mode,
            sandbox,
            spec_artifact: None,
            truncate_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Why a sandboxed mode cannot start.
#[derive(Debug, thiserror::Error)]
pub enum CodeModeError {
    /// Codemode without a spec to search.
    #[error(
        "--mode codemode needs the resolved spec for `search`, and this catalogue was generated without it (forge.json `options.resolved_spec`); pass --spec-artifact PATH to a generated artifacts/spec.json"
    )]
    NoSpec,
    /// The `--spec-artifact` file cannot be read.
    #[error("--spec-artifact {path}: {source}")]
    SpecArtifact {
        /// The path given.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The spec to narrow to the exposed operations is not JSON.
    #[error("the resolved spec for `search` is not valid JSON: {0}")]
    SpecJson(#[source] serde_json::Error),
    /// `Mode::Direct` was passed as a sandboxed mode.
    #[error("--mode direct runs no sandbox")]
    NotSandboxed,
    /// The sandbox pool cannot start.
    #[error("cannot start the Code Mode sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    /// No room is left for this engine's tool definitions.
    #[error(transparent)]
    Tools(#[from] describe::TableFull),
}

/// `spec` without the operations no tool of `exposed` serves, held in memory.
fn narrowed_spec(spec: &SpecSource, exposed: &[&ToolDef]) -> Result<SpecSource, CodeModeError> {
    let text: Arc<str> = match spec {
        SpecSource::Json(text) => Arc::clone(text),
        SpecSource::Path(path) => std::fs::read_to_string(path)
            .map_err(|source| CodeModeError::SpecArtifact {
                path: path.display().to_string(),
                source,
            })?
            .into(),
    };
    let narrowed = narrow::narrow_spec(&text, exposed).map_err(CodeModeError::SpecJson)?;
    Ok(SpecSource::Json(narrowed.into()))
}

/// The running sandboxed mode: the pool, the routes and the listed tools.
#[derive(Debug)]
pub struct Engine {
    mode: Mode,
    pool: SandboxPool,
    routes: Arc<RouteTable>,
    direct: Arc<Direct>,
    listed: Vec<&'static ToolDef>,
    truncate_bytes: usize,
    /// For a grant's own `code` description.
    facts: Facts,
}

impl Engine {
    /// Starts the pool (workers begin indexing the spec at once) and builds
    /// the listed tools. Must run inside a Tokio runtime.
    ///
    /// # Errors
    ///
    /// No spec for codemode, an unreadable `--spec-artifact`, or workers
    /// that cannot be started.
    pub fn start(
        setup: ModeSetup,
        direct: Arc<Direct>,
        release: String,
    ) -> Result<Self, CodeModeError> {
        let catalogue = direct.catalogue();
        let mut config = setup.sandbox;
        let facts = Facts {
            api: catalogue.api,
            release,
            profile: direct.profile(),
            max_requests: config.limits.max_requests,
            truncate_bytes: setup.truncate_bytes,
            read_only: direct.tools().iter().all(|t| t.annotations.read_only),
            examples: examples::Examples::of(direct.tools(), direct.profile()),
        };
        let (listed, routes) = match setup.mode {
            Mode::Direct => return Err(CodeModeError::NotSandboxed),
            Mode::CodeMode => {
                let spec = match setup.spec_artifact {
                    Some(path) => {
                        std::fs::metadata(&path).map_err(|source| CodeModeError::SpecArtifact {
                            path: path.display().to_string(),
                            source,
                        })?;
                        SpecSource::Path(path)
                    }
                    None if catalogue.spec.trim().is_empty() => return Err(CodeModeError::NoSpec),
                    None => SpecSource::Json(Arc::from(catalogue.spec)),
                };
                // `--products` / `--read-only`: `search` sees only what
                // `execute` may call.
                let narrowed = direct.tools().len() < catalogue.tools().count();
                config.spec = Some(if narrowed {
                    narrowed_spec(&spec, direct.tools())?
                } else {
                    spec
                });
                let routes = RouteTable::new(catalogue.tools(), &catalogue.profile, |t| {
                    direct.lookup(t.name).is_some()
                });
                (
                    vec![
                        describe::search_tool(&facts)?,
                        describe::execute_tool(&facts)?,
                    ],
                    routes,
                )
            }
            Mode::Code => {
                config.spec = None;
                (
                    vec![describe::code_tool(&facts, direct.tools())?],
                    RouteTable::default(),
                )
            }
        };
        let pool = SandboxPool::new(config)?;
        Ok(Self {
            mode: setup.mode,
            pool,
            routes: Arc::new(routes),
            direct,
            listed,
            truncate_bytes: setup.truncate_bytes,
            facts,
        })
    }

    /// The listed tools as `grant` sees them: the `code` tool declares only
    /// the functions the grant exposes (`search` and `execute` are the same
    /// for every grant; `execute` refuses hidden operations itself).
    pub fn listed_for(&self, grant: &crate::authz::GrantAccess) -> Vec<rmcp::model::Tool> {
        self.listed
            .iter()
            .map(|def| {
                let mut tool = crate::listing::full_tool(def);
                if def.name == CODE {
                    let exposed: Vec<&'static ToolDef> = self
                        .direct
                        .tools()
                        .iter()
                        .copied()
                        .filter(|t| grant.hides(t).is_none())
                        .collect();
                    let mut description = describe::code_description(&self.facts, &exposed);
                    // At a scoped URL the server fills the fixed arguments.
                    if let Some(scope) = grant.path.as_deref() {
                        description =
                            narrow::scoped_code_description(&description, scope, &exposed);
                    }
                    tool.description = Some(description.into());
                }
                tool
            })
            .collect()
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The tools this mode lists.
    pub fn listed(&self) -> &[&'static ToolDef] {
        &self.listed
    }

    /// The sandbox pool.
    pub fn pool(&self) -> &SandboxPool {
        &self.pool
    }

    /// Runs listed tool `name` (`search`, `execute` or `code`) for the
    /// client holding `credential` (its fair share of the sandbox); `cancel`
    /// stops the run (see [`RunFor`]).
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        credential: Option<&Credential>,
        connection: &Connection,
        cancel: CancellationToken,
        progress: Option<ProgressFn>,
    ) -> CallToolResult {
        let run = RunFor {
            key: credential.map(|c| ClientKey(c.cache_key())),
            cancel: Some(cancel),
        };
        let (code, truncate) = match parse_args(name, arguments, name != SEARCH) {
            Ok(parsed) => parsed,
            Err(message) => return tool_error(message),
        };
        let limit = truncate.then_some(self.truncate_bytes);
        match name {
            SEARCH => {
                // A narrowed session searches its own view (`narrow.rs`).
                let code = narrow::search_prelude(connection, self.direct.tools())
                    .map_or(code.clone(), |prelude| prelude + &code);
                let report = self.pool.run_for(JobKind::Search, &code, None, run).await;
                report::into_result(SEARCH, report, Some(self.truncate_bytes), None)
            }
            EXECUTE | CODE => {
                let Some(credential) = credential else {
                    return self.direct.no_credential(&format!("`{name}`"));
                };
                let (report, notes) = if name == EXECUTE {
                    let host = ApiHost::new(
                        Arc::clone(&self.routes),
                        Arc::clone(&self.direct),
                        credential.clone(),
                    )
                    .with_progress(progress)
                    .with_connection(connection.clone());
                    let notes = host.notes().clone();
                    let watch = host.watch();
                    let host: Arc<dyn HostApi> = Arc::new(host);
                    let report = self
                        .pool
                        .run_for(JobKind::Execute, &code, Some(host), run)
                        .await;
                    if let Connection::OAuth(grant) = connection
                        && let Some(step_up) = watch.step_up(&report.result)
                    {
                        grant.step_up.set(step_up);
                    }
                    (report, notes)
                } else {
                    // A `code` run may have written before a refusal: it
                    // never asks to step up.
                    let quiet = match connection {
                        Connection::OAuth(grant) => {
                            Connection::OAuth(Arc::new(grant.without_step_up()))
                        }
                        other => other.clone(),
                    };
                    let host = ToolHost::new(Arc::clone(&self.direct), credential.clone())
                        .with_connection(quiet);
                    let notes = host.notes().clone();
                    let host: Arc<dyn HostApi> = Arc::new(host);
                    let report = self
                        .pool
                        .run_for(JobKind::Code, &code, Some(host), run)
                        .await;
                    (report, notes)
                };
                let notes = notes.take();
                let mut result = report::into_result(name, report, limit, Some(credential));
                if !notes.is_empty() {
                    result
                        .content
                        .push(ContentBlock::text(credential.redact(&notes.join("\n"))));
                }
                result
            }
            other => tool_error(format!("unknown tool `{}`", routes::shown(other))),
        }
    }
}

/// `code` and `truncate` (default true) from the arguments.
fn parse_args(
    tool: &str,
    arguments: Option<JsonObject>,
    allow_truncate: bool,
) -> Result<(String, bool), String> {
    let args = arguments.unwrap_or_default();
    let mut code = None;
    let mut truncate = true;
    for (key, value) in args {
        match (key.as_str(), value) {
            ("code", Value::String(text)) => code = Some(text),
            ("code", other) => {
                return Err(format!(
                    "invalid arguments for tool `{tool}`: `code` must be a string (the source of an async arrow function), not {}",
                    type_name(&other)
                ));
            }
            ("truncate", Value::Bool(flag)) if allow_truncate => truncate = flag,
            ("truncate", Value::Null) if allow_truncate => {}
            ("truncate", other) if allow_truncate => {
                return Err(format!(
                    "invalid arguments for tool `{tool}`: `truncate` must be true or false, not {}",
                    type_name(&other)
                ));
            }
            (other, _) => {
                let allowed = if allow_truncate {
                    "`code` and `truncate`"
                } else {
                    "only `code`"
                };
                return Err(format!(
                    "invalid arguments for tool `{tool}`: unknown argument `{}`; it takes {allowed}",
                    routes::shown(other)
                ));
            }
        }
    }
    let Some(code) = code else {
        return Err(format!(
            "invalid arguments for tool `{tool}`: `code` is required, e.g. {{\"code\": \"async () => {{ ... }}\"}}"
        ));
    };
    Ok((code, truncate))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
