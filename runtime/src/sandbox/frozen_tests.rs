//! Tests of the frozen per-worker spec ([`super::FrozenSpec`]): every run
//! sees the same unmodified document, whatever an earlier run tried.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::engine::{NoHost, RunOutput, run, run_frozen};
use super::super::{JobKind, Limits, SandboxError};
use super::*;

fn doc() -> Value {
    let long = "x".repeat(300);
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t"},
        "paths": {
            "/zones": {"get": {"summary": "List zones", "tags": ["zones"], "description": long.clone(),
                "parameters": [{"name": "page", "in": "query"}],
                "responses": {"200": {"description": long.clone()}}}},
            "/accounts": {"get": {"summary": "List accounts", "tags": ["accounts"],
                "__proto__": {"polluted": true},
                "responses": {"200": {"description": long}}}}
        },
        "list": [1, 2, {"deep": ["a".repeat(400)]}]
    })
}

fn limits() -> Limits {
    Limits {
        cpu_ms: 2_000,
        wall_ms: 5_000,
        ..Limits::default()
    }
}

fn graph() -> FrozenSpec {
    let index = SpecIndex::from_value(doc()).unwrap();
    FrozenSpec::build(&index).unwrap()
}

fn search(spec: &mut FrozenSpec, code: &str) -> RunOutput {
    run_frozen(code, &limits(), spec, &mut NoHost)
}

/// What a clean run reads: the document, the intrinsics it relies on.
const PROBE: &str = r#"async () => ({
    spec,
    keys: Object.keys(spec.paths),
    ops: Object.entries(spec.paths).map(([p, item]) => p + ":" + item.get.tags.join()),
    frozen: Object.isFrozen(spec) && Object.isFrozen(spec.paths["/zones"].get.parameters[0]),
    realm: [({}).polluted, [].polluted, Object.getPrototypeOf(spec).polluted,
        Object.getPrototypeOf(spec.list).polluted, spec.list.polluted, spec.extra, spec.paths.extra,
        spec.paths["/zones"].get.parameters.extra, typeof spec.constructor.prototype.hasOwnProperty,
        typeof spec.list.map, typeof spec.list.includes, spec.list.includes(2),
        [...spec.paths["/zones"].get.tags].join(), spec.list.map((x) => typeof x).join()],
})"#;

fn clean(spec: &mut FrozenSpec) -> String {
    let out = search(spec, PROBE);
    assert!(!spec.is_spent(), "a clean run spends nothing");
    out.result.unwrap()
}

#[test]
fn the_graph_reads_like_parsed_json() {
    let mut spec = graph();
    let expected = serde_json::to_string(&doc()).unwrap();
    let out = search(&mut spec, "async () => JSON.stringify(spec)");
    assert_eq!(
        out.result
            .map(|s| serde_json::from_str::<String>(&s).unwrap()),
        Ok(expected)
    );
    let own = search(
        &mut spec,
        r#"async () => [Object.keys(spec.paths["/accounts"].get).includes("__proto__"),
            ({}).polluted === undefined, Array.isArray(spec.list), spec.paths === spec.paths]"#,
    );
    assert_eq!(own.result, Ok("[true,true,true,true]".into()));
}

/// Each attack runs, then the probe must read exactly what it read before
/// any attack: nothing a run does reaches the next one.
#[test]
fn no_mutation_reaches_the_next_run() {
    let attacks = [
        // assignment, at the root and deep, sloppy and strict
        r#"async () => { spec.extra = 1; spec.paths["/zones"].get.summary = "x"; spec.list[0] = 9; }"#,
        r#"async () => { "use strict"; try { spec.paths.extra = 1; } catch (e) {} try { spec.list.push(4); } catch (e) {} }"#,
        // delete
        r#"async () => { delete spec.paths["/zones"]; delete spec.list[1]; try { spec.list.length = 0; } catch (e) {} }"#,
        // defineProperty, through this realm's and the spec realm's Object
        r#"async () => { try { Object.defineProperty(spec, "extra", { value: 1 }); } catch (e) {}
            try { spec.constructor.defineProperty(spec.paths, "extra", { value: 1 }); } catch (e) {}
            try { Reflect.defineProperty(spec.list, "0", { value: 9 }); } catch (e) {}
            try { Object.setPrototypeOf(spec.paths, { extra: 1 }); } catch (e) {} }"#,
        // prototype pollution through __proto__ and constructor.prototype
        r#"async () => { try { spec.__proto__.polluted = 1; } catch (e) {}
            try { spec.constructor.prototype.polluted = 1; } catch (e) {}
            try { spec.list.__proto__.polluted = 1; } catch (e) {}
            try { spec.list.constructor.prototype.polluted = 1; } catch (e) {}
            try { Object.getPrototypeOf(spec.paths).hasOwnProperty = null; } catch (e) {}
            try { spec.paths.__proto__ = { polluted: 1 }; } catch (e) {} }"#,
        // adding properties to nested objects and arrays
        r#"async () => { spec.paths["/zones"].get.parameters.extra = 1; spec.paths["/zones"].get.parameters[5] = {};
            spec.paths["/zones"].get.parameters[0].required = true; spec.info.version = "2"; }"#,
        // Array.prototype changes, in this realm and the spec's
        r#"async () => { Array.prototype.polluted = 1; Array.prototype.map = () => [];
            try { Object.getPrototypeOf(spec.list).map = () => []; } catch (e) {}
            try { Object.getPrototypeOf(spec.list).includes = () => false; } catch (e) {}
            try { const it = Object.getPrototypeOf(Object.getPrototypeOf(spec.list[Symbol.iterator]())); it.next = () => ({ done: true }); } catch (e) {}
            try { Object.getPrototypeOf(spec.list[Symbol.iterator]()).next = () => ({ done: true }); } catch (e) {} }"#,
        // the spec realm's constructors, globals and realm-wide Error settings
        r#"async () => { try { spec.constructor.constructor("globalThis.polluted = 1")(); } catch (e) {}
            try { spec.constructor.keys = () => []; } catch (e) {}
            let E; try { spec.constructor.defineProperty(spec, "x", { value: 1 }); } catch (e) { E = e.constructor; }
            try { Object.getPrototypeOf(E).prepareStackTrace = () => "leak"; } catch (e) {}
            try { Object.getPrototypeOf(E).stackTraceLimit = 0; } catch (e) {}
            try { E.prototype.polluted = 1; } catch (e) {} }"#,
        // work left behind: a pending job chain
        r#"async () => { const again = () => Promise.resolve().then(again); again(); return 1; }"#,
    ];
    let mut spec = graph();
    let before = clean(&mut spec);
    assert!(before.contains(r#""frozen":true"#), "{before}");
    for attack in attacks {
        let _ = search(&mut spec, attack);
        if spec.is_spent() {
            spec = graph();
        }
        assert_eq!(clean(&mut spec), before, "after {attack}");
    }
}

/// Errors the spec realm throws still say what happened: its `Error`
/// settings are pinned, not removed.
#[test]
fn the_spec_realm_still_throws_readable_errors() {
    let mut spec = graph();
    let out = search(
        &mut spec,
        r#"async () => { spec.constructor.defineProperty(spec, "x", { value: 1 }); }"#,
    );
    assert!(
        matches!(&out.result, Err(SandboxError::Thrown { message, .. }) if message.starts_with("TypeError")),
        "{:?}",
        out.result
    );
}

/// A run that leaves pending jobs behind (a throw before its jobs ran)
/// spends the graph, so the worker builds a new runtime before the next
/// search. (A job chain is among `no_mutation_reaches_the_next_run`'s
/// attacks.)
#[test]
fn leftover_jobs_spend_the_graph() {
    let mut spec = graph();
    let out = search(
        &mut spec,
        "() => { Promise.resolve().then(() => 1); throw new Error('x'); }",
    );
    assert!(
        matches!(out.result, Err(SandboxError::Thrown { .. })),
        "{:?}",
        out.result
    );
    assert!(spec.is_spent());
}

#[test]
fn limits_hold_on_the_shared_runtime() {
    let mut spec = graph();
    let spin = search(&mut spec, "async () => { for (;;) {} }");
    assert!(
        matches!(spin.result, Err(SandboxError::CpuTimeLimit { .. })),
        "{:?}",
        spin.result
    );
    let bomb = search(
        &mut spec,
        "async () => { const a = []; for (;;) a.push('x'.repeat(1e5) + a.length); }",
    );
    assert!(
        matches!(bomb.result, Err(SandboxError::MemoryLimit { .. })),
        "{:?}",
        bomb.result
    );
    if spec.is_spent() {
        spec = graph();
    }
    assert!(clean(&mut spec).contains("List zones"));
}

/// The frozen and the lazy spec give the same answers.
#[test]
fn frozen_and_lazy_runs_agree() {
    let index = Arc::new(SpecIndex::from_value(doc()).unwrap());
    let mut spec = FrozenSpec::build(&index).unwrap();
    let code =
        r#"async () => Object.entries(spec.paths).map(([p, i]) => [p, i.get.summary, i.get.tags])"#;
    let lazy = run(JobKind::Search, code, &limits(), Some(&index), &mut NoHost);
    assert_eq!(search(&mut spec, code).result, lazy.result);
}

/// Markers share their target's object, so a marker DAG is built in
/// linear space, and reading all of it still stops at the run's limits.
#[test]
fn marker_dags_are_shared_not_copied() {
    let mut schemas = serde_json::Map::new();
    schemas.insert(
        "S0".into(),
        json!({"type": "string", "description": "x".repeat(300)}),
    );
    for i in 1..=40 {
        let prev = json!({"x-toolforge-inline": format!("#/components/schemas/S{}", i - 1)});
        schemas.insert(format!("S{i}"), json!({"a": prev.clone(), "b": prev}));
    }
    let doc = json!({
        "paths": {"/x": {"get": {"s": {"x-toolforge-inline": "#/components/schemas/S40"}}}},
        "components": {"schemas": schemas},
        "x-toolforge-inline-refs": "n"
    });
    let index = SpecIndex::from_value(doc).unwrap();
    let mut spec = FrozenSpec::build(&index).unwrap();
    assert!(spec.base_bytes() < 8 << 20, "{}", spec.base_bytes());
    let lookup = "async () => [Object.keys(spec.paths['/x'].get.s.a.b.a), spec.paths['/x'].get.s.a === spec.components.schemas.S39]";
    assert_eq!(
        search(&mut spec, lookup).result,
        Ok(r#"[["a","b"],true]"#.into())
    );
    let all = search(&mut spec, "async () => JSON.stringify(spec).length");
    assert!(
        matches!(
            all.result,
            Err(SandboxError::CpuTimeLimit { .. }
                | SandboxError::MemoryLimit { .. }
                | SandboxError::WallClockLimit { .. })
        ),
        "{:?}",
        all.result
    );
}
