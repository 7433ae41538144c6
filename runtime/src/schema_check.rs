//! Response schema checks: does what the API answered match the response
//! schema the spec documents? Mismatches are logged for the API's own
//! teams (`toolforge schema-report` turns the log into a table).
//!
//! The check runs off the response path: [`SchemaChecks::submit`] only
//! hands the status and a copy of the body to a checker thread through a
//! bounded queue (a full queue skips the check), so it never delays,
//! changes or fails a tool result; a check that panics is caught, and one
//! that hangs only stops later checks (they are skipped once the queue is
//! full). On the checker thread the body is parsed, arrays are trimmed to
//! their first [`MAX_ARRAY_ITEMS`] items, the schema is chosen by status,
//! then class (`4XX`), then `default`, and validated with a validator
//! compiled once per tool and response key. Bodies over [`MAX_BODY_BYTES`],
//! non-JSON bodies and statuses without a documented schema are skipped.
//! The whole body is checked, the API's envelope included (for an API with
//! a result envelope the documented response schema is the envelope
//! around the payload the output schema describes).
//!
//! Each mismatch is one `WARN` event whose `schema_mismatch` field is a
//! JSON object with no customer data: tool, method, path template,
//! product, status, response key, the violation count (and whether it is
//! exact) and up to [`MAX_REPORTED`] violations as keyword, schema location
//! and instance path, with array indices and keys the schema does not
//! declare replaced by `*`. Never a value, never the validator's message.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalogue::{ResponseDef, ToolDef};

/// Bodies larger than this are not checked.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Arrays are trimmed to this many items before the check.
pub const MAX_ARRAY_ITEMS: usize = 25;
/// At most this many violations are described per event.
pub const MAX_REPORTED: usize = 5;
/// Violations are counted up to this many (beyond it the count is not exact).
const MAX_COUNTED: usize = 100;
/// Checks waiting for the checker thread at most; more are skipped.
const QUEUE: usize = 1024;
/// The log target and field of a mismatch event.
pub const EVENT_FIELD: &str = "schema_mismatch";

/// One violation, without any value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The failing keyword (`type`, `required`, `enum`, …).
    pub keyword: String,
    /// Where in the schema (JSON pointer of the keyword).
    pub schema: String,
    /// Where in the body (JSON pointer, indices and undeclared keys as `*`).
    pub instance: String,
}

/// One mismatch event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Tool name.
    pub tool: String,
    /// HTTP method.
    pub method: String,
    /// Path template (`/zones/{zone_id}`), never the filled path.
    pub path: String,
    /// The tool's product.
    pub product: String,
    /// HTTP status of the response.
    pub status: u16,
    /// The response key whose schema was used (`200`, `4XX`, `default`).
    pub response: String,
    /// How many violations were found.
    pub violations: usize,
    /// Whether `violations` is exact (not capped, no array trimmed).
    pub exact: bool,
    /// The first violations.
    pub details: Vec<Violation>,
}

/// What a test substitutes for the real check (see [`SchemaChecks::with_fault`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every check panics.
    Panic,
    /// The first check never finishes (the checker thread is parked).
    Hang,
}

/// Where mismatch events go: the log, or a test's list.
type Sink = Arc<dyn Fn(&Mismatch) + Send + Sync>;

struct Job {
    tool: &'static ToolDef,
    status: u16,
    body: Vec<u8>,
}

/// The checker: a sampling front and a thread behind a bounded queue.
pub struct SchemaChecks {
    tx: SyncSender<Job>,
    rate: f64,
    seen: AtomicU64,
}

impl std::fmt::Debug for SchemaChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaChecks")
            .field("rate", &self.rate)
            .finish()
    }
}

impl SchemaChecks {
    /// Checks a `rate` share (0.0–1.0) of responses, logging mismatches.
    pub fn start(rate: f64) -> Self {
        Self::spawn(rate, Arc::new(log_event), None)
    }

    /// For tests: mismatches go to `sink`, and `fault` replaces the check.
    #[doc(hidden)]
    pub fn with_sink(
        rate: f64,
        sink: Arc<dyn Fn(&Mismatch) + Send + Sync>,
        fault: Option<Fault>,
    ) -> Self {
        Self::spawn(rate, sink, fault)
    }

    fn spawn(rate: f64, sink: Sink, fault: Option<Fault>) -> Self {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("schema-check".into())
            .spawn(move || checker(&rx, &sink, fault));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the response schema checker; responses are not checked");
        }
        Self {
            tx,
            rate: rate.clamp(0.0, 1.0),
            seen: AtomicU64::new(0),
        }
    }

    /// Queues a check of one response of `tool` (never blocks; a sampled-out
    /// response, an oversized body or a full queue is skipped).
    pub fn submit(&self, tool: &'static ToolDef, status: u16, body: &[u8]) {
        if let Some(check) = self.take(tool, status, body) {
            check.queue();
        }
    }

    /// The check of one response of `tool`, sampled and copied now, to be
    /// queued later ([`PendingCheck::queue`]): the direct path queues it
    /// once the answer is written, because waking the checker thread
    /// costs a system call and a core while the client still waits.
    /// `None` when the response is sampled out or skipped.
    pub fn take(&self, tool: &'static ToolDef, status: u16, body: &[u8]) -> Option<PendingCheck> {
        if !self.sampled() {
            return None;
        }
        if body.len() > MAX_BODY_BYTES || tool.responses.iter().all(|r| r.schema.is_none()) {
            crate::metrics::schema_check("skipped");
            return None;
        }
        Some(PendingCheck {
            tx: self.tx.clone(),
            job: Job {
                tool,
                status,
                body: body.to_vec(),
            },
        })
    }

    /// Deterministic sampling: the n-th response is checked when
    /// `floor(n·rate)` steps up.
    fn sampled(&self) -> bool {
        if self.rate >= 1.0 {
            return true;
        }
        if self.rate <= 0.0 {
            return false;
        }
        let n = self.seen.fetch_add(1, Ordering::Relaxed) as f64;
        ((n + 1.0) * self.rate).floor() > (n * self.rate).floor()
    }
}

/// One response's check, taken by [`SchemaChecks::take`] and not yet queued.
pub struct PendingCheck {
    tx: SyncSender<Job>,
    job: Job,
}

impl std::fmt::Debug for PendingCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingCheck")
            .field("tool", &self.job.tool.name)
            .field("status", &self.job.status)
            .finish_non_exhaustive()
    }
}

impl PendingCheck {
    /// Hands the check to the checker thread (never blocks; a full queue
    /// skips it).
    pub fn queue(self) {
        match self.tx.try_send(self.job) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                crate::metrics::schema_check("skipped");
            }
        }
    }
}

fn log_event(m: &Mismatch) {
    let json = serde_json::to_string(m).unwrap_or_default();
    tracing::warn!(schema_mismatch = %json, "response schema mismatch");
}

type Cache = HashMap<(&'static str, &'static str), Option<Arc<jsonschema::Validator>>>;

fn checker(rx: &Receiver<Job>, sink: &Sink, fault: Option<Fault>) {
    let mut cache: Cache = HashMap::new();
    while let Ok(job) = rx.recv() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match fault {
            // Only tests ask for it: proves a panicking check is contained.
            #[allow(clippy::panic)]
            Some(Fault::Panic) => panic!("injected schema check panic"),
            Some(Fault::Hang) => park_forever(),
            None => check(&mut cache, &job),
        }));
        match outcome {
            Ok(Some(mismatch)) => {
                crate::metrics::schema_check("mismatch");
                crate::metrics::schema_mismatch(job.tool.name);
                sink(&mismatch);
            }
            Ok(None) => crate::metrics::schema_check("ok"),
            Err(_) => {
                crate::metrics::schema_check("skipped");
                tracing::warn!(
                    tool = job.tool.name,
                    "a response schema check panicked; it was skipped"
                );
            }
        }
    }
}

fn park_forever() -> Option<Mismatch> {
    loop {
        std::thread::park();
    }
}

/// The documented response for `status` (exact, then class, then
/// `default`) that has a schema.
pub fn response_key(tool: &ToolDef, status: u16) -> Option<&ResponseDef> {
    let exact = status.to_string();
    let class = format!("{}XX", status / 100);
    let find = |key: &str| {
        tool.responses
            .iter()
            .find(|r| r.status.eq_ignore_ascii_case(key))
            .filter(|r| r.schema.is_some())
    };
    find(&exact)
        .or_else(|| find(&class))
        .or_else(|| find("default"))
}

fn check(cache: &mut Cache, job: &Job) -> Option<Mismatch> {
    let tool = job.tool;
    let response = response_key(tool, job.status)?;
    let key = response.status;
    let mut body: Value = serde_json::from_slice(&job.body).ok()?;
    let trimmed = trim_arrays(&mut body);
    let validator = cache
        .entry((tool.name, key))
        .or_insert_with(|| {
            // The whole schema: its root `$defs` may be listed apart.
            let schema: Value = serde_json::from_str(&response.schema_text()?).ok()?;
            jsonschema::draft202012::options()
                .build(&schema)
                .ok()
                .map(Arc::new)
        })
        .clone()?;
    let mut count = 0;
    let mut details = Vec::new();
    let mut capped = false;
    for error in validator.iter_errors(&body) {
        if count == MAX_COUNTED {
            capped = true;
            break;
        }
        count += 1;
        if details.len() < MAX_REPORTED {
            let schema_path = error.schema_path().to_string();
            let evaluation = error.evaluation_path().to_string();
            details.push(Violation {
                keyword: last_segment(&schema_path),
                instance: mask_instance(&error.instance_path().to_string(), &evaluation),
                schema: schema_path,
            });
        }
    }
    if count == 0 {
        return None;
    }
    Some(Mismatch {
        tool: tool.name.to_owned(),
        method: tool.method.as_str().to_owned(),
        path: tool.routes.first().map_or("", |r| r.template).to_owned(),
        product: tool.product.to_owned(),
        status: job.status,
        response: key.to_owned(),
        violations: count,
        exact: !capped && !trimmed,
        details,
    })
}

/// Trims every array to [`MAX_ARRAY_ITEMS`]; whether any was longer.
fn trim_arrays(value: &mut Value) -> bool {
    match value {
        Value::Array(items) => {
            let mut trimmed = items.len() > MAX_ARRAY_ITEMS;
            items.truncate(MAX_ARRAY_ITEMS);
            for item in items {
                trimmed |= trim_arrays(item);
            }
            trimmed
        }
        Value::Object(map) => map.values_mut().fold(false, |acc, v| trim_arrays(v) | acc),
        _ => false,
    }
}

fn last_segment(pointer: &str) -> String {
    pointer.rsplit('/').next().unwrap_or("").to_owned()
}

/// The instance pointer with array indices and keys the schema does not
/// declare (no `properties/<key>` on the evaluation path) replaced by `*`.
pub fn mask_instance(instance: &str, evaluation: &str) -> String {
    if instance.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for segment in instance.split('/').skip(1) {
        out.push('/');
        let numeric = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
        let declared = format!("/properties/{segment}");
        let kept = !numeric
            && (evaluation.contains(&format!("{declared}/")) || evaluation.ends_with(&declared));
        out.push_str(if kept { segment } else { "*" });
    }
    out
}

#[cfg(test)]
mod tests;
