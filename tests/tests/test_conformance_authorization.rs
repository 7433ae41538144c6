//! The MCP conformance suite's authorization-server scenarios
//! (`conformance authorization`, 0.2.0-alpha.12 installed as
//! `@modelcontextprotocol/conformance-next`; 0.1.16 has none) against
//! `--auth oauth`: `authorization-server-metadata-endpoint` and
//! `authorization-code-grant`. The suite prints the authorization URL for
//! a person to open; the test is that person, walking the consent page and
//! the (loopback) upstream provider with a cookie-keeping HTTP client until
//! the browser lands on the suite's callback server. Every check must be
//! SUCCESS. The server side runs in process (the runtime's OAuth harness).
//!
//! Needs `npm ci --prefix tests` (tests/run.sh); `TOOLFORGE_SKIP_NODE=1`
//! skips loudly.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "../../runtime/tests/oauth_support/mod.rs"]
mod oauth_support;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use oauth_support::*;
use toolforge_tests::clients;

/// Bound on the whole suite run.
const LIMIT: Duration = Duration::from_secs(120);

fn suite_entry() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/@modelcontextprotocol/conformance-next/dist/index.js")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the suite by its process id when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_authorization_server_scenarios_pass() {
    if !clients::require_node("conformance_authorization_server_scenarios_pass").unwrap() {
        return;
    }
    assert!(
        suite_entry().exists(),
        "{} is missing: run `npm ci --prefix tests`",
        suite_entry().display()
    );
    let h = start(Options::default()).await;
    let port = free_port();
    let callback = format!("http://127.0.0.1:{port}/callback");
    let client = h.register(&[&callback]).await;
    let out = tempfile::tempdir().unwrap();
    let mut child = Child(
        Command::new("node")
            .arg(suite_entry())
            .args(["authorization", "--url", &h.origin, "--client-id", &client])
            .args(["--resource", &h.resource(), "--port", &port.to_string()])
            .arg("--output-dir")
            .arg(out.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + LIMIT;
    let mut transcript = String::new();
    let mut walked = false;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "the suite did not finish in time:\n{transcript}"
        );
        let line = match rx.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(status) = child.0.try_wait().unwrap() {
                    assert!(
                        status.success() || walked,
                        "suite exited {status}:\n{transcript}"
                    );
                    break;
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        transcript.push_str(&line);
        transcript.push('\n');
        let trimmed = line.trim();
        if !walked && trimmed.starts_with(&format!("{}/authorize?", h.origin)) {
            walked = true;
            let mut browser = Browser::default();
            let consent = browser.get(trimmed).await;
            assert_eq!(consent.status, 200, "{}", consent.body);
            let to_provider = h.approve(&mut browser, &consent, "all").await;
            assert_eq!(to_provider.status, 302);
            let back = browser.get(to_provider.location.as_deref().unwrap()).await;
            let done = browser.get(back.location.as_deref().unwrap()).await;
            let landing = done.location.unwrap();
            assert!(landing.starts_with(&callback), "{landing}");
            // The browser follows the last redirect to the suite's callback.
            let _ = browser.get(&landing).await;
        }
    }
    let _ = child.0.wait();
    assert!(
        walked,
        "the suite never printed an authorization URL:\n{transcript}"
    );
    let mut checks = Vec::new();
    for entry in walk(out.path()) {
        if entry.file_name().is_some_and(|n| n == "checks.json") {
            let parsed: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&entry).unwrap()).unwrap();
            checks.extend(parsed.as_array().cloned().unwrap_or_default());
        }
    }
    let ids: Vec<String> = checks
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["id"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?")
            )
        })
        .collect();
    println!("conformance authorization: {}", ids.join(", "));
    for scenario in ["authorization-server-metadata", "authorization-code-grant"] {
        assert!(
            checks
                .iter()
                .any(|c| c["id"].as_str().is_some_and(|id| id.starts_with(scenario))),
            "no check of {scenario}: {ids:?}\n{transcript}"
        );
    }
    let failed: Vec<&String> = ids.iter().filter(|s| !s.ends_with("SUCCESS")).collect();
    assert!(
        failed.is_empty(),
        "not all checks passed: {failed:?}\n{transcript}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}
