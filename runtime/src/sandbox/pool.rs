//! The parent side: a pool of warm worker processes.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::engine::{HostReply, JobKind};
use super::protocol::{FromWorker, PROTOCOL_VERSION, ToWorker, WireSpec, encode};
use super::types::{HostApi, Logs, Outcome, Report};
use super::{Limits, SandboxConfig, SandboxError, SpecSource};

/// Bytes of a worker's stderr kept for crash reports.
const STDERR_TAIL: usize = 2048;

/// A pool of sandbox worker processes; cheap to clone (shared).
///
/// Must be created and used inside a Tokio runtime. Runs proceed in parallel
/// up to [`SandboxConfig::workers`]; further calls wait for a free worker for
/// at most the wall-clock limit.
#[derive(Clone)]
pub struct SandboxPool {
    inner: Arc<Inner>,
}

struct Inner {
    config: SandboxConfig,
    idle: Mutex<Vec<Worker>>,
    permits: Semaphore,
    next_id: AtomicU64,
}

impl std::fmt::Debug for SandboxPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxPool")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

struct Worker {
    child: Child,
    stdin: Stdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    ready: bool,
}

/// How a run left its worker.
enum Health {
    Reusable,
    Discard,
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
        let inner = Arc::new(Inner {
            permits: Semaphore::new(workers),
            idle: Mutex::new(Vec::with_capacity(workers)),
            next_id: AtomicU64::new(1),
            config,
        });
        let mut started = Vec::with_capacity(workers);
        for _ in 0..workers {
            started.push(spawn_worker(&inner.config)?);
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
        self.run(JobKind::Code, code, Some(host)).await
    }

    /// [`search`](Self::search), keeping the logs of a failed run.
    pub async fn search_report(&self, code: &str) -> Report {
        if self.inner.config.spec.is_none() {
            let error = SandboxError::SpecUnavailable {
                message: "no spec is configured".into(),
            };
            return failed(error, Duration::ZERO);
        }
        self.run(JobKind::Search, code, None).await
    }

    /// [`execute`](Self::execute), keeping the logs of a failed run.
    pub async fn execute_report(&self, code: &str, host: Arc<dyn HostApi>) -> Report {
        self.run(JobKind::Execute, code, Some(host)).await
    }

    /// Make a worker call `std::process::abort` (test binaries only, see
    /// [`WorkerOptions::allow_debug_abort`](super::WorkerOptions)); the
    /// report carries [`SandboxError::WorkerCrashed`].
    #[doc(hidden)]
    pub async fn debug_abort_worker(&self) -> Report {
        self.run_job(None, |id| ToWorker::DebugAbort { id }).await
    }

    async fn run(&self, kind: JobKind, code: &str, host: Option<Arc<dyn HostApi>>) -> Report {
        let limits = self.inner.config.limits.clone();
        self.run_job(host, |id| ToWorker::Run {
            id,
            kind,
            code: code.to_owned(),
            limits,
        })
        .await
    }

    async fn run_job(
        &self,
        host: Option<Arc<dyn HostApi>>,
        job: impl FnOnce(u64) -> ToWorker,
    ) -> Report {
        let start = Instant::now();
        let limits = &self.inner.config.limits;
        let Ok(Ok(_permit)) =
            tokio::time::timeout(limits.wall(), self.inner.permits.acquire()).await
        else {
            return failed(
                SandboxError::WallClockLimit {
                    limit_ms: limits.wall_ms,
                },
                start.elapsed(),
            );
        };
        let mut worker = match self.checkout() {
            Ok(worker) => worker,
            Err(error) => return failed(error, start.elapsed()),
        };
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (mut report, health) =
            converse(&mut worker, id, job(id), host, &self.inner.config).await;
        report.duration = start.elapsed();
        match health {
            Health::Reusable => self.checkin(worker),
            Health::Discard => {
                drop(worker); // kill_on_drop
                if let Ok(fresh) = spawn_worker(&self.inner.config) {
                    self.checkin(fresh);
                }
            }
        }
        report
    }

    /// An idle live worker, or a new one.
    fn checkout(&self) -> Result<Worker, SandboxError> {
        loop {
            let candidate = self.inner.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some(mut worker) = candidate else {
                return spawn_worker(&self.inner.config);
            };
            if matches!(worker.child.try_wait(), Ok(None)) {
                return Ok(worker);
            }
            // Died while idle: drop it and try the next one.
        }
    }

    fn checkin(&self, worker: Worker) {
        if let Ok(mut idle) = self.inner.idle.lock()
            && idle.len() < self.inner.config.workers.max(1)
        {
            idle.push(worker);
        }
    }
}

fn failed(error: SandboxError, duration: Duration) -> Report {
    Report {
        result: Err(error),
        logs: Logs::default(),
        requests_made: 0,
        duration,
    }
}

/// Start one worker and send it `init` (in the background for an inline spec).
fn spawn_worker(config: &SandboxConfig) -> Result<Worker, SandboxError> {
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
    async fn send(&mut self, message: &ToWorker) -> Result<(), ()> {
        let Some(stdin) = self.stdin.get().await else {
            return Err(());
        };
        let line = encode(message);
        stdin.write_all(&line).await.map_err(|_| ())?;
        stdin.flush().await.map_err(|_| ())
    }

    /// Read one message, at most `max` bytes. `None` on EOF or garbage.
    async fn recv(&mut self, max: usize) -> Result<FromWorker, String> {
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
    async fn crash_detail(&mut self, cause: &str) -> String {
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

/// CPU-ish time of the worker as the parent sees it: time with no host call
/// outstanding.
struct BusyClock {
    used: Duration,
    since: Option<Instant>,
}

impl BusyClock {
    fn pause(&mut self) {
        if let Some(since) = self.since.take() {
            self.used += since.elapsed();
        }
    }
    fn resume(&mut self) {
        self.since.get_or_insert_with(Instant::now);
    }
    /// When the budget runs out if the worker stays busy.
    fn deadline(&self, budget: Duration) -> Option<Instant> {
        self.since
            .map(|since| since + budget.saturating_sub(self.used))
    }
}

/// Largest message accepted from a worker.
fn max_worker_line(limits: &Limits) -> usize {
    limits
        .max_output_bytes
        .saturating_add(limits.max_log_bytes)
        .saturating_mul(8)
        .saturating_add(1 << 20)
}

/// A host call's number and result.
type HostDone = (u32, Result<Value, String>);

/// What woke the conversation loop.
enum Wake {
    Worker(Result<FromWorker, String>),
    Host(Option<Result<HostDone, tokio::task::JoinError>>),
    Deadline,
}

/// Bookkeeping of one job on the parent side.
struct Job<'a> {
    config: &'a SandboxConfig,
    host: Option<Arc<dyn HostApi>>,
    calls: JoinSet<HostDone>,
    requests: u32,
    response_bytes: u64,
    abort: Option<SandboxError>,
    started: bool,
    busy: BusyClock,
    wall_kill: Instant,
}

impl Job<'_> {
    /// The parent's answer to a `call`: run it on the host, or refuse it and
    /// end the run when a cap is exceeded.
    fn on_call(&mut self, call: u32, request: super::HostCall) -> Option<HostReply> {
        let limits = &self.config.limits;
        self.requests = self.requests.saturating_add(1);
        let refusal = match (&self.host, &self.abort) {
            (_, Some(abort)) => Some(abort.clone()),
            (None, None) => Some(SandboxError::Protocol {
                message: "a host call outside execute or code".into(),
            }),
            (Some(_), None) if self.requests > limits.max_requests => {
                Some(SandboxError::RequestLimit {
                    max: limits.max_requests,
                })
            }
            (Some(host), None) => {
                let future = match request {
                    super::HostCall::Request(request) => host.request(request),
                    super::HostCall::Tool(call) => host.call_tool(call),
                };
                self.calls.spawn(async move { (call, future.await) });
                self.busy.pause();
                None
            }
        };
        refusal.map(|error| self.refuse(call, error))
    }

    /// A finished host call, turned into the reply for the worker.
    fn on_host_result(&mut self, call: u32, result: Result<Value, String>) -> HostReply {
        let limits = &self.config.limits;
        let result = result.map(|v| v.to_string());
        if let Ok(text) = &result {
            let len = u64::try_from(text.len()).unwrap_or(u64::MAX);
            self.response_bytes = self.response_bytes.saturating_add(len);
            if self.response_bytes > limits.max_response_bytes {
                let max = limits.max_response_bytes;
                return self.refuse(call, SandboxError::ResponseBytesLimit { max });
            }
        }
        HostReply {
            call,
            result,
            abort: None,
        }
    }

    /// Record `error` as the end of the run and tell the worker.
    fn refuse(&mut self, call: u32, error: SandboxError) -> HostReply {
        let error = self.abort.get_or_insert(error).clone();
        HostReply {
            call,
            result: Err(error.to_string()),
            abort: Some(error),
        }
    }

    /// The error to report when the kill deadline passes.
    fn deadline_error(&self, cpu_kill: Option<Instant>) -> SandboxError {
        let limits = &self.config.limits;
        if let Some(abort) = &self.abort {
            abort.clone()
        } else if !self.started {
            let ms = self.config.startup_limit.as_millis();
            SandboxError::WorkerCrashed {
                detail: format!("the worker did not start the job within {ms} ms"),
            }
        } else if cpu_kill.is_some_and(|c| c <= self.wall_kill) {
            SandboxError::CpuTimeLimit {
                limit_ms: limits.cpu_ms,
            }
        } else {
            SandboxError::WallClockLimit {
                limit_ms: limits.wall_ms,
            }
        }
    }
}

/// Run one job on `worker`: send it, serve its host calls, enforce the caps
/// and the kill deadlines, collect the result.
async fn converse(
    worker: &mut Worker,
    id: u64,
    message: ToWorker,
    host: Option<Arc<dyn HostApi>>,
    config: &SandboxConfig,
) -> (Report, Health) {
    let limits = &config.limits;
    let mut report = failed(SandboxError::NeverSettled, Duration::ZERO);
    if worker.send(&message).await.is_err() {
        let detail = worker
            .crash_detail("the worker did not accept the job")
            .await;
        report.result = Err(SandboxError::WorkerCrashed { detail });
        return (report, Health::Discard);
    }
    // Clocks start when the worker says the job started (after the spec is
    // loaded); until then only the startup limit applies.
    let mut job = Job {
        config,
        host,
        calls: JoinSet::new(),
        requests: 0,
        response_bytes: 0,
        abort: None,
        started: false,
        busy: BusyClock {
            used: Duration::ZERO,
            since: None,
        },
        wall_kill: Instant::now() + config.startup_limit,
    };
    let cpu_budget = limits.cpu() + config.kill_grace;
    let max_line = max_worker_line(limits);
    loop {
        let cpu_kill = if job.started {
            job.busy.deadline(cpu_budget)
        } else {
            None
        };
        let kill_at = cpu_kill.map_or(job.wall_kill, |c| c.min(job.wall_kill));
        let wake = tokio::select! {
            message = worker.recv(max_line) => Wake::Worker(message),
            joined = job.calls.join_next(), if !job.calls.is_empty() => Wake::Host(joined),
            () = tokio::time::sleep_until(kill_at.into()) => Wake::Deadline,
        };
        report.requests_made = job.requests.min(limits.max_requests);
        let reply = match wake {
            Wake::Worker(Err(cause)) => {
                let detail = worker.crash_detail(&cause).await;
                report.result = Err(job.abort.unwrap_or(SandboxError::WorkerCrashed { detail }));
                return (report, Health::Discard);
            }
            Wake::Worker(Ok(message)) => match message {
                FromWorker::Ready { version } if !worker.ready && version == PROTOCOL_VERSION => {
                    worker.ready = true;
                    None
                }
                FromWorker::Started { id: started } if started == id && !job.started => {
                    job.started = true;
                    job.wall_kill = Instant::now() + limits.wall() + config.kill_grace;
                    job.busy.resume();
                    None
                }
                FromWorker::Call {
                    id: call_id,
                    call,
                    request,
                } if call_id == id => job.on_call(call, request),
                FromWorker::Done {
                    id: done_id,
                    result,
                    logs,
                    requests: _,
                } if done_id == id => {
                    report.logs = logs;
                    report.result = match (job.abort, result) {
                        (Some(abort), _) => Err(abort),
                        (None, Ok(text)) => {
                            serde_json::from_str(&text).map_err(|e| SandboxError::Protocol {
                                message: format!("result is not JSON: {e}"),
                            })
                        }
                        (None, Err(error)) => Err(error),
                    };
                    return (report, Health::Reusable);
                }
                other => {
                    let _ = worker.child.start_kill();
                    report.result = Err(SandboxError::Protocol {
                        message: format!("unexpected worker message {other:?}"),
                    });
                    return (report, Health::Discard);
                }
            },
            Wake::Host(joined) => {
                if job.calls.is_empty() {
                    job.busy.resume();
                }
                match joined {
                    Some(Ok((call, result))) => Some(job.on_host_result(call, result)),
                    // The host future panicked: end the run (the call number
                    // is lost with the task, so the worker is not told).
                    Some(Err(e)) => {
                        let _ = worker.child.start_kill();
                        report.result = Err(SandboxError::Internal {
                            message: format!("host call failed: {e}"),
                        });
                        return (report, Health::Discard);
                    }
                    None => None,
                }
            }
            Wake::Deadline => {
                let _ = worker.child.start_kill();
                report.result = Err(job.deadline_error(cpu_kill));
                return (report, Health::Discard);
            }
        };
        // A failed write means the worker died: the next read reports it.
        if let Some(reply) = reply {
            let _ = worker.send(&ToWorker::Reply { id, reply }).await;
        }
    }
}
