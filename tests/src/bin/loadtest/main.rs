//! Load test of the HTTP server with a misbehaving client: a benchmark, not
//! a test (it asserts nothing and never runs from `tests/run.sh`).
//!
//! Each round starts a fresh server (`cloudflare-mcp --transport http`, the
//! sample catalogue) in front of a keep-alive loopback upstream, runs N
//! well-behaved clients doing `tools/call` on keep-alive connections, and
//! reports p50/p99 latency; then does the same again with one misbehaving
//! client running alongside. It prints both, and the p99 ratio, per round
//! and as medians over the rounds.
//!
//! Scenarios (`--scenario`):
//! - `direct`: direct mode; the well-behaved clients call `zones_get`; the
//!   misbehaving client holds `--stalled` connections that send complete
//!   headers and part of a body (or part of a head) and then nothing,
//!   reopening each one the server closes.
//! - `codemode`: `--mode codemode`; the well-behaved clients `execute` one
//!   quick `api.request`; the misbehaving client runs endless `execute`s
//!   (`async () => { while(true){} }`, and runs that wait on a slow upstream
//!   path), plus the stalled connections when `--stalled` is set.
//!
//! `loadtest scale …` is the scale test instead (see [`scale`]): many
//! concurrent clients against an upstream that fails a share of requests.
//!
//! Everything goes to 127.0.0.1; every loop is bounded in count and time.
//! See `tests/bench/README.md` for how to run it and the figures.

mod scale;

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_tests::http::{self, KeepAlive};
use toolforge_tests::mcp::{HANDSHAKE_VERSION, message};
use toolforge_tests::server::{self, Server, ServerConfig};

const CLIENT_TOKEN: &str = "loadtest-client-token-0b7e";
const UPSTREAM_TOKEN: &str = "loadtest-upstream-token-91c2";
/// The misbehaving client signs in as someone else, as it would for real:
/// the server shares Code Mode fairly per credential.
const BAD_CLIENT_TOKEN: &str = "loadtest-bad-client-token-3f4a";
const BAD_UPSTREAM_TOKEN: &str = "loadtest-bad-upstream-token-5d6e";
const HEALTHY_ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
/// The upstream answers this zone only after `--slow-upstream-ms`.
const SLOW_ZONE: &str = "5105105105105105105105105105105a";
/// Requests per well-behaved client left out of the figures.
const WARMUP: usize = 20;
/// Bound on one well-behaved request (Code Mode runs may queue).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Most connections the loopback upstream serves at once.
const UPSTREAM_MAX_CONNECTIONS: usize = 256;
/// Stalled connections reopened per sweep of the misbehaving client at most
/// (a sweep every 50 ms), so that refused ones cannot turn into a flood.
const REOPEN_PER_SWEEP: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Direct,
    CodeMode,
}

#[derive(Debug, Clone)]
struct Options {
    scenario: Scenario,
    rounds: usize,
    clients: usize,
    requests: usize,
    duration: Duration,
    think: Duration,
    stalled: usize,
    spinners: usize,
    waiters: usize,
    slow_upstream: Duration,
    server_args: Vec<String>,
    json: Option<String>,
}

const USAGE: &str = "\
usage: loadtest [options]
  --scenario direct|codemode   what runs (default direct)
  --rounds R                   rounds, each without then with the misbehaving client (default 3)
  --clients N                  well-behaved clients (default 4)
  --requests M                 tools/call per client and phase, after 20 warm-up calls (default 5000)
  --duration-secs S            cap on each phase's measurement (default 15)
  --think-ms T                 pause between a client's calls (default 2)
  --stalled K                  misbehaving: stalled connections held open (default 300 direct, 0 codemode)
  --spinners S                 codemode misbehaving: clients looping `while(true){}` executes (default 2)
  --waiters W                  codemode misbehaving: clients looping executes that wait on the slow upstream (default 2)
  --slow-upstream-ms MS        how long the slow upstream path takes (default 3000)
  --server-arg ARG             extra server flag (repeatable), e.g. --server-arg=--max-connections=256
  --json PATH                  also write every figure as JSON
The server binary is TOOLFORGE_MCP_BIN when set, else the debug build of cloudflare-mcp.";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        scenario: Scenario::Direct,
        rounds: 3,
        clients: 4,
        requests: 5000,
        duration: Duration::from_secs(15),
        think: Duration::from_millis(2),
        stalled: usize::MAX,
        spinners: 2,
        waiters: 2,
        slow_upstream: Duration::from_millis(3000),
        server_args: Vec::new(),
        json: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        if name == "--help" || name == "-h" {
            return Err(USAGE.to_owned());
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        let number = |text: String, max: u64| -> Result<u64, String> {
            let n: u64 = text
                .parse()
                .map_err(|_| format!("{name}: `{text}` is not a number"))?;
            if n > max {
                return Err(format!("{name}: at most {max}"));
            }
            Ok(n)
        };
        match name {
            "--scenario" => {
                o.scenario = match value()?.as_str() {
                    "direct" => Scenario::Direct,
                    "codemode" => Scenario::CodeMode,
                    other => return Err(format!("--scenario: `{other}` (direct or codemode)")),
                }
            }
            "--rounds" => o.rounds = number(value()?, 20)?.max(1) as usize,
            "--clients" => o.clients = number(value()?, 64)?.max(1) as usize,
            "--requests" => o.requests = number(value()?, 1_000_000)?.max(1) as usize,
            "--duration-secs" => o.duration = Duration::from_secs(number(value()?, 300)?.max(1)),
            "--think-ms" => o.think = Duration::from_millis(number(value()?, 10_000)?),
            "--stalled" => o.stalled = number(value()?, 4000)? as usize,
            "--spinners" => o.spinners = number(value()?, 16)? as usize,
            "--waiters" => o.waiters = number(value()?, 16)? as usize,
            "--slow-upstream-ms" => {
                o.slow_upstream = Duration::from_millis(number(value()?, 60_000)?)
            }
            "--server-arg" => o.server_args.push(value()?),
            "--json" => o.json = Some(value()?),
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    if o.stalled == usize::MAX {
        o.stalled = match o.scenario {
            Scenario::Direct => 300,
            Scenario::CodeMode => 0,
        };
    }
    Ok(o)
}

// --- the loopback upstream -----------------------------------------------

/// A keep-alive HTTP/1.1 upstream on 127.0.0.1 (a thread per connection)
/// answering `GET /zones/{id}` with a Cloudflare envelope; the slow zone
/// is answered after a delay. Stops on drop.
struct Upstream {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Upstream {
    fn start(slow: Duration) -> std::io::Result<Upstream> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let acceptor = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    if open.load(Ordering::SeqCst) >= UPSTREAM_MAX_CONNECTIONS {
                        continue;
                    }
                    open.fetch_add(1, Ordering::SeqCst);
                    let stop = Arc::clone(&stop);
                    let open = Arc::clone(&open);
                    std::thread::spawn(move || {
                        serve_upstream(stream, slow, &stop);
                        open.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            })
        };
        Ok(Upstream {
            addr,
            stop,
            acceptor: Some(acceptor),
        })
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn serve_upstream(mut stream: TcpStream, slow: Duration, stop: &AtomicBool) {
    let _ = stream.set_nodelay(true);
    // Short read timeouts so the thread notices `stop`.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    while !stop.load(Ordering::SeqCst) {
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4) else {
            match stream.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
            if raw.len() > 1 << 20 {
                return;
            }
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0)
            .min(1 << 20);
        if raw.len() < end + length {
            match stream.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
            continue;
        }
        let target = head.split(' ').nth(1).unwrap_or("/").to_owned();
        raw.drain(..end + length);
        let path = target.split('?').next().unwrap_or_default();
        let (status, body) = match path.rsplit_once("/zones/") {
            Some((_, zone)) if !zone.contains('/') => {
                if zone == SLOW_ZONE {
                    let until = Instant::now() + slow;
                    while Instant::now() < until && !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                (
                    200,
                    json!({"success": true, "errors": [], "messages": [],
                           "result": {"id": zone, "name": "example.com", "status": "active"}}),
                )
            }
            _ => (
                404,
                json!({"success": false, "errors": [{"code": 7003, "message": "Could not route"}],
                       "messages": [], "result": null}),
            ),
        };
        let body = body.to_string();
        let reason = if status == 200 { "OK" } else { "Not Found" };
        let answer = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

// --- clients -------------------------------------------------------------

/// The bytes of one MCP `tools/call` POST on a keep-alive connection, as
/// the client holding `token`.
fn call_bytes(addr: SocketAddr, token: &str, id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}})
    .to_string();
    let request = http::Request {
        method: "POST".to_owned(),
        target: "/mcp".to_owned(),
        headers: vec![
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "MCP-Protocol-Version".to_owned(),
                HANDSHAKE_VERSION.to_owned(),
            ),
            ("Authorization".to_owned(), format!("Bearer {token}")),
        ],
        body: Some(body.into_bytes()),
    };
    http::encode_with(addr, &request, true)
}

/// The well-behaved call of a scenario.
fn good_call(scenario: Scenario, addr: SocketAddr) -> Vec<u8> {
    match scenario {
        Scenario::Direct => call_bytes(
            addr,
            CLIENT_TOKEN,
            1,
            "zones_get",
            json!({"zone_id": HEALTHY_ZONE}),
        ),
        Scenario::CodeMode => call_bytes(
            addr,
            CLIENT_TOKEN,
            1,
            "execute",
            json!({"code": format!(
                "async () => (await api.request({{method: \"GET\", path: \"/zones/{HEALTHY_ZONE}\"}})).status"
            )}),
        ),
    }
}

/// Whether a response is a successful (non-error) tool result.
fn succeeded(response: &http::Response) -> bool {
    response.status == 200
        && message(response)
            .is_ok_and(|m| m["result"].is_object() && m["result"]["isError"] != true)
}

/// What one well-behaved client saw in one phase.
#[derive(Debug, Default)]
struct ClientRun {
    latencies: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
}

fn well_behaved(addr: SocketAddr, request: &[u8], o: &Options, stop: &AtomicBool) -> ClientRun {
    let mut run = ClientRun::default();
    let mut conn: Option<KeepAlive> = None;
    let mut started: Option<Instant> = None;
    let total = WARMUP + o.requests;
    for i in 0..total {
        if i == WARMUP {
            started = Some(Instant::now());
        }
        if started.is_some_and(|s| s.elapsed() >= o.duration) || stop.load(Ordering::SeqCst) {
            break;
        }
        if conn.is_none() {
            match KeepAlive::connect(addr, REQUEST_TIMEOUT) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    run.errors += 1;
                    run.first_error.get_or_insert(format!("connect: {e}"));
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let sent = Instant::now();
        let outcome = c.send_bytes(request);
        let latency = sent.elapsed();
        match outcome {
            Ok(response) if succeeded(&response) => {
                if i >= WARMUP {
                    run.latencies.push(latency);
                }
            }
            Ok(response) => {
                run.errors += 1;
                run.first_error.get_or_insert(format!(
                    "HTTP {}: {}",
                    response.status,
                    toolforge_tests::mcp::clip(&response.text(), 300)
                ));
                if response.header("connection") == Some("close") {
                    conn = None;
                }
                // A well-behaved client waits as long as a 503 asks (bounded).
                if let Some(secs) = response
                    .header("retry-after")
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    std::thread::sleep(Duration::from_secs(secs.min(5)));
                }
            }
            Err(e) => {
                run.errors += 1;
                run.first_error.get_or_insert(e.to_string());
                conn = None;
            }
        }
        if !o.think.is_zero() {
            std::thread::sleep(o.think);
        }
    }
    run
}

/// What the misbehaving client managed.
#[derive(Debug, Default)]
struct Mischief {
    /// Stalled connections open at the end of the warm-up.
    held: usize,
    opened: usize,
    answered_408: usize,
    answered_503: usize,
    closed_other: usize,
    executes: usize,
    /// Executes that ended in a tool error or an HTTP error (e.g. the CPU
    /// deadline of a `while(true){}` run).
    executes_failed: usize,
}

/// The wire bytes a stalled connection sends: complete headers and part of
/// a body (even `i`), or part of a request head (odd `i`).
fn stall_bytes(addr: SocketAddr, i: usize) -> Vec<u8> {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {BAD_CLIENT_TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: {HANDSHAKE_VERSION}\r\n"
    );
    if i.is_multiple_of(2) {
        format!("{head}Content-Length: 100\r\n\r\n{{\"jsonrpc\"").into_bytes()
    } else {
        head.into_bytes()
    }
}

fn open_stalled(addr: SocketAddr, i: usize) -> Option<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.write_all(&stall_bytes(addr, i)).ok()?;
    stream.set_nonblocking(true).ok()?;
    Some(stream)
}

/// Holds `count` stalled connections until `stop`, reopening each one the
/// server answers or closes (at most [`REOPEN_PER_SWEEP`] per 50 ms).
/// Sets `ready` once all were opened the first time.
fn hold_stalled(
    addr: SocketAddr,
    count: usize,
    stop: &AtomicBool,
    ready: &AtomicBool,
    tally: &Mutex<Mischief>,
) {
    let mut held: Vec<Option<TcpStream>> = Vec::with_capacity(count);
    let mut opened = 0;
    for i in 0..count {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = open_stalled(addr, i);
        opened += usize::from(stream.is_some());
        held.push(stream);
    }
    if let Ok(mut t) = tally.lock() {
        t.held = held.iter().filter(|s| s.is_some()).count();
        t.opened += opened;
    }
    ready.store(true, Ordering::SeqCst);
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::SeqCst) {
        let mut reopened = 0;
        let (mut r408, mut r503, mut other, mut new) = (0, 0, 0, 0);
        for (i, slot) in held.iter_mut().enumerate() {
            let ended = match slot {
                Some(stream) => match stream.read(&mut buf) {
                    Ok(0) => {
                        other += 1;
                        true
                    }
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&buf[..n]);
                        if text.starts_with("HTTP/1.1 408") {
                            r408 += 1;
                        } else if text.starts_with("HTTP/1.1 503") {
                            r503 += 1;
                        } else {
                            other += 1;
                        }
                        let _ = stream.shutdown(Shutdown::Both);
                        true
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
                    Err(_) => {
                        other += 1;
                        true
                    }
                },
                None => true,
            };
            if ended && reopened < REOPEN_PER_SWEEP {
                reopened += 1;
                *slot = open_stalled(addr, i);
                new += usize::from(slot.is_some());
            } else if ended {
                *slot = None;
            }
        }
        if let Ok(mut t) = tally.lock() {
            t.answered_408 += r408;
            t.answered_503 += r503;
            t.closed_other += other;
            t.opened += new;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Loops `execute` runs of `code` until `stop` (each run bounded by the
/// sandbox's own limits and [`REQUEST_TIMEOUT`]).
fn endless_executes(addr: SocketAddr, code: &str, stop: &AtomicBool, tally: &Mutex<Mischief>) {
    let request = call_bytes(addr, BAD_CLIENT_TOKEN, 9, "execute", json!({"code": code}));
    let mut conn: Option<KeepAlive> = None;
    while !stop.load(Ordering::SeqCst) {
        if conn.is_none() {
            conn = KeepAlive::connect(addr, REQUEST_TIMEOUT).ok();
            if conn.is_none() {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let ok = match c.send_bytes(&request) {
            Ok(response) => succeeded(&response),
            Err(_) => {
                conn = None;
                false
            }
        };
        if let Ok(mut t) = tally.lock() {
            t.executes += 1;
            t.executes_failed += usize::from(!ok);
        }
    }
}

// --- a round -------------------------------------------------------------

/// Latency figures of one phase.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    count: usize,
    errors: usize,
    p50: Duration,
    p90: Duration,
    p99: Duration,
    max: Duration,
    per_sec: f64,
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn figures(runs: &[ClientRun], wall: Duration) -> Figures {
    let mut all: Vec<Duration> = runs.iter().flat_map(|r| r.latencies.clone()).collect();
    all.sort();
    Figures {
        count: all.len(),
        errors: runs.iter().map(|r| r.errors).sum(),
        p50: percentile(&all, 50.0),
        p90: percentile(&all, 90.0),
        p99: percentile(&all, 99.0),
        max: all.last().copied().unwrap_or_default(),
        per_sec: all.len() as f64 / wall.as_secs_f64().max(1e-9),
    }
}

fn start_server(o: &Options, upstream: &Upstream) -> Result<Server, String> {
    let mut config = ServerConfig::new([
        "--upstream".to_owned(),
        upstream.url(),
        "--allow-loopback-upstream".to_owned(),
        "--mode".to_owned(),
        match o.scenario {
            Scenario::Direct => "direct",
            Scenario::CodeMode => "codemode",
        }
        .to_owned(),
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN)
    .token(BAD_CLIENT_TOKEN, BAD_UPSTREAM_TOKEN);
    for arg in &o.server_args {
        config = config.arg(arg.clone());
    }
    Server::http(&config)
}

/// One phase on a fresh server: the well-behaved clients, with or without
/// the misbehaving client.
fn phase(o: &Options, upstream: &Upstream, misbehave: bool) -> Result<(Figures, Mischief), String> {
    let server = start_server(o, upstream)?;
    let addr = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Mischief::default()));
    let mut mischief: Vec<JoinHandle<()>> = Vec::new();
    if misbehave {
        let ready = Arc::new(AtomicBool::new(o.stalled == 0));
        if o.stalled > 0 {
            let (stop, ready, tally) = (Arc::clone(&stop), Arc::clone(&ready), Arc::clone(&tally));
            let count = o.stalled;
            mischief.push(std::thread::spawn(move || {
                hold_stalled(addr, count, &stop, &ready, &tally);
            }));
        }
        if o.scenario == Scenario::CodeMode {
            let spin = "async () => { while (true) {} }".to_owned();
            let wait = format!(
                "async () => (await api.request({{method: \"GET\", path: \"/zones/{SLOW_ZONE}\"}})).status"
            );
            for code in
                std::iter::repeat_n(spin, o.spinners).chain(std::iter::repeat_n(wait, o.waiters))
            {
                let (stop, tally) = (Arc::clone(&stop), Arc::clone(&tally));
                mischief.push(std::thread::spawn(move || {
                    endless_executes(addr, &code, &stop, &tally);
                }));
            }
        }
        // The misbehaviour is in place before the clients start (bounded wait).
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if o.scenario == Scenario::CodeMode {
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let request = Arc::new(good_call(o.scenario, addr));
    let started = Instant::now();
    let clients: Vec<JoinHandle<ClientRun>> = (0..o.clients)
        .map(|_| {
            let (request, o, stop) = (Arc::clone(&request), o.clone(), Arc::clone(&stop));
            std::thread::spawn(move || well_behaved(addr, &request, &o, &stop))
        })
        .collect();
    let runs: Vec<ClientRun> = clients
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect();
    let wall = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    // Dropping the server first ends the misbehaving client's waits.
    drop(server);
    for h in mischief {
        let _ = h.join();
    }
    if let Some(e) = runs.iter().find_map(|r| r.first_error.clone()) {
        eprintln!("  (first client error: {e})");
    }
    let tally = Arc::try_unwrap(tally)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .unwrap_or_default();
    Ok((figures(&runs, wall), tally))
}

fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn row(name: &str, f: &Figures) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {:.1} |",
        f.count,
        f.errors,
        micros(f.p50),
        micros(f.p90),
        micros(f.p99),
        micros(f.max),
        f.per_sec
    )
}

fn run(o: &Options) -> Result<(), String> {
    let binary = server::binary()?;
    let upstream = Upstream::start(o.slow_upstream).map_err(|e| format!("upstream: {e}"))?;
    eprintln!(
        "loadtest: scenario {:?}, {} round(s), {} clients × {} calls (≤ {:?}, think {:?}), stalled {}, server {}",
        o.scenario,
        o.rounds,
        o.clients,
        o.requests,
        o.duration,
        o.think,
        o.stalled,
        binary.display()
    );
    let mut rounds = Vec::new();
    for round in 1..=o.rounds {
        eprintln!("round {round}: without the misbehaving client");
        let (calm, _) = phase(o, &upstream, false)?;
        eprintln!("round {round}: with the misbehaving client");
        let (loaded, mischief) = phase(o, &upstream, true)?;
        println!("\n### round {round}\n");
        println!("| phase | calls | errors | p50 | p90 | p99 | max | calls/s |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        println!("{}", row("well-behaved only", &calm));
        println!("{}", row("with the misbehaving client", &loaded));
        println!(
            "\np99 ratio {:.2}, p50 ratio {:.2}; misbehaving client: {} stalled held, {} opened, {} answered 408, {} answered 503, {} closed otherwise, {} executes ({} failed)",
            ratio(loaded.p99, calm.p99),
            ratio(loaded.p50, calm.p50),
            mischief.held,
            mischief.opened,
            mischief.answered_408,
            mischief.answered_503,
            mischief.closed_other,
            mischief.executes,
            mischief.executes_failed
        );
        rounds.push((calm, loaded, mischief));
    }
    let med = |pick: &dyn Fn(&(Figures, Figures, Mischief)) -> Duration| {
        Duration::from_secs_f64(median(
            rounds.iter().map(|r| pick(r).as_secs_f64()).collect(),
        ))
    };
    let (calm_p50, calm_p99) = (med(&|r| r.0.p50), med(&|r| r.0.p99));
    let (bad_p50, bad_p99) = (med(&|r| r.1.p50), med(&|r| r.1.p99));
    let ratios: Vec<f64> = rounds.iter().map(|r| ratio(r.1.p99, r.0.p99)).collect();
    println!("\n### medians over {} round(s)\n", rounds.len());
    println!("| | p50 | p99 |");
    println!("|---|---:|---:|");
    println!(
        "| well-behaved only | {} | {} |",
        micros(calm_p50),
        micros(calm_p99)
    );
    println!(
        "| with the misbehaving client | {} | {} |",
        micros(bad_p50),
        micros(bad_p99)
    );
    println!(
        "| ratio | {:.2} | {:.2} (per round: {}) |",
        ratio(bad_p50, calm_p50),
        ratio(bad_p99, calm_p99),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(path) = &o.json {
        let fig = |f: &Figures| {
            json!({"count": f.count, "errors": f.errors, "p50_us": f.p50.as_secs_f64() * 1e6,
                   "p90_us": f.p90.as_secs_f64() * 1e6, "p99_us": f.p99.as_secs_f64() * 1e6,
                   "max_us": f.max.as_secs_f64() * 1e6, "per_sec": f.per_sec})
        };
        let doc = json!({
            "scenario": format!("{:?}", o.scenario),
            "clients": o.clients, "requests": o.requests, "think_ms": o.think.as_millis() as u64,
            "stalled": o.stalled, "server_args": o.server_args,
            "rounds": rounds.iter().map(|(c, l, m)| json!({
                "calm": fig(c), "misbehaving": fig(l),
                "mischief": {"held": m.held, "opened": m.opened, "answered_408": m.answered_408,
                             "answered_503": m.answered_503, "closed_other": m.closed_other, "executes": m.executes,
                             "executes_failed": m.executes_failed},
            })).collect::<Vec<_>>(),
            "median": {"calm_p50_us": calm_p50.as_secs_f64() * 1e6, "calm_p99_us": calm_p99.as_secs_f64() * 1e6,
                       "misbehaving_p50_us": bad_p50.as_secs_f64() * 1e6, "misbehaving_p99_us": bad_p99.as_secs_f64() * 1e6,
                       "p99_ratio": ratio(bad_p99, calm_p99)},
        });
        std::fs::write(path, format!("{doc:#}\n")).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(())
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("scale") {
        return scale::main(&args[1..]);
    }
    let options = match parse_args(&args) {
        Ok(o) => o,
        Err(message) => {
            eprintln!("{message}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadtest: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_have_bounded_defaults_and_scenarios() {
        let o = parse_args(&[]).unwrap();
        assert_eq!(
            (o.scenario, o.stalled, o.clients),
            (Scenario::Direct, 300, 4)
        );
        let o = parse_args(&args(&[
            "--scenario",
            "codemode",
            "--server-arg=--sandbox-workers=4",
        ]))
        .unwrap();
        assert_eq!((o.scenario, o.stalled), (Scenario::CodeMode, 0));
        assert_eq!(o.server_args, ["--sandbox-workers=4"]);
        assert!(parse_args(&args(&["--clients", "65"])).is_err());
        assert!(parse_args(&args(&["--duration-secs", "301"])).is_err());
        assert!(parse_args(&args(&["--nope"])).is_err());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&samples[..1], 99.0), Duration::from_millis(1));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn the_upstream_keeps_connections_alive() {
        let upstream = Upstream::start(Duration::from_millis(10)).unwrap();
        let mut conn = KeepAlive::connect(upstream.addr, Duration::from_secs(5)).unwrap();
        for zone in [HEALTHY_ZONE, SLOW_ZONE] {
            let request = http::Request {
                method: "GET".to_owned(),
                target: format!("/client/v4/zones/{zone}"),
                ..http::Request::default()
            };
            let response = conn.send(&request).unwrap();
            assert_eq!(response.status, 200);
            let v: Value = serde_json::from_slice(&response.body).unwrap();
            assert_eq!(v["result"]["id"], zone);
        }
    }
}
