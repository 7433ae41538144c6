//! The command line of a generated binary: serve MCP (stdio or Streamable
//! HTTP), plus developer commands that inspect the catalogue and dry-run
//! request building.
//!
//! ```text
//! BIN [serve] --transport stdio|http [--mode direct|codemode|code] [--listen ADDR] [--upstream URL] ...
//! BIN list | describe TOOL | request TOOL ARGS_JSON | source
//! ```
//!
//! [`main`] first gives the process to the Code Mode sandbox when it was
//! started as a sandbox worker (the server re-executes its own binary for
//! its workers; see [`crate::sandbox::run_worker_if_requested`]).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};

use crate::catalogue::Catalogue;
use crate::codemode::Mode;
use crate::config::servers::parse_server_var;
use crate::config::{Exposure, UpstreamConfig, upstream_base};
use crate::listing::{Variant, entry};
use crate::request::build_request;
use crate::schema_profile::{SchemaChoice, SchemaProfile};
#[cfg(feature = "http")]
use crate::server::auth::{TOKENS_ENV, TokenTable};
use crate::server::connections::{
    DEFAULT_BODY_READ_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_IP, DEFAULT_METRICS_MAX_CONNECTIONS,
};
#[cfg(feature = "http")]
use crate::server::http::{ClientAuth, HttpOptions, serve_http};
use crate::server::stdio::serve_stdio;
use crate::server::{Core, CoreOptions};
use crate::validate::Validators;
use extensions::Extensions;
use signals::Signals;

/// HTTP: seconds a client may take to send a request head (from accept, or
/// from the first byte of a later request).
#[cfg(feature = "http")]
const HEADER_READ_TIMEOUT_SECS: u64 = 10;

mod credentials;
mod extensions;
#[cfg(feature = "oauth")]
mod oauth;
mod signals;

#[derive(Debug, Parser)]
#[command(
    about = "An MCP server for a toolforge-generated API catalogue",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP (the default when no command is given).
    Serve(Box<ServeArgs>),
    /// Tool names and titles, one per line.
    List,
    /// The tool as MCP would list it (JSON, with its output schema).
    Describe {
        /// Tool name.
        tool: String,
        /// The input schema's profile: full or strict.
        #[arg(long, default_value = "full")]
        schema_profile: SchemaProfile,
    },
    /// Dry run: the upstream request the arguments build (JSON).
    Request {
        /// Tool name.
        tool: String,
        /// The arguments, a JSON object.
        args_json: String,
    },
    /// The release this binary was generated from.
    Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    /// JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP at /mcp.
    Http,
}

/// How HTTP clients authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
enum AuthMode {
    /// Configured client tokens, each mapped to an upstream token (--tokens-file).
    #[default]
    Tokens,
    /// This server is an OAuth 2.1 authorization server wrapping the
    /// upstream's OAuth (--oauth-config).
    Oauth,
}

#[derive(Debug, Clone, Args)]
// Flags of a feature left out are parsed and refused (or unused).
#[cfg_attr(not(all(feature = "http", feature = "codemode")), allow(dead_code))]
struct ServeArgs {
    /// Transport: stdio or http.
    #[arg(long, value_enum)]
    transport: Option<Transport>,
    /// HTTP listen address (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// API base URL (https; default: the spec's first server, variables
    /// filled).
    #[arg(long)]
    upstream: Option<String>,
    /// A variable of the spec's server URL (`{name}`), instead of its
    /// default; repeatable.
    #[arg(long = "server-var", value_name = "NAME=VALUE", value_parser = parse_server_var)]
    server_vars: Vec<(String, String)>,
    /// Allow a plain-http upstream on a loopback host (for tests).
    #[arg(long)]
    allow_loopback_upstream: bool,
    /// Server mode: `direct` (one tool per operation), `codemode` (`search`
    /// and `execute` tools running JavaScript) or `code` (one `code` tool
    /// calling typed tool functions).
    #[arg(long, value_enum, default_value = "direct")]
    mode: Mode,
    /// Codemode: search this resolved spec (a generated `artifacts/spec.json`)
    /// instead of the one embedded in the binary.
    #[arg(long)]
    spec_artifact: Option<PathBuf>,
    /// Code Mode: sandbox worker processes kept warm, and runs whose
    /// JavaScript may compute at once (a run waiting for the API gives its
    /// slot up).
    #[arg(long, default_value_t = 2)]
    sandbox_workers: usize,
    /// Code Mode: most worker processes at once, runs waiting for the API
    /// included (extra ones are started per run).
    #[arg(long, default_value_t = 8)]
    sandbox_max_workers: usize,
    /// Code Mode: most runs one client (credential) may have in progress;
    /// more are queued, in turn with other clients' runs.
    #[arg(long, default_value_t = 4)]
    sandbox_runs_per_client: usize,
    /// Code Mode: most runs queued for a worker, in all; beyond it (or
    /// beyond --sandbox-queue-per-client) a run is refused as busy.
    #[arg(long, default_value_t = 64)]
    sandbox_queue: usize,
    /// Code Mode: most runs one client may have queued.
    #[arg(long, default_value_t = 8)]
    sandbox_queue_per_client: usize,
    /// Code Mode: JavaScript heap limit per run, in MiB.
    #[arg(long, default_value_t = 64)]
    sandbox_memory_mb: usize,
    /// Code Mode: CPU budget per run (time running JavaScript), in ms.
    #[arg(long, default_value_t = 1_000)]
    sandbox_cpu_ms: u64,
    /// Code Mode: wall-clock budget per run (API waits included), in ms.
    #[arg(long, default_value_t = 30_000)]
    sandbox_wall_ms: u64,
    /// Code Mode: most API calls (api.request / codemode.*) per run.
    #[arg(long, default_value_t = 20)]
    sandbox_max_requests: u32,
    /// Serve only these products (comma-separated).
    #[arg(long, value_delimiter = ',')]
    products: Option<Vec<String>>,
    /// Serve only read-only tools.
    #[arg(long)]
    read_only: bool,
    /// HTTP client authentication: `tokens` (the default) or `oauth`.
    #[arg(long, value_enum, default_value_t = AuthMode::Tokens)]
    auth: AuthMode,
    /// The OAuth configuration file (JSON or TOML) for `--auth oauth`.
    #[arg(long)]
    oauth_config: Option<PathBuf>,
    /// HTTP client tokens: JSON {"tokens":[{"sha256":HEX,"upstream_token_env":NAME}|{"sha256":HEX,"upstream_token":TOKEN}]}.
    #[arg(long)]
    tokens_file: Option<PathBuf>,
    /// Environment variable holding the upstream token of the API's main
    /// scheme instead of the generated name (see Credentials below).
    #[arg(long)]
    token_env: Option<String>,
    /// Additional allowed Host header value (host or host:port); repeatable.
    #[arg(long = "allowed-host")]
    allowed_hosts: Vec<String>,
    /// Allowed Origin header value (scheme://host[:port]); repeatable.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Upstream timeout in seconds (whole call, body included).
    #[arg(long, default_value_t = 30)]
    upstream_timeout_secs: u64,
    /// Largest accepted MCP request body (HTTP) or line (stdio), in bytes.
    #[arg(long, default_value_t = 1_048_576)]
    max_request_bytes: usize,
    /// Largest upstream response body read, in bytes.
    #[arg(long, default_value_t = 10_485_760)]
    max_upstream_bytes: usize,
    /// HTTP: seconds a whole request body may take to arrive after its
    /// headers; a late one is answered 408 and the connection closed.
    #[arg(long, default_value_t = DEFAULT_BODY_READ_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    body_read_timeout_secs: u64,
    /// HTTP: seconds a keep-alive connection may sit idle between requests
    /// before the server closes it.
    #[arg(long, default_value_t = DEFAULT_IDLE_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_secs: u64,
    /// HTTP: most connections open at once; more are answered 503
    /// (`Retry-After: 1`) and closed.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// HTTP: most connections open at once from one peer address (IPv6:
    /// one /64); more are answered 429 and closed.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS_PER_IP as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_ip: u64,
    /// List output schemas to every client (otherwise only with ?output_schemas=1).
    #[arg(long)]
    output_schemas: bool,
    /// Input schemas listed: `auto` per client (strict for OpenAI, Codex, Gemini), or `full` or
    /// `strict` for all; a client's `?schema_profile=full|strict` URL wins over both.
    #[arg(long, default_value = "auto")]
    schema_profile: SchemaChoice,
    /// Threads running the server: 1 (the default) serves everything on one
    /// thread, which saves the cross-thread wake-ups that dominate latency at
    /// agent-paced load; 0 means one per CPU core, for many busy clients.
    #[arg(long, default_value_t = 1)]
    worker_threads: usize,
    /// Share of upstream responses checked against the documented response
    /// schemas (mismatches are logged as `schema_mismatch` events; 0 turns
    /// the checks off).
    #[arg(long, default_value_t = 1.0)]
    schema_check_rate: f64,
    /// Serve Prometheus metrics at http://ADDR/metrics, on a listener of
    /// its own (off by default; port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Most connections open at once on the --metrics-listen listener.
    #[arg(long, default_value_t = DEFAULT_METRICS_MAX_CONNECTIONS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    metrics_max_connections: u64,
    /// HTTP: after SIGTERM (or SIGINT) the server stops accepting and waits
    /// this many seconds at most for in-flight requests, then exits 0; a
    /// second signal during that wait cancels them and exits 1 at once.
    #[arg(long, default_value_t = 10)]
    drain_timeout_secs: u64,
    /// HTTP without client authentication, using the stdio credential;
    /// allowed only on a loopback listen address (for local testing).
    #[arg(long)]
    insecure_no_auth: bool,
}

fn print(out: &mut impl Write, text: &str) -> ExitCode {
    match writeln!(out, "{text}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

/// Runs the binary's command line over `catalogue`.
///
/// A process started as a Code Mode sandbox worker serves as one and exits
/// here, before anything else runs.
pub fn main(catalogue: &'static Catalogue) -> ExitCode {
    #[cfg(feature = "codemode")]
    crate::sandbox::run_worker_if_requested();
    let command = <Cli as clap::CommandFactory>::command().after_help(credentials::help(catalogue));
    let parsed = command
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let fail = |msg: &str| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    match cli.command {
        None => serve(catalogue, cli.serve),
        Some(Command::Serve(args)) => serve(catalogue, *args),
        Some(Command::List) => {
            let lines: Vec<String> = catalogue
                .tools()
                .map(|t| format!("{}\t{}", t.name, t.title))
                .collect();
            print(&mut out, &lines.join("\n"))
        }
        Some(Command::Describe {
            tool,
            schema_profile,
        }) => match catalogue.tool(&tool) {
            // The listing's own encoder, with the output schema.
            Some(t) => print(&mut out, &entry(t, Variant::new(schema_profile, true))),
            None => fail(&format!("unknown tool `{tool}`")),
        },
        Some(Command::Request { tool, args_json }) => {
            let Some(tool) = catalogue.tool(&tool) else {
                return fail(&format!("unknown tool `{tool}`"));
            };
            let parsed: Map<String, Value> = match serde_json::from_str(&args_json) {
                Ok(m) => m,
                Err(e) => return fail(&format!("ARGS_JSON is not a JSON object: {e}")),
            };
            // The server validates before building; so does the dry run.
            let value = Value::Object(parsed);
            if let Err(e) = Validators::new(1).validate(0, tool, &value) {
                return fail(&e.to_string());
            }
            let Value::Object(parsed) = value else {
                return fail("ARGS_JSON is not a JSON object");
            };
            match build_request(tool, &parsed) {
                Ok(req) => {
                    let body = req.body.as_ref().map(|b| {
                        json!({"content_type": b.content_type, "text": String::from_utf8_lossy(&b.bytes)})
                    });
                    let v = json!({
                        "method": req.method.as_str(),
                        "path": req.path_and_query,
                        "headers": req.headers,
                        "body": body,
                    });
                    print(&mut out, &v.to_string())
                }
                Err(e) => fail(&e.to_string()),
            }
        }
        Some(Command::Source) => print(&mut out, catalogue.source),
    }
}

fn serve(catalogue: &'static Catalogue, args: ServeArgs) -> ExitCode {
    init_logging();
    let mut builder = match args.worker_threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            if n > 1 {
                b.worker_threads(n);
            }
            b
        }
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(catalogue, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLFORGE_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

#[cfg(feature = "http")]
fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

async fn run(catalogue: &'static Catalogue, args: ServeArgs) -> anyhow::Result<()> {
    let Some(transport) = args.transport else {
        bail!("--transport stdio|http is required to serve (see --help)");
    };
    if args.spec_artifact.is_some() && args.mode != Mode::CodeMode {
        bail!("--spec-artifact is used only with --mode codemode");
    }
    let base = upstream_base(
        catalogue,
        args.upstream.as_deref(),
        &args.server_vars,
        args.allow_loopback_upstream,
    )?;
    let exposure = Exposure::new(catalogue, args.products.clone(), args.read_only)?;
    let token_env = args
        .token_env
        .clone()
        .unwrap_or_else(|| catalogue.profile.token_env.to_owned());
    let credential_hint = match transport {
        Transport::Stdio => format!("set `{token_env}` in the server's environment"),
        Transport::Http if args.insecure_no_auth => {
            format!("set `{token_env}` in the server's environment")
        }
        Transport::Http if args.auth == AuthMode::Oauth => {
            "sign in again through the server's OAuth flow".to_owned()
        }
        Transport::Http => "map client tokens to upstream tokens (--tokens-file)".to_owned(),
    };
    if args.auth == AuthMode::Oauth && (transport != Transport::Http || args.insecure_no_auth) {
        bail!("--auth oauth is for --transport http (without --insecure-no-auth)");
    }
    if args.oauth_config.is_some() && args.auth != AuthMode::Oauth {
        bail!("--oauth-config is used only with --auth oauth");
    }
    // Every optional feature's part, built (or refused) before anything
    // starts; nothing below names a cargo feature but the transport.
    let mut extensions = Extensions::from_args(&args)?;
    let secrets = credentials::server_secrets(catalogue, &token_env)?;
    extensions.start_metrics().await?;
    let setup = extensions.mode.take();
    let core = Arc::new(
        Core::with_mode(
            catalogue,
            CoreOptions {
                exposure,
                upstream: UpstreamConfig {
                    base,
                    timeout: Duration::from_secs(args.upstream_timeout_secs.max(1)),
                    max_body_bytes: args.max_upstream_bytes,
                },
                output_schemas: args.output_schemas,
                max_argument_bytes: args.max_request_bytes,
                credential_hint,
            },
            setup,
        )?
        .with_schema_choice(args.schema_profile),
    );
    if args.schema_check_rate > 0.0 {
        core.enable_schema_checks(args.schema_check_rate);
    }
    if core.mode() != Mode::Direct {
        tracing::info!(
            mode = core.mode().as_str(),
            tools = core.tool_count(),
            "Code Mode sandbox started"
        );
    }
    match transport {
        Transport::Stdio => {
            let credential = credentials::server_credential(&token_env, secrets.as_ref())?;
            let max_line = args.max_request_bytes.saturating_mul(16).max(16 << 20);
            serve_stdio(core, credential, max_line, Signals::listen().first()).await?;
        }
        #[cfg(not(feature = "http"))]
        Transport::Http => bail!(
            "--transport http: this server was built without the `http` feature of toolforge-runtime (rebuild with the feature on, the default), so it serves stdio only"
        ),
        #[cfg(feature = "http")]
        Transport::Http => {
            let auth = if args.insecure_no_auth {
                if !is_loopback(&args.listen) {
                    bail!(
                        "--insecure-no-auth is allowed only with a loopback --listen address (127.0.0.1, ::1)"
                    );
                }
                tracing::warn!("HTTP client authentication is OFF (--insecure-no-auth)");
                ClientAuth::Unauthenticated(credentials::server_credential(
                    &token_env,
                    secrets.as_ref(),
                )?)
            } else if args.auth == AuthMode::Oauth {
                extensions.oauth_auth(catalogue, secrets.clone()).await?
            } else {
                let env = |name: &str| std::env::var(name).ok();
                let mut table = TokenTable::default();
                if let Some(path) = &args.tokens_file {
                    table.load_file(path, env)?;
                }
                if let Ok(spec) = std::env::var(TOKENS_ENV) {
                    table.load_env_spec(&spec, env)?;
                }
                if table.is_empty() {
                    return Err(crate::server::auth::AuthError::NoTokens.into());
                }
                if let Some(secrets) = &secrets {
                    if catalogue.profile.primary.is_none() {
                        tracing::warn!(
                            "the API has no single-token scheme: client tokens select a client, and every upstream credential comes from the server's environment"
                        );
                    }
                    table.bind(secrets);
                }
                ClientAuth::Tokens(table)
            };
            #[allow(unused_mut)]
            let mut readiness: Vec<Arc<dyn crate::server::health::ReadinessCheck>> = Vec::new();
            #[cfg(feature = "oauth")]
            if let ClientAuth::OAuth { setup, .. } = &auth {
                readiness.push(Arc::new(crate::server::StoreReadiness(setup.store.clone())));
            }
            let options = HttpOptions {
                allowed_hosts: args.allowed_hosts.clone(),
                allowed_origins: args.allowed_origins.clone(),
                max_request_bytes: args.max_request_bytes,
                header_read_timeout: Duration::from_secs(HEADER_READ_TIMEOUT_SECS),
                body_read_timeout: Duration::from_secs(args.body_read_timeout_secs),
                idle_timeout: Duration::from_secs(args.idle_timeout_secs),
                max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
                max_connections_per_ip: usize::try_from(args.max_connections_per_ip)
                    .unwrap_or(usize::MAX),
                auth,
                drain_timeout: Duration::from_secs(args.drain_timeout_secs),
                readiness,
            };
            let signals = Signals::listen();
            serve_http(
                core,
                args.listen,
                options,
                signals.clone().first(),
                signals.second(),
            )
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[cfg(feature = "codemode")]
mod tests {
    use super::*;

    #[test]
    fn serve_flags_parse_with_and_without_subcommand() {
        let cli = Cli::try_parse_from([
            "bin",
            "--transport",
            "http",
            "--listen",
            "127.0.0.1:0",
            "--products",
            "dns_records,zones",
            "--allowed-host",
            "a",
            "--allowed-host",
            "b:1",
            "--read-only",
        ])
        .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.transport, Some(Transport::Http));
        assert_eq!(
            cli.serve.products,
            Some(vec!["dns_records".to_owned(), "zones".to_owned()])
        );
        assert_eq!(cli.serve.allowed_hosts, ["a", "b:1"]);
        assert!(cli.serve.read_only);
        let cli = Cli::try_parse_from(["bin", "serve", "--transport", "stdio"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Serve(args)) if args.transport == Some(Transport::Stdio)
        ));
        let cli = Cli::try_parse_from([
            "bin",
            "--transport",
            "stdio",
            "--mode",
            "codemode",
            "--spec-artifact",
            "/x/spec.json",
            "--sandbox-max-requests",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.serve.mode, Mode::CodeMode);
        assert_eq!(cli.serve.sandbox_max_requests, 3);
        let setup = Extensions::from_args(&cli.serve).unwrap().mode.unwrap();
        assert_eq!(setup.sandbox.limits.max_requests, 3);
        assert_eq!(
            setup.spec_artifact.as_deref(),
            Some(std::path::Path::new("/x/spec.json"))
        );
        let cli = Cli::try_parse_from(["bin", "--transport", "stdio", "--mode", "code"]).unwrap();
        assert_eq!(cli.serve.mode, Mode::Code);
        assert!(Cli::try_parse_from(["bin", "--mode", "codemod"]).is_err());
        let cli = Cli::try_parse_from(["bin", "describe", "x"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Describe { .. })));
        assert!(Cli::try_parse_from(["bin", "--transport", "carrier-pigeon"]).is_err());
    }

    #[test]
    fn schema_profile_flags_parse() {
        let cli = Cli::try_parse_from(["bin", "--transport", "stdio"]).unwrap();
        assert_eq!(cli.serve.schema_profile, SchemaChoice::Auto);
        let cli = Cli::try_parse_from(["bin", "--schema-profile", "strict"]).unwrap();
        assert_eq!(
            cli.serve.schema_profile,
            SchemaChoice::Fixed(SchemaProfile::Strict)
        );
        assert!(Cli::try_parse_from(["bin", "--schema-profile", "loose"]).is_err());
        let cli =
            Cli::try_parse_from(["bin", "describe", "x", "--schema-profile", "strict"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Describe {
                schema_profile: SchemaProfile::Strict,
                ..
            })
        ));
        assert!(Cli::try_parse_from(["bin", "describe", "x", "--schema-profile", "auto"]).is_err());
    }

    #[test]
    fn server_var_flags_repeat_and_need_name_value() {
        let cli = Cli::try_parse_from([
            "bin",
            "--transport",
            "stdio",
            "--server-var",
            "region=us",
            "--server-var",
            "basePath=v2/beta",
        ])
        .unwrap();
        assert_eq!(
            cli.serve.server_vars,
            [
                ("region".to_owned(), "us".to_owned()),
                ("basePath".to_owned(), "v2/beta".to_owned())
            ]
        );
        let cli = Cli::try_parse_from(["bin", "serve", "--server-var", "a=b"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Serve(args)) if args.server_vars.len() == 1
        ));
        let err = Cli::try_parse_from(["bin", "--server-var", "region"]).unwrap_err();
        assert!(err.to_string().contains("name=value"), "{err}");
    }

    #[test]
    fn connection_limit_flags_have_defaults_and_refuse_zero() {
        let cli = Cli::try_parse_from(["bin", "--transport", "http"]).unwrap();
        assert_eq!(
            (
                cli.serve.body_read_timeout_secs,
                cli.serve.idle_timeout_secs,
                cli.serve.max_connections
            ),
            (10, 60, 512)
        );
        let cli = Cli::try_parse_from([
            "bin",
            "--transport",
            "http",
            "--body-read-timeout-secs",
            "1",
            "--idle-timeout-secs",
            "2",
            "--max-connections",
            "4",
        ])
        .unwrap();
        assert_eq!(
            (
                cli.serve.body_read_timeout_secs,
                cli.serve.idle_timeout_secs,
                cli.serve.max_connections
            ),
            (1, 2, 4)
        );
        let cli = Cli::try_parse_from(["bin", "--max-connections-per-ip", "3"]).unwrap();
        let defaults = Cli::try_parse_from(["bin"]).unwrap().serve;
        assert_eq!(
            (
                cli.serve.max_connections_per_ip,
                defaults.max_connections_per_ip,
                defaults.metrics_max_connections
            ),
            (3, 64, 16)
        );
        for flag in [
            "--body-read-timeout-secs",
            "--idle-timeout-secs",
            "--max-connections",
            "--max-connections-per-ip",
            "--metrics-max-connections",
        ] {
            assert!(
                Cli::try_parse_from(["bin", "--transport", "http", flag, "0"]).is_err(),
                "{flag} 0"
            );
        }
    }
}
