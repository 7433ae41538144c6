#![allow(clippy::unwrap_used, clippy::panic)]
//! Code Mode under contention, through the real server: a run that writes
//! to the API in a loop is stopped at once when the client sends
//! `notifications/cancelled` (stdio) or goes away (HTTP): the upstream sees
//! no request after that, and the server's worker is free again right away.
//! Runs waiting on a slow API do not delay another client's run.

use std::io::Write as _;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_tests::mcp::RawClient;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "cancel-client-token-0c1d";
const UPSTREAM_TOKEN: &str = "cancel-upstream-token-9e8f7a";
const ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
/// A zone whose reads take [`SLOW`] upstream.
const SLOW_ZONE: &str = "5105105105105105105105105105105a";
const SLOW: Duration = Duration::from_secs(4);
/// Each write takes this long upstream.
const WRITE_DELAY: Duration = Duration::from_millis(60);

/// Creates DNS records one after another, for ever (well: 1,000 times).
fn writer_code() -> String {
    format!(
        "async () => {{ for (let i = 0; i < 1000; i++) await api.request({{method: 'POST', path: '/zones/{ZONE}/dns_records', body: {{type: 'A', name: 'r' + i + '.example.com', content: '192.0.2.1'}}}}); return 'done'; }}"
    )
}

/// An upstream that counts the writes it receives, each taking a while.
fn counting_upstream() -> (Upstream, Arc<AtomicUsize>) {
    let writes = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&writes);
    let upstream = Upstream::start(move |req| {
        if req.method == "POST" {
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(WRITE_DELAY);
        }
        if req.path() == format!("/zones/{SLOW_ZONE}") {
            std::thread::sleep(SLOW);
        }
        Reply::envelope(json!({"id": "r", "type": "A"}))
    })
    .unwrap();
    (upstream, writes)
}

fn codemode_args(upstream: &Upstream) -> Vec<String> {
    [
        "--upstream",
        &upstream.url(),
        "--allow-loopback-upstream",
        "--mode",
        "codemode",
        "--sandbox-workers",
        "1",
        "--sandbox-max-requests",
        "1000",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn wait_for(what: &str, limit: Duration, check: impl Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// After the stop: at most the one write already on its way, then none.
fn assert_no_more_writes(writes: &AtomicUsize, at_stop: usize) {
    std::thread::sleep(WRITE_DELAY * 2);
    let settled = writes.load(Ordering::SeqCst);
    assert!(
        settled <= at_stop + 1,
        "{settled} writes, {at_stop} at the stop"
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        writes.load(Ordering::SeqCst),
        settled,
        "writes went on after the stop"
    );
}

#[test]
fn an_http_client_that_disconnects_stops_its_run() {
    let (upstream, writes) = counting_upstream();
    let config = ServerConfig::new(codemode_args(&upstream)).token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{e}"));
    let addr = server.addr();
    let client = RawClient::new(addr, CLIENT_TOKEN);
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": writer_code()}}})
    .to_string();
    let outcome = with_deadline(Duration::from_secs(60), move || {
        client.initialize()?;
        let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in client.headers() {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream
            .write_all(head.as_bytes())
            .map_err(|e| e.to_string())?;
        stream
            .write_all(body.as_bytes())
            .map_err(|e| e.to_string())?;
        wait_for("three writes", Duration::from_secs(20), || {
            writes.load(Ordering::SeqCst) >= 3
        });
        drop(stream);
        let at_stop = writes.load(Ordering::SeqCst);
        assert_no_more_writes(&writes, at_stop);
        // the worker is free: a quick run is answered at once
        let t = Instant::now();
        let quick = client.call_tool("execute", json!({"code": "async () => 41 + 1"}))?;
        Ok::<_, String>((quick, t.elapsed()))
    });
    let (quick, elapsed) = match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) | Err(e) => panic!("{e}\n{}", server.log()),
    };
    assert_eq!(quick["content"][0]["text"], "42", "{quick}");
    assert!(elapsed < Duration::from_millis(1_000), "{elapsed:?}");
}

#[test]
fn notifications_cancelled_stops_a_run_over_stdio() {
    let (upstream, writes) = counting_upstream();
    let config =
        ServerConfig::new(codemode_args(&upstream)).env("CLOUDFLARE_API_TOKEN", UPSTREAM_TOKEN);
    let mut server = Server::stdio(&config).unwrap_or_else(|e| panic!("{e}"));
    let send = |server: &mut Server, message: Value| {
        server
            .send_line(&message.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
    };
    send(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    let init = server.read_message(Duration::from_secs(30)).unwrap();
    assert_eq!(init["id"], 1, "{init}");
    send(
        &mut server,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "execute", "arguments": {"code": writer_code()}}}),
    );
    wait_for("three writes", Duration::from_secs(20), || {
        writes.load(Ordering::SeqCst) >= 3
    });
    send(
        &mut server,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5, "reason": "user stopped it"}}),
    );
    let at_stop = writes.load(Ordering::SeqCst);
    assert_no_more_writes(&writes, at_stop);
    let t = Instant::now();
    send(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "execute", "arguments": {"code": "async () => 'free'"}}}),
    );
    // a reply to the cancelled request, if rmcp sends one, may come first
    let mut reply = server.read_message(Duration::from_secs(10)).unwrap();
    if reply["id"] == 5 {
        reply = server.read_message(Duration::from_secs(10)).unwrap();
    }
    assert_eq!(reply["id"], 6, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "\"free\"", "{reply}");
    assert!(
        t.elapsed() < Duration::from_millis(1_000),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn runs_waiting_on_a_slow_api_do_not_delay_another_client() {
    let (upstream, _) = counting_upstream();
    let mut args = codemode_args(&upstream);
    // the defaults: two warm workers, as in the report this test reproduces
    let at = args.iter().position(|a| a == "--sandbox-workers").unwrap();
    args.drain(at..at + 2);
    let config = ServerConfig::new(args)
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN)
        .token("other-client-token-77aa", "other-upstream-token-66bb");
    let server = Server::http(&config).unwrap_or_else(|e| panic!("{e}"));
    let addr = server.addr();
    let slow_code = format!(
        "async () => (await api.request({{method: 'GET', path: '/zones/{SLOW_ZONE}'}})).status"
    );
    let outcome = with_deadline(Duration::from_secs(60), move || {
        let mut slow = Vec::new();
        for _ in 0..2 {
            let code = slow_code.clone();
            slow.push(std::thread::spawn(move || {
                let client = RawClient::new(addr, CLIENT_TOKEN);
                client.call_tool("execute", json!({"code": code}))
            }));
        }
        let requested = || {
            upstream
                .requests()
                .iter()
                .filter(|r| r.path() == format!("/zones/{SLOW_ZONE}"))
                .count()
        };
        wait_for("both slow runs at the API", Duration::from_secs(20), || {
            requested() == 2
        });
        let other = RawClient::new(addr, "other-client-token-77aa");
        let t = Instant::now();
        let quick = other.call_tool("execute", json!({"code": "async () => 1"}))?;
        let waited = t.elapsed();
        let slow: Vec<_> = slow.into_iter().map(|h| h.join()).collect();
        Ok::<_, String>((quick, waited, slow))
    });
    let (quick, waited, slow) = match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) | Err(e) => panic!("{e}\n{}", server.log()),
    };
    assert_eq!(quick["content"][0]["text"], "1", "{quick}");
    assert!(
        waited < Duration::from_millis(1_000),
        "the other client waited {waited:?}"
    );
    for run in slow {
        let result = run
            .unwrap_or_else(|_| panic!("slow client panicked"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(result["content"][0]["text"], "200", "{result}");
    }
}
