#![allow(clippy::unwrap_used, clippy::panic)]
//! The Prometheus endpoint of the real server (`--metrics-listen`): a
//! scrape passes `promtool check metrics` (Debian `prometheus`), and its
//! counters move as calls are made: a successful call, an upstream 500 (a
//! tool error), a 403 (refused), arguments the input schema refuses, a
//! request with a bad client token, a `tools/list`; upstream status classes
//! and the latency histogram follow. Without `--metrics-listen` nothing
//! listens.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use toolforge_tests::http::{self, Request};
use toolforge_tests::mcp::RawClient;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "metrics-client-token-1b2c";
const UPSTREAM_TOKEN: &str = "metrics-upstream-secret-9f8e";
const OK_ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
const FAIL_ZONE: &str = "5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f";
const DENIED_ZONE: &str = "4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d";
const LIMIT: Duration = Duration::from_secs(90);

/// One sample line: name, labels, value.
type Samples = Vec<(String, BTreeMap<String, String>, f64)>;

fn parse(text: &str) -> Samples {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap();
        let (name, labels) = match head.split_once('{') {
            Some((name, rest)) => {
                let mut labels = BTreeMap::new();
                for pair in rest.trim_end_matches('}').split("\",") {
                    if let Some((k, v)) = pair.split_once("=\"") {
                        labels.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
                    }
                }
                (name.to_owned(), labels)
            }
            None => (head.to_owned(), BTreeMap::new()),
        };
        out.push((name, labels, value));
    }
    out
}

/// The value of `name` whose labels include `want` (0 when absent).
fn value(samples: &Samples, name: &str, want: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(n, labels, _)| {
            n == name
                && want
                    .iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, v)| v)
        .sum()
}

fn metrics_addr(server: &Server) -> SocketAddr {
    let log = server.log();
    let rest = log
        .split("metrics on http://")
        .nth(1)
        .unwrap_or_else(|| panic!("no metrics line:\n{log}"));
    rest.split('/').next().unwrap().parse().unwrap()
}

fn scrape(addr: SocketAddr) -> String {
    let request = Request {
        method: "GET".into(),
        target: "/metrics".into(),
        ..Request::default()
    };
    let resp = http::send(addr, &request, Duration::from_secs(10)).unwrap();
    assert_eq!(resp.status, 200);
    assert!(
        resp.header("content-type")
            .is_some_and(|c| c.starts_with("text/plain; version=0.0.4")),
        "{:?}",
        resp.headers
    );
    resp.text()
}

/// `promtool check metrics` on the scrape; loud skip when promtool is
/// missing outside CI (`.ci/run` installs it).
fn promtool_check(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "SKIPPED promtool check: promtool not found ({e}); apt-get install prometheus"
            );
            return;
        }
        Err(e) => panic!("promtool is required in CI: {e}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics failed ({}):\n{}{}\n--- scrape ---\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn scrape_passes_promtool_and_counters_move() {
    with_deadline(LIMIT, || {
        let upstream = Upstream::start(|req| match req.path() {
            p if p.ends_with(FAIL_ZONE) => Reply::cf_error(500, 1000, "internal"),
            p if p.ends_with(DENIED_ZONE) => Reply::cf_error(403, 10000, "denied"),
            _ => Reply::envelope(json!({"id": OK_ZONE, "name": "m.example", "status": "active"})),
        })
        .unwrap();
        let config = ServerConfig::new([
            "--upstream".to_owned(),
            upstream.url(),
            "--allow-loopback-upstream".to_owned(),
            "--metrics-listen".to_owned(),
            "127.0.0.1:0".to_owned(),
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let addr = metrics_addr(&server);
        let before = scrape(addr);
        promtool_check(&before);
        let before = parse(&before);
        assert_eq!(
            value(
                &before,
                "toolforge_auth_events_total",
                &[("event", "issued")]
            ),
            0.0
        );

        let client = RawClient::new(server.addr(), CLIENT_TOKEN);
        client.initialize().unwrap();
        assert!(!client.list_tools().unwrap().is_empty());
        for _ in 0..3 {
            let r = client
                .call_tool("zones_get", json!({"zone_id": OK_ZONE}))
                .unwrap();
            assert_ne!(r["isError"], true, "{r}");
        }
        let r = client
            .call_tool("zones_get", json!({"zone_id": FAIL_ZONE}))
            .unwrap();
        assert_eq!(r["isError"], true, "{r}");
        let r = client
            .call_tool("zones_get", json!({"zone_id": DENIED_ZONE}))
            .unwrap();
        assert_eq!(r["isError"], true, "{r}");
        let r = client
            .call_tool("zones_get", json!({"zone_id": 7}))
            .unwrap();
        assert_eq!(r["isError"], true, "{r}");
        let bad = RawClient::new(server.addr(), "not-a-valid-token");
        assert_eq!(bad.post_raw(b"{}", &[]).unwrap().status, 401);

        let text = scrape(addr);
        promtool_check(&text);
        let after = parse(&text);
        let calls = |outcome: &str| {
            value(
                &after,
                "toolforge_tool_calls_total",
                &[
                    ("tool", "zones_get"),
                    ("surface", "direct"),
                    ("outcome", outcome),
                ],
            )
        };
        assert_eq!(calls("ok"), 3.0, "{text}");
        assert_eq!(calls("tool_error"), 1.0, "{text}");
        assert_eq!(calls("refused"), 1.0, "{text}");
        assert_eq!(calls("invalid_arguments"), 1.0, "{text}");
        let class = |c: &str| {
            value(
                &after,
                "toolforge_upstream_responses_total",
                &[("class", c)],
            )
        };
        assert_eq!(
            (class("2xx"), class("4xx"), class("5xx")),
            (3.0, 1.0, 1.0),
            "{text}"
        );
        assert_eq!(
            value(
                &after,
                "toolforge_upstream_duration_seconds_count",
                &[("class", "2xx")]
            ),
            3.0,
            "{text}"
        );
        assert_eq!(
            value(
                &after,
                "toolforge_auth_events_total",
                &[("event", "rejected")]
            ),
            1.0,
            "{text}"
        );
        assert_eq!(
            value(
                &after,
                "toolforge_listing_requests_total",
                &[("encoding", "identity")]
            ),
            1.0,
            "{text}"
        );
        assert!(
            value(
                &after,
                "toolforge_listing_bytes_total",
                &[("encoding", "identity")]
            ) > 1000.0,
            "{text}"
        );
        // Bounded labels: no zone ids, no paths, no tokens in the exposition.
        for secret in [
            OK_ZONE,
            FAIL_ZONE,
            DENIED_ZONE,
            CLIENT_TOKEN,
            UPSTREAM_TOKEN,
            "/zones",
        ] {
            assert!(!text.contains(secret), "{secret} in the scrape");
        }
    })
    .unwrap();
}
