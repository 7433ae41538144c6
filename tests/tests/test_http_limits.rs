#![allow(clippy::unwrap_used, clippy::panic)]
//! The HTTP server's connection limits, against the real binary over raw
//! TCP: a request body that stalls is answered 408 and its connection
//! closed (JSON, other content types, chunked); an idle keep-alive
//! connection is closed while a busy one stays usable; beyond
//! `--max-connections` new connections get a 503 until slots free up; and
//! hundreds of stalled connections do not keep a well-behaved client from
//! its `tools/list`; and SIGTERM still shuts down gracefully (idle
//! connections closed, an in-flight request finished).
//!
//! Every wait is bounded, ports are picked by the OS, and the server is
//! ready when it has printed its listening line.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;
use toolforge_tests::http::{self, KeepAlive, read_until_closed};
use toolforge_tests::mcp::{HANDSHAKE_VERSION, RawClient};
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "limits-client-token-5c1e07";
const UPSTREAM_TOKEN: &str = "limits-upstream-token-d2f9";
/// Bound on a whole test.
const TEST_LIMIT: Duration = Duration::from_secs(120);
/// Slack on top of a configured timeout before a test calls it missed (the
/// machine is shared; debug builds).
const SLACK: Duration = Duration::from_secs(4);
/// The body the stalled requests announce, and the part they send.
const DECLARED: usize = 100;
const SENT: &[u8] = br#"{"jsonrpc""#;

/// Starts the server with these extra flags (no upstream is ever called:
/// the tests use `ping` and `tools/list`).
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

/// The head of an authenticated MCP POST, without its body.
fn head(addr: SocketAddr, content_type: &str, framing: &str, token: Option<&str>) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Accept: application/json, text/event-stream\r\n\
         Content-Type: {content_type}\r\nMCP-Protocol-Version: {HANDSHAKE_VERSION}\r\n{framing}\r\n\r\n"
    )
}

/// Opens a connection that sends complete headers announcing a
/// [`DECLARED`]-byte body, then only [`SENT`] of it, then nothing.
fn stalled(addr: SocketAddr, content_type: &str, token: Option<&str>) -> TcpStream {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    let framing = format!("Content-Length: {DECLARED}");
    stream
        .write_all(head(addr, content_type, &framing, token).as_bytes())
        .unwrap();
    stream.write_all(SENT).unwrap();
    stream
}

/// Like [`stalled`], with a chunked body whose first chunk arrives and whose
/// end never does.
fn stalled_chunked(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    let mut bytes = head(
        addr,
        "application/json",
        "Transfer-Encoding: chunked",
        Some(CLIENT_TOKEN),
    )
    .into_bytes();
    bytes.extend_from_slice(format!("{:x}\r\n", SENT.len()).as_bytes());
    bytes.extend_from_slice(SENT);
    bytes.extend_from_slice(b"\r\n");
    stream.write_all(&bytes).unwrap();
    stream
}

/// Reads `stream` until the server closes it (within `limit`) and parses
/// the one response it sent; also returns how long after `since` it closed.
fn answer_and_close(
    what: &str,
    stream: &mut TcpStream,
    since: Instant,
    limit: Duration,
) -> (http::Response, Duration) {
    let raw = read_until_closed(stream, limit)
        .unwrap_or_else(|e| panic!("{what}: the server did not answer and close: {e}"));
    let elapsed = since.elapsed();
    let response = http::parse(&raw).unwrap_or_else(|e| {
        panic!(
            "{what}: not one HTTP response ({e}): {:?}",
            String::from_utf8_lossy(&raw)
        )
    });
    (response, elapsed)
}

/// A `ping` request for a keep-alive connection.
fn ping_request(id: u64) -> http::Request {
    let client = RawClient::new("127.0.0.1:9".parse().unwrap(), CLIENT_TOKEN);
    http::Request {
        method: "POST".to_owned(),
        target: "/mcp".to_owned(),
        headers: client.headers(),
        body: Some(
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
                .to_string()
                .into_bytes(),
        ),
    }
}

/// Asserts a well-behaved client gets its tools listed.
fn lists_tools(test: &str, server: &Server) {
    let client = RawClient::new(server.addr(), CLIENT_TOKEN);
    let tools = with_deadline(Duration::from_secs(30), move || client.list_tools())
        .unwrap_or_else(|e| panic!("{test}: {e}"))
        .unwrap_or_else(|e| panic!("{test}: tools/list failed: {e}\n{}", server.log()));
    assert!(!tools.is_empty(), "{test}: an empty listing");
}

#[test]
fn a_stalled_body_gets_408_and_its_connection_closed() {
    let test = "a_stalled_body_gets_408_and_its_connection_closed";
    let timeout = Duration::from_secs(1);
    let server = start(&["--body-read-timeout-secs", "1"]);
    let addr = server.addr();
    let outcome = with_deadline(TEST_LIMIT, move || {
        // All three at once: each is timed from its own start.
        let opened = Instant::now();
        let cases: Vec<(&str, TcpStream)> = vec![
            (
                "JSON, Content-Length",
                stalled(addr, "application/json", Some(CLIENT_TOKEN)),
            ),
            (
                "text/plain, Content-Length",
                stalled(addr, "text/plain", Some(CLIENT_TOKEN)),
            ),
            ("JSON, chunked", stalled_chunked(addr)),
        ];
        let mut seen = Vec::new();
        for (what, mut stream) in cases {
            let (response, elapsed) = answer_and_close(what, &mut stream, opened, timeout + SLACK);
            seen.push((what, response, elapsed));
        }
        // An unauthenticated client is answered at once; its body is never waited for.
        let opened = Instant::now();
        let mut stream = stalled(addr, "application/json", None);
        let (unauthorized, unauthorized_after) =
            answer_and_close("no token", &mut stream, opened, SLACK);
        (seen, unauthorized, unauthorized_after)
    });
    let (seen, unauthorized, unauthorized_after) =
        outcome.unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    for (what, response, elapsed) in seen {
        assert_eq!(
            response.status,
            408,
            "{test}: {what}: {} {}",
            response.status,
            response.text()
        );
        assert_eq!(
            response.header("connection"),
            Some("close"),
            "{test}: {what}"
        );
        assert!(
            response
                .header("content-type")
                .is_some_and(|v| v.starts_with("text/plain")),
            "{test}: {what}: {:?}",
            response.headers
        );
        let text = response.text();
        assert!(
            text.contains("Request Timeout") && text.contains("did not arrive within 1 s"),
            "{test}: {what}: {text}"
        );
        // Answered at the deadline, not before (the reads of the partial
        // body started the clock) and not long after.
        assert!(
            elapsed >= timeout - Duration::from_millis(100),
            "{test}: {what}: answered after {elapsed:?}, before the {timeout:?} timeout"
        );
    }
    assert_eq!(unauthorized.status, 401, "{test}: {}", unauthorized.text());
    assert!(unauthorized_after < SLACK, "{test}: {unauthorized_after:?}");
    // Its body unread, the connection cannot carry another request: the
    // answer says so, so that a client does not reuse it.
    assert_eq!(
        unauthorized.header("connection"),
        Some("close"),
        "{test}: no token: {:?}",
        unauthorized.headers
    );
    assert!(
        server.log().contains("request body timed out"),
        "{test}: no log line:\n{}",
        server.log()
    );
    lists_tools(test, &server);
}

#[test]
fn idle_keep_alive_connections_are_closed_and_busy_ones_stay_usable() {
    let test = "idle_keep_alive_connections_are_closed_and_busy_ones_stay_usable";
    let idle = Duration::from_secs(1);
    let server = start(&["--idle-timeout-secs", "1"]);
    let addr = server.addr();
    let outcome = with_deadline(TEST_LIMIT, move || {
        // A connection that keeps sending requests, each well inside the
        // idle timeout, for three times its length.
        let busy = std::thread::spawn(move || {
            let mut conn = KeepAlive::connect(addr, Duration::from_secs(10)).unwrap();
            let started = Instant::now();
            let mut answered = 0u64;
            while started.elapsed() < idle * 3 {
                let response = conn
                    .send(&ping_request(answered))
                    .map_err(|e| format!("request {answered} on the busy connection: {e}"))?;
                if response.status != 200 {
                    return Err(format!("request {answered}: HTTP {}", response.status));
                }
                answered += 1;
                std::thread::sleep(idle / 4);
            }
            Ok::<_, String>(answered)
        });
        // One request, then silence: the server closes it.
        let mut conn = KeepAlive::connect(addr, Duration::from_secs(10)).unwrap();
        let response = conn.send(&ping_request(1)).unwrap();
        let closed_after = conn.wait_closed(idle + SLACK);
        (response.status, closed_after, busy.join())
    });
    let (status, closed_after, busy) =
        outcome.unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    assert_eq!(status, 200, "{test}");
    let closed_after = closed_after.unwrap_or_else(|e| {
        panic!(
            "{test}: the idle connection was not closed within {:?}: {e}",
            idle + SLACK
        )
    });
    assert!(
        closed_after >= idle - Duration::from_millis(100),
        "{test}: closed after {closed_after:?}, before the {idle:?} idle timeout"
    );
    let answered = busy
        .unwrap_or_else(|_| panic!("{test}: the busy client panicked"))
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    assert!(answered >= 8, "{test}: only {answered} requests answered");
}

#[test]
fn beyond_max_connections_new_ones_get_503_until_slots_free() {
    let test = "beyond_max_connections_new_ones_get_503_until_slots_free";
    let server = start(&["--max-connections", "4", "--body-read-timeout-secs", "3"]);
    let addr = server.addr();
    let outcome = with_deadline(TEST_LIMIT, move || {
        // The listener accepts in order: these four take every slot.
        let mut held: Vec<TcpStream> = (0..4)
            .map(|_| stalled(addr, "application/json", Some(CLIENT_TOKEN)))
            .collect();
        let mut refused = Vec::new();
        for _ in 0..10 {
            let client = RawClient::new(addr, CLIENT_TOKEN);
            let response = client
                .post_raw(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, &[])
                .map_err(|e| format!("a connection beyond the limit: {e}"))?;
            refused.push(response);
        }
        // A refused connection is closed after its answer.
        let mut extra = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
        extra
            .write_all(head(addr, "application/json", "Content-Length: 0", None).as_bytes())
            .unwrap();
        let (closed_answer, _) =
            answer_and_close("a refused connection", &mut extra, Instant::now(), SLACK);
        // The stalled four time out and close; then there is room again.
        for (i, stream) in held.iter_mut().enumerate() {
            let (response, _) = answer_and_close(
                &format!("held connection {i}"),
                stream,
                Instant::now(),
                Duration::from_secs(3) + SLACK,
            );
            if response.status != 408 {
                return Err(format!("held connection {i}: HTTP {}", response.status));
            }
        }
        let deadline = Instant::now() + SLACK;
        let client = RawClient::new(addr, CLIENT_TOKEN);
        let reopened = loop {
            match client.rpc(2, "ping", json!({})) {
                Ok(reply) => break reply,
                Err(e) if Instant::now() < deadline && e.contains("503") => {
                    // The last slot is freed just after its socket closes.
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(format!("after the held connections closed: {e}")),
            }
        };
        Ok::<_, String>((refused, closed_answer, reopened))
    });
    let (refused, closed_answer, reopened) = outcome
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()))
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    for response in refused.iter().chain([&closed_answer]) {
        assert_eq!(response.status, 503, "{test}: {}", response.text());
        assert_eq!(response.header("retry-after"), Some("1"), "{test}");
        assert_eq!(response.header("connection"), Some("close"), "{test}");
        assert!(
            response.text().contains("maximum of 4 open connections"),
            "{test}: {}",
            response.text()
        );
    }
    assert_eq!(reopened["result"], json!({}), "{test}: {reopened}");
    assert!(
        server.log().contains("connection limit reached"),
        "{test}:\n{}",
        server.log()
    );
}

#[test]
fn hundreds_of_stalled_connections_do_not_starve_a_well_behaved_client() {
    let test = "hundreds_of_stalled_connections_do_not_starve_a_well_behaved_client";
    const STALLED: usize = 300;
    let timeout = Duration::from_secs(5);
    // Default --max-connections (512); small timeouts so the test ends soon.
    // The stalled connections and the client share 127.0.0.1, which here
    // stands for many hosts: the per-address bound is lifted (it has a
    // test of its own in test_connection_fairness.rs).
    let server = start(&[
        "--body-read-timeout-secs",
        "5",
        "--idle-timeout-secs",
        "5",
        "--max-connections-per-ip",
        "512",
    ]);
    let addr = server.addr();
    let outcome = with_deadline(TEST_LIMIT, move || {
        let opened = Instant::now();
        let mut held: Vec<TcpStream> = (0..STALLED)
            .map(|_| stalled(addr, "application/json", Some(CLIENT_TOKEN)))
            .collect();
        let client = RawClient::new(addr, CLIENT_TOKEN);
        client.initialize()?;
        let tools = client.list_tools()?;
        let listed_after = opened.elapsed();
        // Still held at that point: nothing has been answered yet.
        let first = &mut held[0];
        first.set_nonblocking(true).unwrap();
        let mut probe = [0u8; 1];
        let still_held =
            matches!(first.read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        first.set_nonblocking(false).unwrap();
        // Then every one of them is answered 408 and closed.
        let mut statuses = Vec::new();
        for (i, stream) in held.iter_mut().enumerate() {
            let left = (timeout + SLACK).saturating_sub(opened.elapsed());
            let raw = read_until_closed(stream, left.max(Duration::from_millis(1)))
                .map_err(|e| format!("stalled connection {i}: {e}"))?;
            statuses.push(http::parse(&raw).map(|r| r.status).unwrap_or(0));
        }
        let tools_after = client.list_tools()?;
        Ok::<_, String>((
            tools.len(),
            listed_after,
            still_held,
            statuses,
            tools_after.len(),
        ))
    });
    let (listed, listed_after, still_held, statuses, listed_again) = outcome
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()))
        .unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    assert!(listed > 0, "{test}");
    assert!(
        still_held,
        "{test}: the listing took {listed_after:?}, past the stalled bodies' timeout"
    );
    let not_408 = statuses.iter().filter(|s| **s != 408).count();
    assert_eq!(
        not_408, 0,
        "{test}: {not_408} of {STALLED} stalled connections were not answered 408"
    );
    assert_eq!(listed_again, listed, "{test}");
}

#[test]
fn shutdown_closes_idle_connections_and_waits_for_a_stalled_body_to_time_out() {
    let test = "shutdown_closes_idle_connections_and_waits_for_a_stalled_body_to_time_out";
    let mut server = start(&[
        "--body-read-timeout-secs",
        "2",
        "--max-connections-per-ip",
        "2",
    ]);
    let addr = server.addr();
    let mut idle = KeepAlive::connect(addr, Duration::from_secs(10)).unwrap();
    assert_eq!(idle.send(&ping_request(1)).unwrap().status, 200, "{test}");
    let opened = Instant::now();
    let mut held = stalled(addr, "application/json", Some(CLIENT_TOKEN));
    // Readiness: a third connection from this address is refused only
    // once the stalled one holds the address's second slot (connections
    // are accepted in order; a refusal for the address never evicts the
    // idle one). Its head is then in the server's socket buffer, and its
    // connection reads it before it looks at the shutdown signal.
    let probe = RawClient::new(addr, CLIENT_TOKEN).rpc(3, "ping", json!({}));
    assert!(
        probe.as_ref().is_err_and(|e| e.contains("429")),
        "{test}: the probe was not refused: {probe:?}"
    );
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "{test}: kill failed");
    let outcome = with_deadline(TEST_LIMIT, move || {
        let idle_closed = idle.wait_closed(SLACK);
        let (response, after) = answer_and_close("stalled", &mut held, opened, 2 * SLACK);
        (idle_closed, response.status, after)
    });
    let (idle_closed, status, after) =
        outcome.unwrap_or_else(|e| panic!("{test}: {e}\n{}", server.log()));
    assert!(
        idle_closed.is_ok(),
        "{test}: the idle connection stayed open after SIGTERM: {idle_closed:?}"
    );
    assert_eq!(
        status, 408,
        "{test}: the stalled request was not finished with its 408"
    );
    assert!(after >= Duration::from_millis(1900), "{test}: {after:?}");
    let exit = server.wait_exit(Duration::from_secs(15));
    assert!(
        exit.is_some(),
        "{test}: still running after SIGTERM:\n{}",
        server.log()
    );
    assert!(
        server.log().contains("shutting down"),
        "{test}:\n{}",
        server.log()
    );
}
