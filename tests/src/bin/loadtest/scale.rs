//! `loadtest scale`: many concurrent keep-alive clients making a fixed
//! number of `tools/call` in total over HTTP, against a loopback upstream
//! that fails a share of requests (a quarter each: 500s, connections reset
//! before an answer, answers delayed by `--slow-ms`, and no answer before
//! the server's `--upstream-timeout-secs`). It checks that every request got
//! exactly one well-formed JSON-RPC answer with its own id (a result, error
//! results included), that every failure the upstream made came back as a
//! tool error saying which (a 500, unreachable, timed out) and nothing else
//! did, reports p50/p99/max latency, the
//! server's peak RSS against a stated bound, and that the server still
//! answers a call and `/healthz` afterwards. `--mode codemode` runs
//! `execute` (one `api.request` each; 8 clients, 2,000 calls, 8 client
//! tokens) instead and reports the sandbox queueing (the wait histogram
//! from the server's own metrics) and busy refusals.
//! `--instances 2` runs two `--auth oauth` instances behind a loopback
//! proxy sharing a PostgreSQL grant store instead (see [`instances`]).
//! A benchmark, not a test: it exits 1 when a check fails.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use toolforge_tests::http::{self, KeepAlive};
use toolforge_tests::mcp::message;
use toolforge_tests::server::{Server, ServerConfig};

use super::{call_bytes, percentile};

mod instances;

const ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
const UPSTREAM_TOKEN: &str = "scale-upstream-token-77c1";
/// Bound on one request (a Code Mode run may queue).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

struct Options {
    codemode: bool,
    clients: usize,
    calls: usize,
    fail_every: usize,
    slow: Duration,
    rss_bound_mb: u64,
    tokens: usize,
    upstream_timeout: Duration,
    /// 2: two `--auth oauth` instances behind a proxy (see [`instances`]).
    instances: usize,
    server_args: Vec<String>,
}

/// What the upstream did, per kind, counted as it did it.
#[derive(Default)]
struct Faults {
    seen: AtomicUsize,
    failed: AtomicUsize,
    reset: AtomicUsize,
    timed_out: AtomicUsize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        codemode: false,
        clients: 1000,
        calls: 100_000,
        fail_every: 10,
        slow: Duration::from_millis(200),
        rss_bound_mb: 256,
        tokens: 1,
        upstream_timeout: Duration::from_secs(2),
        instances: 1,
        server_args: Vec::new(),
    };
    let mut explicit = (false, false);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or(format!("{name} needs a value"))
        };
        let number = |v: String, max: u64| -> Result<u64, String> {
            let n: u64 = v
                .parse()
                .map_err(|_| format!("{name}: `{v}` is not a number"))?;
            if n > max {
                Err(format!("{name}: at most {max}"))
            } else {
                Ok(n)
            }
        };
        match name {
            "--mode" => match value()?.as_str() {
                "direct" => o.codemode = false,
                "codemode" => o.codemode = true,
                other => return Err(format!("--mode: `{other}` (direct or codemode)")),
            },
            "--clients" => {
                o.clients = number(value()?, 4000)?.max(1) as usize;
                explicit.0 = true;
            }
            "--calls" => {
                o.calls = number(value()?, 1_000_000)?.max(1) as usize;
                explicit.1 = true;
            }
            "--fail-every" => o.fail_every = number(value()?, 1000)?.max(3) as usize,
            "--slow-ms" => o.slow = Duration::from_millis(number(value()?, 10_000)?),
            "--rss-bound-mb" => o.rss_bound_mb = number(value()?, 65_536)?,
            "--tokens" => o.tokens = number(value()?, 256)?.max(1) as usize,
            "--instances" => match value()?.as_str() {
                "1" => o.instances = 1,
                "2" => o.instances = 2,
                other => {
                    return Err(format!(
                        "--instances: `{other}` (1, or 2 behind a proxy under --auth oauth)"
                    ));
                }
            },
            "--upstream-timeout-secs" => {
                o.upstream_timeout = Duration::from_secs(number(value()?, 60)?.max(1));
            }
            "--server-arg" => o.server_args.push(value()?),
            other => {
                return Err(format!(
                    "loadtest scale: unknown option {other}\n  --mode direct|codemode --clients N --calls M --fail-every K --slow-ms MS --rss-bound-mb MB --tokens T --upstream-timeout-secs S --instances 1|2 --server-arg ARG"
                ));
            }
        }
    }
    if o.codemode && o.instances > 1 {
        return Err("--instances 2 runs direct tools only".into());
    }
    if o.codemode {
        // A scale the sandbox pool can take: 8 workers at most, 4 runs per client.
        if !explicit.0 {
            o.clients = 32;
        }
        if !explicit.1 {
            o.calls = 2_000;
        }
        if o.tokens == 1 {
            o.tokens = 8;
        }
    }
    Ok(o)
}

/// A keep-alive loopback upstream (a thread per connection) answering
/// every request with a zone envelope, except request n (counted from 0)
/// when n % (4·fail_every) is 0 (a 500), 1 (the connection is shut down
/// without an answer), 2 (answered after `slow`) or 3 (held for a second
/// past the server's upstream timeout, then shut): one request in
/// `fail_every` misbehaves. The threads end when the server closes its
/// connections (the process exits after the run).
fn upstream(o: &Options, faults: &Arc<Faults>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let every = o.fail_every * 4;
    let (slow, hang) = (o.slow, o.upstream_timeout + Duration::from_secs(1));
    let faults = Arc::clone(faults);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let faults = Arc::clone(&faults);
            let _ = std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || serve(stream, &faults, every, slow, hang));
        }
    });
    Ok(addr)
}

fn serve(stream: TcpStream, faults: &Faults, every: usize, slow: Duration, hang: Duration) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let ok = json!({"success": true, "errors": [], "messages": [],
                    "result": {"id": ZONE, "name": "scale.example", "status": "active"}})
    .to_string();
    let failed = json!({"success": false, "errors": [{"code": 1000, "message": "internal error"}],
                        "messages": [], "result": null})
    .to_string();
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" && !first {
                break;
            }
            first = false;
            if let Some((name, value)) = line.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0).min(1 << 20);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let n = faults.seen.fetch_add(1, Ordering::Relaxed);
        let (status, text) = match n % every {
            0 => {
                faults.failed.fetch_add(1, Ordering::Relaxed);
                ("500 Internal Server Error", &failed)
            }
            1 => {
                faults.reset.fetch_add(1, Ordering::Relaxed);
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
            2 => {
                std::thread::sleep(slow);
                ("200 OK", &ok)
            }
            3 => {
                faults.timed_out.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(hang);
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
            _ => ("200 OK", &ok),
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn request_bytes(addr: SocketAddr, token: &str, id: u64, codemode: bool) -> Vec<u8> {
    if codemode {
        let code = format!(
            "async () => (await api.request({{method: \"GET\", path: \"/zones/{ZONE}\"}})).status"
        );
        call_bytes(addr, token, id, "execute", json!({"code": code}))
    } else {
        call_bytes(addr, token, id, "zones_get", json!({"zone_id": ZONE}))
    }
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    ids: Vec<u64>,
    tool_errors: usize,
    /// Tool errors by what they say: a 500, unreachable, timed out, other.
    kinds: [usize; 4],
    unclear: Option<String>,
    busy: usize,
    malformed: usize,
    transport: usize,
    first_problem: Option<String>,
    first_tool_error: Option<String>,
}

fn client(
    addr: SocketAddr,
    token: &str,
    next: &AtomicUsize,
    total: usize,
    codemode: bool,
) -> Tally {
    let mut t = Tally::default();
    let mut conn: Option<KeepAlive> = None;
    loop {
        let id = next.fetch_add(1, Ordering::Relaxed);
        if id >= total {
            return t;
        }
        let bytes = request_bytes(addr, token, id as u64, codemode);
        let sent = Instant::now();
        if conn.is_none() {
            conn = KeepAlive::connect(addr, REQUEST_TIMEOUT).ok();
        }
        let outcome = match conn.as_mut() {
            Some(c) => c.send_bytes(&bytes).map_err(|e| e.to_string()),
            None => Err("connect failed".to_owned()),
        };
        t.latencies.push(sent.elapsed());
        let response = match outcome {
            Ok(r) => r,
            Err(e) => {
                t.transport += 1;
                t.first_problem.get_or_insert(format!("request {id}: {e}"));
                conn = None;
                continue;
            }
        };
        if response.header("connection") == Some("close") {
            conn = None;
        }
        match message(&response) {
            Ok(m) if m["id"] == json!(id) && m["result"]["content"].is_array() => {
                t.ids.push(id as u64);
                if m["result"]["isError"] == true {
                    t.tool_errors += 1;
                    let text = m["result"]["content"].to_string();
                    let kind = error_kind(&text);
                    t.kinds[kind] += 1;
                    if kind == 3 && !codemode {
                        t.unclear.get_or_insert(text);
                    }
                    t.first_tool_error
                        .get_or_insert_with(|| m["result"]["content"].to_string());
                    if m.to_string().contains("busy") {
                        t.busy += 1;
                    }
                }
            }
            other => {
                t.malformed += 1;
                t.first_problem
                    .get_or_insert(format!("request {id}: HTTP {} {other:?}", response.status));
            }
        }
    }
}

/// What a tool error says went wrong: 0 the API answered 500, 1 it could
/// not be reached (the reset), 2 it did not answer in time, 3 anything else.
fn error_kind(text: &str) -> usize {
    if text.contains("500") && text.contains("internal error") {
        0
    } else if text.contains("could not reach the API") {
        1
    } else if text.contains("did not answer within") {
        2
    } else {
        3
    }
}

fn rss_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn scrape(addr: SocketAddr, name: &str) -> f64 {
    let request = http::Request {
        method: "GET".into(),
        target: "/metrics".into(),
        ..http::Request::default()
    };
    let Ok(resp) = http::send(addr, &request, Duration::from_secs(10)) else {
        return f64::NAN;
    };
    resp.text()
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

/// Runs the scale test.
pub fn main(args: &[String]) -> std::process::ExitCode {
    match run(args) {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("loadtest scale: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Runs `o.clients` client threads against `addr` (client `i` presents
/// `tokens[i % len]`) until `o.calls` calls were made: their tallies and
/// the wall time.
fn drive(
    o: &Options,
    addr: SocketAddr,
    tokens: &[String],
) -> Result<(Vec<Tally>, Duration), String> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let handles: Vec<_> = (0..o.clients)
        .map(|i| {
            let next = Arc::clone(&next);
            let token = tokens[i % tokens.len()].clone();
            let (total, codemode) = (o.calls, o.codemode);
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || client(addr, &token, &next, total, codemode))
                .map_err(|e| format!("client thread: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let tallies: Vec<Tally> = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect();
    let wall = started.elapsed();
    Ok((tallies, wall))
}

/// Prints the run, the answers and the latencies; whether every call got
/// one well-formed answer with its id and every failure was a clear tool
/// error.
fn report(o: &Options, tallies: &[Tally], faults: &Faults, wall: Duration) -> bool {
    let mut latencies: Vec<Duration> = tallies
        .iter()
        .flat_map(|t| t.latencies.iter().copied())
        .collect();
    latencies.sort();
    let mut ids = HashSet::new();
    let mut duplicates = 0;
    for id in tallies.iter().flat_map(|t| t.ids.iter()) {
        if !ids.insert(*id) {
            duplicates += 1;
        }
    }
    let sum = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    let (tool_errors, busy, malformed, transport) = (
        sum(|t| t.tool_errors),
        sum(|t| t.busy),
        sum(|t| t.malformed),
        sum(|t| t.transport),
    );
    let lost = o.calls - ids.len();
    let mut kinds = [0usize; 4];
    for t in tallies {
        for (k, n) in kinds.iter_mut().zip(t.kinds) {
            *k += n;
        }
    }
    let caused = [
        faults.failed.load(Ordering::Relaxed),
        faults.reset.load(Ordering::Relaxed),
        faults.timed_out.load(Ordering::Relaxed),
    ];
    let unclear = tallies.iter().find_map(|t| t.unclear.clone());
    // Direct mode: each failure the upstream made is one tool error of its
    // kind, and nothing else is (Code Mode answers the run's own errors).
    let clear = o.codemode || (kinds[..3] == caused[..] && kinds[3] == 0);

    let mode = if o.codemode { "codemode" } else { "direct" };
    println!(
        "loadtest scale --mode {mode}: {} clients, {} tools/call, upstream misbehaving on 1 in {} requests (500 / reset / {} ms slow / past the {} s timeout)",
        o.clients,
        o.calls,
        o.fail_every,
        o.slow.as_millis(),
        o.upstream_timeout.as_secs()
    );
    println!(
        "  wall {:.1} s, {:.0} calls/s",
        wall.as_secs_f64(),
        o.calls as f64 / wall.as_secs_f64()
    );
    println!(
        "  answers: {} well-formed with their own id ({} tool errors{}), {lost} lost, {duplicates} duplicated, {malformed} malformed, {transport} transport failures",
        ids.len(),
        tool_errors,
        if o.codemode {
            format!(", {busy} busy refusals")
        } else {
            String::new()
        }
    );
    println!(
        "  upstream failures made: {} 500s, {} resets, {} past the {} s timeout; tool errors saying so: {} / {} / {}, other {}",
        caused[0],
        caused[1],
        caused[2],
        o.upstream_timeout.as_secs(),
        kinds[0],
        kinds[1],
        kinds[2],
        kinds[3]
    );
    if let Some(text) = &unclear {
        println!(
            "  an unclear tool error: {}",
            toolforge_tests::mcp::clip(text, 300)
        );
    }
    println!(
        "  latency: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&latencies, 50.0).as_secs_f64() * 1e3,
        percentile(&latencies, 99.0).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
    if let Some(e) = tallies.iter().find_map(|t| t.first_tool_error.clone()) {
        println!("  a tool error: {}", toolforge_tests::mcp::clip(&e, 300));
    }
    if let Some(p) = tallies.iter().find_map(|t| t.first_problem.clone()) {
        println!("  first problem: {}", toolforge_tests::mcp::clip(&p, 300));
    }
    lost == 0 && clear && duplicates == 0 && malformed == 0 && transport == 0
}

fn run(args: &[String]) -> Result<bool, String> {
    let o = parse(args)?;
    if o.instances == 2 {
        return instances::run(&o);
    }
    let faults = Arc::new(Faults::default());
    let upstream = upstream(&o, &faults).map_err(|e| format!("upstream: {e}"))?;
    let upstream_url = format!("http://{upstream}");
    let tokens: Vec<String> = (0..o.tokens)
        .map(|i| format!("scale-client-token-{i:03}"))
        .collect();
    let mut config = ServerConfig::new([
        "--upstream".to_owned(),
        upstream_url,
        "--allow-loopback-upstream".to_owned(),
        "--max-connections".to_owned(),
        (o.clients * 2 + 64).to_string(),
        // Every client comes from 127.0.0.1.
        "--max-connections-per-ip".to_owned(),
        (o.clients * 2 + 64).to_string(),
        "--metrics-listen".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--upstream-timeout-secs".to_owned(),
        o.upstream_timeout.as_secs().to_string(),
    ]);
    if o.codemode {
        config = config.arg("--mode").arg("codemode");
    }
    for a in &o.server_args {
        config = config.arg(a.clone());
    }
    for t in &tokens {
        config = config.token(t, UPSTREAM_TOKEN);
    }
    let server = Server::http(&config)?;
    let log = server.log();
    let metrics: SocketAddr = log
        .split("metrics on http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .ok_or("no metrics address in the server log")?;
    let addr = server.addr();
    let (tallies, wall) = drive(&o, addr, &tokens)?;
    // Before the call afterwards, which the upstream may fail too.
    let answered = report(&o, &tallies, &faults, wall);
    let peak_mb = rss_kb(server.pid(), "VmHWM:") as f64 / 1024.0;
    let rss_mb = rss_kb(server.pid(), "VmRSS:") as f64 / 1024.0;

    // Still serving: a call on a fresh connection, and the health probe.
    let after = KeepAlive::connect(addr, REQUEST_TIMEOUT)
        .and_then(|mut c| c.send_bytes(&request_bytes(addr, &tokens[0], 9_999_999, o.codemode)))
        .map(|r| message(&r).is_ok_and(|m| m["id"] == json!(9_999_999) && m["result"].is_object()))
        .unwrap_or(false);
    let health = http::send(
        addr,
        &http::Request {
            method: "GET".into(),
            target: "/healthz".into(),
            ..http::Request::default()
        },
        Duration::from_secs(10),
    )
    .is_ok_and(|r| r.status == 200);

    println!(
        "  server RSS: peak {peak_mb:.1} MB, now {rss_mb:.1} MB (bound {} MB)",
        o.rss_bound_mb
    );
    let upstream_5xx = scrape(metrics, "toolforge_upstream_responses_total{class=\"5xx\"}");
    let upstream_err = scrape(
        metrics,
        "toolforge_upstream_responses_total{class=\"error\"}",
    );
    println!(
        "  upstream as the server saw it: {upstream_5xx} 5xx, {upstream_err} without an answer"
    );
    if o.codemode {
        let wait_sum = scrape(metrics, "toolforge_sandbox_queue_wait_seconds_sum");
        let wait_count = scrape(metrics, "toolforge_sandbox_queue_wait_seconds_count");
        let within_10ms = scrape(
            metrics,
            "toolforge_sandbox_queue_wait_seconds_bucket{le=\"0.01\"}",
        );
        println!(
            "  sandbox queueing: {wait_count} runs, mean wait {:.2} ms, {:.1}% waited ≤ 10 ms",
            wait_sum / wait_count.max(1.0) * 1e3,
            within_10ms / wait_count.max(1.0) * 100.0
        );
    }
    println!(
        "  afterwards: tools/call {}, /healthz {}",
        if after { "ok" } else { "FAILED" },
        if health { "200" } else { "FAILED" }
    );
    let pass = answered && after && health && peak_mb <= o.rss_bound_mb as f64;
    println!("  {}", if pass { "PASS" } else { "FAIL" });
    drop(server);
    Ok(pass)
}
