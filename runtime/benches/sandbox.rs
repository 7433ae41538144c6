//! Sandbox benchmarks (medians; targets from issue 6):
//! - `sandbox_start`: fresh QuickJS runtime + context + trivial run, in process (< 2 ms);
//! - `execute_round_trip`: trivial `execute` with one `api.request` through a
//!   real worker process (overhead < 5 ms);
//! - `search_*`: searches over the full Cloudflare spec (< 30 ms), when
//!   `/tmp/cf-full/artifacts/spec.json` exists (or `TOOLFORGE_CF_SPEC`
//!   points to one); skipped with a message otherwise. Produce it with
//!   `toolforge generate --spec …/cloudflare/openapi.json --out /tmp/cf-full`;
//! - `truncate_1mb`: structural truncation of a ~1 MB result to 24 KB.
//!
//! Run: `cargo bench -p toolforge-runtime --bench sandbox`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolforge_runtime::sandbox::engine::{JobKind, NoHost, run, run_frozen};
use toolforge_runtime::sandbox::{
    FrozenSpec, HostApi, HostRequest, Limits, SandboxConfig, SandboxPool, SpecIndex, SpecSource,
    WorkerCommand,
};
use toolforge_runtime::truncate::{DEFAULT_MAX_BYTES, truncate};

const WORKER: &str = env!("CARGO_BIN_EXE_toolforge-sandbox-worker");

/// Every operation tagged with something containing "dns".
const SEARCH_SCAN: &str = r#"async () => {
  const out = [];
  for (const [path, item] of Object.entries(spec.paths))
    for (const [method, op] of Object.entries(item))
      if (op.tags?.some(t => t.toLowerCase().includes("dns"))) out.push({method: method.toUpperCase(), path, summary: op.summary});
  return out;
}"#;

/// One operation's parameters and request body.
const SEARCH_LOOKUP: &str = r#"async () => {
  const op = spec.paths["/zones/{zone_id}/dns_records"].post;
  return {parameters: op.parameters, body: op.requestBody};
}"#;

fn cloudflare_spec() -> Option<PathBuf> {
    let path = std::env::var_os("TOOLFORGE_CF_SPEC").map_or_else(
        || PathBuf::from("/tmp/cf-full/artifacts/spec.json"),
        PathBuf::from,
    );
    path.exists().then_some(path)
}

fn sandbox_start(c: &mut Criterion) {
    let limits = Limits::default();
    c.bench_function("sandbox_start", |b| {
        b.iter(|| {
            black_box(run(
                JobKind::Execute,
                "async () => 1",
                &limits,
                None,
                &mut NoHost,
            ))
        })
    });
}

fn execute_round_trip(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        return;
    };
    let pool = rt.block_on(async {
        SandboxPool::new(SandboxConfig::new(WorkerCommand::new(WORKER)).with_workers(1))
    });
    let Ok(pool) = pool else { return };
    let host: Arc<dyn HostApi> = Arc::new(|req: HostRequest| async move {
        Ok::<_, String>(json!({"status": 200, "result": {"path": req.path}}))
    });
    let code = "async () => (await api.request({method: 'GET', path: '/zones'})).result.path";
    c.bench_function("execute_round_trip", |b| {
        b.iter(|| {
            let out = rt.block_on(pool.execute(code, Arc::clone(&host)));
            black_box(out.map(|o| o.value))
        })
    });
}

fn search(c: &mut Criterion) {
    let Some(path) = cloudflare_spec() else {
        eprintln!(
            "search benchmarks skipped: no /tmp/cf-full/artifacts/spec.json (set TOOLFORGE_CF_SPEC)"
        );
        return;
    };
    // In process: the engine's own cost.
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let Ok(index) = SpecIndex::from_json(&text) else {
        return;
    };
    let index = Arc::new(index);
    drop(text);
    let limits = Limits::default();
    let mut group = c.benchmark_group("search");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    for (name, code) in [
        ("scan_in_process", SEARCH_SCAN),
        ("lookup_in_process", SEARCH_LOOKUP),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(run(
                    JobKind::Search,
                    code,
                    &limits,
                    Some(&index),
                    &mut NoHost,
                ))
            })
        });
    }
    // The frozen per-worker graph (what workers run), built once here.
    let started = Instant::now();
    let Ok(mut frozen) = FrozenSpec::build(&index) else {
        eprintln!("cannot build the frozen spec");
        return;
    };
    eprintln!(
        "frozen spec: built in {:.1} ms, {:.1} MB of QuickJS heap",
        started.elapsed().as_secs_f64() * 1e3,
        frozen.base_bytes() as f64 / 1e6
    );
    for (name, code) in [
        ("scan_frozen_in_process", SEARCH_SCAN),
        ("lookup_frozen_in_process", SEARCH_LOOKUP),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                if frozen.is_spent()
                    && let Ok(fresh) = FrozenSpec::build(&index)
                {
                    frozen = fresh;
                }
                black_box(run_frozen(code, &limits, &mut frozen, &mut NoHost))
            })
        });
    }
    drop(frozen);
    // Through a worker process, as the MCP `search` tool runs it.
    if let Ok(rt) = tokio::runtime::Runtime::new() {
        let config = SandboxConfig::new(WorkerCommand::new(WORKER))
            .with_workers(1)
            .with_spec(SpecSource::Path(path));
        if let Ok(pool) = rt.block_on(async { SandboxPool::new(config) }) {
            // Warm-up: the worker indexes the spec on start.
            let warm = rt.block_on(pool.search("async () => 1"));
            if let Err(e) = warm {
                eprintln!("search worker failed: {e}");
                return;
            }
            for (name, code) in [
                ("scan_worker", SEARCH_SCAN),
                ("lookup_worker", SEARCH_LOOKUP),
            ] {
                group.bench_function(name, |b| {
                    b.iter(|| black_box(rt.block_on(pool.search(code)).map(|o| o.value)))
                });
            }
        }
    }
    group.finish();
}

fn truncation(c: &mut Criterion) {
    let big: Value = json!({"result": (0..4_000).map(|i| json!({
        "id": format!("{i:032x}"), "name": format!("record-{i}.example.com"), "type": "A",
        "content": "192.0.2.1", "meta": {"auto_added": false, "source": "primary"}, "tags": ["a", "b"],
    })).collect::<Vec<_>>(), "result_info": {"count": 4000}});
    c.bench_function("truncate_1mb", |b| {
        b.iter(|| black_box(truncate(&big, DEFAULT_MAX_BYTES)))
    });
}

criterion_group!(
    benches,
    sandbox_start,
    execute_round_trip,
    search,
    truncation
);
criterion_main!(benches);
