//! The MCP server: a [`Core`] over the static catalogue, served by rmcp over
//! stdio ([`stdio`]) or Streamable HTTP ([`http`]).
//!
//! Everything per-process is built once in [`Core::new`] (or
//! [`Core::with_mode`]): the exposed tool set, the encoded listing, empty
//! validator slots, and for the Code Mode modes the sandbox pool. Per direct
//! call, the core validates the arguments, fills an omitted account
//! argument (as the catalogue's profile says), builds the request, sends it
//! with the caller's upstream credential and maps the response
//! ([`crate::direct`], [`crate::outcome`]); the Code Mode tools run in the sandbox
//! ([`crate::codemode`]).

#[cfg(feature = "http")]
mod accept;
#[cfg(feature = "http")]
mod allowlist;
#[cfg(feature = "http")]
pub mod auth;
#[cfg(feature = "http")]
pub mod compress;
#[cfg(feature = "http")]
pub mod connections;
#[cfg(feature = "http")]
mod content_coding;
#[cfg(feature = "http")]
mod fast_call;
pub mod handler;
#[cfg(feature = "http")]
pub mod health;
#[cfg(feature = "http")]
pub mod http;
mod jsonrpc_guard;
mod limits;
#[cfg(feature = "oauth")]
pub mod oauth_front;
#[cfg(feature = "oauth")]
pub use oauth_front::StoreReadiness;
#[cfg(feature = "http")]
pub mod prometheus;
pub mod resources;
#[cfg(feature = "http")]
mod scoped;
pub mod stdio;

/// Without the `http` feature: only the defaults of the HTTP flags, which
/// the command line still shows (it refuses `--transport http`).
#[cfg(not(feature = "http"))]
pub mod connections {
    pub use super::limits::{
        DEFAULT_BODY_READ_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_MAX_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS_PER_IP, DEFAULT_METRICS_MAX_CONNECTIONS,
    };
}

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, Implementation, InitializeResult, JsonObject, ServerCapabilities, Tool,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::authz::{Connection, PathScope};
use crate::catalogue::{Catalogue, ToolDef};
use crate::codemode::{CodeModeError, Engine, Mode, ModeSetup};
use crate::config::{ConfigError, Exposure, Hidden, UpstreamConfig};
use crate::credential::Credential;
use crate::direct::{Direct, whoami};
use crate::listing::{self, Variant};
use crate::metrics::{self, CallOutcome};
use crate::outcome::tool_error;
use crate::progress::ProgressFn;
use crate::schema_profile::{SchemaChoice, SchemaProfile, strict_input_schema};
use crate::upstream::{Upstream, UpstreamError};

/// The transports' decoding steps, callable without a session: what the
/// fuzz harness (`runtime/tests/fuzz_jsonrpc.rs`) drives. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    pub use super::jsonrpc_guard::{Verdict, classify};
    pub use super::stdio::{Framed, LineFramer, decode_line};
}

pub use crate::listing::Listing;
pub use handler::Handler;
pub use resources::Resources;

/// Why the server cannot start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A configuration value is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client token configuration is refused.
    #[cfg(feature = "http")]
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    /// The upstream client cannot be created.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The Code Mode sandbox cannot start.
    #[error(transparent)]
    CodeMode(#[from] CodeModeError),
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The MCP session failed (rmcp's error kept as the source).
    #[error("MCP service error while {context}: {source}")]
    Mcp {
        /// What the session was doing.
        context: &'static str,
        /// rmcp's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A second SIGTERM or SIGINT arrived while in-flight requests were
    /// draining: they were cancelled and the server stopped at once.
    #[error(
        "a second signal ended the drain: in-flight requests were cancelled (one signal lets them finish, up to --drain-timeout-secs)"
    )]
    DrainInterrupted,
}

/// Options of the server core.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// Which tools are served.
    pub exposure: Exposure,
    /// Upstream base URL and limits.
    pub upstream: UpstreamConfig,
    /// List output schemas to every client (`--output-schemas`).
    pub output_schemas: bool,
    /// Largest accepted tool arguments (approximate JSON size in bytes).
    pub max_argument_bytes: usize,
    /// How the operator provides an upstream token (for error messages),
    /// e.g. ``set `PETSTORE_API_TOKEN` ``.
    pub credential_hint: String,
}

/// How long after start the upstream client is built when no request
/// needed it before (see [`Core::with_mode`]).
const CLIENT_WARM_UP_DELAY: Duration = Duration::from_secs(1);

/// The per-process server state shared by all sessions and requests.
#[derive(Debug)]
pub struct Core {
    catalogue: &'static Catalogue,
    exposure: Exposure,
    direct: Arc<Direct>,
    engine: Option<Engine>,
    listed: Vec<&'static ToolDef>,
    index: HashMap<&'static str, usize>,
    listing: Arc<Listing>,
    rmcp_tools: Vec<OnceLock<Tool>>,
    output_schemas: bool,
    schema_choice: SchemaChoice,
    max_argument_bytes: usize,
    resources: Resources,
    info: InitializeResult,
}

impl Core {
    /// Builds the exposed tool set and its encoded listing (direct mode).
    ///
    /// # Errors
    ///
    /// When the upstream client cannot be created.
    pub fn new(catalogue: &'static Catalogue, options: CoreOptions) -> Result<Self, ServeError> {
        Self::with_mode(catalogue, options, None)
    }

    /// [`Core::new`] in a Code Mode mode when `setup` is given: starts the
    /// sandbox pool (inside the current Tokio runtime) and lists its tools
    /// instead of one tool per operation.
    ///
    /// # Errors
    ///
    /// The upstream client or the sandbox cannot be created, or codemode
    /// has no spec.
    pub fn with_mode(
        catalogue: &'static Catalogue,
        options: CoreOptions,
        setup: Option<ModeSetup>,
    ) -> Result<Self, ServeError> {
        let tools: Vec<&'static ToolDef> = catalogue
            .tools()
            .filter(|t| options.exposure.check(t).is_ok())
            .collect();
        let resources = Resources::new(catalogue.api, &tools, catalogue.skills);
        let upstream = Upstream::new(&options.upstream)?;
        let release = serde_json::from_str::<Value>(catalogue.source)
            .ok()
            .and_then(|v| v.get("release").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
        let direct = Arc::new(Direct::new(
            catalogue,
            tools.clone(),
            upstream,
            options.max_argument_bytes,
            options.credential_hint,
        ));
        let mode = setup.as_ref().map_or(Mode::Direct, |s| s.mode);
        let engine = match setup {
            Some(setup) if setup.mode != Mode::Direct => {
                Some(Engine::start(setup, Arc::clone(&direct), release.clone())?)
            }
            _ => None,
        };
        let mut listed: Vec<&'static ToolDef> = match &engine {
            Some(engine) => engine.listed().to_vec(),
            None => tools,
        };
        // Last, so the direct tools keep their indices.
        listed.extend(whoami::tool(catalogue));
        let index = listed
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name, i))
            .collect();
        let api = catalogue.api;
        let mut instructions = match mode {
            Mode::Direct => format!(
                "Tools for the {api} API (release {release}), one per operation; each calls the API with the server's credential."
            ),
            Mode::CodeMode => format!(
                "The {api} API (release {release}) in Code Mode: write JavaScript. Use `search` to find operations in the API spec, then `execute` to call them with api.request; the server adds the credential."
            ),
            Mode::Code => format!(
                "The {api} API (release {release}) as typed JavaScript functions: the `code` tool runs an async function that calls codemode.<tool>(args); the server adds the credential."
            ),
        };
        if mode != Mode::CodeMode
            && let Some(note) = catalogue.profile.account_note()
        {
            instructions.push(' ');
            instructions.push_str(&note);
        }
        // Resources always (`api://products`); the skills extension when
        // the catalogue embeds skills.
        // Logging: tool-call events as notifications/message (see `Handler`).
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_resources();
        let capabilities = if resources.has_skills() {
            capabilities.enable_skills().build()
        } else {
            capabilities.build()
        };
        let info = InitializeResult::new(capabilities)
            .with_server_info(
                Implementation::new(format!("{}-mcp", catalogue.api), env!("CARGO_PKG_VERSION"))
                    .with_title(format!("{} API tools (toolforge)", catalogue.api)),
            )
            .with_instructions(instructions);
        let listing = Arc::new({
            let upstream = direct.upstream().clone();
            // The upstream client is built once the start-up traffic
            // (`initialize`, the first `tools/list`) has passed: built right
            // after the listing, it shared two cores with writing that
            // listing and cost the cold start about 4 ms (docs/benchmarks.md,
            // "Cold start"). A call that comes earlier builds it itself.
            Listing::new_then(listed.clone(), move || {
                std::thread::sleep(CLIENT_WARM_UP_DELAY);
                upstream.warm_up();
            })
        });
        Ok(Self {
            catalogue,
            exposure: options.exposure,
            direct,
            engine,
            rmcp_tools: (0..listed.len()).map(|_| OnceLock::new()).collect(),
            listing,
            listed,
            index,
            output_schemas: options.output_schemas,
            schema_choice: SchemaChoice::Auto,
            max_argument_bytes: options.max_argument_bytes,
            resources,
            info,
        })
    }

    /// The mode served.
    pub fn mode(&self) -> Mode {
        self.engine.as_ref().map_or(Mode::Direct, Engine::mode)
    }

    /// The Code Mode engine (codemode and code modes).
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.as_ref()
    }

    /// Turns on response schema checks for a `rate` share of upstream
    /// responses (see [`crate::schema_check`]).
    pub fn enable_schema_checks(&self, rate: f64) {
        self.direct.enable_schema_checks(rate);
    }

    /// The upstream client.
    pub fn upstream(&self) -> &crate::upstream::Upstream {
        self.direct.upstream()
    }

    /// The encoded listing.
    pub fn listing(&self) -> &Arc<Listing> {
        &self.listing
    }

    /// The resources and skills served.
    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    /// Server identity, capabilities and instructions.
    pub fn info(&self) -> InitializeResult {
        self.info.clone()
    }

    /// Output schemas are listed to every client.
    pub fn output_schemas(&self) -> bool {
        self.output_schemas
    }

    /// The same core with the operator's `--schema-profile` (`auto`
    /// unless set: each client is listed the profile the table gives it).
    #[must_use]
    pub fn with_schema_choice(mut self, choice: SchemaChoice) -> Self {
        self.schema_choice = choice;
        self
    }

    /// The operator's `--schema-profile`.
    pub fn schema_choice(&self) -> SchemaChoice {
        self.schema_choice
    }

    /// Number of listed tools.
    pub fn tool_count(&self) -> usize {
        self.listed.len()
    }

    /// The rmcp form of a listed tool (parsed on first use).
    pub fn tool(&self, name: &str) -> Option<Tool> {
        let &i = self.index.get(name)?;
        let def = self.listed.get(i)?;
        let slot = self.rmcp_tools.get(i)?;
        Some(slot.get_or_init(|| listing::full_tool(def)).clone())
    }

    /// Whether `connection` sees another `tools/list` than the pre-encoded
    /// one: an OAuth grant whose exposure narrows the served tools, or a
    /// session connected at a scoped URL.
    pub fn lists_differently(connection: &Connection) -> bool {
        match connection {
            Connection::OAuth(grant) => grant.narrows(),
            other => other.path_scope().is_some(),
        }
    }

    /// The `tools/list` entries for a connection that
    /// [`Core::lists_differently`], in the schema `variant` its client reads:
    /// without the tools its grant hides, and without the arguments its
    /// scoped URL fixes.
    pub fn listed_for(&self, connection: &Connection, variant: Variant) -> Vec<Tool> {
        let mut tools = match (&self.engine, connection) {
            (Some(engine), Connection::OAuth(grant)) => engine.listed_for(grant),
            // A static token at a scoped URL: a grant that hides nothing.
            (Some(engine), other) => engine.listed_for(&crate::authz::GrantAccess {
                path: other.path_scope().cloned().map(Arc::new),
                ..crate::authz::GrantAccess::default()
            }),
            (None, _) => {
                return self
                    .listed
                    .iter()
                    .filter(|t| crate::authz::hidden(connection, t).is_none())
                    .filter_map(|t| self.scoped_tool(t, connection.path_scope(), variant))
                    .collect();
            }
        };
        for tool in &mut tools {
            if !variant.with_output {
                tool.output_schema = None;
            }
            if variant.profile == SchemaProfile::Strict {
                let full = serde_json::Value::Object((*tool.input_schema).clone());
                if let serde_json::Value::Object(strict) = strict_input_schema(&full) {
                    tool.input_schema = Arc::new(strict);
                }
            }
        }
        tools
    }

    /// The rmcp form of listed tool `t` in `variant`, without the
    /// arguments `scope` fixes.
    fn scoped_tool(
        &self,
        t: &ToolDef,
        scope: Option<&PathScope>,
        variant: Variant,
    ) -> Option<Tool> {
        let mut tool = match variant {
            Variant::FULL_WITH_OUTPUT => self.tool(t.name)?,
            _ => listing::rmcp_tool(t, variant),
        };
        if let Some(scope) = scope {
            let mut schema = (*tool.input_schema).clone();
            scope.narrow_schema(t, &mut schema);
            tool.input_schema = Arc::new(schema);
        }
        Some(tool)
    }

    /// [`Core::listed_for`]'s array, encoded. In direct mode each tool is
    /// written as the shared listing writes it, straight from its
    /// definition, the arguments a scoped URL fixes cut out of the schema's
    /// text (no tool value parsed and serialised again: 94 ms for the
    /// flagship's 1,533 tools). `server::narrowed_tests` checks the bytes
    /// are `listed_for`'s.
    fn encode_narrowed(&self, connection: &Connection, variant: Variant) -> Option<Bytes> {
        if self.engine.is_some() {
            let tools = self.listed_for(connection, variant);
            return serde_json::to_vec(&tools).ok().map(Bytes::from);
        }
        let scope = connection.path_scope();
        let listed = (self.listed.iter()).filter(|t| crate::authz::hidden(connection, t).is_none());
        let dropped = |t: &ToolDef| scope.map(|s| s.fixed_arg_names(t)).unwrap_or_default();
        Some(listing::encode_without(listed.copied(), variant, dropped))
    }

    /// The `tools/list` array for a connection that
    /// [`Core::lists_differently`], encoded: [`Core::listed_for`]'s tools,
    /// made once per exposure and kept (see [`crate::listing::NarrowKey`]:
    /// sessions that hide the same tools and have the same arguments fixed
    /// share it).
    /// `None` when it cannot be encoded.
    pub fn narrowed_listing(&self, connection: &Connection, variant: Variant) -> Option<Bytes> {
        // Every tool either mode could list or declare, each decided by
        // the same rule `listed_for` applies.
        let hidden = (self.listed.iter())
            .chain(self.direct.tools())
            .map(|t| crate::authz::hidden(connection, t).is_some());
        let fixed =
            (connection.path_scope()).map(|s| s.values.iter().map(|(name, _)| *name).collect());
        let key = crate::listing::NarrowKey::new(variant, hidden, fixed);
        (self.listing.narrowed()).get_or_make(key, || self.encode_narrowed(connection, variant))
    }

    /// Runs `tools/call` to completion.
    ///
    /// # Errors
    ///
    /// A JSON-RPC error for an unknown tool or one outside the exposure
    /// policy; everything else is a tool result (`isError` on failure).
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        credential: Option<&Credential>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_for(name, arguments, credential, CancellationToken::new())
            .await
    }

    /// Runs `tools/call` until it ends or `cancel` fires (the client sent
    /// `notifications/cancelled` or went away): then the call stops where
    /// it is, and nothing more is sent to the API for it.
    ///
    /// # Errors
    ///
    /// As [`Core::call`].
    pub async fn call_for(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        credential: Option<&Credential>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, ErrorData> {
        let connection = Connection::default();
        self.call_observed(name, arguments, credential, &connection, cancel, None)
            .await
    }

    /// [`Core::call_for`], reporting each API request of a Code Mode
    /// `execute` run to `progress`.
    ///
    /// # Errors
    ///
    /// As [`Core::call`].
    pub async fn call_observed(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        credential: Option<&Credential>,
        connection: &Connection,
        cancel: CancellationToken,
        progress: Option<ProgressFn>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(&index) = self.index.get(name) else {
            return Err(self.unknown_tool(name));
        };
        let Some(&tool) = self.listed.get(index) else {
            return Err(self.unknown_tool(name));
        };
        let surface = self.mode().as_str();
        if let Some(args) = &arguments {
            let size = crate::truncate::json_len(args);
            if size > self.max_argument_bytes {
                metrics::tool_call(
                    tool.name,
                    surface,
                    CallOutcome::InvalidArguments,
                    Duration::ZERO,
                );
                return Err(ErrorData::invalid_params(
                    format!(
                        "the arguments of `{}` are too large: {size} bytes, and this server accepts at most {}",
                        tool.name, self.max_argument_bytes
                    ),
                    None,
                ));
            }
        }
        let started = Instant::now();
        let work = async {
            match &self.engine {
                _ if whoami::is_whoami(tool) => {
                    let result = self
                        .direct
                        .whoami(tool.name, arguments.as_ref(), credential)
                        .await;
                    let outcome = CallOutcome::of(&result);
                    (result, outcome)
                }
                Some(engine) => {
                    let result = engine
                        .call(
                            tool.name,
                            arguments,
                            credential,
                            connection,
                            cancel.clone(),
                            progress,
                        )
                        .await;
                    let outcome = CallOutcome::of(&result);
                    (result, outcome)
                }
                None => {
                    self.direct
                        .run_outcome(index, tool, arguments, credential, connection)
                        .await
                }
            }
        };
        // Dropping the work stops it: an upstream request in flight is
        // abandoned, a sandbox run is cancelled by its drop guard.
        let (result, outcome, cancelled) = tokio::select! {
            (result, outcome) = work => (result, outcome, false),
            () = cancel.cancelled() => (tool_error("the call was cancelled by the client"), CallOutcome::Cancelled, true),
        };
        let elapsed = started.elapsed();
        metrics::tool_call(tool.name, surface, outcome, elapsed);
        // Logged once the answer is written (a `write` to stderr the
        // client need not wait for), in the caller's span.
        let (name, is_error, span) = (
            tool.name,
            result.is_error.unwrap_or(false),
            tracing::Span::current(),
        );
        crate::direct::after_answer::after_this_poll(move || {
            let _in = span.enter();
            tracing::info!(
                tool = name,
                cancelled,
                is_error,
                elapsed_ms = elapsed.as_secs_f64() * 1000.0,
                "tools/call"
            );
        });
        Ok(result)
    }

    fn unknown_tool(&self, name: &str) -> ErrorData {
        let shown: String = name.chars().take(80).collect();
        if let Some(engine) = &self.engine {
            let names: Vec<String> = self
                .listed
                .iter()
                .map(|t| format!("`{}`", t.name))
                .collect();
            return ErrorData::invalid_params(
                format!(
                    "unknown tool `{shown}`: this server runs in --mode {} and lists only {}",
                    engine.mode().as_str(),
                    names.join(" and ")
                ),
                None,
            );
        }
        match self.catalogue.tool(name).map(|t| self.exposure.check(t)) {
            Some(Err(hidden)) => {
                let why = match hidden {
                    Hidden::Product => "its product is not in --products",
                    Hidden::NotReadOnly => {
                        "it is not read-only and the server runs with --read-only"
                    }
                };
                ErrorData::invalid_params(
                    format!(
                        "tool `{shown}` is not exposed by this server (--read-only / --products): {why}"
                    ),
                    None,
                )
            }
            _ => ErrorData::invalid_params(format!("unknown tool `{shown}`"), None),
        }
    }
}

#[cfg(test)]
#[cfg(all(feature = "http", feature = "codemode"))]
mod tests;

#[cfg(test)]
pub(crate) mod example_core_tests;

#[cfg(test)]
#[cfg(all(feature = "http", feature = "codemode"))]
mod narrowed_tests;

#[cfg(test)]
mod call_log_tests;
