//! The worker process: reads jobs on stdin, runs each in a fresh QuickJS
//! runtime ([`engine::run`]), proxies `api.request` to the parent, writes
//! results on stdout.
//!
//! A reader thread turns stdin lines into events so the engine can wait for a
//! host reply with a deadline; it also raises the cancel flag the engine's
//! interrupt handler polls, so a `cancel` stops even a busy loop at once.
//! A warm worker indexes the spec for `search` on a background thread right
//! after start, so the first search waits at most for the rest of that load
//! and executes never wait for it; a worker started for one run indexes it
//! only if that run is a search. The first search also builds the frozen
//! object graph every later search reuses ([`FrozenSpec`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;

use super::engine::{self, CancelProbe, HostLink, LinkEvent};
use super::frozen::FrozenSpec;
use super::lazy::SpecIndex;
use super::protocol::{FromWorker, MAX_PARENT_LINE, PROTOCOL_VERSION, ToWorker, WireSpec, encode};
use super::types::HostCall;
use super::{JobKind, Logs, SandboxError};

/// Options of a worker process.
#[derive(Debug, Clone, Default)]
pub struct WorkerOptions {
    /// Obey the `debug_abort` command (calls `std::process::abort`). Only
    /// test binaries turn this on, to prove that a crashing worker does not
    /// take the server down; [`worker_main`] leaves it off.
    pub allow_debug_abort: bool,
}

/// Serve as a sandbox worker on stdin/stdout until stdin closes.
///
/// Called by [`run_worker_if_requested`](super::run_worker_if_requested);
/// call it directly from a dedicated worker binary.
pub fn worker_main() -> ExitCode {
    worker_main_with(&WorkerOptions::default())
}

/// [`worker_main`] with options.
pub fn worker_main_with(options: &WorkerOptions) -> ExitCode {
    match serve(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("sandbox worker: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What the stdin reader thread delivers.
enum Event {
    Init {
        spec: Option<SpecInput>,
        eager: bool,
    },
    Message(ToWorker),
}

enum SpecInput {
    Path(std::path::PathBuf),
    Text(String),
}

enum SpecState {
    None,
    Deferred(SpecInput),
    Loading(JoinHandle<Result<SpecIndex, String>>),
    Ready(Arc<SpecIndex>),
    Failed(String),
}

impl SpecState {
    fn get(&mut self) -> Result<Arc<SpecIndex>, SandboxError> {
        if let SpecState::Deferred(_) = self {
            let SpecState::Deferred(input) = std::mem::replace(self, SpecState::None) else {
                return Err(SandboxError::Internal {
                    message: "spec state".into(),
                });
            };
            *self = match load_spec(input) {
                Ok(index) => SpecState::Ready(Arc::new(index)),
                Err(message) => SpecState::Failed(message),
            };
        }
        if let SpecState::Loading(_) = self {
            let SpecState::Loading(handle) = std::mem::replace(self, SpecState::None) else {
                return Err(SandboxError::Internal {
                    message: "spec state".into(),
                });
            };
            *self = match handle.join() {
                Ok(Ok(index)) => SpecState::Ready(Arc::new(index)),
                Ok(Err(message)) => SpecState::Failed(message),
                Err(_) => SpecState::Failed("the spec loader crashed".into()),
            };
        }
        match self {
            SpecState::Ready(index) => Ok(Arc::clone(index)),
            SpecState::Failed(message) => Err(SandboxError::SpecUnavailable {
                message: message.clone(),
            }),
            _ => Err(SandboxError::SpecUnavailable {
                message: "no spec is configured".into(),
            }),
        }
    }
}

pub(crate) fn serve(options: &WorkerOptions) -> Result<(), String> {
    let (tx, rx) = channel();
    // The id of the last job the parent cancelled (ids start at 1).
    let cancelled = Arc::new(AtomicU64::new(0));
    let flag = Arc::clone(&cancelled);
    std::thread::Builder::new()
        .name("sandbox-stdin".into())
        .spawn(move || read_stdin(&tx, &flag))
        .map_err(|e| format!("cannot start the stdin reader: {e}"))?;
    let mut out = std::io::stdout().lock();
    let (spec, eager) = match rx.recv() {
        Ok(Event::Init { spec, eager }) => (spec, eager),
        Ok(Event::Message(_)) => return Err("expected init first".into()),
        Err(_) => return Ok(()),
    };
    write(
        &mut out,
        &FromWorker::Ready {
            version: PROTOCOL_VERSION,
        },
    )?;
    // Built at the first search (its runtime cannot leave this thread), and
    // again after a run that left something behind.
    let mut frozen: Option<FrozenSpec> = None;
    let mut spec = match spec {
        None => SpecState::None,
        Some(input) if !eager => SpecState::Deferred(input),
        Some(input) => SpecState::Loading(
            std::thread::Builder::new()
                .name("sandbox-spec".into())
                .spawn(move || load_spec(input))
                .map_err(|e| format!("cannot start the spec loader: {e}"))?,
        ),
    };
    while let Ok(event) = rx.recv() {
        let Event::Message(message) = event else {
            continue;
        };
        match message {
            ToWorker::Run {
                id,
                kind,
                code,
                limits,
            } => {
                let index = match kind {
                    JobKind::Search => Some(spec.get().inspect(|index| {
                        let stale = frozen.as_ref().is_none_or(FrozenSpec::is_spent);
                        if stale {
                            // Dropped first: two graphs never coexist.
                            drop(frozen.take());
                            frozen = FrozenSpec::build(index).ok();
                        }
                    })),
                    JobKind::Execute | JobKind::Code => None,
                };
                write(&mut out, &FromWorker::Started { id })?;
                let mut link = StdioLink {
                    id,
                    rx: &rx,
                    out: &mut out,
                    cancelled: &cancelled,
                };
                let output = match (index, frozen.as_mut()) {
                    (Some(Err(error)), _) => engine::RunOutput {
                        result: Err(error),
                        logs: Logs::default(),
                        requests: 0,
                    },
                    (Some(Ok(_)), Some(graph)) => {
                        engine::run_frozen(&code, &limits, graph, &mut link)
                    }
                    // The graph could not be built: materialise lazily.
                    (Some(Ok(index)), None) => {
                        engine::run(kind, &code, &limits, Some(&index), &mut link)
                    }
                    (None, _) => engine::run(kind, &code, &limits, None, &mut link),
                };
                let done = FromWorker::Done {
                    id,
                    result: output.result,
                    logs: output.logs,
                    requests: output.requests,
                };
                write(&mut out, &done)?;
            }
            ToWorker::DebugAbort { id } => {
                if options.allow_debug_abort {
                    std::process::abort();
                }
                let error = SandboxError::Protocol {
                    message: "debug commands are disabled".into(),
                };
                write(
                    &mut out,
                    &FromWorker::Done {
                        id,
                        result: Err(error),
                        logs: Logs::default(),
                        requests: 0,
                    },
                )?;
            }
            // Late replies or cancels of a finished run, or a repeated init.
            ToWorker::Reply { .. } | ToWorker::Cancel { .. } | ToWorker::Init { .. } => {}
        }
    }
    Ok(())
}

fn load_spec(input: SpecInput) -> Result<SpecIndex, String> {
    let text = match input {
        SpecInput::Text(text) => text,
        SpecInput::Path(path) => std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the spec {}: {e}", path.display()))?,
    };
    SpecIndex::from_json(&text)
}

fn write(out: &mut impl Write, message: &FromWorker) -> Result<(), String> {
    out.write_all(&encode(message))
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

/// Read stdin into events until EOF or a framing error (the channel then
/// closes, which ends the worker).
fn read_stdin(tx: &Sender<Event>, cancelled: &AtomicU64) {
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let limit = u64::try_from(MAX_PARENT_LINE).unwrap_or(u64::MAX);
        match (&mut input).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() != Some(&b'\n') => return, // oversized or truncated
            Ok(_) => {}
        }
        let Ok(message) = serde_json::from_slice::<ToWorker>(&line) else {
            return;
        };
        let event = match message {
            ToWorker::Init {
                version,
                spec,
                eager,
            } if first => {
                first = false;
                if version != PROTOCOL_VERSION {
                    return;
                }
                let spec = match spec {
                    None => None,
                    Some(WireSpec::Path(path)) => Some(SpecInput::Path(path)),
                    Some(WireSpec::Inline { bytes }) => {
                        let mut text = Vec::new();
                        let wanted = u64::try_from(bytes).unwrap_or(u64::MAX);
                        match (&mut input).take(wanted).read_to_end(&mut text) {
                            Ok(n) if n == bytes => {}
                            _ => return,
                        }
                        match String::from_utf8(text) {
                            Ok(text) => Some(SpecInput::Text(text)),
                            Err(_) => return,
                        }
                    }
                };
                Event::Init { spec, eager }
            }
            ToWorker::Cancel { id } if !first => {
                // Raised here, not by the main thread: that one may be deep
                // in a loop, and only the interrupt handler reaches it.
                cancelled.fetch_max(id, Ordering::SeqCst);
                Event::Message(ToWorker::Cancel { id })
            }
            other if !first => Event::Message(other),
            _ => return,
        };
        if tx.send(event).is_err() {
            return;
        }
    }
}

/// [`HostLink`] over the worker's stdout and the stdin event channel.
struct StdioLink<'a, W: Write> {
    id: u64,
    rx: &'a Receiver<Event>,
    out: &'a mut W,
    cancelled: &'a Arc<AtomicU64>,
}

impl<W: Write> HostLink for StdioLink<'_, W> {
    fn send(&mut self, call: u32, request: &HostCall) -> Result<(), String> {
        write(
            self.out,
            &FromWorker::Call {
                id: self.id,
                call,
                request: request.clone(),
            },
        )
    }

    fn waiting(&mut self) {
        // A failed write means the parent is gone; the next recv says so.
        let _ = write(self.out, &FromWorker::Waiting { id: self.id });
    }

    fn cancel_probe(&self) -> Option<CancelProbe> {
        let cancelled = Arc::clone(self.cancelled);
        let id = self.id;
        Some(Arc::new(move || cancelled.load(Ordering::Relaxed) >= id))
    }

    fn recv(&mut self, deadline: Instant) -> LinkEvent {
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(Event::Message(ToWorker::Reply { id, reply })) if id == self.id => {
                    return LinkEvent::Reply(reply);
                }
                Ok(Event::Message(ToWorker::Cancel { id })) if id == self.id => {
                    return LinkEvent::Cancelled;
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return LinkEvent::Timeout,
                Err(RecvTimeoutError::Disconnected) => return LinkEvent::Closed,
            }
        }
    }
}
