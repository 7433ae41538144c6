use std::collections::VecDeque;

use serde_json::{Value, json};

use super::*;

/// A host that answers every request with `respond(request)` immediately.
struct FakeHost {
    sent: Vec<HostRequest>,
    queue: VecDeque<HostReply>,
    respond: fn(&HostRequest) -> Result<Value, String>,
}

impl FakeHost {
    fn new(respond: fn(&HostRequest) -> Result<Value, String>) -> Self {
        Self {
            sent: Vec::new(),
            queue: VecDeque::new(),
            respond,
        }
    }
}

impl HostLink for FakeHost {
    fn send(&mut self, call: u32, request: &HostCall) -> Result<(), String> {
        let HostCall::Request(request) = request else {
            return Err("not an api.request".into());
        };
        self.sent.push(request.clone());
        let result = (self.respond)(request).map(|v| v.to_string());
        self.queue.push_back(HostReply {
            call,
            result,
            abort: None,
        });
        Ok(())
    }
    fn recv(&mut self, _deadline: Instant) -> LinkEvent {
        self.queue
            .pop_front()
            .map_or(LinkEvent::Timeout, LinkEvent::Reply)
    }
}

fn limits() -> Limits {
    Limits {
        cpu_ms: 300,
        wall_ms: 3_000,
        ..Limits::default()
    }
}

fn exec(code: &str) -> RunOutput {
    let mut host = FakeHost::new(|r| Ok(json!({"path": r.path})));
    run(JobKind::Execute, code, &limits(), None, &mut host)
}

fn value(out: &RunOutput) -> Value {
    match &out.result {
        Ok(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[test]
fn returns_json_and_undefined_becomes_null() {
    assert_eq!(
        value(&exec("async () => ({a: [1, 'x', null]})")),
        json!({"a": [1, "x", null]})
    );
    assert_eq!(exec("async () => {}").result, Ok("null".into()));
    assert_eq!(exec("() => 7").result, Ok("7".into()));
}

#[test]
fn console_is_captured_and_bounded() {
    let out = exec("async () => { console.log('a', 1, {b: 2}); console.error('bad'); return 0; }");
    assert_eq!(out.logs.entries.len(), 2);
    assert_eq!(out.logs.entries[0].message, "a 1 {\"b\":2}");
    assert_eq!(out.logs.entries[1].level, LogLevel::Error);
    let out = exec("async () => { for (let i = 0; i < 10000; i++) console.log('x'.repeat(100)); }");
    assert!(out.logs.truncated);
    let total: usize = out.logs.entries.iter().map(|e| e.message.len()).sum();
    assert!(total <= limits().max_log_bytes);
}

#[test]
fn thrown_errors_have_message_and_stack() {
    let out = exec("async () => {\n  throw new TypeError('nope');\n}");
    match out.result {
        Err(SandboxError::Thrown { message, stack }) => {
            assert_eq!(message, "TypeError: nope");
            assert!(stack.unwrap_or_default().contains("code:2"));
        }
        other => panic!("{other:?}"),
    }
    let out = exec("async () => { throw {code: 7}; }");
    assert_eq!(
        out.result,
        Err(SandboxError::Thrown {
            message: "non-Error value: {\"code\":7}".into(),
            stack: None
        })
    );
}

#[test]
fn bad_code_is_invalid() {
    assert!(matches!(
        exec("async () => {").result,
        Err(SandboxError::InvalidCode { .. })
    ));
    assert!(matches!(
        exec("42").result,
        Err(SandboxError::InvalidCode { .. })
    ));
    assert!(matches!(
        exec("async () => 1\0").result,
        Err(SandboxError::InvalidCode { .. } | SandboxError::Internal { .. })
    ));
    let big = format!("async () => '{}'", "x".repeat(300 << 10));
    assert!(matches!(
        exec(&big).result,
        Err(SandboxError::InvalidCode { .. })
    ));
}

#[test]
fn cpu_limit_stops_infinite_loops() {
    let start = Instant::now();
    assert_eq!(
        exec("async () => { while (true) {} }").result,
        Err(SandboxError::CpuTimeLimit { limit_ms: 300 })
    );
    assert_eq!(
        exec("async () => { while (true) { try { for(;;){} } catch (e) {} } }").result,
        Err(SandboxError::CpuTimeLimit { limit_ms: 300 })
    );
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn memory_limit_is_in_force() {
    // 48 MiB of typed arrays: fails under a 16 MiB heap limit, passes under 256 MiB.
    let code = "async () => { const a = []; for (let i = 0; i < 48; i++) a.push(new Uint8Array(1 << 20)); return a.length; }";
    let mut host = NoHost;
    let small = Limits {
        memory_bytes: 16 << 20,
        ..limits()
    };
    let out = run(JobKind::Execute, code, &small, None, &mut host);
    assert_eq!(
        out.result,
        Err(SandboxError::MemoryLimit {
            limit_bytes: 16 << 20
        })
    );
    let large = Limits {
        memory_bytes: 256 << 20,
        cpu_ms: 5_000,
        ..limits()
    };
    let out = run(JobKind::Execute, code, &large, None, &mut host);
    assert_eq!(out.result, Ok("48".into()));
}

#[test]
fn memory_bomb_and_recursion_are_stopped() {
    let out = exec("async () => { let a = []; while (true) a.push(new Array(1e6).fill(1)); }");
    assert!(
        matches!(out.result, Err(SandboxError::MemoryLimit { .. })),
        "{:?}",
        out.result
    );
    let out = exec("async () => { const f = (n) => f(n + 1) + 1; return f(0); }");
    assert!(
        matches!(out.result, Err(SandboxError::StackOverflow { .. })),
        "{:?}",
        out.result
    );
}

#[test]
fn api_requests_reach_the_host() {
    let mut host = FakeHost::new(|r| Ok(json!({"result": [r.path.clone()]})));
    let code = r#"async () => {
        const [a, b] = await Promise.all([
            api.request({method: "GET", path: "/zones"}),
            api.request({method: "POST", path: "/accounts", body: {n: 1}, query: {page: 2}, contentType: "application/json"}),
        ]);
        return a.result.concat(b.result);
    }"#;
    let out = run(JobKind::Execute, code, &limits(), None, &mut host);
    assert_eq!(out.result, Ok(r#"["/zones","/accounts"]"#.into()));
    assert_eq!(out.requests, 2);
    assert_eq!(
        host.sent[1].query.as_ref().and_then(|q| q.get("page")),
        Some(&json!(2))
    );
    assert_eq!(
        host.sent[1].content_type.as_deref(),
        Some("application/json")
    );
}

#[test]
fn host_errors_are_catchable() {
    let mut host = FakeHost::new(|_| Err("403 Forbidden: missing permission".into()));
    let code = "async () => { try { await api.request({method: 'GET', path: '/x'}); } catch (e) { return e.message; } }";
    let out = run(JobKind::Execute, code, &limits(), None, &mut host);
    assert_eq!(
        out.result,
        Ok("\"403 Forbidden: missing permission\"".into())
    );
}

#[test]
fn request_cap_ends_the_run_even_when_caught() {
    let code = "async () => { for (let i = 0; i < 50; i++) { try { await api.request({method: 'GET', path: '/x'}); } catch (e) {} } return 'done'; }";
    let out = exec(code);
    assert_eq!(out.result, Err(SandboxError::RequestLimit { max: 20 }));
    assert_eq!(out.requests, 20);
}

#[test]
fn malformed_requests_are_type_errors() {
    let out = exec(
        "async () => { try { await api.request({method: 'GET', path: '/x', url: 'https://evil'}); } catch (e) { return e.name; } }",
    );
    assert_eq!(out.result, Ok("\"TypeError\"".into()));
    assert_eq!(out.requests, 0);
}

#[test]
fn host_abort_and_timeout_end_the_run() {
    struct Aborting;
    impl HostLink for Aborting {
        fn send(&mut self, _: u32, _: &HostCall) -> Result<(), String> {
            Ok(())
        }
        fn recv(&mut self, _: Instant) -> LinkEvent {
            LinkEvent::Reply(HostReply {
                call: 0,
                result: Err("x".into()),
                abort: Some(SandboxError::ResponseBytesLimit { max: 5 }),
            })
        }
    }
    let code = "async () => api.request({method: 'GET', path: '/x'})";
    let out = run(JobKind::Execute, code, &limits(), None, &mut Aborting);
    assert_eq!(out.result, Err(SandboxError::ResponseBytesLimit { max: 5 }));
    struct Silent;
    impl HostLink for Silent {
        fn send(&mut self, _: u32, _: &HostCall) -> Result<(), String> {
            Ok(())
        }
        fn recv(&mut self, _: Instant) -> LinkEvent {
            LinkEvent::Timeout
        }
    }
    let out = run(JobKind::Execute, code, &limits(), None, &mut Silent);
    assert_eq!(
        out.result,
        Err(SandboxError::WallClockLimit { limit_ms: 3_000 })
    );
}

#[test]
fn unsettled_promises_and_unserialisable_results() {
    assert_eq!(
        exec("async () => new Promise(() => {})").result,
        Err(SandboxError::NeverSettled)
    );
    assert!(matches!(
        exec("async () => 1n").result,
        Err(SandboxError::NotSerialisable { .. })
    ));
    assert!(matches!(
        exec("async () => { const a = {}; a.a = a; return a; }").result,
        Err(SandboxError::NotSerialisable { .. })
    ));
    let small = Limits {
        max_output_bytes: 10,
        ..limits()
    };
    let out = run(
        JobKind::Execute,
        "() => 'x'.repeat(100)",
        &small,
        None,
        &mut NoHost,
    );
    assert_eq!(
        out.result,
        Err(SandboxError::OutputTooLarge { size: 102, max: 10 })
    );
}

#[test]
fn nothing_outside_the_language_is_reachable() {
    let out = exec(
        r#"async () => ({
        types: [typeof process, typeof require, typeof fetch, typeof XMLHttpRequest, typeof setTimeout,
                typeof setInterval, typeof std, typeof os, typeof WebAssembly, typeof Deno, typeof Bun],
        globals: Object.getOwnPropertyNames(globalThis).filter(k => !/^[A-Z]/.test(k)).sort(),
    })"#,
    );
    let v = value(&out);
    assert_eq!(v["types"], json!(vec!["undefined"; 11]), "{v}");
    let globals: Vec<String> = serde_json::from_value(v["globals"].clone()).unwrap_or_default();
    for name in &globals {
        assert!(
            [
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
                "unescape",
                "undefined",
                "NaN",
                "Infinity",
            ]
            .contains(&name.as_str()),
            "unexpected global {name}"
        );
    }
}

#[test]
fn dynamic_import_fails() {
    let out = exec("async () => { await import('x'); return 1; }");
    assert!(
        matches!(out.result, Err(SandboxError::Thrown { .. })),
        "{:?}",
        out.result
    );
    let out = exec("import x from 'x'");
    assert!(
        matches!(out.result, Err(SandboxError::InvalidCode { .. })),
        "{:?}",
        out.result
    );
}

#[test]
fn search_needs_a_spec_and_sees_it() {
    let out = run(
        JobKind::Search,
        "async () => 1",
        &limits(),
        None,
        &mut NoHost,
    );
    assert!(matches!(
        out.result,
        Err(SandboxError::SpecUnavailable { .. })
    ));
    let spec = Arc::new(
        SpecIndex::from_value(json!({"paths": {"/zones": {"get": {"summary": "List zones"}}}}))
            .unwrap(),
    );
    let code = "async () => [typeof api, spec.paths['/zones'].get.summary]";
    let out = run(JobKind::Search, code, &limits(), Some(&spec), &mut NoHost);
    assert_eq!(out.result, Ok(r#"["undefined","List zones"]"#.into()));
}

/// A spec artifact whose inline markers form a DAG that reads as 2^40
/// values (hand-made: the generator writes markers only when the fully
/// inlined document is within its node bound) is indexed in linear space,
/// lookups stay cheap, and a search that reads all of it stops at the
/// run's limits instead of exhausting the worker.
#[test]
fn exponential_marker_dags_stop_at_the_run_limits() {
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
    let spec = Arc::new(SpecIndex::from_value(doc).unwrap());
    assert!(spec.lazy_nodes() < 100, "{}", spec.lazy_nodes());
    let lookup = "async () => Object.keys(spec.paths['/x'].get.s.a.b.a)";
    let out = run(JobKind::Search, lookup, &limits(), Some(&spec), &mut NoHost);
    assert_eq!(out.result, Ok(r#"["a","b"]"#.into()));
    let start = Instant::now();
    let all = "async () => JSON.stringify(spec).length";
    let out = run(JobKind::Search, all, &limits(), Some(&spec), &mut NoHost);
    assert!(
        matches!(
            out.result,
            Err(SandboxError::CpuTimeLimit { .. }
                | SandboxError::MemoryLimit { .. }
                | SandboxError::WallClockLimit { .. })
        ),
        "{:?}",
        out.result
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn code_runs_see_codemode_and_not_api() {
    struct Tools(VecDeque<HostReply>, Vec<ToolCall>);
    impl HostLink for Tools {
        fn send(&mut self, call: u32, request: &HostCall) -> Result<(), String> {
            let HostCall::Tool(t) = request else {
                return Err("expected a tool call".into());
            };
            self.1.push(t.clone());
            let reply = json!({"tool": t.tool, "args": t.args}).to_string();
            self.0.push_back(HostReply {
                call,
                result: Ok(reply),
                abort: None,
            });
            Ok(())
        }
        fn recv(&mut self, _: Instant) -> LinkEvent {
            self.0
                .pop_front()
                .map_or(LinkEvent::Timeout, LinkEvent::Reply)
        }
    }
    let code = "async () => { const a = await codemode.zones_list({per_page: 1}); const b = await codemode.x(); \
        return [a, b.args, typeof api, typeof codemode.then, typeof spec]; }";
    let mut host = Tools(VecDeque::new(), Vec::new());
    let out = run(JobKind::Code, code, &limits(), None, &mut host);
    assert_eq!(
        value(&out),
        json!([{"tool": "zones_list", "args": {"per_page": 1}}, {}, "undefined", "undefined", "undefined"])
    );
    assert_eq!(out.requests, 2);
    assert_eq!(host.1.len(), 2);
    // `await codemode` must not be treated as a thenable tool call.
    let out = run(
        JobKind::Code,
        "async () => (await codemode) !== undefined",
        &limits(),
        None,
        &mut host,
    );
    assert_eq!(value(&out), json!(true));
}
