#![allow(clippy::unwrap_used, clippy::panic)]
//! Who gets a connection slot, against the real binary over raw TCP (issue
//! 39, item 6): connections that hold a slot without a request in flight
//! (silent sockets, half-sent request heads, idle keep-alive connections
//! after an unauthenticated probe) make room for new ones at
//! `--max-connections`, so an authenticated `tools/list` still succeeds;
//! one peer address cannot hold more than `--max-connections-per-ip` while
//! another peer is served; the metrics listener is capped by
//! `--metrics-max-connections` in the same way.
//!
//! Loopback gives distinct peers on Linux: the attacker's sockets are bound
//! to 127.0.0.2 before connecting, the well-behaved client uses 127.0.0.1.
//! Every wait is bounded; ports are picked by the OS.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::json;
use toolforge_tests::http::{self, HttpError, Request, read_until_closed};
use toolforge_tests::mcp::RawClient;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "fairness-client-token-71c2";
const UPSTREAM_TOKEN: &str = "fairness-upstream-token-0b9e";
const TEST_LIMIT: Duration = Duration::from_secs(120);
/// How long the server may take to close a connection it evicts or refuses.
const CLOSE_WITHIN: Duration = Duration::from_secs(4);
/// The attacker's address.
const OTHER_PEER: &str = "127.0.0.2";

fn start(flags: &[&str]) -> Server {
    let mut config = ServerConfig::new([
        "--upstream",
        "http://127.0.0.1:9",
        "--allow-loopback-upstream",
    ])
    .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    for flag in flags {
        config = config.arg(*flag);
    }
    Server::http(&config).unwrap_or_else(|e| panic!("{e}"))
}

/// A TCP connection to `addr` from `local` (an address of the loopback
/// interface), which the server sees as that peer.
fn connect_from(local: &str, addr: SocketAddr) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
        let stream = tokio::time::timeout(Duration::from_secs(10), socket.connect(addr))
            .await
            .unwrap_or_else(|_| panic!("connecting from {local} timed out"))
            .unwrap_or_else(|e| panic!("connecting from {local}: {e}"));
        stream.into_std().unwrap()
    });
    stream.set_nonblocking(false).unwrap();
    stream
}

/// Whether the server closed `stream` within `limit` (and what it sent).
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    match read_until_closed(stream, limit) {
        Ok(raw) => Some(raw),
        Err(HttpError::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(e) => panic!("reading a held connection: {e}"),
    }
}

/// Whether the server has closed `stream` already (without waiting).
fn is_closed(mut stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut probe = [0u8; 1024];
    let closed = loop {
        match stream.read(&mut probe) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    stream.set_nonblocking(false).unwrap();
    closed
}

/// Reads one response with a `Content-Length` (a probe's) and leaves the
/// connection open.
fn read_one_response(stream: &mut TcpStream) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if got.len() >= end + 4 + length {
                assert!(head.starts_with("http/1.1 200"), "{head}");
                return;
            }
        }
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the probe's connection closed");
        got.extend_from_slice(&buf[..n]);
    }
}

/// An authenticated `ping`, whole, on a connection from `local`.
fn ping_from(local: &str, addr: SocketAddr) -> http::Response {
    let client = RawClient::new(addr, CLIENT_TOKEN);
    let request = Request {
        method: "POST".into(),
        target: "/mcp".into(),
        headers: client.headers(),
        body: Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
                .to_string()
                .into_bytes(),
        ),
    };
    let mut stream = connect_from(local, addr);
    stream.write_all(&http::encode(addr, &request)).unwrap();
    let raw = read_until_closed(&mut stream, Duration::from_secs(30)).unwrap();
    http::parse(&raw).unwrap()
}

/// The attack of the issue: the whole table held by connections that cost
/// their owner nothing, none with a request in flight. Before the fix the
/// well-behaved client got 503 until the header (10 s) or idle (60 s)
/// timeout freed a slot.
#[test]
fn silent_half_sent_and_idle_connections_make_room_for_an_authenticated_client() {
    let test = "silent_half_sent_and_idle_connections_make_room_for_an_authenticated_client";
    const MAX: usize = 9;
    let server = start(&["--max-connections", "9", "--idle-timeout-secs", "60"]);
    let addr = server.addr();
    let outcome = with_deadline(TEST_LIMIT, move || {
        let mut held = Vec::new();
        // Idle keep-alive connections after an unauthenticated probe.
        for _ in 0..3 {
            let mut stream = connect_from(OTHER_PEER, addr);
            let probe = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
            stream.write_all(probe.as_bytes()).unwrap();
            read_one_response(&mut stream);
            held.push(stream);
        }
        // Request heads that never end.
        for _ in 0..3 {
            let mut stream = connect_from(OTHER_PEER, addr);
            let partial = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: appl");
            stream.write_all(partial.as_bytes()).unwrap();
            held.push(stream);
        }
        // Sockets that never send a byte.
        for _ in 0..3 {
            held.push(connect_from(OTHER_PEER, addr));
        }
        assert_eq!(held.len(), MAX);
        // Accepted in order: all nine hold a slot before the client comes.
        let client = RawClient::new(addr, CLIENT_TOKEN);
        client.initialize()?;
        let tools = client.list_tools()?;
        // The client's first connection took the place of one of them (a
        // later one may reuse the slot the first gave back).
        std::thread::sleep(Duration::from_millis(200));
        let closed = held.iter().filter(|s| is_closed(s)).count();
        Ok::<_, String>((tools.len(), closed))
    });
    let (tools, closed) = outcome
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()))
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    assert!(tools > 0, "{test}: an empty listing");
    assert!(
        (1..MAX).contains(&closed),
        "{test}: {closed} of the {MAX} held connections were evicted (want at least one: the client's first connection found the table full)"
    );
    assert!(
        server
            .log()
            .contains("dropping the oldest connections without a request in flight"),
        "{test}: the eviction was not logged:\n{}",
        server.log()
    );
    assert!(
        !server.log().contains("connection limit reached"),
        "{test}: a connection was refused:\n{}",
        server.log()
    );
}

/// One host opening connection after connection: past its share it gets
/// 429 and a close, and another peer is served meanwhile. A slot it gives
/// back can be taken again.
#[test]
fn one_peer_cannot_exceed_its_share_while_another_peer_is_served() {
    let test = "one_peer_cannot_exceed_its_share_while_another_peer_is_served";
    let server = start(&["--max-connections-per-ip", "4"]);
    let addr = server.addr();
    let outcome = with_deadline(TEST_LIMIT, move || {
        let mut held: Vec<TcpStream> = (0..4).map(|_| connect_from(OTHER_PEER, addr)).collect();
        // Its fifth, sixth, ... connections are refused however they behave.
        let refused: Vec<http::Response> = (0..3).map(|_| ping_from(OTHER_PEER, addr)).collect();
        // Another peer is served (with the default table of 512).
        let client = RawClient::new(addr, CLIENT_TOKEN);
        let tools = client.list_tools()?;
        let pinged = ping_from("127.0.0.1", addr);
        // The four held ones were not evicted: nobody needed their room.
        let still_held = held.iter().all(|s| !is_closed(s));
        // One closes; its slot is given back to the same peer.
        drop(held.pop());
        let deadline = std::time::Instant::now() + CLOSE_WITHIN;
        let again = loop {
            let response = ping_from(OTHER_PEER, addr);
            if response.status != 429 || std::time::Instant::now() > deadline {
                break response;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok::<_, String>((refused, tools.len(), pinged, still_held, again))
    });
    let (refused, tools, pinged, still_held, again) = outcome
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()))
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    for response in &refused {
        assert_eq!(response.status, 429, "{test}: {}", response.text());
        assert_eq!(response.header("retry-after"), Some("1"), "{test}");
        assert_eq!(response.header("connection"), Some("close"), "{test}");
        assert!(
            response
                .text()
                .contains("your address has the maximum of 4 open connections"),
            "{test}: {}",
            response.text()
        );
    }
    assert!(tools > 0, "{test}");
    assert_eq!(pinged.status, 200, "{test}: {}", pinged.text());
    assert!(still_held, "{test}: a held connection was closed");
    assert_eq!(again.status, 200, "{test}: {}", again.text());
}

fn metrics_addr(server: &Server) -> SocketAddr {
    let log = server.log();
    let rest = log
        .split("metrics on http://")
        .nth(1)
        .unwrap_or_else(|| panic!("no metrics line:\n{log}"));
    rest.split('/').next().unwrap().parse().unwrap()
}

/// The metrics listener had no bound at all: every socket held a task and
/// a descriptor for 30 s. Now at most `--metrics-max-connections` are open
/// (the rest answered 429 or evicted), and a scrape still gets through.
#[test]
fn the_metrics_listener_is_capped_and_still_scraped() {
    let test = "the_metrics_listener_is_capped_and_still_scraped";
    const HELD: usize = 10;
    const CAP: usize = 4;
    let server = start(&[
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-max-connections",
        "4",
    ]);
    let metrics = metrics_addr(&server);
    let outcome = with_deadline(TEST_LIMIT, move || {
        let mut held: Vec<TcpStream> = (0..HELD)
            .map(|_| connect_from(OTHER_PEER, metrics))
            .collect();
        // Past the cap, each is answered 429 and closed at once.
        let mut answered = Vec::new();
        for stream in &mut held[CAP..] {
            answered.push(closed_within(stream, CLOSE_WITHIN));
        }
        let before_scrape = held[..CAP].iter().filter(|s| is_closed(s)).count();
        let scrape = http::send(
            metrics,
            &Request {
                method: "GET".into(),
                target: "/metrics".into(),
                ..Request::default()
            },
            Duration::from_secs(10),
        )
        .map_err(|e| format!("scrape: {e}"))?;
        // The scrape took the oldest silent connection's place.
        let evicted = closed_within(&mut held[0], CLOSE_WITHIN).is_some();
        Ok::<_, String>((answered, before_scrape, scrape, evicted))
    });
    let (answered, before_scrape, scrape, evicted) = outcome
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()))
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    for (i, raw) in answered.iter().enumerate() {
        let raw = raw
            .as_ref()
            .unwrap_or_else(|| panic!("{test}: connection {} past the cap stayed open", CAP + i));
        let response = http::parse(raw).unwrap();
        assert_eq!(response.status, 429, "{test}: {}", response.text());
    }
    assert_eq!(
        before_scrape, 0,
        "{test}: a connection within the cap was closed"
    );
    assert_eq!(scrape.status, 200, "{test}: {}", scrape.text());
    assert!(
        scrape
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/plain; version=0.0.4")),
        "{test}: {:?}",
        scrape.headers
    );
    assert!(
        evicted,
        "{test}: the oldest silent connection was not evicted"
    );
}
