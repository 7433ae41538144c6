#![allow(clippy::unwrap_used, clippy::panic)]
//! HTTP basic with an empty password, end to end: the generated Larder
//! server (`larder-mcp`) over stdio with only the basic user-name variable
//! set (as Stripe takes its key) calls a basic-auth tool against a
//! loopback upstream that accepts only `Basic base64(user + ":")`. The
//! start-up summary names, per unset variable, the tools it disables, and
//! does not report basic as missing.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use toolforge_tests::upstream::{Reply, Upstream};

const USER: &str = "sk_test_larder_4eC39HqLyjWDarjt";

/// `larder-mcp`, built (a no-op when up to date) into the target directory.
fn binary() -> PathBuf {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "larder-tools",
            "--bin",
            "larder-mcp",
        ])
        .current_dir(&workspace)
        .status()
        .unwrap();
    assert!(status.success(), "building larder-mcp");
    target.join("debug").join("larder-mcp")
}

#[test]
fn a_basic_user_name_alone_calls_a_basic_auth_tool() {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:"))
    );
    let upstream = Upstream::start(move |req| {
        if req.path() == "/suppliers" && req.header("authorization") == Some(expected.as_str()) {
            Reply::json(
                201,
                &json!({"id": "sup_a1b2c3d4", "name": "Mill", "country": "GB", "sells": []}),
            )
        } else {
            Reply::json(401, &json!({"message": "bad credential"}))
        }
    })
    .unwrap();

    let mut child = Command::new(binary())
        .args(["serve", "--transport", "stdio", "--allow-loopback-upstream"])
        .arg("--upstream")
        .arg(upstream.url())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "info")
        .env("LARDER_BASIC_AUTH_USERNAME", USER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            text.push_str(&line);
            text.push('\n');
        }
        text
    });

    let send = |stdin: &mut std::process::ChildStdin, msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };
    let reply = |id: u64| -> Value {
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("no reply {id} from pid {pid}: {e}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "basic-test", "version": "1"}}}),
    );
    assert!(reply(1)["result"].is_object());
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "create_supplier", "arguments": {"name": "Mill", "country": "GB"}}}),
    );
    let result = reply(2)["result"].clone();
    assert_eq!(result["isError"], false, "{result}");
    assert!(result.to_string().contains("sup_a1b2c3d4"), "{result}");
    assert!(!result.to_string().contains(USER), "{result}");
    let seen = upstream.requests();
    assert_eq!(seen.len(), 1, "one upstream call");

    // End of input stops a stdio server; killed (this child, by its
    // handle) if it has not stopped in time.
    drop(stdin);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait().unwrap();
    let log = log.join().unwrap();
    assert!(!log.contains(USER), "the key reaches no log line: {log}");
    // Basic is configured by the user name alone: not reported unset.
    assert!(!log.contains("LARDER_BASIC_AUTH"), "{log}");
    // Each unset variable that disables a tool names the tools.
    assert!(
        log.contains("LARDER_KEY_HEADER unset disables 15 tools: create_item,"),
        "{log}"
    );
    assert!(
        log.contains("LARDER_KEY_QUERY unset disables 4 tools: get_item, export_inventory,"),
        "{log}"
    );
}
