//! Code Mode sandbox: run model-written JavaScript in QuickJS, isolated in
//! worker processes.
//!
//! The code is the source of a function, normally an async arrow function:
//!
//! ```text
//! search:  async () => Object.keys(spec.paths).filter(p => p.includes("dns"))
//! execute: async () => { const r = await api.request({method: "GET", path: "/zones"}); return r.result.length; }
//! ```
//!
//! Its return value comes back as JSON (`undefined` → `null`), with the
//! `console.log/info/warn/error/debug` output; a throw or rejection becomes
//! [`SandboxError::Thrown`] with the message and the first stack lines.
//!
//! # Using it
//!
//! ```no_run
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolforge_runtime::sandbox::{HostRequest, SandboxConfig, SandboxPool, SpecSource, WorkerCommand};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = SandboxConfig::new(WorkerCommand::current_exe()?)
//!     .with_spec(SpecSource::Path("artifacts/spec.json".into()));
//! let pool = SandboxPool::new(config)?;
//! let found = pool.search("async () => Object.keys(spec.paths).length").await?;
//! let host = Arc::new(|req: HostRequest| async move {
//!     // validate req.method/req.path against the catalogue, add credentials, call upstream …
//!     Ok::<_, String>(json!({"status": 200, "result": []}))
//! });
//! let done = pool.execute("async () => (await api.request({method: 'GET', path: '/zones'})).result", host).await?;
//! println!("{} {} {:?}", found.value, done.value, done.logs);
//! # Ok(()) }
//! ```
//!
//! The binary must start with the worker hook, before anything touches
//! stdout:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     toolforge_runtime::sandbox::run_worker_if_requested();
//!     // … normal start-up …
//! # std::process::ExitCode::SUCCESS
//! }
//! ```
//!
//! # Isolation and limits
//!
//! - **Worker processes.** A [`SandboxPool`] keeps `workers` (default 2) warm
//!   child processes: the same binary re-executed with [`WORKER_ARG`], with an
//!   empty environment (no credential is ever in the worker, not even in its
//!   memory). Parent and worker speak JSON lines over stdin/stdout. A worker
//!   that aborts, overflows its native stack, corrupts memory or stops
//!   answering is killed and replaced; the call in flight gets
//!   [`SandboxError::WorkerCrashed`] (or the limit it blew) and the next call
//!   runs on a healthy worker.
//! - **Sharing.** `workers` is also the number of runs computing at once; a
//!   run waiting for its host calls gives its CPU slot up and keeps only its
//!   process, and up to `max_workers` processes run at once. Clients
//!   ([`ClientKey`]) are served in turn with a cap each, the queue is
//!   bounded ([`SandboxError::Busy`]), and a cancelled or abandoned run
//!   ([`RunFor`]) stops at once: no further host call, the worker told to
//!   stop and back in the pool within [`SandboxConfig::cancel_grace`].
//! - **Fresh runtime per run.** Inside the worker every run gets a new QuickJS
//!   runtime and context ([`engine`]), dropped before the result is sent, so
//!   nothing survives from one call to the next (creation costs ~0.1–0.3 ms).
//!   Sharing one runtime and handing a pre-parsed spec to fresh contexts was
//!   measured and rejected: objects of one context leak their realm's
//!   intrinsics into the next (cross-call tampering unless every intrinsic is
//!   deep-frozen), and collecting a heap holding the 400k spec objects
//!   takes ~250 ms.
//! - **Limits** ([`Limits`]): heap (`JS_SetMemoryLimit`, the default QuickJS
//!   allocator keeps it in force), stack, CPU budget and wall-clock deadline via
//!   the interrupt handler, requests per run, total response bytes, result and
//!   log size. The parent enforces the request and byte caps itself (the
//!   worker is not trusted with them) and kills a worker that overruns its CPU
//!   or wall budget by [`SandboxConfig::kill_grace`], e.g. inside a native loop
//!   that never reaches the interrupt handler.
//! - **Nothing but the language.** No module loader (`import()` rejects), no
//!   `std`/`os`, `fetch`, `require`, `process`, `XMLHttpRequest` or timers.
//!
//! # Search over a large spec
//!
//! Each worker parses the spec once into an index ([`lazy`]; ~0.5–1.5 s on
//! the full flagship release, in the background: a search arriving earlier
//! waits for it, and its clocks start only then). The first search builds
//! the whole document from it as one deeply frozen QuickJS object graph in
//! a runtime the worker keeps ([`frozen`]); every search then runs in a
//! fresh context of that runtime with `spec` pointing at the graph, so a
//! call builds nothing of the spec and no run can change what the next one
//! reads. `JSON.parse` of the whole spec would take ~0.8 s per call. The
//! lazy, per-call materialisation stays for in-process runs
//! ([`engine::run`]) and as the fallback if the graph cannot be built.
//! Benchmarks: `benches/sandbox.rs`.

mod config;
mod conversation;
pub mod engine;
mod error;
mod fair;
pub mod frozen;
pub mod lazy;
mod pool;
mod protocol;
mod types;
mod worker;

pub use config::{Limits, SandboxConfig, SpecSource, WorkerCommand};
pub use engine::JobKind;
pub use error::SandboxError;
pub use fair::ClientKey;
pub use frozen::{FrozenSpec, FrozenSpecError};
pub use lazy::SpecIndex;
pub use pool::{RunFor, SandboxPool};
pub use types::{
    HostApi, HostCall, HostFuture, HostRequest, LogEntry, LogLevel, Logs, Outcome, Report, ToolCall,
};
pub use worker::{WorkerOptions, worker_main, worker_main_with};

/// The hidden first argument that turns a binary into a sandbox worker.
pub const WORKER_ARG: &str = "__toolforge-sandbox-worker";

/// If this process was started as a sandbox worker (`argv[1] ==`
/// [`WORKER_ARG`]), serve as one and exit; otherwise return at once.
///
/// Call it first thing in `main` of every binary that creates a
/// [`SandboxPool`] with [`WorkerCommand::current_exe`].
pub fn run_worker_if_requested() {
    if std::env::args_os().nth(1).is_some_and(|a| a == WORKER_ARG) {
        let code = match worker::serve(&WorkerOptions::default()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
        std::process::exit(code);
    }
}
