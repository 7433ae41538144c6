//! Load test of `--auth oauth` under the floods of issue 39 item 8 (a
//! benchmark binary, not a test; never run by `tests/run.sh`). Against the
//! real server binary (SQLite store, dynamic registration on, default
//! limits) and a loopback upstream provider, each flood runs from
//! 127.0.0.2 on 16 keep-alive connections while legitimate sign-ins
//! (consent page, approval, provider round trip, callback, code exchange)
//! run one after another from 127.0.0.1:
//!
//! 1. one consent form replayed ×5,000;
//! 2. remembered-approval `GET /authorize` ×5,000 (each a new request);
//! 3. `/register` ×20,000, each padded to 16 KiB;
//! 4. new Client ID Metadata Document ids at 330/s (×3,000) whose
//!    documents answer after 2 s;
//! 5. bogus codes at `/token` ×5,000.
//!
//! After each: the answers by status, the grant store's pending sign-ins
//! and unused clients, the SQLite file and WAL sizes, the server's RSS
//! (`/proc/PID/status`), and the legitimate sign-ins' p50 / max and
//! failures.
//!
//! `TOOLFORGE_MCP_BIN=target/release/cloudflare-mcp cargo run --release -p toolforge-tests --bin oauth_abuse [-- --scale 1.0]`

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolforge_runtime::oauth::store;
use toolforge_tests::http::{self, Request};
use toolforge_tests::server::{ScratchDir, Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};

const SECRET: &str = "YWJ1c2Utc2VjcmV0LWFidXNlLXNlY3JldC1hYnVzZS1zZWNyZXQtYWJ1c2U";
const REDIRECT: &str = "http://127.0.0.1:9/cb";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CONNECTIONS: usize = 16;
const TIMEOUT: Duration = Duration::from_secs(30);

fn query_value(target: &str, name: &str) -> Option<String> {
    let query = target.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The provider: `/authorize` sends the browser straight back with a
/// code, `/token` answers tokens, `/docs/*` are metadata documents that
/// answer 404 after 2 s.
fn provider() -> Result<Upstream, String> {
    Upstream::start(|req| {
        let path = req.path().to_owned();
        if path == "/authorize" {
            let back = query_value(&req.target, "redirect_uri").unwrap_or_default();
            let state = query_value(&req.target, "state").unwrap_or_default();
            let location = format!("{back}?code=up-code&state={}", encode(&state));
            Reply::text(302, "text/plain", "").with_header("location", &location)
        } else if path == "/token" {
            Reply::json(
                200,
                &json!({"access_token": "up-access", "token_type": "Bearer",
                        "expires_in": 3600, "refresh_token": "up-refresh"}),
            )
        } else if path.starts_with("/docs/") {
            std::thread::sleep(Duration::from_secs(2));
            Reply::text(404, "text/plain", "no")
        } else {
            Reply::text(404, "text/plain", "")
        }
    })
    .map_err(|e| e.to_string())
}

fn cookie(response: &http::Response, name: &str) -> Option<String> {
    response
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, v)| v.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

fn hidden(page: &str, name: &str) -> Result<String, String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page
        .find(&marker)
        .ok_or_else(|| format!("no {name} field"))?
        + marker.len();
    let end = page[start..].find('"').ok_or("unterminated field")? + start;
    Ok(page[start..end].replace("&amp;", "&"))
}

/// One request on a new connection from `source` (`Connection: close`).
async fn send_from(
    source: IpAddr,
    addr: SocketAddr,
    request: &Request,
) -> Result<http::Response, String> {
    let exchange = async {
        let mut stream = connect_from(source, addr).await?;
        stream
            .write_all(&http::encode(addr, request))
            .await
            .map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        stream
            .read_to_end(&mut raw)
            .await
            .map_err(|e| e.to_string())?;
        http::parse(&raw).map_err(|e| e.to_string())
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .map_err(|_| "timed out".to_owned())?
}

async fn get(
    source: IpAddr,
    addr: SocketAddr,
    target: &str,
    cookies: &str,
) -> Result<http::Response, String> {
    let mut headers = Vec::new();
    if !cookies.is_empty() {
        headers.push(("Cookie".to_owned(), cookies.to_owned()));
    }
    let request = Request {
        method: "GET".into(),
        target: target.to_owned(),
        headers,
        body: None,
    };
    send_from(source, addr, &request).await
}

async fn post_form(
    source: IpAddr,
    addr: SocketAddr,
    target: &str,
    cookies: &str,
    origin: &str,
    body: String,
) -> Result<http::Response, String> {
    let request = Request {
        method: "POST".into(),
        target: target.to_owned(),
        headers: vec![
            (
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
            ("Cookie".into(), cookies.to_owned()),
            ("Origin".into(), origin.to_owned()),
        ],
        body: Some(body.into_bytes()),
    };
    send_from(source, addr, &request).await
}

fn authorize_target(client: &str, state: &str, challenge: &str) -> String {
    format!(
        "/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&state={state}",
        encode(client),
        encode(REDIRECT)
    )
}

fn split_location(location: &str) -> Result<(SocketAddr, String), String> {
    let rest = location
        .strip_prefix("http://")
        .ok_or_else(|| format!("not http: {location}"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr = host.parse().map_err(|_| format!("bad host {host}"))?;
    Ok((addr, path.to_owned()))
}

/// One whole legitimate sign-in from its own loopback address (users
/// are not behind the attacker's address); its duration.
async fn sign_in(server: SocketAddr, client: &str, n: usize) -> Result<Duration, String> {
    let octets = [127, 0, 1 + (n / 250) as u8 % 200, 1 + (n % 250) as u8];
    let me = IpAddr::from(octets);
    let origin = format!("http://{server}");
    let start = Instant::now();
    let page = get(
        me,
        server,
        &authorize_target(client, "legit", CHALLENGE),
        "",
    )
    .await?;
    if page.status != 200 {
        return Err(format!("consent page: {}", page.status));
    }
    let browser = cookie(&page, "tf_browser").ok_or("no browser cookie")?;
    let text = page.text();
    let form = format!(
        "csrf={}&request={}&decision=approve&exposure=all",
        encode(&hidden(&text, "csrf")?),
        encode(&hidden(&text, "request")?)
    );
    let approved = post_form(me, server, "/authorize", &browser, &origin, form).await?;
    if approved.status != 302 {
        return Err(format!("approval: {}", approved.status));
    }
    let signin = cookie(&approved, "tf_signin").ok_or("no sign-in cookie")?;
    let (provider, target) = split_location(approved.header("location").unwrap_or(""))?;
    let back = get(me, provider, &target, "").await?;
    let (_, callback) = split_location(back.header("location").unwrap_or(""))?;
    let done = get(me, server, &callback, &signin).await?;
    if done.status != 302 {
        return Err(format!("callback: {} {}", done.status, done.text()));
    }
    let code = query_value(done.header("location").unwrap_or(""), "code").ok_or("no code")?;
    let form = format!(
        "grant_type=authorization_code&code={}&client_id={}&redirect_uri={}&code_verifier={VERIFIER}",
        encode(&code),
        encode(client),
        encode(REDIRECT)
    );
    let tokens = post_form(me, server, "/token", "", &origin, form).await?;
    if tokens.status != 200 {
        return Err(format!("token: {} {}", tokens.status, tokens.text()));
    }
    Ok(start.elapsed())
}

/// Reads one response from a keep-alive connection: its status and
/// whether the server closes.
async fn read_response(stream: &mut tokio::net::TcpStream) -> Result<(u16, bool), String> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_lowercase();
            let status = head
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let chunked = head.contains("transfer-encoding: chunked");
            let close = head.contains("connection: close");
            loop {
                let body = &raw[end + 4..];
                let complete = if chunked {
                    body.ends_with(b"0\r\n\r\n")
                } else {
                    body.len() >= length
                };
                if complete {
                    return Ok((status, close));
                }
                let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
                if n == 0 {
                    return Ok((status, true));
                }
                raw.extend_from_slice(&buf[..n]);
            }
        }
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before a response".into());
        }
        raw.extend_from_slice(&buf[..n]);
    }
}

async fn connect_from(source: IpAddr, server: SocketAddr) -> Result<tokio::net::TcpStream, String> {
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
    socket
        .bind(SocketAddr::new(source, 0))
        .map_err(|e| e.to_string())?;
    socket.connect(server).await.map_err(|e| e.to_string())
}

/// The next legitimate user's number (its loopback address).
static NEXT_USER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

type Make = Arc<dyn Fn(usize) -> Vec<u8> + Send + Sync>;

/// Sends `total` requests made by `make(i)` on 16 connections from
/// `source`, at most `per_sec` a second when given; answers by status.
async fn flood(
    server: SocketAddr,
    source: IpAddr,
    total: usize,
    per_sec: Option<f64>,
    make: Make,
) -> BTreeMap<u16, usize> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..CONNECTIONS {
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let mut counts: BTreeMap<u16, usize> = BTreeMap::new();
            let mut conn: Option<tokio::net::TcpStream> = None;
            for i in (k..total).step_by(CONNECTIONS) {
                if let Some(rate) = per_sec {
                    let due = start + Duration::from_secs_f64(i as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                }
                if conn.is_none() {
                    conn = connect_from(source, server).await.ok();
                }
                let Some(stream) = conn.as_mut() else {
                    *counts.entry(0).or_default() += 1;
                    continue;
                };
                let sent = stream.write_all(&make(i)).await;
                let answer = match sent {
                    Ok(()) => tokio::time::timeout(TIMEOUT, read_response(stream))
                        .await
                        .unwrap_or(Err("timeout".into())),
                    Err(e) => Err(e.to_string()),
                };
                match answer {
                    Ok((status, close)) => {
                        *counts.entry(status).or_default() += 1;
                        if close {
                            conn = None;
                        }
                    }
                    Err(_) => {
                        *counts.entry(0).or_default() += 1;
                        conn = None;
                    }
                }
            }
            counts
        }));
    }
    let mut all = BTreeMap::new();
    for task in tasks {
        if let Ok(counts) = task.await {
            for (status, n) in counts {
                *all.entry(status).or_default() += n;
            }
        }
    }
    all
}

fn raw(
    server: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let request = Request {
        method: method.into(),
        target: target.into(),
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: (method == "POST").then(|| body.to_vec()),
    };
    http::encode_with(server, &request, true)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

struct Target {
    server: Server,
    addr: SocketAddr,
    db: std::path::PathBuf,
    store_url: String,
    client: String,
    _provider: Upstream,
    _dir: ScratchDir,
}

fn start() -> Result<Target, String> {
    let provider = provider()?;
    let dir = ScratchDir::new()?;
    let db = dir.path().join("grants.db");
    let store_url = format!("sqlite:{}", db.display());
    let config = dir.path().join("oauth.json");
    let base = provider.url();
    std::fs::write(
        &config,
        json!({
            "public_url": "http://127.0.0.1:{port}",
            "store": store_url,
            "dynamic_registration": true,
            "upstream": {"name": "Bench", "authorize_url": format!("{base}/authorize"),
                         "token_url": format!("{base}/token"), "client_id": "bench",
                         "client_secret_env": "BENCH_UPSTREAM_SECRET"},
            // Loopback documents for the CIMD flood (TESTING ONLY flags).
            "cimd": {"allow_private_addresses": true, "allow_http": true},
        })
        .to_string(),
    )
    .map_err(|e| e.to_string())?;
    let server = Server::http(
        &ServerConfig::new(["--auth", "oauth", "--oauth-config"])
            .arg(config.display().to_string())
            .arg("--upstream")
            .arg(format!("{base}/api"))
            .arg("--allow-loopback-upstream")
            .env("TOOLFORGE_OAUTH_SECRET", SECRET)
            .env("BENCH_UPSTREAM_SECRET", "x"),
    )?;
    let addr = server.addr();
    let registration = Request {
        method: "POST".into(),
        target: "/register".into(),
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Some(
            json!({"client_name": "Legit", "redirect_uris": [REDIRECT]})
                .to_string()
                .into_bytes(),
        ),
    };
    let reply = http::send(addr, &registration, TIMEOUT).map_err(|e| e.to_string())?;
    let reply: serde_json::Value =
        serde_json::from_slice(&reply.body).map_err(|e| e.to_string())?;
    let client = reply["client_id"]
        .as_str()
        .ok_or("no client_id")?
        .to_owned();
    Ok(Target {
        server,
        addr,
        db,
        store_url,
        client,
        _provider: provider,
        _dir: dir,
    })
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

async fn report(
    t: &Target,
    name: &str,
    answers: &BTreeMap<u16, usize>,
    legit: (Vec<Duration>, usize),
    took: Duration,
) {
    let store = store::open(&t.store_url).await.ok();
    let (pending, unused) = match &store {
        Some(s) => (
            s.count_pending(0).await.unwrap_or(0),
            s.count_unused_clients().await.unwrap_or(0),
        ),
        None => (0, 0),
    };
    let (mut times, failed) = legit;
    times.sort();
    println!(
        "{name}: {:.1} s, answers {answers:?}; store: {pending} pending sign-ins, {unused} unused clients, db {} KiB + wal {} KiB; RSS {} MiB; legitimate sign-ins {} ok (p50 {:.1} ms, max {:.1} ms), {failed} failed",
        took.as_secs_f64(),
        size(&t.db) / 1024,
        size(&t.db.with_extension("db-wal")) / 1024,
        rss_kib(t.server.pid()) / 1024,
        times.len(),
        quantile(&times, 0.5).as_secs_f64() * 1e3,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

/// Runs `attack` while legitimate sign-ins go on (at most 25, one at a
/// time); reports.
/// Floods `total` requests from `source` (repeated, at most 10 rounds,
/// until at least 10 legitimate sign-ins have run alongside) while
/// legitimate sign-ins go on (at most 25, one at a time); reports.
async fn scenario(
    t: &Target,
    name: &str,
    source: IpAddr,
    total: usize,
    per_sec: Option<f64>,
    make: Make,
) {
    let running = Arc::new(AtomicBool::new(true));
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let legit = {
        let (running, done, addr, client) =
            (running.clone(), done.clone(), t.addr, t.client.clone());
        let first = NEXT_USER.fetch_add(25, Ordering::SeqCst);
        tokio::spawn(async move {
            let (mut times, mut failed) = (Vec::new(), 0);
            let mut n = first;
            while running.load(Ordering::SeqCst) && times.len() + failed < 25 {
                match sign_in(addr, &client, n).await {
                    Ok(d) => times.push(d),
                    Err(e) => {
                        eprintln!("legitimate sign-in failed: {e}");
                        failed += 1;
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
                n += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (times, failed)
        })
    };
    let start = Instant::now();
    let mut answers: BTreeMap<u16, usize> = BTreeMap::new();
    let mut rounds = 0;
    while rounds < 10 && (rounds == 0 || done.load(Ordering::SeqCst) < 10) {
        for (status, n) in flood(t.addr, source, total, per_sec, make.clone()).await {
            *answers.entry(status).or_default() += n;
        }
        rounds += 1;
    }
    let took = start.elapsed();
    running.store(false, Ordering::SeqCst);
    let legit = legit.await.unwrap_or_default();
    report(
        t,
        &format!("{name} ({rounds} x {total})"),
        &answers,
        legit,
        took,
    )
    .await;
}

async fn run() -> Result<(), String> {
    let mut scale = 1.0f64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--scale", Some(v)) => scale = v.parse().map_err(|_| "--scale: not a number")?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let n = |count: usize| ((count as f64 * scale) as usize).max(CONNECTIONS);
    let attacker: IpAddr = "127.0.0.2".parse().map_err(|_| "address")?;
    let t = start()?;
    let addr = t.addr;
    let origin = format!("http://{addr}");
    let mut idle = Vec::new();
    for _ in 0..10 {
        let n = NEXT_USER.fetch_add(1, Ordering::SeqCst);
        idle.push(sign_in(addr, &t.client, n).await?);
    }
    report(&t, "idle", &BTreeMap::new(), (idle, 0), Duration::ZERO).await;

    // The remembered approval of flood 2, made first from another address
    // (flood 1 spends 127.0.0.2's sign-ins).
    let helper: IpAddr = "127.0.0.3".parse().map_err(|_| "address")?;
    let page = get(
        helper,
        addr,
        &authorize_target(&t.client, "r", CHALLENGE),
        "",
    )
    .await?;
    let approver = cookie(&page, "tf_browser").ok_or("no browser cookie")?;
    let text = page.text();
    let fresh = format!(
        "csrf={}&request={}&decision=approve&exposure=all",
        encode(&hidden(&text, "csrf")?),
        encode(&hidden(&text, "request")?)
    );
    let approved = post_form(helper, addr, "/authorize", &approver, &origin, fresh).await?;
    let remembered = cookie(&approved, "tf_approved").ok_or("no approval cookie")?;

    // 1. One consent form, replayed.
    let page = get(
        attacker,
        addr,
        &authorize_target(&t.client, &"s".repeat(2048), CHALLENGE),
        "",
    )
    .await?;
    let browser = cookie(&page, "tf_browser").ok_or("no browser cookie")?;
    let text = page.text();
    let form = format!(
        "csrf={}&request={}&decision=approve&exposure=all",
        encode(&hidden(&text, "csrf")?),
        encode(&hidden(&text, "request")?)
    );
    let bytes = raw(
        addr,
        "POST",
        "/authorize",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Cookie", &browser),
            ("Origin", &origin),
        ],
        form.as_bytes(),
    );
    scenario(
        &t,
        "consent-form replay",
        attacker,
        n(5000),
        None,
        Arc::new(move |_| bytes.clone()),
    )
    .await;

    // 2. Remembered approval, a new GET each time.
    let cookies = format!("{approver}; {remembered}");
    let client = t.client.clone();
    scenario(
        &t,
        "remembered-approval GETs",
        attacker,
        n(5000),
        None,
        Arc::new(move |i| {
            raw(
                addr,
                "GET",
                &authorize_target(&client, &format!("s{i}"), CHALLENGE),
                &[("Cookie", &cookies)],
                b"",
            )
        }),
    )
    .await;

    // 3. Registrations padded to 16 KiB.
    scenario(&t, "/register x16KiB", attacker, n(20_000), None, Arc::new(move |i| {
            let mut body = json!({"client_name": format!("flood {i}"), "redirect_uris": [REDIRECT], "padding": ""});
            let pad = 16 * 1024 - body.to_string().len();
            body["padding"] = json!("p".repeat(pad));
            raw(addr, "POST", "/register", &[("Content-Type", "application/json")], body.to_string().as_bytes())
        }))
    .await;

    // 4. New metadata-document ids at 330/s, documents answering in 2 s.
    let docs = t._provider.url();
    let client_for = move |i: usize| format!("{docs}/docs/id-{i}.json");
    scenario(
        &t,
        "CIMD new ids 330/s",
        attacker,
        n(3000),
        Some(330.0),
        Arc::new(move |i| {
            raw(
                addr,
                "GET",
                &authorize_target(&client_for(i), "s", CHALLENGE),
                &[],
                b"",
            )
        }),
    )
    .await;

    // 5. Bogus codes.
    let client = t.client.clone();
    scenario(&t, "bogus codes", attacker, n(5000), None, Arc::new(move |i| {
            let form = format!(
                "grant_type=authorization_code&code=tfc_bogus{i}&client_id={}&redirect_uri={}&code_verifier={VERIFIER}",
                encode(&client),
                encode(REDIRECT)
            );
            raw(addr, "POST", "/token", &[("Content-Type", "application/x-www-form-urlencoded")], form.as_bytes())
        }))
    .await;
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("oauth_abuse: {e}");
        std::process::exit(1);
    }
}
