//! The pool under contention and cancellation, through real worker
//! processes: a cancelled or abandoned run stops at once and makes no
//! further host call; runs waiting for a slow API do not hold the CPU
//! slots; clients are served in turn and a flood is refused as busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolforge_runtime::sandbox::{
    ClientKey, HostApi, HostRequest, JobKind, Limits, RunFor, SandboxConfig, SandboxError,
    SandboxPool, WorkerCommand,
};

const WORKER: &str = env!("CARGO_BIN_EXE_toolforge-sandbox-worker");

/// The tests here measure latencies of a few milliseconds against a
/// 100 ms bound: they run one at a time so they do not compete for the
/// two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn limits() -> Limits {
    Limits {
        cpu_ms: 5_000,
        wall_ms: 20_000,
        max_requests: 1_000,
        ..Limits::default()
    }
}

fn key(n: u8) -> Option<ClientKey> {
    Some(ClientKey([n; 32]))
}

/// Counts calls started and calls finished; each call waits `delay`.
#[derive(Default)]
struct Counts {
    started: AtomicU32,
    finished: AtomicU32,
}

fn slow_host(counts: Arc<Counts>, delay: Duration) -> Arc<dyn HostApi> {
    Arc::new(move |_req: HostRequest| {
        let counts = Arc::clone(&counts);
        counts.started.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(delay).await;
            counts.finished.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!({"status": 200, "result": 1}))
        }
    })
}

async fn until(what: &str, limit: Duration, check: impl Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn run(key: Option<ClientKey>, cancel: Option<CancellationToken>) -> RunFor {
    RunFor { key, cancel }
}

/// A pool with one warm worker and one CPU slot, as on a small server.
fn one_slot_pool() -> SandboxPool {
    SandboxPool::new(
        SandboxConfig::new(WorkerCommand::new(WORKER))
            .with_workers(1)
            .with_limits(limits()),
    )
    .expect("pool starts")
}

/// `n` runs of client 1 that each wait `delay` on one API call.
fn slow_runs(
    pool: &SandboxPool,
    counts: &Arc<Counts>,
    n: usize,
    delay: Duration,
) -> Vec<tokio::task::JoinHandle<toolforge_runtime::sandbox::Report>> {
    (0..n)
        .map(|_| {
            let p = pool.clone();
            let host = slow_host(Arc::clone(counts), delay);
            tokio::spawn(async move {
                p.run_for(
                    JobKind::Execute,
                    "async () => (await api.request({method: 'GET', path: '/slow'})).result",
                    Some(host),
                    run(key(1), None),
                )
                .await
            })
        })
        .collect()
}

/// A run of client 2 that makes no API call.
async fn quick_run(pool: &SandboxPool, code: &str) -> toolforge_runtime::sandbox::Report {
    pool.run_for(
        JobKind::Execute,
        code,
        Some(slow_host(Arc::default(), Duration::ZERO)),
        run(key(2), None),
    )
    .await
}

const LOOP: &str = "async () => { for (let i = 0; i < 1000; i++) await api.request({method: 'POST', path: '/x'}); return 'done'; }";

#[tokio::test]
async fn cancelling_stops_requests_and_frees_the_worker_at_once() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let pool = one_slot_pool();
    // while waiting on the API
    let counts = Arc::new(Counts::default());
    let cancel = CancellationToken::new();
    let host = slow_host(Arc::clone(&counts), Duration::from_millis(50));
    let p = pool.clone();
    let c = cancel.clone();
    let running = tokio::spawn(async move {
        p.run_for(JobKind::Execute, LOOP, Some(host), run(key(1), Some(c)))
            .await
    });
    until("three requests", Duration::from_secs(10), || {
        counts.started.load(Ordering::SeqCst) >= 3
    })
    .await;
    let at_cancel = Instant::now();
    cancel.cancel();
    let started_then = counts.started.load(Ordering::SeqCst);
    let report = running.await.expect("joins");
    assert_eq!(report.result, Err(SandboxError::Cancelled));
    assert!(
        at_cancel.elapsed() < Duration::from_millis(100),
        "{:?}",
        at_cancel.elapsed()
    );
    until(
        "the worker back in the pool",
        Duration::from_millis(100),
        || pool.idle_workers() == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        counts.started.load(Ordering::SeqCst),
        started_then,
        "no request after cancel"
    );
    // the in-flight request was abandoned, not waited for
    assert!(counts.finished.load(Ordering::SeqCst) < started_then);

    // while computing: the interrupt handler sees the cancel
    let cancel = CancellationToken::new();
    let p = pool.clone();
    let c = cancel.clone();
    let spinning = tokio::spawn(async move {
        p.run_for(
            JobKind::Execute,
            "async () => { while (true) {} }",
            Some(slow_host(Arc::default(), Duration::ZERO)),
            run(key(1), Some(c)),
        )
        .await
    });
    until("the worker busy", Duration::from_secs(5), || {
        pool.idle_workers() == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let at_cancel = Instant::now();
    cancel.cancel();
    let report = spinning.await.expect("joins");
    assert_eq!(report.result, Err(SandboxError::Cancelled));
    until(
        "the worker back in the pool",
        Duration::from_millis(100),
        || pool.idle_workers() == 1,
    )
    .await;
    assert!(
        at_cancel.elapsed() < Duration::from_millis(150),
        "{:?}",
        at_cancel.elapsed()
    );
    // and it is the same healthy worker: the next run is quick
    let t = Instant::now();
    let next = pool
        .execute("async () => 7", slow_host(Arc::default(), Duration::ZERO))
        .await;
    assert_eq!(next.map(|o| o.value), Ok(json!(7)));
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn dropping_the_caller_cancels_the_run() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let pool = one_slot_pool();
    let counts = Arc::new(Counts::default());
    let host = slow_host(Arc::clone(&counts), Duration::from_millis(50));
    let p = pool.clone();
    let abandoned = tokio::spawn(async move {
        p.run_for(JobKind::Execute, LOOP, Some(host), RunFor::default())
            .await
    });
    until("two requests", Duration::from_secs(10), || {
        counts.started.load(Ordering::SeqCst) >= 2
    })
    .await;
    // an HTTP client that goes away drops the future awaiting the run
    abandoned.abort();
    let started_then = counts.started.load(Ordering::SeqCst);
    until(
        "the worker back in the pool",
        Duration::from_millis(100),
        || pool.idle_workers() == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(counts.started.load(Ordering::SeqCst), started_then);
}

#[tokio::test]
async fn runs_waiting_for_a_slow_api_do_not_starve_other_clients() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // one CPU slot, as on a small server
    let pool = one_slot_pool();
    let counts = Arc::new(Counts::default());
    let slow = slow_runs(&pool, &counts, 2, Duration::from_secs(3));
    until("both slow runs waiting", Duration::from_secs(10), || {
        counts.started.load(Ordering::SeqCst) == 2
    })
    .await;
    let t = Instant::now();
    let quick = quick_run(&pool, "async () => 1").await;
    let waited = t.elapsed();
    assert_eq!(quick.result, Ok(json!(1)));
    assert!(
        waited < Duration::from_millis(1_000),
        "another client waited {waited:?}"
    );
    for handle in slow {
        assert_eq!(handle.await.expect("joins").result, Ok(json!(1)));
    }
}

#[tokio::test]
async fn a_flood_from_one_client_is_refused_as_busy_and_others_still_run() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let config = SandboxConfig::new(WorkerCommand::new(WORKER))
        .with_workers(1)
        .with_limits(limits())
        .with_concurrency(4, 2)
        .with_queue(16, 3);
    let pool = SandboxPool::new(config).expect("pool starts");
    let counts = Arc::new(Counts::default());
    let flood = slow_runs(&pool, &counts, 10, Duration::from_millis(1_500));
    // two run, three wait, five are refused at once
    until("two flood runs at the API", Duration::from_secs(10), || {
        counts.started.load(Ordering::SeqCst) == 2
    })
    .await;
    let t = Instant::now();
    let other = quick_run(&pool, "async () => 2").await;
    assert_eq!(other.result, Ok(json!(2)));
    assert!(
        t.elapsed() < Duration::from_millis(1_000),
        "{:?}",
        t.elapsed()
    );
    let mut busy = 0;
    let mut ok = 0;
    for handle in flood {
        match handle.await.expect("joins").result {
            Ok(_) => ok += 1,
            Err(SandboxError::Busy { .. }) => busy += 1,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!((ok, busy), (5, 5));
    let message = SandboxError::Busy { queued: 3 }.to_string();
    assert!(
        message.contains("busy") && message.contains("retry"),
        "{message}"
    );
}
