//! A small fuzz driver for stable Rust, shared by the fuzz harnesses
//! (`runtime/tests/fuzz_jsonrpc.rs`, `generator/tests/fuzz_loader.rs`).
//!
//! cargo-fuzz needs a nightly toolchain; this driver runs under plain
//! `cargo test`. A harness names a target, gives seed inputs, a generator
//! (structure-aware: it builds or mutates inputs with [`mutate`] and
//! [`json`]) and a check (the property: `Ok(label)` or `Err(why)`; a panic
//! fails too). [`run`] then:
//!
//! - re-runs the calling test in a child process, so that a stack
//!   overflow, an abort or an out-of-memory kill is caught and its input
//!   reported like any other crash (every input is written to an
//!   `in-flight` file before it runs);
//! - replays saved crashes and the seeds, then generates inputs until the
//!   time budget (`TOOLFORGE_FUZZ_SECS`, default 2 s) is spent;
//! - fails on a panic, a property violation, an input running longer than
//!   `TOOLFORGE_FUZZ_HANG_SECS` (30 s: the slowest inputs within the
//!   loader's bounds take several seconds in a debug build on a loaded
//!   machine; the hangs found ran for minutes) or the process growing beyond
//!   `TOOLFORGE_FUZZ_RSS_MIB` (2048 MiB): the input is printed (hex and
//!   base64) and saved under `<target tmp>/fuzz/<target>/crashes/`
//!   (git-ignored), and replayed first by every later run;
//! - prints one line: `fuzz <target>: N executions, K crashes, T s (…)`,
//!   and keeps the slowest input in `<target tmp>/fuzz/<target>/slowest`.
//!
//! There is no coverage feedback on stable; an input whose outcome label
//! is new joins the pool that later inputs are mutated from.

// Test support: failing a test is what a panic here is for.
#![allow(clippy::panic)]

pub mod json;
pub mod mutate;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Set in the child process to the target it runs.
const CHILD_ENV: &str = "TOOLFORGE_FUZZ_CHILD";
/// Stack of the thread that runs the inputs: the size of a test thread or a
/// Tokio worker, less than the main thread's, so deep recursion shows here.
const STACK_BYTES: usize = 2 << 20;
/// The seed of test runs that name none (`TOOLFORGE_FUZZ_SEED`).
const DEFAULT_SEED: u64 = 0x7001_f0c3_5eed_0010;

/// Largest pool of inputs to mutate from (seeds included).
const POOL_MAX: usize = 1024;
/// Longest hex dump printed for a crash (the file holds the whole input).
const HEX_MAX: usize = 4096;
/// Longest base64 printed for a crash.
const BASE64_MAX: usize = 256 * 1024;

/// SplitMix64: small, fast, and good enough to drive mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A length biased towards small values, at most `max`: mostly a few
    /// bytes, sometimes hundreds, rarely `max`.
    pub fn size(&mut self, max: usize) -> usize {
        let cap = match self.below(10) {
            0..=5 => 8,
            6..=8 => 256,
            _ => max,
        };
        self.below(cap.min(max).saturating_add(1))
    }
}

/// The inputs that later inputs are mutated from: the seeds, then every
/// input whose outcome label was new.
#[derive(Debug)]
pub struct Pool {
    inputs: Vec<Vec<u8>>,
    seeds: usize,
}

impl Pool {
    /// Number of inputs.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// True when there is no input at all.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// A random input (empty when the pool is).
    pub fn pick(&self, rng: &mut Rng) -> &[u8] {
        if self.inputs.is_empty() {
            return &[];
        }
        &self.inputs[rng.below(self.inputs.len())]
    }

    /// A random seed (the inputs given by the harness).
    pub fn seed(&self, rng: &mut Rng) -> &[u8] {
        if self.seeds == 0 {
            return self.pick(rng);
        }
        &self.inputs[rng.below(self.seeds)]
    }

    fn add(&mut self, input: Vec<u8>, rng: &mut Rng) {
        if self.inputs.len() < POOL_MAX {
            self.inputs.push(input);
        } else if self.inputs.len() > self.seeds {
            let at = self.seeds + rng.below(self.inputs.len() - self.seeds);
            self.inputs[at] = input;
        }
    }
}

/// A fuzz target, as a harness declares it.
#[derive(Debug, Clone)]
pub struct Target {
    /// Short name, used in messages and the crash directory.
    pub name: &'static str,
    /// The name libtest knows the calling `#[test]` by (for `--exact`).
    pub test: &'static str,
    /// Where crash files go: `env!("CARGO_TARGET_TMPDIR")` (git-ignored).
    pub work_dir: &'static str,
    /// The command that runs this target (printed with a crash).
    pub command: &'static str,
    /// Inputs run as they are, then mutated.
    pub seeds: Vec<Vec<u8>>,
}

/// Budgets and limits, from the environment.
#[derive(Debug, Clone)]
struct Limits {
    budget: Duration,
    hang: Duration,
    rss_bytes: u64,
    seed: u64,
}

fn env_f64(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or_else(|| {
                eprintln!("{name}={v:?} is not a number of seconds; using {default}");
                default
            }),
        Err(_) => default,
    }
}

impl Limits {
    fn from_env() -> Self {
        // A fixed seed unless asked: test runs, CI included, are
        // deterministic. `TOOLFORGE_FUZZ_SEED=random` explores new inputs.
        let chosen = std::env::var("TOOLFORGE_FUZZ_SEED").ok();
        let seed = match chosen.as_deref().map(str::trim) {
            Some("random") => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                Rng::new(now ^ u64::from(std::process::id())).next_u64()
            }
            Some(s) => match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).unwrap_or(DEFAULT_SEED),
                None => s.parse().unwrap_or(DEFAULT_SEED),
            },
            None => DEFAULT_SEED,
        };
        Limits {
            budget: Duration::from_secs_f64(env_f64("TOOLFORGE_FUZZ_SECS", 2.0)),
            hang: Duration::from_secs_f64(env_f64("TOOLFORGE_FUZZ_HANG_SECS", 30.0).max(0.1)),
            rss_bytes: (env_f64("TOOLFORGE_FUZZ_RSS_MIB", 2048.0) * 1024.0 * 1024.0) as u64,
            seed,
        }
    }
}

/// What a finished run found (written by the child, read by the parent).
#[derive(Debug, Default)]
struct Summary {
    executions: u64,
    crashes: u64,
    seconds: f64,
    labels: usize,
    slowest_ms: f64,
    peak_rss_mib: u64,
}

impl Summary {
    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {} {}",
            self.executions,
            self.crashes,
            self.seconds,
            self.labels,
            self.slowest_ms,
            self.peak_rss_mib
        )
    }

    fn decode(text: &str) -> Option<Self> {
        let mut it = text.split_whitespace();
        Some(Summary {
            executions: it.next()?.parse().ok()?,
            crashes: it.next()?.parse().ok()?,
            seconds: it.next()?.parse().ok()?,
            labels: it.next()?.parse().ok()?,
            slowest_ms: it.next()?.parse().ok()?,
            peak_rss_mib: it.next()?.parse().ok()?,
        })
    }
}

struct Paths {
    crashes: PathBuf,
    in_flight: PathBuf,
    summary: PathBuf,
    slowest: PathBuf,
}

impl Paths {
    fn new(target: &Target) -> Self {
        let dir = Path::new(target.work_dir).join("fuzz").join(target.name);
        Paths {
            crashes: dir.join("crashes"),
            in_flight: dir.join("in-flight"),
            summary: dir.join("summary"),
            slowest: dir.join("slowest"),
        }
    }
}

/// Runs `target`: seeds, saved crashes, then generated inputs until the
/// budget is spent. `check` returns a label for the outcome (new labels
/// grow the pool) or why the property does not hold.
///
/// # Panics
///
/// When an input panics, breaks the property, hangs, exhausts memory or
/// kills the process: the test fails, with the input printed and saved.
pub fn run<G, C>(target: Target, generate: G, check: C)
where
    G: FnMut(&mut Rng, &Pool) -> Vec<u8> + Send + 'static,
    C: Fn(&[u8]) -> Result<String, String> + Send + 'static,
{
    if std::env::var(CHILD_ENV).as_deref() == Ok(target.name) {
        child(target, generate, check);
    } else {
        parent(&target);
    }
}

/// Runs the target in a child process and reports what it found.
fn parent(target: &Target) {
    let limits = Limits::from_env();
    let paths = Paths::new(target);
    if let Err(e) = std::fs::create_dir_all(&paths.crashes) {
        panic!("cannot create {}: {e}", paths.crashes.display());
    }
    // A run that died without a parent to report it (killed from outside).
    if let Ok(input) = std::fs::read(&paths.in_flight) {
        let saved = save_crash(&paths, "died", &input);
        eprintln!(
            "fuzz {}: a previous run died on an input; kept as {} and replayed now",
            target.name,
            saved.display()
        );
        let _ = std::fs::remove_file(&paths.in_flight);
    }
    let _ = std::fs::remove_file(&paths.summary);
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let mut child = Command::new(exe)
        .args([target.test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, target.name)
        .env("TOOLFORGE_FUZZ_SEED", format!("{:#x}", limits.seed))
        .stdin(Stdio::null())
        // libtest's own lines; the child writes its findings to stderr.
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the fuzz child: {e}"));
    let deadline = Instant::now() + limits.budget + limits.hang + Duration::from_secs(60);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for the fuzz child: {e}"),
        }
    };
    let ok = status.is_some_and(|s| s.success());
    if let Ok(input) = std::fs::read(&paths.in_flight) {
        // The child did not get to report this input itself.
        let _ = std::fs::remove_file(&paths.in_flight);
        let how = match status {
            Some(s) => format!("the process died ({s}): a stack overflow, an abort or a kill"),
            None => "the process stopped answering (killed after its deadline)".into(),
        };
        report(target, &paths, &limits, "died", &how, &input);
        panic!("fuzz {}: 1 crash (see above)", target.name);
    }
    if !ok {
        panic!(
            "fuzz {}: the target failed (see above; crashes are kept in {})",
            target.name,
            paths.crashes.display()
        );
    }
    let summary = std::fs::read_to_string(&paths.summary)
        .ok()
        .and_then(|s| Summary::decode(&s))
        .unwrap_or_else(|| {
            panic!(
                "fuzz {}: the child ran no target (is `{}` the test's exact name?)",
                target.name, target.test
            )
        });
    let line = format!(
        "fuzz {}: {} executions, {} crashes, {:.1} s (seed {:#x}, {} distinct outcomes, slowest input {:.1} ms, peak RSS {} MiB)",
        target.name,
        summary.executions,
        summary.crashes,
        summary.seconds,
        limits.seed,
        summary.labels,
        summary.slowest_ms,
        summary.peak_rss_mib
    );
    // Straight to the process's stderr: libtest captures `eprintln!`.
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// State shared by the input thread and the watchdog.
struct Shared {
    /// Milliseconds since `origin` when the running input started.
    started_ms: AtomicU64,
    busy: AtomicBool,
    origin: Instant,
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn child<G, C>(target: Target, mut generate: G, check: C)
where
    G: FnMut(&mut Rng, &Pool) -> Vec<u8> + Send + 'static,
    C: Fn(&[u8]) -> Result<String, String> + Send + 'static,
{
    let limits = Limits::from_env();
    let paths = Paths::new(&target);
    // Panics on the input thread are recorded, not printed: they are findings.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("fuzz-"))
        {
            let backtrace = std::backtrace::Backtrace::capture();
            let text = match backtrace.status() {
                std::backtrace::BacktraceStatus::Captured => format!("{info}\n{backtrace}"),
                _ => info.to_string(),
            };
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
        } else {
            default_hook(info);
        }
    }));
    let shared = Arc::new(Shared {
        started_ms: AtomicU64::new(0),
        busy: AtomicBool::new(false),
        origin: Instant::now(),
    });
    let done: Arc<Mutex<Option<Summary>>> = Arc::new(Mutex::new(None));
    let worker = {
        let shared = Arc::clone(&shared);
        let done = Arc::clone(&done);
        let limits = limits.clone();
        let paths = Paths::new(&target);
        let target = target.clone();
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name))
            .stack_size(STACK_BYTES)
            .spawn(move || {
                let summary = fuzz_loop(&target, &paths, &limits, &shared, &mut generate, &check);
                if let Ok(mut d) = done.lock() {
                    *d = Some(summary);
                }
            })
            .unwrap_or_else(|e| panic!("cannot start the fuzz thread: {e}"))
    };
    let mut peak = 0;
    let mut last_memory_check = Instant::now();
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
        let busy = shared.busy.load(Ordering::SeqCst);
        let started = Duration::from_millis(shared.started_ms.load(Ordering::SeqCst));
        let running = shared.origin.elapsed().saturating_sub(started);
        if busy && running > limits.hang {
            let input = std::fs::read(&paths.in_flight).unwrap_or_default();
            let _ = std::fs::remove_file(&paths.in_flight);
            report(
                &target,
                &paths,
                &limits,
                "hang",
                &format!(
                    "one input ran for more than {:.1} s (TOOLFORGE_FUZZ_HANG_SECS)",
                    limits.hang.as_secs_f64()
                ),
                &input,
            );
            std::process::exit(1);
        }
        if last_memory_check.elapsed() >= Duration::from_millis(50) {
            last_memory_check = Instant::now();
            let rss = rss_bytes().unwrap_or(0);
            peak = peak.max(rss);
            if rss > limits.rss_bytes {
                let input = std::fs::read(&paths.in_flight).unwrap_or_default();
                let _ = std::fs::remove_file(&paths.in_flight);
                report(
                    &target,
                    &paths,
                    &limits,
                    "memory",
                    &format!(
                        "the process grew to {} MiB, beyond {} MiB (TOOLFORGE_FUZZ_RSS_MIB)",
                        rss >> 20,
                        limits.rss_bytes >> 20
                    ),
                    &input,
                );
                std::process::exit(1);
            }
        }
    }
    if worker.join().is_err() {
        // The loop itself panicked (a bug in the harness's generator).
        std::process::exit(1);
    }
    let Some(mut summary) = done.lock().ok().and_then(|mut d| d.take()) else {
        std::process::exit(1);
    };
    summary.peak_rss_mib = peak_rss_bytes().unwrap_or(peak) >> 20;
    let _ = std::fs::remove_file(&paths.in_flight);
    if let Err(e) = std::fs::write(&paths.summary, summary.encode()) {
        eprintln!("cannot write {}: {e}", paths.summary.display());
        std::process::exit(1);
    }
    if summary.crashes > 0 {
        std::process::exit(1);
    }
}

/// The input file written before every execution (read back when the
/// process dies or hangs on it).
struct InFlight {
    file: std::fs::File,
}

impl InFlight {
    fn open(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(path)?;
        Ok(InFlight { file })
    }

    fn record(&mut self, input: &[u8]) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(input)?;
        self.file.set_len(input.len() as u64)
    }
}

fn fuzz_loop<G, C>(
    target: &Target,
    paths: &Paths,
    limits: &Limits,
    shared: &Shared,
    generate: &mut G,
    check: &C,
) -> Summary
where
    G: FnMut(&mut Rng, &Pool) -> Vec<u8>,
    C: Fn(&[u8]) -> Result<String, String>,
{
    let started = Instant::now();
    let mut in_flight = InFlight::open(&paths.in_flight)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", paths.in_flight.display()));
    let mut summary = Summary::default();
    let mut labels = HashSet::new();
    let mut slowest = Duration::ZERO;
    let mut slowest_input = Vec::new();
    let mut pool = Pool {
        inputs: target.seeds.clone(),
        seeds: target.seeds.len(),
    };
    let mut exec = |input: &[u8], summary: &mut Summary, pool: &mut Pool, rng: &mut Rng| {
        if let Err(e) = in_flight.record(input) {
            panic!("cannot write {}: {e}", paths.in_flight.display());
        }
        let t0 = Instant::now();
        shared
            .started_ms
            .store(shared.origin.elapsed().as_millis() as u64, Ordering::SeqCst);
        shared.busy.store(true, Ordering::SeqCst);
        let outcome = catch_unwind(AssertUnwindSafe(|| check(input)));
        shared.busy.store(false, Ordering::SeqCst);
        if t0.elapsed() > slowest {
            slowest = t0.elapsed();
            slowest_input = input.to_vec();
        }
        summary.executions += 1;
        let failure = match outcome {
            Ok(Ok(label)) => {
                if labels.insert(label) {
                    pool.add(input.to_vec(), rng);
                }
                return true;
            }
            Ok(Err(why)) => ("property", why),
            Err(payload) => {
                let message = LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                ("panic", message)
            }
        };
        summary.crashes += 1;
        report(target, paths, limits, failure.0, &failure.1, input);
        false
    };
    let mut rng = Rng::new(limits.seed);
    // Saved crashes first: a fixed bug stays fixed.
    let mut replay: Vec<PathBuf> = std::fs::read_dir(&paths.crashes)
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    replay.sort();
    for path in &replay {
        let Ok(input) = std::fs::read(path) else {
            continue;
        };
        exec(&input, &mut summary, &mut pool, &mut rng);
    }
    if summary.crashes == 0 {
        let seeds = target.seeds.clone();
        for seed in &seeds {
            if !exec(seed, &mut summary, &mut pool, &mut rng) {
                break;
            }
        }
    }
    let deadline = started + limits.budget;
    let mut i: u64 = 0;
    while summary.crashes == 0 && Instant::now() < deadline {
        i += 1;
        let mut input_rng = Rng::new(limits.seed ^ i.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let Ok(input) = catch_unwind(AssertUnwindSafe(|| generate(&mut input_rng, &pool))) else {
            let message = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_default();
            eprintln!(
                "fuzz {}: the harness's input generator panicked (a bug in the harness): {message}",
                target.name
            );
            let _ = std::fs::remove_file(&paths.in_flight);
            std::process::exit(1);
        };
        exec(&input, &mut summary, &mut pool, &mut input_rng);
    }
    // For a look at what takes long (not a finding below the hang limit).
    let _ = std::fs::write(&paths.slowest, &slowest_input);
    summary.seconds = started.elapsed().as_secs_f64();
    summary.labels = labels.len();
    summary.slowest_ms = slowest.as_secs_f64() * 1000.0;
    summary
}

/// Prints a finding with its input and saves the input.
fn report(target: &Target, paths: &Paths, limits: &Limits, kind: &str, why: &str, input: &[u8]) {
    let saved = save_crash(paths, kind, input);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "\n=== fuzz {}: CRASH ({kind}) on a {}-byte input (seed {:#x})",
        target.name,
        input.len(),
        limits.seed
    );
    let _ = writeln!(text, "--- why:\n{why}");
    let shown = input.get(..HEX_MAX).unwrap_or(input);
    let _ = writeln!(
        text,
        "--- input as text (lossy):\n{}",
        String::from_utf8_lossy(input.get(..1024).unwrap_or(input))
    );
    let _ = writeln!(
        text,
        "--- hex{}:\n{}",
        if shown.len() < input.len() {
            " (start)"
        } else {
            ""
        },
        hex(shown)
    );
    if input.len() <= BASE64_MAX {
        let _ = writeln!(text, "--- base64:\n{}", base64(input));
    }
    let _ = writeln!(
        text,
        "--- saved as {} (replayed first by `{}`)\n===",
        saved.display(),
        target.command
    );
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Saves `input` under the crash directory, named by kind and content.
fn save_crash(paths: &Paths, kind: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(&paths.crashes);
    let path = paths.crashes.join(format!("{kind}-{:016x}", fnv1a(input)));
    if let Err(e) = std::fs::write(&path, input) {
        eprintln!("cannot save {}: {e}", path.display());
    }
    path
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Resident memory of this process, from `/proc/self/status`.
fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// Peak resident memory of this process.
fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

fn status_kib(field: &str) -> Option<u64> {
    let mut text = String::new();
    std::fs::File::open("/proc/self/status")
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_hex_match_the_rfc_examples() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
        assert_eq!(hex(b"\x00\xffA"), "00ff41");
    }

    #[test]
    fn summaries_round_trip() {
        let s = Summary {
            executions: 12,
            crashes: 0,
            seconds: 2.5,
            labels: 3,
            slowest_ms: 1.25,
            peak_rss_mib: 40,
        };
        let d = Summary::decode(&s.encode()).unwrap();
        assert_eq!(
            (d.executions, d.crashes, d.labels, d.peak_rss_mib),
            (12, 0, 3, 40)
        );
    }

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert!(a.below(10) < 10);
            let r = a.range(3, 5);
            assert!((3..=5).contains(&r));
            b.below(10);
            b.range(3, 5);
        }
        assert_eq!(a.below(0), 0);
    }
}
