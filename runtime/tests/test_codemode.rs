//! Code Mode in process: a [`Core`] in `--mode codemode` / `--mode code`
//! over a small Cloudflare-shaped catalogue, real sandbox worker processes,
//! and a loopback upstream that records what reached it.
//!
//! Covered: search, execute with two requests, bodies, query styles, the
//! default account, refusal explanations, paths outside the catalogue,
//! absolute URLs, the request cap, the credential (never reachable from the
//! code, scrubbed from everything returned), runaway and memory-hungry code
//! (clear errors within the deadline, the next call works), truncation on
//! and off, `codemode.<tool>` calls in the code mode (the listing's token
//! budget and facts: `test_codemode_descriptions.rs`).
#![allow(clippy::unwrap_used, clippy::panic)]

mod test_codemode_fixture;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_codemode_fixture::{
    ACCOUNT, TOKEN, call, call_with, code_args, core, core_with, limits, text, upstream, value,
};
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::truncate::DEFAULT_MAX_BYTES;

#[tokio::test]
async fn search_queries_the_spec_without_network() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let listed: Value = serde_json::from_slice(
        &core
            .listing()
            .bytes(toolforge_runtime::listing::Variant::DEFAULT),
    )
    .unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "execute"]);
    let r = call(
        &core,
        "search",
        r#"async () => Object.entries(spec.paths).flatMap(([path, ops]) => Object.entries(ops)
            .filter(([, op]) => op.tags?.some(t => /dns/i.test(t)))
            .map(([m, op]) => `${m.toUpperCase()} ${path}: ${op.summary}`))"#,
    )
    .await;
    assert_eq!(
        value(&r),
        json!([
            "GET /zones/{zone_id}/dns_records: List DNS records",
            "POST /zones/{zone_id}/dns_records: Create DNS record",
            "GET /zones/{zone_id}/dns_records/export: Export DNS records"
        ])
    );
    // No api, no network, no credential in search.
    let r = call(
        &core,
        "search",
        "async () => [typeof api, typeof fetch, typeof codemode]",
    )
    .await;
    assert_eq!(value(&r), json!(["undefined", "undefined", "undefined"]));
    // console output comes back with the result.
    let r = call(&core, "search", "async () => { console.log('paths', Object.keys(spec.paths).length); console.warn('w'); return 1 }").await;
    assert_eq!(value(&r), json!(1));
    assert!(
        text(&r).contains("console output:\npaths 6\n[warn] w"),
        "{}",
        text(&r)
    );
    assert!(up.seen().is_empty());
    // Bad arguments are tool errors that say what is expected.
    let r = core
        .call(
            "search",
            code_args("async () => 1", json!({"truncate": false})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("unknown argument `truncate`"),
        "{}",
        text(&r)
    );
    let r = core.call("search", None, None).await.unwrap();
    assert!(text(&r).contains("`code` is required"), "{}", text(&r));
    let err = core.call("zones_list", None, None).await.unwrap_err();
    assert!(err.message.contains("--mode codemode"), "{}", err.message);
}

/// Every `METHOD path` the `search` tool of `core` sees in the spec.
async fn searched_operations(core: &toolforge_runtime::server::Core) -> Vec<String> {
    let code = r#"async () => Object.entries(spec.paths).flatMap(([path, ops]) =>
        Object.keys(ops).filter(k => k !== "parameters").map(m => `${m.toUpperCase()} ${path}`))"#;
    serde_json::from_value(value(&call(core, "search", code).await)).unwrap()
}

#[tokio::test]
async fn search_sees_only_what_the_server_exposes() {
    let up = upstream().await;
    let all = searched_operations(&core(Mode::CodeMode, &up, Exposure::default())).await;
    assert!(all.iter().any(|op| op.starts_with("POST ")), "{all:?}");
    let read_only = core_with(
        Mode::CodeMode,
        &up,
        Exposure::new(&test_codemode_fixture::CATALOGUE, None, true).unwrap(),
        limits(),
    );
    let expected: Vec<String> = all
        .into_iter()
        .filter(|op| op.starts_with("GET "))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(searched_operations(&read_only).await, expected);
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn empty_lists_the_token_may_not_see_are_flagged_in_both_modes() {
    let up = upstream().await;
    let codemode = core(Mode::CodeMode, &up, Exposure::default());
    let r = call(
        &codemode,
        "execute",
        r#"async () => (await api.request({ method: "GET", path: "/zones/empty/dns_records" })).result.length"#,
    )
    .await;
    assert_eq!(value(&r), json!(0));
    let t = text(&r);
    assert!(
        t.contains("GET /zones/empty/dns_records: Note: the list is empty")
            && t.contains("`DNS Read`"),
        "{t}"
    );
    // A list with items gets no note.
    let r = call(
        &codemode,
        "execute",
        r#"async () => (await api.request({ method: "GET", path: "/zones/z/dns_records" })).result.length"#,
    )
    .await;
    assert!(!text(&r).contains("empty"), "{}", text(&r));
    let code = core(Mode::Code, &up, Exposure::default());
    let r = call(
        &code,
        "code",
        r#"async () => (await codemode.dns_records_list({ zone_id: "empty" })).result.length"#,
    )
    .await;
    assert_eq!(value(&r), json!(0));
    let t = text(&r);
    assert!(
        t.contains("codemode.dns_records_list: Note: the list is empty")
            && t.contains("`DNS Read`"),
        "{t}"
    );
}

#[tokio::test]
async fn execute_makes_requests_with_the_servers_credential() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let r = call(
        &core,
        "execute",
        r#"async () => {
            const zones = await api.request({ method: "GET", path: "/zones", query: { per_page: 2, name: "a b&c" } });
            const first = zones.result[0].id;
            const records = await api.request({ method: "get", path: `/zones/${first}/dns_records`,
                query: { types: ["A", "AAAA"], created_on: { gte: "2024-01-01" }, unknown_flag: true } });
            return { zones: zones.result.length, info: zones.result_info.count, status: records.status, records: records.result };
        }"#,
    )
    .await;
    assert_eq!(
        value(&r),
        json!({"zones": 2, "info": 2, "status": 200, "records": [{"id": "zone-a-r1", "type": "A", "name": "www.zone-a"}]})
    );
    let seen = up.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].uri, "/zones?per_page=2&name=a%20b%26c");
    assert_eq!(
        seen[1].uri,
        "/zones/zone-a/dns_records?types=A,AAAA&created_on[gte]=2024-01-01&unknown_flag=true"
    );
    assert!(seen.iter().all(|s| s.auth == format!("Bearer {TOKEN}")));

    // A JSON body; a non-JSON response comes back as text.
    up.clear();
    let r = call(
        &core,
        "execute",
        r#"async () => {
            const created = await api.request({ method: "POST", path: "/zones/z%2F1/dns_records", body: { type: "A", name: "www", content: "192.0.2.1" } });
            const file = await api.request({ method: "GET", path: "/zones/z1/dns_records/export" });
            return [created.result, file.result];
        }"#,
    )
    .await;
    assert_eq!(
        value(&r),
        json!([{"id": "new-1", "posted": {"type": "A", "name": "www", "content": "192.0.2.1"}}, "www 300 IN A 192.0.2.1\n"])
    );
    let seen = up.seen();
    assert_eq!(seen[0].uri, "/zones/z%2F1/dns_records");
    assert_eq!(seen[0].content_type, "application/json");
    assert_eq!(seen[1].uri, "/zones/z1/dns_records/export");
}

#[tokio::test]
async fn a_literal_account_placeholder_uses_the_default_account() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let code = r#"async () => (await api.request({ method: "GET", path: "/accounts/{account_id}/rulesets" })).result[0].owner"#;
    assert_eq!(value(&call(&core, "execute", code).await), json!(ACCOUNT));
    let uris: Vec<String> = up.seen().into_iter().map(|s| s.uri).collect();
    assert_eq!(
        uris,
        [
            "/accounts?per_page=50".to_owned(),
            format!("/accounts/{ACCOUNT}/rulesets")
        ]
    );
    // Other placeholders must be filled by the code.
    let r = call(
        &core,
        "execute",
        r#"async () => api.request({ method: "GET", path: "/zones/{zone_id}/rulesets" })"#,
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("`{zone_id}` is a template placeholder"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn refusals_and_unknown_paths_throw_catchable_errors() {
    let up = upstream().await;
    // Refused paths count towards the cap too: allow more than 7.
    let wider = toolforge_runtime::sandbox::Limits {
        max_requests: 10,
        ..limits()
    };
    let core = core_with(Mode::CodeMode, &up, Exposure::default(), wider);
    let r = call(
        &core,
        "execute",
        r#"async () => {
            const out = [];
            for (const [method, path] of [["GET", "/zones/z1/firewall/rules"], ["GET", "/zones/z1/dns_record"],
                                          ["DELETE", "/zones"], ["GET", "https://evil.example/zones"],
                                          ["GET", "//evil.example/zones"], ["GET", "/zones/../accounts"], ["GET", "zones"]]) {
                try { await api.request({ method, path }); out.push("no error"); } catch (e) { out.push(e.message); }
            }
            return out;
        }"#,
    )
    .await;
    let messages = value(&r);
    let m = |i: usize| messages[i].as_str().unwrap().to_owned();
    assert!(
        m(0).contains("GET /zones/z1/firewall/rules failed: the API answered 403"),
        "{}",
        m(0)
    );
    assert!(
        m(0).contains("`Firewall Services Read`") && m(0).contains("code 10000"),
        "{}",
        m(0)
    );
    assert!(
        m(1).contains("not an operation of this API")
            && m(1).contains("close matches: GET /zones/{zone_id}/dns_records"),
        "{}",
        m(1)
    );
    assert!(
        m(2).contains("does not support DELETE; it supports: GET"),
        "{}",
        m(2)
    );
    assert!(
        m(3).contains("is a URL") && m(4).contains("is a URL"),
        "{messages}"
    );
    assert!(
        m(5).contains("`..`") && m(6).contains("must start with `/`"),
        "{messages}"
    );
    // Only the 403 call reached the upstream; nothing went anywhere else.
    let seen = up.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].uri, "/zones/z1/firewall/rules");
    // Uncaught, the same error ends the call as a tool error.
    let r = call(
        &core,
        "execute",
        r#"async () => api.request({ method: "GET", path: "https://evil.example/x" })"#,
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).starts_with(
            "execute failed: uncaught Error: api.request: `https://evil.example/x` is a URL"
        ),
        "{}",
        text(&r)
    );
    // A read-only server refuses writes it would not list as tools.
    let ro = core_with(
        Mode::CodeMode,
        &up,
        Exposure::new(&test_codemode_fixture::CATALOGUE, None, true).unwrap(),
        limits(),
    );
    let r = call(
        &ro,
        "execute",
        r#"async () => api.request({ method: "POST", path: "/zones/z/dns_records", body: {} })"#,
    )
    .await;
    assert!(
        text(&r).contains("(tool `dns_records_create`) is not available on this server"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn the_request_cap_ends_the_run() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let r = call(
        &core,
        "execute",
        r#"async () => { for (let i = 0; i < 8; i++) await api.request({ method: "GET", path: "/zones" }); return "done"; }"#,
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("request limit exceeded: at most 5 API calls"),
        "{}",
        text(&r)
    );
    assert_eq!(up.seen().len(), 5);
    // Parallel requests are capped too, and catching the error does not help.
    up.clear();
    let r = call(
        &core,
        "execute",
        r#"async () => { try { await Promise.all(Array.from({length: 9}, () => api.request({ method: "GET", path: "/zones" }))); } catch (e) {} return "escaped"; }"#,
    )
    .await;
    assert!(text(&r).contains("request limit exceeded"), "{}", text(&r));
    assert!(up.seen().len() <= 5);
}

#[tokio::test]
async fn the_credential_is_never_reachable() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    // Everything reachable from the global object, as text.
    let walk = r#"async () => {
        const seen = new Set(); const out = [];
        const visit = (v, depth) => {
            if (v === null || (typeof v !== "object" && typeof v !== "function")) { out.push(String(v)); return; }
            if (seen.has(v) || depth > 6) return; seen.add(v);
            for (const k of Reflect.ownKeys(v)) {
                out.push(String(k));
                let d; try { d = Object.getOwnPropertyDescriptor(v, k); } catch (e) { continue; }
                if (d && "value" in d) visit(d.value, depth + 1);
            }
            try { visit(Object.getPrototypeOf(v), depth + 1); } catch (e) {}
            if (typeof v === "function") { try { out.push(Function.prototype.toString.call(v)); } catch (e) {} }
        };
        visit(globalThis, 0);
        const echo = await api.request({ method: "GET", path: "/echo" });
        let thrown = "";
        try { await api.request({ method: "GET", path: "/zones/z/firewall/rules" }); } catch (e) { thrown = e.message + e.stack; }
        return { globals: out.join(" ").length, text: out.join(" "), echo, thrown,
                 probes: [typeof process, typeof require, typeof fetch, typeof std, typeof os, typeof XMLHttpRequest] };
    }"#;
    let r = call_with(&core, "execute", walk, json!({"truncate": false})).await;
    let all = text(&r);
    assert!(!all.contains(TOKEN), "the token leaked: {all}");
    let v = value(&r);
    assert!(
        v["globals"].as_u64().unwrap() > 1_000,
        "the walk saw little: {v}"
    );
    assert_eq!(v["probes"], json!(vec!["undefined"; 6]));
    // The upstream echoed the Authorization header: scrubbed before the code saw it.
    assert_eq!(
        v["echo"]["result"]["authorization"],
        json!("Bearer [REDACTED]")
    );
    assert!(v["thrown"].as_str().unwrap().contains("403"), "{v}");
    // Module loading and the like fail as ordinary errors.
    let r = call(&core, "execute", "async () => { try { await import('os'); return 'loaded'; } catch (e) { return String(e); } }").await;
    assert_ne!(value(&r), json!("loaded"));
}

#[tokio::test]
async fn runaway_code_ends_with_a_clear_error_and_the_server_keeps_serving() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let deadline = Duration::from_millis(limits().wall_ms);
    for (tool, code, want) in [
        (
            "execute",
            "async () => { while (true) {} }",
            "CPU time limit of 500 ms exceeded",
        ),
        (
            "search",
            "async () => { while (true) {} }",
            "CPU time limit of 500 ms exceeded",
        ),
        (
            "execute",
            "async () => { const a = []; while (true) a.push('x'.repeat(1 << 16) + a.length); }",
            "memory limit of 33554432 bytes exceeded",
        ),
        (
            "execute",
            "async () => { const f = (n) => f(n + 1) + 1; return f(0); }",
            "stack overflow",
        ),
    ] {
        let started = Instant::now();
        let r = call(&core, tool, code).await;
        let took = started.elapsed();
        assert_eq!(r.is_error, Some(true), "{code}");
        assert!(text(&r).contains(want), "{code}: {}", text(&r));
        assert!(took < deadline, "{code} took {took:?}");
        // The next call is served normally.
        let r = call(
            &core,
            "execute",
            r#"async () => (await api.request({ method: "GET", path: "/zones" })).result.length"#,
        )
        .await;
        assert_eq!(value(&r), json!(2), "after {code}");
    }
}

#[tokio::test]
async fn results_are_truncated_unless_asked_not_to() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let code = r#"async () => (await api.request({ method: "GET", path: "/big" })).result"#;
    let r = call(&core, "execute", code).await;
    let first = r.content[0].as_text().unwrap().text.clone();
    assert!(first.len() <= DEFAULT_MAX_BYTES, "{} bytes", first.len());
    let items = value(&r);
    let items = items.as_array().unwrap();
    assert!(
        items
            .last()
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("--- TRUNCATED ---")
    );
    assert!(
        text(&r).contains("note: result truncated from"),
        "{}",
        text(&r)
    );
    assert!(text(&r).contains("truncate: false"));
    let r = call_with(&core, "execute", code, json!({"truncate": false})).await;
    assert_eq!(value(&r).as_array().unwrap().len(), 2_000);
    assert!(!text(&r).contains("TRUNCATED"));
}

#[tokio::test]
async fn code_mode_calls_tools_through_the_direct_pipeline() {
    let up = upstream().await;
    let core = core(Mode::Code, &up, Exposure::default());
    let listed: Value = serde_json::from_slice(
        &core
            .listing()
            .bytes(toolforge_runtime::listing::Variant::DEFAULT),
    )
    .unwrap();
    let tools = listed.as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "code");
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.contains("declare const codemode: {"),
        "{description}"
    );
    assert!(
        description.contains(
            "  dns_records_list(args: { zone_id: ZoneId; per_page?: number; types?: string[] })"
        ),
        "{description}"
    );
    assert_eq!(
        description.matches("type ZoneId = string;").count(),
        1,
        "{description}"
    );
    assert!(
        description.contains(
            "Example: async () => { const out = await codemode.zones_list({}); return out; }"
        ),
        "{description}"
    );

    let r = call(
        &core,
        "code",
        r#"async () => {
            const zones = await codemode.zones_list({ per_page: 2 });
            const records = await codemode.dns_records_list({ zone_id: zones.result[1].id });
            let invalid = "";
            try { await codemode.dns_records_list({ per_page: "x" }); } catch (e) { invalid = e.message; }
            let unknown = "";
            try { await codemode.dns_record_list({}); } catch (e) { unknown = e.message; }
            let refused = "";
            try { await codemode.firewall_rules_list({ zone_id: "z1" }); } catch (e) { refused = e.message; }
            return { zones: zones.result.map(z => z.name), info: zones.result_info.count, records: records.result, invalid, unknown, refused };
        }"#,
    )
    .await;
    let v = value(&r);
    assert_eq!(v["zones"], json!(["a.example", "b.example"]));
    assert_eq!(v["info"], json!(2));
    assert_eq!(v["records"][0]["id"], json!("zone-b-r1"));
    let invalid = v["invalid"].as_str().unwrap();
    assert!(
        invalid.contains("invalid arguments for tool `dns_records_list`")
            && invalid.contains("zone_id"),
        "{invalid}"
    );
    assert!(
        v["unknown"]
            .as_str()
            .unwrap()
            .contains("did you mean: dns_records_list"),
        "{v}"
    );
    assert!(
        v["refused"]
            .as_str()
            .unwrap()
            .contains("`Firewall Services Read`"),
        "{v}"
    );
    let uris: Vec<String> = up.seen().into_iter().map(|s| s.uri).collect();
    assert_eq!(
        uris,
        [
            "/zones?per_page=2",
            "/zones/zone-b/dns_records",
            "/zones/z1/firewall/rules"
        ]
    );
    // No raw HTTP in the code mode.
    let r = call(&core, "code", "async () => typeof api").await;
    assert_eq!(value(&r), json!("undefined"));
    // The call cap covers tool calls.
    let r = call(
        &core,
        "code",
        "async () => { for (let i = 0; i < 9; i++) await codemode.zones_list({}); }",
    )
    .await;
    assert!(
        text(&r).contains("request limit exceeded: at most 5"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn odd_query_shapes_and_content_types_are_refused_not_sent() {
    let up = upstream().await;
    let core = core(Mode::CodeMode, &up, Exposure::default());
    let r = call(
        &core,
        "execute",
        r#"async () => {
            const out = [];
            for (const req of [
                { method: "GET", path: "/zones", query: { per_page: { a: 1 } } },
                { method: "GET", path: "/zones", query: { per_page: [1, 2] } },
                { method: "POST", path: "/zones/z1/dns_records", body: "x", contentType: "text/plain; charset=\u00e9" },
                { method: "POST", path: "/zones/z1/dns_records", body: { type: "A" }, contentType: "application/json\r\nX-Evil: 1" },
            ]) {
                try { await api.request(req); out.push("sent"); } catch (e) { out.push(e.message); }
            }
            return out;
        }"#,
    )
    .await;
    let messages = value(&r);
    let m = |i: usize| messages[i].as_str().unwrap_or_default().to_owned();
    assert!(
        m(0).contains("query parameter `per_page` takes") && m(0).contains("not an object"),
        "{messages}"
    );
    assert!(m(1).contains("not an array"), "{messages}");
    assert!(
        m(2).contains("contentType") && m(2).contains("printable ASCII"),
        "{messages}"
    );
    assert!(m(3).contains("printable ASCII"), "{messages}");
    assert!(up.seen().is_empty(), "{:?}", up.seen());
}
