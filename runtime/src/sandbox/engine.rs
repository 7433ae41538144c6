//! In-process execution of one job in a fresh QuickJS runtime.
//!
//! This is what a worker process runs for every job; it has no crash
//! isolation of its own, so servers use [`SandboxPool`](super::SandboxPool)
//! instead. It is public for benchmarks and for embedding in other workers.
//!
//! Every run gets a new `Runtime` and `Context` (about 0.1–0.3 ms), with:
//! - a heap limit (`JS_SetMemoryLimit`; the default QuickJS allocator keeps
//!   it in force), a stack limit, and an interrupt handler that stops the code
//!   when its CPU budget (time spent running JavaScript) or the wall-clock
//!   deadline passes;
//! - only the ECMAScript intrinsics (no module loader, so `import()` fails;
//!   no `std`/`os`, timers, `fetch`, `require` or `process`);
//! - globals `console` (captured, bounded), and either `spec` (search),
//!   `api.request` (execute) or `codemode.<tool>(args)` (code), whose calls
//!   go to the [`HostLink`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Exception, Function, Runtime, Value as JsValue};
use serde::{Deserialize, Serialize};

use super::frozen::{FrozenSpec, RunIntrinsics};
use super::lazy::SpecIndex;
use super::types::{HostCall, HostRequest, LogLevel, Logs, ToolCall, clip_str};
use super::{Limits, SandboxError};

/// What a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Query the spec: global `spec`, no `api`.
    Search,
    /// Call the API: global `api.request`, no `spec`.
    Execute,
    /// Call typed tools: global `codemode` (any property is a function
    /// `(args) => Promise`, except `then`), no `api`, no `spec`.
    Code,
}

/// Tells the interrupt handler that the run was cancelled from outside.
pub type CancelProbe = Arc<dyn Fn() -> bool + Send + Sync>;

/// How the engine reaches the host for `api.request`.
pub trait HostLink {
    /// Forward call number `call`.
    fn send(&mut self, call: u32, request: &HostCall) -> Result<(), String>;
    /// Wait for the next reply until `deadline`.
    fn recv(&mut self, deadline: Instant) -> LinkEvent;
    /// The code is about to block in [`HostLink::recv`] (no JavaScript runs
    /// until a reply comes).
    fn waiting(&mut self) {}
    /// A probe the interrupt handler polls; `true` stops the run with
    /// [`SandboxError::Cancelled`].
    fn cancel_probe(&self) -> Option<CancelProbe> {
        None
    }
}

/// What [`HostLink::recv`] got.
#[derive(Debug)]
pub enum LinkEvent {
    /// A reply to an earlier call.
    Reply(HostReply),
    /// The deadline passed first.
    Timeout,
    /// The host is gone.
    Closed,
    /// The run was cancelled.
    Cancelled,
}

/// The host's answer to one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReply {
    /// The call being answered.
    pub call: u32,
    /// JSON text of the response, or an error message to reject with.
    pub result: Result<String, String>,
    /// Set when the host ends the run (e.g. a cap was exceeded).
    pub abort: Option<SandboxError>,
}

/// A [`HostLink`] for code that must not call the host (search).
#[derive(Debug, Default)]
pub struct NoHost;

impl HostLink for NoHost {
    fn send(&mut self, _call: u32, _request: &HostCall) -> Result<(), String> {
        Err("api.request is not available here".into())
    }
    fn recv(&mut self, _deadline: Instant) -> LinkEvent {
        LinkEvent::Closed
    }
}

/// Result of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    /// JSON text of the returned value, or the failure.
    pub result: Result<String, SandboxError>,
    /// Console output.
    pub logs: Logs,
    /// `api.request` calls forwarded to the host.
    pub requests: u32,
}

/// Time and stop state shared with the interrupt handler.
struct Meter {
    cpu_limit: Duration,
    wall_limit_ms: u64,
    wall_deadline: Instant,
    cpu_used: Cell<Duration>,
    running_since: Cell<Option<Instant>>,
    stop: RefCell<Option<SandboxError>>,
    cancel: Option<CancelProbe>,
}

impl Meter {
    fn new(limits: &Limits, start: Instant, cancel: Option<CancelProbe>) -> Self {
        Self {
            cancel,
            cpu_limit: limits.cpu(),
            wall_limit_ms: limits.wall_ms,
            wall_deadline: start + limits.wall(),
            cpu_used: Cell::new(Duration::ZERO),
            running_since: Cell::new(None),
            stop: RefCell::new(None),
        }
    }

    fn resume(&self) {
        if self.running_since.get().is_none() {
            self.running_since.set(Some(Instant::now()));
        }
    }

    fn pause(&self) {
        if let Some(since) = self.running_since.take() {
            self.cpu_used.set(self.cpu_used.get() + since.elapsed());
        }
    }

    fn fail(&self, error: SandboxError) {
        let mut stop = self.stop.borrow_mut();
        if stop.is_none() {
            *stop = Some(error);
        }
    }

    fn stopped(&self) -> Option<SandboxError> {
        self.stop.borrow().clone()
    }

    /// The interrupt handler: true stops the running code (uncatchably).
    fn should_interrupt(&self) -> bool {
        if self.stop.borrow().is_some() {
            return true;
        }
        if self.cancel.as_ref().is_some_and(|probe| probe()) {
            self.fail(SandboxError::Cancelled);
            return true;
        }
        let now = Instant::now();
        let running = self.running_since.get().map_or(Duration::ZERO, |s| now - s);
        if self.cpu_used.get() + running > self.cpu_limit {
            let limit_ms = u64::try_from(self.cpu_limit.as_millis()).unwrap_or(u64::MAX);
            self.fail(SandboxError::CpuTimeLimit { limit_ms });
            return true;
        }
        if now >= self.wall_deadline {
            self.fail(SandboxError::WallClockLimit {
                limit_ms: self.wall_limit_ms,
            });
            return true;
        }
        false
    }
}

/// State shared between the driver and the host functions.
struct Shared {
    kind: JobKind,
    meter: Meter,
    limits: Limits,
    logs: RefCell<Logs>,
    outbox: RefCell<Vec<(u32, HostCall)>>,
    requests: Cell<u32>,
    inflight: Cell<u32>,
}

impl Shared {
    fn new(kind: JobKind, limits: &Limits, link: &dyn HostLink) -> Rc<Self> {
        Rc::new(Self {
            kind,
            meter: Meter::new(limits, Instant::now(), link.cancel_probe()),
            limits: limits.clone(),
            logs: RefCell::new(Logs::default()),
            outbox: RefCell::new(Vec::new()),
            requests: Cell::new(0),
            inflight: Cell::new(0),
        })
    }

    fn output(&self, result: Result<String, SandboxError>) -> RunOutput {
        RunOutput {
            result,
            logs: self.logs.take(),
            requests: self.requests.get(),
        }
    }
}

/// Console shim and `api.request` or `codemode`; returns the reply settler
/// (or undefined). `codemode` is a Proxy whose every string property except
/// `then` (so it is never mistaken for a promise) is a tool function.
const SETUP_JS: &str = r#"(function (log, send, surface) {
  "use strict";
  const g = globalThis, stringify = JSON.stringify, parse = JSON.parse, toText = String;
  const ErrorCtor = Error, PromiseCtor = Promise, freeze = Object.freeze, define = Object.defineProperty;
  const show = (v) => {
    if (typeof v === "string") return v;
    try { const s = stringify(v); if (s !== undefined) return s; } catch (e) {}
    try { return toText(v); } catch (e) { return "[unprintable]"; }
  };
  const console = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    console[level] = (...args) => { let line = ""; for (let i = 0; i < args.length; i++) line += (i ? " " : "") + show(args[i]); log(level, line); };
  }
  define(g, "console", { value: freeze(console), writable: true, configurable: true });
  if (send === undefined) return undefined;
  const pending = Object.create(null);
  const call = (payload) => new PromiseCtor((resolve, reject) => {
    const id = send(stringify(payload));
    pending[id] = [resolve, reject];
  });
  if (surface === "codemode") {
    const tool = (name) => (args) => call({ tool: name, args: args === undefined ? {} : args });
    const handler = freeze({ get: (_, name) => (typeof name === "string" && name !== "then") ? tool(name) : undefined });
    define(g, "codemode", { value: new Proxy(freeze(Object.create(null)), handler), writable: true, configurable: true });
  } else {
    const request = (req) => call(req === undefined ? null : req);
    // `paging.items` is a JSON pointer into `result` (RFC 6901).
    const at = (value, pointer) => {
      if (typeof pointer !== "string" || pointer === "") return value;
      let cur = value;
      for (const raw of pointer.split("/").slice(1)) {
        if (cur === null || typeof cur !== "object") return undefined;
        cur = cur[raw.split("~1").join("/").split("~0").join("~")];
      }
      return cur;
    };
    // Follows the host's `paging.next` (the API's convention, read by the
    // host) page by page; every page is one counted api.request.
    const paginate = async (req, opts) => {
      const o = opts || {};
      const maxPages = o.maxPages === undefined ? 10 : o.maxPages;
      const maxItems = o.maxItems === undefined ? Infinity : o.maxItems;
      const base = req || {};
      const items = [];
      let query = base.query || {}, pages = 0;
      while (pages < maxPages && items.length < maxItems) {
        let r;
        try { r = await request(Object.assign({}, base, { query })); }
        catch (e) { return { items, pages, next: query, error: e.message, status: e.status, code: e.code }; }
        pages++;
        const paging = r.paging;
        const got = at(r.result, paging ? paging.items : "");
        if (Array.isArray(got)) for (const item of got) { if (items.length >= maxItems) break; items.push(item); }
        if (!paging || paging.next === null || typeof paging.next !== "object") return { items, pages, next: null };
        query = paging.next;
      }
      return { items, pages, next: query };
    };
    define(g, "api", { value: freeze({ request, paginate }), writable: true, configurable: true });
  }
  return (id, ok, payload) => {
    const p = pending[id];
    if (p === undefined) return;
    delete pending[id];
    if (!ok) {
      // A refused call comes as {"message", "status", "code"}.
      let error = new ErrorCtor(payload);
      if (payload.charAt(0) === "{") {
        try {
          const d = parse(payload);
          if (d && typeof d.message === "string") {
            error = new ErrorCtor(d.message);
            error.status = d.status;
            if (d.code !== null && d.code !== undefined) error.code = d.code;
          }
        } catch (e) {}
      }
      p[1](error);
      return;
    }
    let value;
    try { value = parse(payload); } catch (e) { p[1](e); return; }
    p[0](value);
  };
})"#;

/// Run `code` (an async arrow function source) as `kind` under `limits`.
///
/// `spec` is required for [`JobKind::Search`]; `link` carries `api.request`
/// calls for [`JobKind::Execute`]. Never panics on any input; the runtime is
/// dropped before returning.
pub fn run(
    kind: JobKind,
    code: &str,
    limits: &Limits,
    spec: Option<&Arc<SpecIndex>>,
    link: &mut dyn HostLink,
) -> RunOutput {
    let shared = Shared::new(kind, limits, link);
    let result = run_in_fresh_runtime(kind, code, spec, link, &shared);
    shared.output(result)
}

/// Run `code` as a [`JobKind::Search`] over a worker's frozen spec: a fresh
/// context of the spec's runtime, whose global `spec` is the graph's root
/// (see [`FrozenSpec`]). Afterwards `spec` may be spent
/// ([`FrozenSpec::is_spent`]); the caller then builds a new one.
pub fn run_frozen(
    code: &str,
    limits: &Limits,
    spec: &mut FrozenSpec,
    link: &mut dyn HostLink,
) -> RunOutput {
    let kind = JobKind::Search;
    let shared = Shared::new(kind, limits, link);
    if let Err(error) = check_code_size(code, limits) {
        return shared.output(Err(error));
    }
    let for_handler = Rc::clone(&shared);
    let interrupt = Box::new(move || for_handler.meter.should_interrupt());
    let result = spec
        .with_run(
            limits.memory_bytes,
            limits.stack_bytes,
            interrupt,
            |ctx, root| {
                drive(
                    ctx,
                    kind,
                    code,
                    Some(SpecGlobal::Frozen(root)),
                    link,
                    &shared,
                )
            },
        )
        .map_err(|e| SandboxError::Internal {
            message: e.to_string(),
        })
        .and_then(|result| result);
    shared.output(result)
}

/// What a search's global `spec` is made from.
enum SpecGlobal<'a, 'js> {
    /// Materialised lazily from the index, in this run's realm.
    Lazy(&'a Arc<SpecIndex>),
    /// The root of a frozen per-worker graph.
    Frozen(JsValue<'js>),
}

fn check_code_size(code: &str, limits: &Limits) -> Result<(), SandboxError> {
    if code.len() > limits.max_code_bytes {
        return Err(SandboxError::InvalidCode {
            message: format!(
                "code is {} bytes; the limit is {}",
                code.len(),
                limits.max_code_bytes
            ),
        });
    }
    Ok(())
}

fn run_in_fresh_runtime(
    kind: JobKind,
    code: &str,
    spec: Option<&Arc<SpecIndex>>,
    link: &mut dyn HostLink,
    shared: &Rc<Shared>,
) -> Result<String, SandboxError> {
    let limits = &shared.limits;
    check_code_size(code, limits)?;
    let spec = match (kind, spec) {
        (JobKind::Search, None) => {
            return Err(SandboxError::SpecUnavailable {
                message: "no spec is configured".into(),
            });
        }
        (JobKind::Search, Some(spec)) => Some(spec),
        (JobKind::Execute | JobKind::Code, _) => None,
    };
    let internal = |e: rquickjs::Error| SandboxError::Internal {
        message: e.to_string(),
    };
    let runtime = Runtime::new().map_err(internal)?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    // Fresh heaps are small: collect cycles rarely, the runtime is dropped anyway.
    runtime.set_gc_threshold((limits.memory_bytes / 8).max(1 << 20));
    let for_handler = Rc::clone(shared);
    runtime.set_interrupt_handler(Some(Box::new(move || for_handler.meter.should_interrupt())));
    let context = Context::custom::<RunIntrinsics>(&runtime).map_err(internal)?;
    let result = context.with(|ctx| {
        let spec = spec.map(SpecGlobal::Lazy);
        drive(&ctx, kind, code, spec, link, shared)
    });
    drop(context);
    drop(runtime);
    result
}

/// Map a failed QuickJS call to the error to report.
fn failure<'js>(ctx: &Ctx<'js>, shared: &Shared, error: rquickjs::Error) -> SandboxError {
    if let Some(stop) = shared.meter.stopped() {
        return stop;
    }
    match error {
        rquickjs::Error::Exception => {
            let thrown = ctx.catch();
            classify(ctx, shared, thrown)
        }
        rquickjs::Error::Allocation => SandboxError::MemoryLimit {
            limit_bytes: shared.limits.memory_bytes,
        },
        other => SandboxError::Internal {
            message: other.to_string(),
        },
    }
}

/// Turn a thrown JavaScript value into an error.
fn classify<'js>(ctx: &Ctx<'js>, shared: &Shared, thrown: JsValue<'js>) -> SandboxError {
    let limits = &shared.limits;
    shared.meter.resume(); // describing may run user getters: keep the budget running
    let described = describe(ctx, thrown);
    shared.meter.pause();
    if let Some(stop) = shared.meter.stopped() {
        return stop;
    }
    let (message, stack) = described;
    if message == "InternalError: out of memory" {
        return SandboxError::MemoryLimit {
            limit_bytes: limits.memory_bytes,
        };
    }
    if message == "RangeError: Maximum call stack size exceeded" {
        return SandboxError::StackOverflow {
            limit_bytes: limits.stack_bytes,
        };
    }
    SandboxError::Thrown { message, stack }
}

/// `Name: message` and a short stack for an Error; the value as text otherwise.
fn describe<'js>(ctx: &Ctx<'js>, thrown: JsValue<'js>) -> (String, Option<String>) {
    const MAX_MESSAGE: usize = 2_000;
    const MAX_STACK_LINES: usize = 6;
    if let Some(error) = thrown.as_object().cloned().and_then(Exception::from_object) {
        let name: String = error
            .get::<_, Option<String>>("name")
            .ok()
            .flatten()
            .unwrap_or_else(|| "Error".into());
        let message = error.message().unwrap_or_default();
        let text = if message.is_empty() {
            name
        } else {
            format!("{name}: {message}")
        };
        let stack = error.stack().map(|s| {
            let lines: Vec<&str> = s
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(MAX_STACK_LINES)
                .collect();
            clip_str(&lines.join("\n"), 800).to_owned()
        });
        return (
            clip_str(&text, MAX_MESSAGE).to_owned(),
            stack.filter(|s| !s.is_empty()),
        );
    }
    let text = match thrown.as_string() {
        Some(s) => s.to_string().unwrap_or_default(),
        None => match ctx.json_stringify(thrown.clone()) {
            Ok(Some(s)) => s.to_string().unwrap_or_default(),
            _ => format!("value of type {}", thrown.type_name()),
        },
    };
    (
        format!("non-Error value: {}", clip_str(&text, MAX_MESSAGE)),
        None,
    )
}

fn install<'js>(
    ctx: &Ctx<'js>,
    kind: JobKind,
    spec: Option<SpecGlobal<'_, 'js>>,
    shared: &Rc<Shared>,
) -> rquickjs::Result<Option<Function<'js>>> {
    let for_log = Rc::clone(shared);
    let log = Function::new(ctx.clone(), move |level: String, line: String| {
        let max = for_log.limits.max_log_bytes;
        for_log
            .logs
            .borrow_mut()
            .push(LogLevel::from_name(&level), &line, max);
    })?;
    let setup: Function = ctx.eval(SETUP_JS)?;
    if kind == JobKind::Search {
        let root = match spec {
            Some(SpecGlobal::Lazy(index)) => Some(index.root_js(ctx)?),
            Some(SpecGlobal::Frozen(root)) => Some(root),
            None => None,
        };
        if let Some(root) = root {
            ctx.globals().set("spec", root)?;
        }
        setup.call::<_, ()>((log, JsValue::new_undefined(ctx.clone())))?;
        return Ok(None);
    }
    let for_send = Rc::clone(shared);
    let send = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, text: String| -> rquickjs::Result<u32> {
            forward(&ctx, &for_send, &text)
        },
    )?;
    let surface = if kind == JobKind::Code {
        "codemode"
    } else {
        "api"
    };
    let settle: Function = setup.call((log, send, surface))?;
    Ok(Some(settle))
}

/// Validate one `api.request` (or `codemode.<tool>`) argument and queue it
/// for the host.
fn forward(ctx: &Ctx<'_>, shared: &Shared, text: &str) -> rquickjs::Result<u32> {
    let request = if shared.kind == JobKind::Code {
        let call: ToolCall = serde_json::from_str(text).map_err(|e| {
            Exception::throw_type(ctx, &format!("codemode: the arguments are not JSON: {e}"))
        })?;
        HostCall::Tool(call)
    } else {
        let request: HostRequest = serde_json::from_str(text).map_err(|e| {
            let hint = "expected {method, path, query?, body?, contentType?}";
            Exception::throw_type(ctx, &format!("api.request: {e}; {hint}"))
        })?;
        HostCall::Request(request)
    };
    let made = shared.requests.get();
    if made >= shared.limits.max_requests {
        let error = SandboxError::RequestLimit {
            max: shared.limits.max_requests,
        };
        let message = error.to_string();
        shared.meter.fail(error);
        return Err(Exception::throw_range(ctx, &message));
    }
    shared.requests.set(made + 1);
    shared.inflight.set(shared.inflight.get() + 1);
    shared.outbox.borrow_mut().push((made, request));
    Ok(made)
}

fn drive<'js>(
    ctx: &Ctx<'js>,
    kind: JobKind,
    code: &str,
    spec: Option<SpecGlobal<'_, 'js>>,
    link: &mut dyn HostLink,
    shared: &Rc<Shared>,
) -> Result<String, SandboxError> {
    let meter = &shared.meter;
    let settle = install(ctx, kind, spec, shared).map_err(|e| failure(ctx, shared, e))?;

    meter.resume();
    let mut options = EvalOptions::default();
    options.filename = Some("code".into());
    let compiled: rquickjs::Result<JsValue> = ctx.eval_with_options(code, options);
    meter.pause();
    let compiled = compiled.map_err(|e| match failure(ctx, shared, e) {
        SandboxError::Thrown { message, .. } => SandboxError::InvalidCode { message },
        other => other,
    })?;
    let Some(function) = compiled.as_function().cloned() else {
        return Err(SandboxError::InvalidCode {
            message: format!(
                "the code must be a function expression such as `async () => {{ ... }}`, not a value of type {}",
                compiled.type_name()
            ),
        });
    };

    meter.resume();
    let returned: rquickjs::Result<JsValue> = function.call(());
    meter.pause();
    let returned = returned.map_err(|e| failure(ctx, shared, e))?;

    let value = match returned.as_promise().cloned() {
        None => returned,
        Some(promise) => loop {
            meter.resume();
            // Stop at the first job after a limit: jobs that queue more jobs
            // would otherwise run on between the interrupt handler's polls.
            while meter.stopped().is_none() && ctx.execute_pending_job() {}
            meter.pause();
            if let Some(stop) = meter.stopped() {
                return Err(stop);
            }
            for (call, request) in shared.outbox.take() {
                link.send(call, &request)
                    .map_err(|message| SandboxError::Protocol { message })?;
            }
            match promise.state() {
                PromiseState::Resolved => match promise.result::<JsValue>() {
                    Some(Ok(v)) => break v,
                    Some(Err(e)) => return Err(failure(ctx, shared, e)),
                    None => return Err(SandboxError::NeverSettled),
                },
                PromiseState::Rejected => {
                    let error = match promise.result::<JsValue>() {
                        Some(Err(e)) => failure(ctx, shared, e),
                        _ => SandboxError::Internal {
                            message: "rejected promise without a reason".into(),
                        },
                    };
                    return Err(error);
                }
                PromiseState::Pending => {}
            }
            if shared.inflight.get() == 0 {
                return Err(SandboxError::NeverSettled);
            }
            link.waiting();
            let reply = match link.recv(meter.wall_deadline) {
                LinkEvent::Reply(reply) => reply,
                LinkEvent::Timeout => {
                    return Err(SandboxError::WallClockLimit {
                        limit_ms: meter.wall_limit_ms,
                    });
                }
                LinkEvent::Closed => {
                    return Err(SandboxError::Protocol {
                        message: "host link closed during the run".into(),
                    });
                }
                LinkEvent::Cancelled => return Err(SandboxError::Cancelled),
            };
            if let Some(abort) = reply.abort {
                return Err(abort);
            }
            shared.inflight.set(shared.inflight.get().saturating_sub(1));
            let Some(settle) = settle.as_ref() else {
                return Err(SandboxError::Protocol {
                    message: "reply without api".into(),
                });
            };
            let (ok, payload) = match reply.result {
                Ok(json) => (true, json),
                Err(message) => (false, message),
            };
            meter.resume();
            let settled: rquickjs::Result<()> = settle.call((reply.call, ok, payload));
            meter.pause();
            settled.map_err(|e| failure(ctx, shared, e))?;
        },
    };
    if let Some(stop) = meter.stopped() {
        return Err(stop);
    }
    to_json(ctx, shared, value)
}

/// Serialise the returned value with `JSON.stringify` (undefined → null).
fn to_json<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    value: JsValue<'js>,
) -> Result<String, SandboxError> {
    let meter = &shared.meter;
    meter.resume();
    let text = ctx
        .json_stringify(value)
        .and_then(|s| s.map(|s| s.to_string()).transpose());
    meter.pause();
    let text = text.map_err(|e| match failure(ctx, shared, e) {
        SandboxError::Thrown { message, .. } => SandboxError::NotSerialisable { message },
        other => other,
    })?;
    if let Some(stop) = meter.stopped() {
        return Err(stop);
    }
    let text = text.unwrap_or_else(|| "null".to_owned());
    let max = shared.limits.max_output_bytes;
    if text.len() > max {
        return Err(SandboxError::OutputTooLarge {
            size: text.len(),
            max,
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests;
