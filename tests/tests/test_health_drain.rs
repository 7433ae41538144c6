#![allow(clippy::unwrap_used, clippy::panic)]
//! `/healthz`, `/readyz` and the SIGTERM drain of the real server binary:
//! probes answer without a client token; a `tools/call` whose upstream
//! request is held open when SIGTERM arrives still gets its answer; the
//! server stops accepting new connections at once, `/readyz` is no longer
//! served, and the process exits 0 once the call has been answered.

use std::net::TcpStream;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_tests::http::{self, Request};
use toolforge_tests::mcp::{RawClient, result_text};
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "drain-client-token-5d1e";
const UPSTREAM_TOKEN: &str = "drain-upstream-secret-77aa";
const ZONE: &str = "0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d";
const LIMIT: Duration = Duration::from_secs(90);
const WAIT: Duration = Duration::from_secs(30);

fn get(server: &Server, target: &str) -> http::Response {
    let request = Request {
        method: "GET".into(),
        target: target.into(),
        ..Request::default()
    };
    http::send(server.addr(), &request, WAIT).unwrap()
}

/// Polls (bounded) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn probes_answer_without_a_token() {
    with_deadline(LIMIT, || {
        let upstream = Upstream::start(|_| Reply::envelope(json!({}))).unwrap();
        let config = ServerConfig::new([
            "--upstream".to_owned(),
            upstream.url(),
            "--allow-loopback-upstream".to_owned(),
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let health = get(&server, "/healthz");
        assert_eq!((health.status, health.text().trim()), (200, "ok"));
        let ready = get(&server, "/readyz");
        assert_eq!(ready.status, 200, "{}", ready.text());
        let body: Value = serde_json::from_slice(&ready.body).unwrap();
        assert_eq!(body["status"], "ready", "{body}");
        assert_eq!(body["checks"]["catalogue"], "ok", "{body}");
        // /mcp itself still needs the token.
        let mcp = RawClient {
            token: None,
            ..RawClient::new(server.addr(), CLIENT_TOKEN)
        };
        assert_eq!(mcp.post_raw(b"{}", &[]).unwrap().status, 401);
    })
    .unwrap();
}

#[test]
fn sigterm_drains_an_in_flight_call_then_exits_zero() {
    with_deadline(LIMIT, || {
        // The upstream holds the zone request until the test releases it.
        let (arrived_tx, arrived_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let arrived_tx = Mutex::new(arrived_tx);
        let release_rx = Arc::new(Mutex::new(release_rx));
        let upstream = Upstream::start(move |req| {
            if req.path() == format!("/zones/{ZONE}") {
                let _ = arrived_tx.lock().unwrap().send(());
                let _ = release_rx.lock().unwrap().recv_timeout(WAIT);
            }
            Reply::envelope(json!({"id": ZONE, "name": "drained.example", "status": "active"}))
        })
        .unwrap();
        let config = ServerConfig::new([
            "--upstream".to_owned(),
            upstream.url(),
            "--allow-loopback-upstream".to_owned(),
            "--drain-timeout-secs".to_owned(),
            "30".to_owned(),
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let mut server = Server::http(&config).unwrap();
        let addr = server.addr();
        let client = RawClient::new(addr, CLIENT_TOKEN);
        let call =
            std::thread::spawn(move || client.call_tool("zones_get", json!({"zone_id": ZONE})));
        arrived_rx
            .recv_timeout(WAIT)
            .expect("the call reached the upstream");

        let status = std::process::Command::new("kill")
            .args(["-TERM", &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        wait_until("the drain to start", || {
            server.log().contains("stopped accepting")
        });
        // No new connections while draining; the process is still running.
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(),
            "a connection was accepted after SIGTERM"
        );
        assert_eq!(
            server.exit_status(),
            None,
            "exited before the call was answered"
        );

        release_tx.send(()).unwrap();
        let result = call.join().unwrap().unwrap();
        assert_ne!(result["isError"], true, "{result}");
        assert!(result_text(&result).contains("drained.example"), "{result}");
        let exit = server
            .wait_exit(WAIT)
            .expect("the server exits after the drain");
        assert_eq!(exit, "exit status: 0", "{}", server.log());
        assert!(
            server.log().contains("in-flight requests finished"),
            "{}",
            server.log()
        );
    })
    .unwrap();
}

/// A second SIGTERM (or SIGINT) during the drain ends it at once: the held
/// call is abandoned (its connection closed without an answer) and the
/// process exits 1, saying why, instead of waiting up to the drain timeout.
/// Before, the second signal was ignored and the process waited for the
/// upstream (here: until the test released it).
#[test]
fn a_second_signal_ends_the_drain_at_once_and_exits_non_zero() {
    with_deadline(LIMIT, || {
        for signal in ["-TERM", "-INT"] {
            let (arrived_tx, arrived_rx) = mpsc::channel::<()>();
            let (release_tx, release_rx) = mpsc::channel::<()>();
            let arrived_tx = Mutex::new(arrived_tx);
            let release_rx = Arc::new(Mutex::new(release_rx));
            let upstream = Upstream::start(move |req| {
                if req.path() == format!("/zones/{ZONE}") {
                    let _ = arrived_tx.lock().unwrap().send(());
                    let _ = release_rx.lock().unwrap().recv_timeout(WAIT);
                }
                Reply::envelope(json!({"id": ZONE, "name": "held.example", "status": "active"}))
            })
            .unwrap();
            let config = ServerConfig::new([
                "--upstream".to_owned(),
                upstream.url(),
                "--allow-loopback-upstream".to_owned(),
                "--drain-timeout-secs".to_owned(),
                "60".to_owned(),
            ])
            .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
            let mut server = Server::http(&config).unwrap();
            let client = RawClient::new(server.addr(), CLIENT_TOKEN);
            let call =
                std::thread::spawn(move || client.call_tool("zones_get", json!({"zone_id": ZONE})));
            arrived_rx
                .recv_timeout(WAIT)
                .expect("the call reached the upstream");
            let pid = server.pid().to_string();
            let kill = |what: &str| {
                let status = std::process::Command::new("kill")
                    .args([signal, &pid])
                    .status()
                    .unwrap();
                assert!(status.success(), "{signal}: {what}");
            };
            kill("first");
            wait_until("the drain to start", || {
                server.log().contains("stopped accepting")
            });
            assert_eq!(server.exit_status(), None, "{signal}: exited at once");
            let second = Instant::now();
            kill("second");
            let exit = server
                .wait_exit(Duration::from_secs(10))
                .unwrap_or_else(|| panic!("{signal}: still draining after a second signal"));
            assert!(
                second.elapsed() < Duration::from_secs(10),
                "{signal}: {:?}",
                second.elapsed()
            );
            assert_eq!(exit, "exit status: 1", "{signal}: {}", server.log());
            let log = server.log();
            assert!(log.contains("second signal"), "{signal}: {log}");
            assert!(
                !log.contains("in-flight requests finished"),
                "{signal}: {log}"
            );
            // The abandoned call got no answer.
            assert!(
                call.join().unwrap().is_err(),
                "{signal}: the call was answered"
            );
            let _ = release_tx.send(());
        }
    })
    .unwrap();
}
