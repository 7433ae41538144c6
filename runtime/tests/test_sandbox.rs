//! Sandbox behaviour through real worker processes: hostile code ends with a
//! clear error within its deadline, and the next call on the same pool works.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_runtime::sandbox::{
    HostApi, HostRequest, Limits, LogLevel, SandboxConfig, SandboxError, SandboxPool, SpecSource,
    WorkerCommand,
};

const WORKER: &str = env!("CARGO_BIN_EXE_toolforge-sandbox-worker");

fn limits() -> Limits {
    Limits {
        cpu_ms: 500,
        wall_ms: 3_000,
        ..Limits::default()
    }
}

fn spec() -> SpecSource {
    let doc = json!({
        "openapi": "3.0.3",
        "paths": {
            "/zones": {"get": {"summary": "List zones", "tags": ["Zone"], "description": "d".repeat(500)}},
            "/zones/{zone_id}/dns_records": {
                "get": {"summary": "List DNS records", "tags": ["DNS Records for a Zone"]},
                "post": {"summary": "Create DNS record", "tags": ["DNS Records for a Zone"],
                         "requestBody": {"content": {"application/json": {"schema": {"type": "object", "description": "x".repeat(400)}}}}}
            }
        }
    });
    SpecSource::Json(Arc::from(
        serde_json::to_string_pretty(&doc).unwrap_or_default(),
    ))
}

fn pool_with(limits: Limits) -> SandboxPool {
    let config = SandboxConfig::new(WorkerCommand::new(WORKER))
        .with_workers(1)
        .with_limits(limits)
        .with_spec(spec());
    SandboxPool::new(config).expect("pool starts")
}

fn pool() -> SandboxPool {
    pool_with(limits())
}

/// A host that echoes the request and counts calls.
fn echo_host(counter: Arc<AtomicU32>) -> Arc<dyn HostApi> {
    Arc::new(move |req: HostRequest| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            Ok::<_, String>(
                json!({"status": 200, "result": {"method": req.method, "path": req.path}}),
            )
        }
    })
}

async fn execute(pool: &SandboxPool, code: &str) -> Result<Value, SandboxError> {
    pool.execute(code, echo_host(Arc::new(AtomicU32::new(0))))
        .await
        .map(|o| o.value)
}

/// The pool still serves: a search and an execute both succeed.
async fn next_call_works(pool: &SandboxPool) {
    let found = pool
        .search("async () => Object.keys(spec.paths).length")
        .await;
    assert_eq!(found.map(|o| o.value), Ok(json!(2)));
    assert_eq!(execute(pool, "async () => 'ok'").await, Ok(json!("ok")));
}

/// Run hostile `code`, check the error and the deadline, then the next call.
async fn hostile(code: &str, expect: fn(&SandboxError) -> bool) {
    let pool = pool();
    let start = Instant::now();
    let result = execute(&pool, code).await;
    let elapsed = start.elapsed();
    assert!(
        result.as_ref().err().is_some_and(expect),
        "{code}: unexpected result {result:?}"
    );
    let deadline =
        Duration::from_millis(limits().wall_ms) + pool.config().kill_grace + Duration::from_secs(1);
    assert!(elapsed < deadline, "{code}: took {elapsed:?}");
    next_call_works(&pool).await;
}

#[tokio::test]
async fn search_returns_data() {
    let pool = pool();
    let code = r#"async () => {
        const out = [];
        for (const [path, item] of Object.entries(spec.paths))
            for (const [method, op] of Object.entries(item))
                if (op.tags.some(t => t.includes("DNS"))) out.push(method.toUpperCase() + " " + path);
        return {out, body: spec.paths["/zones/{zone_id}/dns_records"].post.requestBody.content["application/json"].schema.type};
    }"#;
    let outcome = pool.search(code).await.expect("search works");
    assert_eq!(
        outcome.value,
        json!({"out": ["GET /zones/{zone_id}/dns_records", "POST /zones/{zone_id}/dns_records"], "body": "object"})
    );
    assert_eq!(outcome.requests_made, 0);
    let no_api = pool.search("async () => typeof api").await.map(|o| o.value);
    assert_eq!(no_api, Ok(json!("undefined")));
}

#[tokio::test]
async fn execute_makes_two_host_calls_and_combines_them() {
    let pool = pool();
    let calls = Arc::new(AtomicU32::new(0));
    let code = r#"async () => {
        const zones = await api.request({method: "GET", path: "/zones", query: {per_page: 5}});
        const dns = await api.request({method: "POST", path: "/zones/1/dns_records", body: {type: "A"}});
        console.log("got", zones.status, dns.result.path);
        console.warn({n: 2});
        return [zones.result.path, dns.result.method];
    }"#;
    let outcome = pool
        .execute(code, echo_host(Arc::clone(&calls)))
        .await
        .expect("execute works");
    assert_eq!(outcome.value, json!(["/zones", "POST"]));
    assert_eq!(outcome.requests_made, 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(outcome.logs.entries.len(), 2);
    assert_eq!(
        outcome.logs.entries[0].message,
        "got 200 /zones/1/dns_records"
    );
    assert_eq!(outcome.logs.entries[1].level, LogLevel::Warn);
    assert_eq!(outcome.logs.entries[1].message, r#"{"n":2}"#);
}

#[tokio::test]
async fn thrown_errors_keep_message_stack_and_logs() {
    let pool = pool();
    let report = pool
        .execute_report(
            "async () => {\n  console.log('before');\n  throw new Error('boom');\n}",
            echo_host(Arc::new(AtomicU32::new(0))),
        )
        .await;
    match report.result {
        Err(SandboxError::Thrown { message, stack }) => {
            assert_eq!(message, "Error: boom");
            assert!(stack.unwrap_or_default().contains("code:3"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(report.logs.entries[0].message, "before");
}

#[tokio::test]
async fn infinite_loop_hits_the_cpu_limit() {
    hostile("async () => { while (true) {} }", |e| {
        matches!(e, SandboxError::CpuTimeLimit { .. })
    })
    .await;
}

#[tokio::test]
async fn memory_bomb_hits_the_memory_limit() {
    hostile(
        "async () => { let a = []; while (true) a.push(new Array(1e6).fill(1)); }",
        |e| matches!(e, SandboxError::MemoryLimit { .. }),
    )
    .await;
}

#[tokio::test]
async fn deep_recursion_hits_the_stack_limit() {
    hostile(
        "async () => { function f(n) { return f(n + 1) + 1; } return f(0); }",
        |e| matches!(e, SandboxError::StackOverflow { .. }),
    )
    .await;
}

#[tokio::test]
async fn catastrophic_regex_is_interrupted() {
    hostile(r#"async () => /(a+)+$/.test("a".repeat(40) + "!")"#, |e| {
        matches!(e, SandboxError::CpuTimeLimit { .. })
    })
    .await;
}

#[tokio::test]
async fn huge_bigint_is_refused() {
    hostile("async () => String(2n ** 10000000n).length", |e| {
        matches!(e, SandboxError::Thrown { message, .. } if message == "RangeError: BigInt is too large")
    })
    .await;
}

#[tokio::test]
async fn generic_index_of_over_four_billion_is_stopped() {
    hostile(
        "async () => Array.prototype.indexOf.call({length: 2 ** 32 - 1}, 1)",
        |e| matches!(e, SandboxError::CpuTimeLimit { .. }),
    )
    .await;
}

#[tokio::test]
async fn modules_require_and_fetch_are_absent() {
    hostile("async () => { await import('x'); }", |e| {
        matches!(e, SandboxError::Thrown { message, .. } if message.contains("could not load module"))
    })
    .await;
    hostile("async () => require('fs')", |e| {
        matches!(e, SandboxError::Thrown { message, .. } if message.starts_with("ReferenceError"))
    })
    .await;
    hostile("async () => fetch('https://example.com')", |e| {
        matches!(e, SandboxError::Thrown { message, .. } if message.starts_with("ReferenceError"))
    })
    .await;
}

#[tokio::test]
async fn request_cap_is_enforced() {
    let pool = pool();
    let calls = Arc::new(AtomicU32::new(0));
    let code = "async () => { for (let i = 0; i < 100; i++) { try { await api.request({method: 'GET', path: '/zones'}); } catch (e) {} } return 'finished'; }";
    let report = pool
        .execute_report(code, echo_host(Arc::clone(&calls)))
        .await;
    assert_eq!(report.result, Err(SandboxError::RequestLimit { max: 20 }));
    assert_eq!(calls.load(Ordering::SeqCst), 20);
    assert_eq!(report.requests_made, 20);
    next_call_works(&pool).await;
}

#[tokio::test]
async fn response_bytes_cap_is_enforced() {
    let pool = pool_with(Limits {
        max_response_bytes: 10_000,
        ..limits()
    });
    let host: Arc<dyn HostApi> =
        Arc::new(|_req: HostRequest| async { Ok::<_, String>(json!("x".repeat(4_000))) });
    let code = "async () => { const out = []; for (let i = 0; i < 5; i++) out.push(await api.request({method: 'GET', path: '/a'})); return out.length; }";
    let result = pool.execute(code, host).await.map(|o| o.value);
    assert_eq!(
        result,
        Err(SandboxError::ResponseBytesLimit { max: 10_000 })
    );
    next_call_works(&pool).await;
}

#[tokio::test]
async fn slow_host_hits_the_wall_clock() {
    let pool = pool_with(Limits {
        wall_ms: 800,
        ..limits()
    });
    let host: Arc<dyn HostApi> = Arc::new(|_req: HostRequest| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, String>(Value::Null)
    });
    let start = Instant::now();
    let result = pool
        .execute(
            "async () => api.request({method: 'GET', path: '/slow'})",
            host,
        )
        .await;
    assert_eq!(
        result.map(|o| o.value),
        Err(SandboxError::WallClockLimit { limit_ms: 800 })
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    next_call_works(&pool).await;
}

#[tokio::test]
async fn nothing_secret_is_reachable() {
    let pool = pool();
    let code = r#"async () => ({
        process: typeof process, env: typeof Deno, std: typeof std, os: typeof os,
        names: Object.getOwnPropertyNames(globalThis).filter(k => !/^[A-Z]/.test(k)).sort(),
    })"#;
    let value = execute(&pool, code).await.expect("runs");
    assert_eq!(value["process"], "undefined");
    assert_eq!(value["std"], "undefined");
    let names: Vec<String> = serde_json::from_value(value["names"].clone()).unwrap_or_default();
    let allowed = [
        "api",
        "console",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "eval",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "queueMicrotask",
        "undefined",
        "unescape",
    ];
    for name in names {
        assert!(allowed.contains(&name.as_str()), "unexpected global {name}");
    }
}

#[tokio::test]
async fn workers_start_with_an_empty_environment() {
    let dir = tempfile_dir();
    let out = dir.join("env.txt");
    let script = format!("env > '{}'; exit 3", out.display());
    let command = WorkerCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
    };
    let pool = SandboxPool::new(
        SandboxConfig::new(command)
            .with_workers(1)
            .with_limits(limits()),
    )
    .expect("spawns");
    let result = execute(&pool, "async () => 1").await;
    assert!(
        matches!(result, Err(SandboxError::WorkerCrashed { .. })),
        "{result:?}"
    );
    let env = std::fs::read_to_string(&out).unwrap_or_default();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(!names.is_empty() || env.is_empty());
    for name in names {
        assert!(
            ["PWD", "SHLVL", "_", "OLDPWD"].contains(&name),
            "leaked variable {name}"
        );
    }
    drop(std::fs::remove_dir_all(dir));
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolforge-sandbox-env-{}", std::process::id()));
    drop(std::fs::create_dir_all(&dir));
    dir
}

#[tokio::test]
async fn a_crashing_worker_is_replaced() {
    let pool = pool();
    let start = Instant::now();
    let report = pool.debug_abort_worker().await;
    match &report.result {
        Err(SandboxError::WorkerCrashed { detail }) => assert!(
            detail.contains("signal") || detail.contains("abort"),
            "{detail}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(2));
    next_call_works(&pool).await;
}

#[tokio::test]
async fn concurrent_calls_share_the_pool() {
    let config = SandboxConfig::new(WorkerCommand::new(WORKER))
        .with_workers(2)
        .with_limits(limits())
        .with_spec(spec());
    let pool = SandboxPool::new(config).expect("pool starts");
    let runs = (0..6).map(|i| {
        let pool = pool.clone();
        async move { execute(&pool, &format!("async () => {i} * 2")).await }
    });
    let results: Vec<_> = futures_join(runs).await;
    assert_eq!(
        results,
        (0..6).map(|i| Ok(json!(i * 2))).collect::<Vec<_>>()
    );
}

async fn futures_join<F: std::future::Future<Output = T> + Send + 'static, T: Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<T> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        if let Ok(value) = handle.await {
            out.push(value);
        }
    }
    out
}

#[tokio::test]
async fn search_without_a_spec_is_a_clear_error() {
    let config = SandboxConfig::new(WorkerCommand::new(WORKER))
        .with_workers(1)
        .with_limits(limits());
    let pool = SandboxPool::new(config).expect("pool starts");
    assert!(matches!(
        pool.search("async () => 1").await,
        Err(SandboxError::SpecUnavailable { .. })
    ));
    let missing = SandboxConfig::new(WorkerCommand::new(WORKER))
        .with_workers(1)
        .with_limits(limits())
        .with_spec(SpecSource::Path("/nonexistent/spec.json".into()));
    let pool = SandboxPool::new(missing).expect("pool starts");
    match pool.search("async () => 1").await {
        Err(SandboxError::SpecUnavailable { message }) => {
            assert!(message.contains("/nonexistent/spec.json"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(execute(&pool, "async () => 2").await, Ok(json!(2)));
}

/// A fake worker: answers `ready` and `started` for job 1, then hangs.
fn hanging_worker(started: bool) -> WorkerCommand {
    let mut script = String::from("read init; read job; echo '{\"ready\":{\"version\":2}}';");
    if started {
        script.push_str(" echo '{\"started\":{\"id\":1}}';");
    }
    script.push_str(" exec sleep 30");
    WorkerCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
    }
}

#[tokio::test]
async fn a_hung_worker_is_killed_at_the_cpu_deadline() {
    let config = SandboxConfig::new(hanging_worker(true))
        .with_workers(1)
        .with_limits(limits());
    let pool = SandboxPool::new(config).expect("spawns");
    let start = Instant::now();
    let result = execute(&pool, "async () => 1").await;
    assert_eq!(result, Err(SandboxError::CpuTimeLimit { limit_ms: 500 }));
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn a_worker_that_never_starts_is_killed() {
    let mut config = SandboxConfig::new(hanging_worker(false))
        .with_workers(1)
        .with_limits(limits());
    config.startup_limit = Duration::from_millis(300);
    let pool = SandboxPool::new(config).expect("spawns");
    let result = execute(&pool, "async () => 1").await;
    assert!(
        matches!(&result, Err(SandboxError::WorkerCrashed { detail }) if detail.contains("did not start")),
        "{result:?}"
    );
}
