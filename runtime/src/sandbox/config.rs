//! Limits and pool configuration.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::WORKER_ARG;

/// Resource limits of one sandboxed run.
///
/// Sent to the worker with every job, so one pool could run calls with
/// different limits; [`SandboxConfig::limits`] is what the pool uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// QuickJS heap limit in bytes (`JS_SetMemoryLimit`). Default 64 MiB.
    pub memory_bytes: usize,
    /// QuickJS stack limit in bytes (`JS_SetMaxStackSize`). Default 1 MiB.
    pub stack_bytes: usize,
    /// Budget of time spent running JavaScript, waits for `api.request`
    /// excluded; enforced by the interrupt handler. Default 1 s.
    pub cpu_ms: u64,
    /// Budget of the whole run including waits. Default 10 s.
    pub wall_ms: u64,
    /// Cap on `api.request` calls per run. Default 20.
    pub max_requests: u32,
    /// Cap on the summed JSON size of `api.request` responses. Default 10 MB.
    pub max_response_bytes: u64,
    /// Cap on the JSON size of the returned value. Default 4 MiB.
    pub max_output_bytes: usize,
    /// Cap on captured `console` output. Default 32 KiB.
    pub max_log_bytes: usize,
    /// Cap on the source code size. Default 256 KiB.
    pub max_code_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            stack_bytes: 1 << 20,
            cpu_ms: 1_000,
            wall_ms: 10_000,
            max_requests: 20,
            max_response_bytes: 10_000_000,
            max_output_bytes: 4 << 20,
            max_log_bytes: 32 << 10,
            max_code_bytes: 256 << 10,
        }
    }
}

impl Limits {
    /// The CPU budget as a [`Duration`].
    pub fn cpu(&self) -> Duration {
        Duration::from_millis(self.cpu_ms)
    }

    /// The wall-clock budget as a [`Duration`].
    pub fn wall(&self) -> Duration {
        Duration::from_millis(self.wall_ms)
    }
}

/// Where the worker gets the resolved spec that `search` exposes as `spec`.
#[derive(Debug, Clone)]
pub enum SpecSource {
    /// A JSON file (e.g. the generator's `artifacts/spec.json`), read by each
    /// worker at start.
    Path(PathBuf),
    /// JSON text held in memory, sent to each worker at start.
    Json(Arc<str>),
}

/// The program started for each worker process.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// Executable to run.
    pub program: PathBuf,
    /// Arguments; by default just [`WORKER_ARG`].
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// Re-execute the current binary with [`WORKER_ARG`]; the binary's `main`
    /// must call [`run_worker_if_requested`](super::run_worker_if_requested).
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?))
    }

    /// Run `program` with [`WORKER_ARG`] (e.g. a test binary that calls
    /// [`worker_main`](super::worker_main)).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: vec![OsString::from(WORKER_ARG)],
        }
    }
}

/// Configuration of a [`SandboxPool`](super::SandboxPool).
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// How to start a worker process.
    pub worker: WorkerCommand,
    /// Number of worker processes kept warm, and the number of runs whose
    /// JavaScript may run at once (CPU slots; a run waiting for
    /// `api.request` gives its slot up). Default 2, one per core here.
    pub workers: usize,
    /// Most worker processes at once, waits for the API included: beyond
    /// the warm ones, processes are started for runs that find none idle
    /// and stopped when they finish. Default 8.
    pub max_workers: usize,
    /// Most runs one client (credential or grant) may have in progress at
    /// once; more are queued. Default 4.
    pub max_runs_per_client: usize,
    /// Most runs waiting for a worker, in all; a run beyond it is refused
    /// with [`SandboxError::Busy`](super::SandboxError::Busy). Default 64.
    pub max_queued: usize,
    /// Most runs of one client waiting for a worker. Default 8.
    pub max_queued_per_client: usize,
    /// How long a cancelled run's worker may take to stop by itself before
    /// it is killed and replaced. Default 50 ms.
    pub cancel_grace: Duration,
    /// Limits applied to every run.
    pub limits: Limits,
    /// The spec for `search`; `None` makes `search` fail with
    /// [`SandboxError::SpecUnavailable`](super::SandboxError::SpecUnavailable).
    pub spec: Option<SpecSource>,
    /// Extra time the parent grants past a deadline for the worker to report
    /// the limit itself before it is killed. Default 500 ms.
    pub kill_grace: Duration,
    /// How long a worker may take to start a job (it first indexes the spec,
    /// ~0.5–1.5 s for the full flagship release) before it is considered
    /// hung and killed. Default 60 s.
    pub startup_limit: Duration,
}

impl SandboxConfig {
    /// A configuration that starts `worker`, with default limits, two warm
    /// workers and no spec.
    pub fn new(worker: WorkerCommand) -> Self {
        Self {
            worker,
            workers: 2,
            max_workers: 8,
            max_runs_per_client: 4,
            max_queued: 64,
            max_queued_per_client: 8,
            cancel_grace: Duration::from_millis(50),
            limits: Limits::default(),
            spec: None,
            kill_grace: Duration::from_millis(500),
            startup_limit: Duration::from_secs(60),
        }
    }

    /// Set the spec searched by `search`.
    pub fn with_spec(mut self, spec: SpecSource) -> Self {
        self.spec = Some(spec);
        self
    }

    /// Set the limits of every run.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the number of warm workers and CPU slots (at least one); the
    /// process bound grows to match when it is smaller.
    pub fn with_workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self.max_workers = self.max_workers.max(self.workers);
        self
    }

    /// Set the bound on worker processes (at least [`SandboxConfig::workers`])
    /// and on one client's runs in progress (at least one).
    pub fn with_concurrency(mut self, max_workers: usize, per_client: usize) -> Self {
        self.max_workers = max_workers.max(self.workers);
        self.max_runs_per_client = per_client.clamp(1, self.max_workers);
        self
    }

    /// Set the bounds of the queue of runs waiting for a worker.
    pub fn with_queue(mut self, max_queued: usize, per_client: usize) -> Self {
        self.max_queued = max_queued;
        self.max_queued_per_client = per_client;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design() {
        let l = Limits::default();
        assert_eq!(l.memory_bytes, 64 << 20);
        assert_eq!(l.max_requests, 20);
        assert_eq!(l.cpu(), Duration::from_secs(1));
        assert_eq!(l.wall(), Duration::from_secs(10));
        let c = SandboxConfig::new(WorkerCommand::new("/bin/x")).with_workers(0);
        assert_eq!(c.workers, 1);
        assert_eq!(c.worker.args, vec![OsString::from(WORKER_ARG)]);
    }
}
