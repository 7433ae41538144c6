//! The parent side: a pool of worker processes, admitted fairly.
//!
//! A run holds a *process slot* from start to end and a *CPU slot* only
//! while its JavaScript runs (see [`conversation`](super::conversation)):
//! a run waiting for a slow API keeps its process but lets another run
//! compute. Both slots come from [`FairGate`]s keyed by client, so one
//! client with many runs cannot starve the others, and the queue for
//! process slots is bounded (a run beyond it gets [`SandboxError::Busy`]).
//! `workers` processes are kept warm; up to `max_workers` run at once,
//! the extra ones started for one run and stopped after it.
//!
//! Every run happens in a task of its own. When the caller's future is
//! dropped (an HTTP client went away) or its cancellation token fires
//! (`notifications/cancelled`), the task stops the run: no further host
//! call is made, outstanding ones are dropped, the worker is told to
//! cancel and is back in the pool within [`SandboxConfig::cancel_grace`],
//! or is killed and replaced.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use super::conversation::{Health, converse};
use super::engine::JobKind;
use super::fair::{ClientKey, FairGate, GateSize, Refusal};
use super::protocol::{FromWorker, PROTOCOL_VERSION, ToWorker, WireSpec, encode};
use super::types::{HostApi, Logs, Outcome, Report};
use super::{SandboxConfig, SandboxError, SpecSource};

/// Bytes of a worker's stderr kept for crash reports.
const STDERR_TAIL: usize = 2048;

/// Who a run is for and how it may be stopped early.
#[derive(Debug, Clone, Default)]
pub struct RunFor {
    /// The client whose fair share the run uses.
    pub key: Option<ClientKey>,
    /// Cancels the run (e.g. rmcp's request token); dropping the future
    /// that awaits the run cancels it too.
    pub cancel: Option<CancellationToken>,
}

/// A pool of sandbox worker processes; cheap to clone (shared).
///
/// Must be created and used inside a Tokio runtime.
#[derive(Clone)]
pub struct SandboxPool {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) config: SandboxConfig,
    idle: Mutex<Vec<Worker>>,
    slots: Arc<FairGate>,
    pub(super) cpu: Arc<FairGate>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for SandboxPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxPool")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

pub(super) struct Worker {
    pub(super) child: Child,
    stdin: Stdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    pub(super) ready: bool,
}

impl SandboxPool {
    /// Start the pool: spawns the warm workers (each begins loading the spec
    /// at once). Fails when no Tokio runtime is running or the worker
    /// executable cannot be started.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        tokio::runtime::Handle::try_current().map_err(|e| SandboxError::Spawn {
            message: format!("no Tokio runtime: {e}"),
        })?;
        let workers = config.workers.max(1);
        let processes = config.max_workers.max(workers);
        let slots = FairGate::new(GateSize {
            capacity: processes,
            per_key: config.max_runs_per_client,
            max_queued: config.max_queued,
            max_queued_per_key: config.max_queued_per_client,
        });
        // Every admitted run may wait for the CPU; the process gate bounds
        // them. One client computes in at most half the slots (rounded up):
        // a run is never preempted, so a client spinning in every slot would
        // make everybody else wait for its CPU budget to run out.
        let cpu = FairGate::new(GateSize {
            capacity: workers,
            per_key: workers.div_ceil(2),
            max_queued: processes,
            max_queued_per_key: processes,
        });
        let inner = Arc::new(Inner {
            idle: Mutex::new(Vec::with_capacity(workers)),
            slots,
            cpu,
            next_id: AtomicU64::new(1),
            config,
        });
        let mut started = Vec::with_capacity(workers);
        for _ in 0..workers {
            started.push(spawn_worker(&inner.config, true)?);
        }
        if let Ok(mut idle) = inner.idle.lock() {
            idle.extend(started);
        }
        Ok(Self { inner })
    }

    /// The configuration.
    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// Worker processes idle now (warm ones waiting for a run).
    pub fn idle_workers(&self) -> usize {
        self.inner.idle.lock().map_or(0, |idle| idle.len())
    }

    /// Run search code against the configured spec (global `spec`; no network).
    pub async fn search(&self, code: &str) -> Result<Outcome, SandboxError> {
        self.search_report(code).await.into_outcome()
    }

    /// Run execute code; its `api.request` calls go to `host` in this process.
    pub async fn execute(
        &self,
        code: &str,
        host: Arc<dyn HostApi>,
    ) -> Result<Outcome, SandboxError> {
        self.execute_report(code, host).await.into_outcome()
    }

    /// Run code-mode code: its `codemode.<tool>(args)` calls go to
    /// [`HostApi::call_tool`] of `host` in this process (no `api` global).
    pub async fn code(&self, code: &str, host: Arc<dyn HostApi>) -> Result<Outcome, SandboxError> {
        self.code_report(code, host).await.into_outcome()
    }

    /// [`code`](Self::code), keeping the logs of a failed run.
    pub async fn code_report(&self, code: &str, host: Arc<dyn HostApi>) -> Report {
        self.run_for(JobKind::Code, code, Some(host), RunFor::default())
            .await
    }

    /// [`search`](Self::search), keeping the logs of a failed run.
    pub async fn search_report(&self, code: &str) -> Report {
        self.run_for(JobKind::Search, code, None, RunFor::default())
            .await
    }

    /// [`execute`](Self::execute), keeping the logs of a failed run.
    pub async fn execute_report(&self, code: &str, host: Arc<dyn HostApi>) -> Report {
        self.run_for(JobKind::Execute, code, Some(host), RunFor::default())
            .await
    }

    /// Runs `code` as `kind` for a client, with its fair share and its
    /// cancellation (see [`RunFor`]); `host` serves execute and code runs.
    pub async fn run_for(
        &self,
        kind: JobKind,
        code: &str,
        host: Option<Arc<dyn HostApi>>,
        run: RunFor,
    ) -> Report {
        if kind == JobKind::Search && self.inner.config.spec.is_none() {
            let error = SandboxError::SpecUnavailable {
                message: "no spec is configured".into(),
            };
            return failed(error, Duration::ZERO);
        }
        let limits = self.inner.config.limits.clone();
        let code = code.to_owned();
        let label = match kind {
            JobKind::Search => "search",
            JobKind::Execute => "execute",
            JobKind::Code => "code",
        };
        self.run_job(host, run, label, move |id| ToWorker::Run {
            id,
            kind,
            code,
            limits,
        })
        .await
    }

    /// Make a worker call `std::process::abort` (test binaries only, see
    /// [`WorkerOptions::allow_debug_abort`](super::WorkerOptions)); the
    /// report carries [`SandboxError::WorkerCrashed`].
    #[doc(hidden)]
    pub async fn debug_abort_worker(&self) -> Report {
        self.run_job(None, RunFor::default(), "debug", |id| {
            ToWorker::DebugAbort { id }
        })
        .await
    }

    async fn run_job(
        &self,
        host: Option<Arc<dyn HostApi>>,
        run: RunFor,
        label: &'static str,
        job: impl FnOnce(u64) -> ToWorker + Send + 'static,
    ) -> Report {
        let start = Instant::now();
        let (report, queued) = self.run_job_inner(host, run, job, start).await;
        crate::metrics::sandbox_run(label, sandbox_outcome(&report), queued);
        report
    }

    async fn run_job_inner(
        &self,
        host: Option<Arc<dyn HostApi>>,
        run: RunFor,
        job: impl FnOnce(u64) -> ToWorker + Send + 'static,
        start: Instant,
    ) -> (Report, Duration) {
        let key = run.key.unwrap_or(ClientKey::ANONYMOUS);
        // A child token: dropping this future cancels the run, never the
        // caller's own token.
        let cancel = run
            .cancel
            .map_or_else(CancellationToken::new, |c| c.child_token());
        let _cancel_on_drop = cancel.clone().drop_guard();
        let wait = self.inner.config.limits.wall();
        let slot = tokio::select! {
            slot = self.inner.slots.acquire(key, wait) => slot,
            () = cancel.cancelled() => return (failed(SandboxError::Cancelled, start.elapsed()), start.elapsed()),
        };
        let slot = match slot {
            Ok(slot) => slot,
            Err(Refusal::QueueFull { queued }) => {
                let report = failed(SandboxError::Busy { queued }, start.elapsed());
                return (report, start.elapsed());
            }
            Err(Refusal::Timeout) => {
                let queued = self.inner.slots.queued();
                let report = failed(SandboxError::Busy { queued }, start.elapsed());
                return (report, start.elapsed());
            }
        };
        let waited = start.elapsed();
        let inner = Arc::clone(&self.inner);
        let task = tokio::spawn(async move {
            let mut worker = match inner.checkout() {
                Ok(worker) => worker,
                Err(error) => return failed(error, Duration::ZERO),
            };
            let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
            let (report, health) =
                converse(&mut worker, id, job(id), host, &inner, key, &cancel).await;
            match health {
                Health::Reusable => inner.checkin(worker),
                Health::Discard => {
                    drop(worker); // kill_on_drop
                    crate::metrics::sandbox_worker_restart();
                    inner.replace_warm();
                }
            }
            drop(slot);
            report
        });
        let mut report = match task.await {
            Ok(report) => report,
            Err(e) => failed(
                SandboxError::Internal {
                    message: format!("the run's task failed: {e}"),
                },
                Duration::ZERO,
            ),
        };
        report.duration = start.elapsed();
        (report, waited)
    }
}

/// The metrics label of a finished run.
fn sandbox_outcome(report: &Report) -> crate::metrics::SandboxOutcome {
    use crate::metrics::SandboxOutcome as O;
    match &report.result {
        Ok(_) => O::Ok,
        Err(SandboxError::CpuTimeLimit { .. } | SandboxError::WallClockLimit { .. }) => O::Timeout,
        Err(SandboxError::MemoryLimit { .. }) => O::MemoryAbort,
        Err(SandboxError::WorkerCrashed { .. }) => O::Crashed,
        Err(SandboxError::Busy { .. }) => O::Busy,
        Err(SandboxError::Cancelled) => O::Cancelled,
        Err(_) => O::Error,
    }
}

impl Inner {
    /// An idle live worker, or a new one started for this run only.
    fn checkout(&self) -> Result<Worker, SandboxError> {
        loop {
            let candidate = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some(mut worker) = candidate else {
                return spawn_worker(&self.config, false);
            };
            if matches!(worker.child.try_wait(), Ok(None)) {
                return Ok(worker);
            }
            // Died while idle: drop it and try the next one.
        }
    }

    /// Keeps `worker` warm when fewer than `workers` are idle; stops it
    /// otherwise (it was started for one run).
    fn checkin(&self, worker: Worker) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.config.workers.max(1)
        {
            idle.push(worker);
        }
    }

    /// Starts a warm worker in place of a discarded one, if one is missing.
    fn replace_warm(&self) {
        let missing = self
            .idle
            .lock()
            .is_ok_and(|idle| idle.len() < self.config.workers.max(1));
        if missing && let Ok(fresh) = spawn_worker(&self.config, true) {
            self.checkin(fresh);
        }
    }
}

pub(super) fn failed(error: SandboxError, duration: Duration) -> Report {
    Report {
        result: Err(error),
        logs: Logs::default(),
        requests_made: 0,
        duration,
    }
}

/// Start one worker and send it `init` (in the background for an inline
/// spec); `eager` workers index the spec at once.
fn spawn_worker(config: &SandboxConfig, eager: bool) -> Result<Worker, SandboxError> {
    let spawn_error = |e: std::io::Error| SandboxError::Spawn {
        message: format!("{}: {e}", config.worker.program.display()),
    };
    let mut child = Command::new(&config.worker.program)
        .args(&config.worker.args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn_error)?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(SandboxError::Spawn {
            message: "worker pipes missing".into(),
        });
    };
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
    let sink = Arc::clone(&tail);
    tokio::spawn(async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Ok(mut tail) = sink.lock() {
                tail.extend(buf.iter().take(n));
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
        }
    });
    let (spec, inline) = match &config.spec {
        None => (None, None),
        Some(SpecSource::Path(path)) => (Some(WireSpec::Path(path.clone())), None),
        Some(SpecSource::Json(text)) => (
            Some(WireSpec::Inline { bytes: text.len() }),
            Some(Arc::clone(text)),
        ),
    };
    let mut init = encode(&ToWorker::Init {
        version: PROTOCOL_VERSION,
        spec,
        eager,
    });
    if let Some(text) = inline {
        init.extend_from_slice(text.as_bytes());
    }
    // A task writes `init` so that a large inline spec does not block the
    // caller; the first job waits for it (see `Stdin::get`).
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let ok = stdin.write_all(&init).await.is_ok() && stdin.flush().await.is_ok();
        let _ = tx.send(ok.then_some(stdin));
    });
    Ok(Worker {
        child,
        stdin: Stdin::Pending(rx),
        stdout: BufReader::with_capacity(1 << 16, stdout),
        stderr: tail,
        ready: false,
    })
}

/// A worker's stdin, possibly still being used to write `init`.
enum Stdin {
    Pending(tokio::sync::oneshot::Receiver<Option<ChildStdin>>),
    Ready(ChildStdin),
    Broken,
}

impl Stdin {
    async fn get(&mut self) -> Option<&mut ChildStdin> {
        if let Stdin::Pending(rx) = self {
            *self = match rx.await {
                Ok(Some(stdin)) => Stdin::Ready(stdin),
                _ => Stdin::Broken,
            };
        }
        match self {
            Stdin::Ready(stdin) => Some(stdin),
            _ => None,
        }
    }
}

impl Worker {
    pub(super) async fn send(&mut self, message: &ToWorker) -> Result<(), ()> {
        let Some(stdin) = self.stdin.get().await else {
            return Err(());
        };
        let line = encode(message);
        stdin.write_all(&line).await.map_err(|_| ())?;
        stdin.flush().await.map_err(|_| ())
    }

    /// Read one message, at most `max` bytes. `None` on EOF or garbage.
    pub(super) async fn recv(&mut self, max: usize) -> Result<FromWorker, String> {
        let mut line = Vec::new();
        let limit = u64::try_from(max).unwrap_or(u64::MAX);
        match (&mut self.stdout)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) => Err("the worker closed its output".into()),
            Ok(_) if line.last() != Some(&b'\n') => {
                Err(format!("a worker message exceeded {max} bytes"))
            }
            Ok(_) => {
                serde_json::from_slice(&line).map_err(|e| format!("unreadable worker message: {e}"))
            }
            Err(e) => Err(format!("reading the worker: {e}")),
        }
    }

    /// Kill the process and describe how it ended.
    pub(super) async fn crash_detail(&mut self, cause: &str) -> String {
        let status = match tokio::time::timeout(Duration::from_millis(200), self.child.wait()).await
        {
            Ok(Ok(status)) => status.to_string(),
            _ => {
                let _ = self.child.start_kill();
                "still running; killed".to_owned()
            }
        };
        let tail = self
            .stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<_>>()).into_owned());
        let tail = tail.unwrap_or_default();
        let tail = tail.trim();
        if tail.is_empty() {
            format!("{cause} ({status})")
        } else {
            format!("{cause} ({status}); stderr: {tail}")
        }
    }
}
