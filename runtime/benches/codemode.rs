//! Code Mode benchmarks through the MCP server core (medians; targets from
//! issue 6), in process with real sandbox worker processes:
//!
//! - `codemode/execute_one_request`: an `execute` call whose code makes one
//!   `api.request` to a loopback upstream; `codemode/direct_one_request` is
//!   the same upstream call as a direct tool, so the difference is the Code
//!   Mode overhead (target < 5 ms);
//! - `codemode/search_*_full_release`: `search` over the full Cloudflare
//!   release (target < 30 ms), when `/tmp/cf-full/artifacts/spec.json`
//!   exists (or `TOOLFORGE_CF_SPEC` points to one); skipped with a message
//!   otherwise. Produce it with
//!   `toolforge generate --spec …/cloudflare/openapi.json --out /tmp/cf-full`.
//!
//! Sandbox start-up alone is `sandbox_start` in `benches/sandbox.rs`.
//! Run: `cargo bench -p toolforge-runtime --bench codemode`.

#![allow(missing_docs)]

#[path = "../tests/test_codemode_fixture/mod.rs"]
mod fixture;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::sandbox::Limits;

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

fn limits() -> Limits {
    Limits {
        cpu_ms: 5_000,
        wall_ms: 30_000,
        ..Limits::default()
    }
}

fn execute(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        return;
    };
    let up = rt.block_on(fixture::upstream());
    let (codemode, direct) = rt.block_on(async {
        (
            fixture::core_with(Mode::CodeMode, &up, Exposure::default(), limits()),
            fixture::core_with(Mode::Direct, &up, Exposure::default(), limits()),
        )
    });
    let credential = fixture::credential();
    let code = r#"async () => (await api.request({ method: "GET", path: "/zones", query: { per_page: 2 } })).result.length"#;
    let args = fixture::code_args(code, json!({}));
    // Warm-up: workers up, connections open.
    let warm = rt.block_on(codemode.call("execute", args.clone(), Some(&credential)));
    if let Ok(r) = &warm {
        assert_eq!(fixture::text(r), "2", "warm-up execute failed");
    }
    let mut group = c.benchmark_group("codemode");
    group
        .sample_size(200)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("execute_one_request", |b| {
        b.iter(|| black_box(rt.block_on(codemode.call("execute", args.clone(), Some(&credential)))))
    });
    let direct_args = json!({"per_page": 2}).as_object().cloned();
    group.bench_function("direct_one_request", |b| {
        b.iter(|| {
            black_box(rt.block_on(direct.call(
                "zones_list",
                direct_args.clone(),
                Some(&credential),
            )))
        })
    });
    group.finish();
}

fn search(c: &mut Criterion) {
    let Some(path) = cloudflare_spec() else {
        eprintln!(
            "codemode search benchmarks skipped: no /tmp/cf-full/artifacts/spec.json (set TOOLFORGE_CF_SPEC)"
        );
        return;
    };
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        return;
    };
    let up = rt.block_on(fixture::upstream());
    let core = rt.block_on(async {
        fixture::core_searching(
            Mode::CodeMode,
            &up,
            Exposure::default(),
            limits(),
            Some(path),
        )
    });
    // Warm-up: the worker indexes the spec on start.
    let warm = rt.block_on(core.call(
        "search",
        fixture::code_args("async () => 1", json!({})),
        None,
    ));
    if warm.as_ref().map_or(true, |r| r.is_error == Some(true)) {
        eprintln!("search warm-up failed: {warm:?}");
        return;
    }
    let mut group = c.benchmark_group("codemode");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    for (name, code) in [
        ("search_scan_full_release", SEARCH_SCAN),
        ("search_lookup_full_release", SEARCH_LOOKUP),
    ] {
        let args = fixture::code_args(code, json!({}));
        group.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(core.call("search", args.clone(), None))))
        });
    }
    group.finish();
}

criterion_group!(benches, execute, search);
criterion_main!(benches);
