#![allow(clippy::unwrap_used, clippy::panic)]
//! MCP logging and progress over stdio: the server advertises `logging`;
//! after `logging/setLevel info` each `tools/call` is followed by one
//! `notifications/message` naming the tool and its outcome (no argument,
//! no credential); at `error` a tool error sends nothing. A Code Mode
//! `execute` with a progress token sends one `notifications/progress` per
//! API request (method and path template only), in order, before its
//! result; without a token it sends none.

use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const UPSTREAM_TOKEN: &str = "logging-upstream-secret-41f0";
const ZONE: &str = "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c";
const LIMIT: Duration = Duration::from_secs(90);
const WAIT: Duration = Duration::from_secs(30);

fn upstream() -> Upstream {
    Upstream::start(|req| {
        if req.path().ends_with("/fail") {
            Reply::cf_error(500, 1000, "boom")
        } else {
            Reply::envelope(json!({"id": ZONE, "name": "log.example", "status": "active"}))
        }
    })
    .unwrap()
}

fn start(upstream: &Upstream, extra: &[&str]) -> Server {
    let mut args = vec![
        "--upstream".to_owned(),
        upstream.url(),
        "--allow-loopback-upstream".to_owned(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let config = ServerConfig::new(args).env("CLOUDFLARE_API_TOKEN", UPSTREAM_TOKEN);
    let mut server = Server::stdio(&config).unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (reply, _) = request(&mut server, &init);
    assert!(
        reply["result"]["capabilities"]["logging"].is_object(),
        "{reply}"
    );
    server
        .send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .unwrap();
    server
}

/// Sends a request; returns its response and the notifications before it.
fn request(server: &mut Server, message: &Value) -> (Value, Vec<Value>) {
    server.send_line(&message.to_string()).unwrap();
    let mut notes = Vec::new();
    loop {
        let m = server.read_message(WAIT).unwrap();
        if m.get("id") == message.get("id") && m.get("method").is_none() {
            return (m, notes);
        }
        notes.push(m);
    }
}

fn call(
    server: &mut Server,
    id: u64,
    name: &str,
    arguments: Value,
    meta: Option<Value>,
) -> (Value, Vec<Value>) {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    request(
        server,
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
}

#[test]
fn tool_calls_are_logged_at_the_chosen_level() {
    with_deadline(LIMIT, || {
        let upstream = upstream();
        let mut server = start(&upstream, &[]);
        let (_, notes) = call(&mut server, 1, "zones_get", json!({"zone_id": ZONE}), None);
        assert!(notes.is_empty(), "no level set yet: {notes:?}");
        let (r, _) = request(&mut server, &json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}}));
        assert!(r["result"].is_object(), "{r}");
        let (_, notes) = call(&mut server, 3, "zones_get", json!({"zone_id": ZONE}), None);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0]["method"], "notifications/message");
        let p = &notes[0]["params"];
        assert_eq!((p["level"].as_str(), p["logger"].as_str()), (Some("info"), Some("toolforge")));
        assert_eq!(p["data"]["tool"], "zones_get");
        assert_eq!(p["data"]["outcome"], "ok");
        let text = notes[0].to_string();
        assert!(!text.contains(ZONE) && !text.contains(UPSTREAM_TOKEN), "{text}");
        request(&mut server, &json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "error"}}));
        let (r, notes) = call(&mut server, 5, "zones_get", json!({"zone_id": "fail"}), None);
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(notes.is_empty(), "a warning is below error: {notes:?}");
    })
    .unwrap();
}

#[test]
fn execute_reports_progress_once_per_api_request() {
    with_deadline(LIMIT, || {
        let upstream = upstream();
        let mut server = start(&upstream, &["--mode", "codemode"]);
        let code = format!(
            "async () => {{ const a = await api.request({{method: 'GET', path: '/zones/{ZONE}'}}); const b = await api.request({{method: 'GET', path: '/zones/{ZONE}/dns_records'}}); return [a.status, b.status]; }}"
        );
        let (r, notes) = call(&mut server, 1, "execute", json!({"code": code}), Some(json!({"progressToken": "tok-1"})));
        assert_ne!(r["result"]["isError"], true, "{r}");
        let progress: Vec<&Value> = notes.iter().filter(|n| n["method"] == "notifications/progress").collect();
        assert_eq!(progress.len(), 2, "{notes:?}");
        for (i, n) in progress.iter().enumerate() {
            assert_eq!(n["params"]["progressToken"], "tok-1");
            assert_eq!(n["params"]["progress"], json!(i as f64 + 1.0));
        }
        assert_eq!(progress[0]["params"]["message"], "GET /zones/{zone_id}");
        assert_eq!(progress[1]["params"]["message"], "GET /zones/{zone_id}/dns_records");
        let (_, notes) = call(&mut server, 2, "execute", json!({"code": code}), None);
        assert!(notes.is_empty(), "{notes:?}");
    })
    .unwrap();
}
