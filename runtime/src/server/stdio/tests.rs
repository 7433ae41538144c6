use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;
use crate::request::testing::custom;

fn core() -> Arc<Core> {
    crate::server::example_core_tests::example_core(&["a_get", "b_get"])
}

#[tokio::test]
async fn both_protocol_eras_and_bad_input_over_a_byte_stream() {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let task = tokio::spawn(serve_io(
        core(),
        None,
        1 << 20,
        server_read,
        server_write,
        std::future::pending(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut send = async |v: Value| {
        client_write
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    };
    // 2026-07-28 discovery before anything else
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    )
    .await;
    let d: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert!(
        d["result"]["supportedVersions"]
            .to_string()
            .contains("2026-07-28"),
        "{d}"
    );
    // then the 2025-11-25 handshake
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    .await;
    let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})).await;
    let list: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["a_get", "b_get"]);
    // wrong shapes and garbage get errors with `"id": null`, bad params
    // of a known method -32602 with the id; the session goes on
    send(json!("just a string")).await;
    let e: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert_eq!(e.get("id"), Some(&Value::Null), "{e}");
    client_write.write_all(b"{garbage\n").await.unwrap();
    let e: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e.get("id"), Some(&Value::Null), "{e}");
    client_write.write_all(b"\r\n  \n").await.unwrap();
    client_write
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":7}}\r\n",
        )
        .await
        .unwrap();
    let e: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert_eq!(e["id"], 9, "{e}");
    let mut send = async |v: Value| {
        client_write
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "a_get", "arguments": {"x": "y".repeat(5000)}}})).await;
    let big: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(big["id"], 4);
    assert!(
        big["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large"),
        "{big}"
    );
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "a_get"}}))
        .await;
    let call: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(call["result"]["isError"], true);
    assert!(
        call["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("EXAMPLE_API_TOKEN")
    );
    drop(client_write);
    drop(lines);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the session ends when the client leaves")
        .unwrap()
        .unwrap();
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A fresh path in the temporary directory (removed on drop).
struct TempPath(std::path::PathBuf);

impl TempPath {
    fn new(what: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(
            std::env::temp_dir().join(format!("toolforge-stdio-{}-{n}-{what}", std::process::id())),
        )
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn messages(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn regular_files_as_stdin_and_stdout_get_every_answer_and_end_at_eof() {
    let input = TempPath::new("in.jsonl");
    let output = TempPath::new("out.jsonl");
    // the last line has no line end: it is still a message
    let lines = [
        INITIALIZE,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        "not json",
    ];
    std::fs::write(&input.0, lines.join("\n")).unwrap();
    let read = std::fs::File::open(&input.0).unwrap();
    let write = std::fs::File::create(&output.0).unwrap();
    tokio::time::timeout(
        Duration::from_secs(10),
        serve_blocking(core(), None, 1 << 20, read, write, std::future::pending()),
    )
    .await
    .expect("the session ends at the end of a regular file")
    .unwrap();
    let out = messages(&output.0);
    assert_eq!(out.len(), 4, "{out:?}");
    let by_id = |id: Value| out.iter().find(|m| m["id"] == id).unwrap();
    assert_eq!(by_id(json!(1))["result"]["protocolVersion"], "2025-11-25");
    // the listing is spliced in on this path too
    assert_eq!(by_id(json!(2))["result"]["tools"][1]["name"], "b_get");
    assert_eq!(by_id(json!(3))["result"], json!({}));
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700);
}

#[test]
fn shutdown_ends_the_session_and_the_runtime_while_stdin_stays_open() {
    let output = TempPath::new("out.jsonl");
    let path = output.0.clone();
    let (read, mut client) = std::io::pipe().unwrap();
    writeln!(client, "{INITIALIZE}").unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    // The runtime is dropped inside the thread: that must not wait for
    // the thread blocked reading the still open pipe.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let result = runtime.block_on(async move {
            let write = std::fs::File::create(&path).unwrap();
            // the answer to initialize is written before the "signal"
            let shutdown = async {
                for _ in 0..500 {
                    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            };
            serve_blocking(core(), None, 1 << 20, read, write, shutdown).await
        });
        drop(runtime);
        let _ = done.send(result.is_ok());
    });
    let ok = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the session and the runtime end on shutdown with stdin open");
    assert!(ok);
    let out = messages(&output.0);
    assert_eq!(out[0]["id"], 1, "{out:?}");
    drop(client);
}

#[tokio::test]
async fn oversized_lines_are_dropped_and_the_session_goes_on() {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let task = tokio::spawn(serve_io(
        core(),
        None,
        200,
        server_read,
        server_write,
        std::future::pending(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"x":"{}"}}}}}}"#,
        "y".repeat(5000)
    );
    client_write
        .write_all(format!("{INITIALIZE}\n").as_bytes())
        .await
        .unwrap();
    let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(init["id"], 1, "{init}");
    for line in [long.as_str(), r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#] {
        client_write.write_all(line.as_bytes()).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    }
    let m: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(m["id"], 2, "{m}");
    assert_eq!(m["result"], json!({}), "{m}");
    // end of input: the session ends and shuts its output down
    client_write.shutdown().await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await;
    assert!(end.unwrap().unwrap().is_none(), "the output ends");
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// A core whose one tool has a nullable argument (strict drops the `null`).
fn nullable_core() -> Arc<Core> {
    crate::server::example_core_tests::example_core_of(vec![custom(|t| {
        t.name = "a_get";
        t.input_schema = crate::catalogue::SharedText::Text(
            r#"{"type":"object","properties":{"x":{"type":["string","null"]}}}"#,
        );
    })])
}

/// The type of `x` a stdio session is listed after `messages`.
async fn listed_type(messages: Vec<Value>) -> Value {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let task = tokio::spawn(serve_io(
        nullable_core(),
        None,
        1 << 20,
        server_read,
        server_write,
        std::future::pending(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut listed = Value::Null;
    for message in messages {
        client_write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        if message.get("id").is_none() {
            continue;
        }
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        if message["method"] == "tools/list" {
            listed = answer["result"]["tools"][0]["inputSchema"]["properties"]["x"]["type"].clone();
        }
    }
    task.abort();
    listed
}

fn initialize(name: &str) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]
}

/// Over stdio the client's `initialize` name, or its 2026-07-28 `_meta`
/// `clientInfo`, chooses the profile (a strict client gets no `null`).
#[tokio::test]
async fn the_announced_client_name_chooses_the_schema_profile() {
    let full = json!(["string", "null"]);
    let strict = json!("string");
    assert_eq!(listed_type(initialize("claude-code")).await, full);
    assert_eq!(listed_type(initialize("codex-mcp-client")).await, strict);
    assert_eq!(listed_type(initialize("some-agent")).await, full);
    let meta = |name: &str| {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
        })
    };
    let stateless = |name: &str| {
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta(name)}}),
        ]
    };
    assert_eq!(listed_type(stateless("gemini-cli")).await, strict);
    assert_eq!(listed_type(stateless("claude-code")).await, full);
}
