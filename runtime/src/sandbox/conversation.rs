//! One job's exchange with its worker, on the parent side: send it, serve
//! its host calls, hold its CPU slot only while its JavaScript runs,
//! enforce the caps and kill deadlines, and stop it when cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::engine::HostReply;
use super::fair::{ClientKey, Permit, Refusal};
use super::pool::{Inner, Worker, failed};
use super::protocol::{FromWorker, PROTOCOL_VERSION, ToWorker};
use super::types::{HostApi, Report};
use super::{HostCall, Limits, SandboxConfig, SandboxError};

/// How a run left its worker.
pub(super) enum Health {
    Reusable,
    Discard,
}

/// CPU-ish time of the worker as the parent sees it: time between holding
/// the CPU slot and the worker saying it waits.
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

/// A pending wait for the CPU slot, kept across loop turns so the run keeps
/// its place in the fair queue.
type CpuWait = Pin<Box<dyn Future<Output = Result<Permit, Refusal>> + Send>>;

/// What woke the conversation loop.
enum Wake {
    Worker(Result<FromWorker, String>),
    Host(Option<Result<HostDone, tokio::task::JoinError>>),
    Cpu(Result<Permit, Refusal>),
    Cancelled,
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
    /// The CPU slot, held while the worker runs JavaScript.
    cpu: Option<Permit>,
    /// Replies that wait for the CPU slot (the worker computes on each).
    due: Vec<HostReply>,
    cancelled: bool,
}

impl Job<'_> {
    /// The parent's answer to a `call`: run it on the host, or refuse it and
    /// end the run when a cap is exceeded.
    fn on_call(&mut self, call: u32, request: HostCall) -> Option<HostReply> {
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
                    HostCall::Request(request) => host.request(request),
                    HostCall::Tool(call) => host.call_tool(call),
                };
                self.calls.spawn(async move { (call, future.await) });
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

    /// Stops the run: no host call after this one, outstanding ones dropped
    /// (their requests are abandoned), the worker told to stop.
    fn cancel(&mut self) {
        self.cancelled = true;
        self.calls.abort_all();
        self.due.clear();
        self.abort = Some(SandboxError::Cancelled);
        self.wall_kill = Instant::now() + self.config.cancel_grace;
    }
}

/// Run one job on `worker`: send it, serve its host calls, enforce the caps
/// and the kill deadlines, collect the result.
pub(super) async fn converse(
    worker: &mut Worker,
    id: u64,
    message: ToWorker,
    host: Option<Arc<dyn HostApi>>,
    pool: &Inner,
    key: ClientKey,
    cancel: &CancellationToken,
) -> (Report, Health) {
    let config = &pool.config;
    let limits = &config.limits;
    let mut report = failed(SandboxError::NeverSettled, Duration::ZERO);
    // The job starts computing as soon as it is sent: it needs the CPU slot.
    let cpu = tokio::select! {
        permit = pool.cpu.acquire(key, limits.wall()) => permit,
        () = cancel.cancelled() => {
            report.result = Err(SandboxError::Cancelled);
            return (report, Health::Reusable);
        }
    };
    let Ok(cpu) = cpu else {
        report.result = Err(SandboxError::Busy {
            queued: pool.cpu.queued(),
        });
        return (report, Health::Reusable);
    };
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
        cpu: Some(cpu),
        due: Vec::new(),
        cancelled: false,
    };
    let mut cpu_wait: Option<CpuWait> = None;
    let cpu_budget = limits.cpu() + config.kill_grace;
    let max_line = max_worker_line(limits);
    loop {
        let cpu_kill = if job.started && !job.cancelled {
            job.busy.deadline(cpu_budget)
        } else {
            None
        };
        let kill_at = cpu_kill.map_or(job.wall_kill, |c| c.min(job.wall_kill));
        let wake = tokio::select! {
            message = worker.recv(max_line) => Wake::Worker(message),
            joined = job.calls.join_next(), if !job.calls.is_empty() => Wake::Host(joined),
            permit = async {
                match cpu_wait.as_mut() {
                    Some(wait) => wait.await,
                    None => std::future::pending().await,
                }
            }, if cpu_wait.is_some() => Wake::Cpu(permit),
            () = cancel.cancelled(), if !job.cancelled => Wake::Cancelled,
            () = tokio::time::sleep_until(kill_at.into()) => Wake::Deadline,
        };
        report.requests_made = job.requests.min(limits.max_requests);
        let mut replies: Vec<HostReply> = Vec::new();
        match wake {
            Wake::Worker(Err(cause)) => {
                let detail = worker.crash_detail(&cause).await;
                report.result = Err(job.abort.unwrap_or(SandboxError::WorkerCrashed { detail }));
                return (report, Health::Discard);
            }
            Wake::Worker(Ok(message)) => match message {
                FromWorker::Ready { version } if !worker.ready && version == PROTOCOL_VERSION => {
                    worker.ready = true;
                }
                FromWorker::Started { id: started } if started == id && !job.started => {
                    job.started = true;
                    if !job.cancelled {
                        job.wall_kill = Instant::now() + limits.wall() + config.kill_grace;
                    }
                    job.busy.resume();
                }
                FromWorker::Call {
                    id: call_id,
                    call,
                    request,
                } if call_id == id => replies.extend(job.on_call(call, request)),
                FromWorker::Waiting { id: waiting } if waiting == id => {
                    // No JavaScript runs until a reply comes: the slot goes
                    // to another run meanwhile.
                    job.busy.pause();
                    job.cpu = None;
                }
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
            Wake::Host(joined) => match joined {
                Some(Ok((call, result))) => replies.push(job.on_host_result(call, result)),
                // Aborted by the cancel itself.
                Some(Err(e)) if e.is_cancelled() && job.cancelled => {}
                // The host future panicked: end the run (the call number
                // is lost with the task, so the worker is not told).
                Some(Err(e)) => {
                    let _ = worker.child.start_kill();
                    report.result = Err(SandboxError::Internal {
                        message: format!("host call failed: {e}"),
                    });
                    return (report, Health::Discard);
                }
                None => {}
            },
            Wake::Cpu(permit) => {
                cpu_wait = None;
                match permit {
                    Ok(permit) => {
                        job.cpu = Some(permit);
                        job.busy.resume();
                        replies.append(&mut job.due);
                    }
                    // No slot within the wall budget: the run is over.
                    Err(_) => {
                        let _ = worker.child.start_kill();
                        report.result = Err(job.deadline_error(None));
                        return (report, Health::Discard);
                    }
                }
            }
            Wake::Cancelled => {
                job.cancel();
                cpu_wait = None;
                let _ = worker.send(&ToWorker::Cancel { id }).await;
            }
            Wake::Deadline => {
                let _ = worker.child.start_kill();
                report.result = Err(job.deadline_error(cpu_kill));
                return (report, Health::Discard);
            }
        }
        if job.cancelled {
            continue;
        }
        if job.cpu.is_none() && !replies.is_empty() {
            job.due.append(&mut replies);
            if cpu_wait.is_none() {
                let gate = Arc::clone(&pool.cpu);
                let wait = limits.wall();
                cpu_wait = Some(Box::pin(async move { gate.acquire(key, wait).await }));
            }
        }
        // A failed write means the worker died: the next read reports it.
        for reply in replies {
            let _ = worker.send(&ToWorker::Reply { id, reply }).await;
        }
    }
}
