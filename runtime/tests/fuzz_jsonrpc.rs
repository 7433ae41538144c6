//! Fuzz targets for the JSON-RPC decoding in front of rmcp (see
//! `toolforge-fuzz` for the driver, budgets and crash files):
//!
//! - `jsonrpc_line`: one stdio line ([`decode_line`]) and one HTTP body
//!   ([`classify`]), generated from the messages MCP clients send and
//!   mutated at the JSON and the byte level. Properties: no panic; blank
//!   lines are ignored; non-JSON gets `-32700` and wrong shapes `-32600`,
//!   both with `"id": null`; `-32602` (bad params) and `-32601` (an
//!   unknown method, its name clipped) carry the request's own id; every
//!   reply is a well-formed, short JSON-RPC error; a message handed to rmcp
//!   keeps the client's `id` and `method`.
//! - `stdio_framing`: a byte stream cut into random chunks, read with
//!   random cancellations by the transport's line reader ([`LineFramer`]).
//!   Property: the lines (and the oversized ones dropped) are exactly those
//!   of splitting the stream at `\n`, whatever the chunking.
//! - `stdio_session`: a whole MCP session over the stdio transport
//!   ([`serve_io`], a one-tool catalogue, no credential, no network): a
//!   handshake or not, then lines as `jsonrpc_line` makes them. Properties:
//!   no panic in the transport, the guard or rmcp; the session ends once
//!   the input does; every line written is a JSON-RPC 2.0 object.
//!
//! `TOOLFORGE_FUZZ_SECS=60 cargo test -p toolforge-runtime --test fuzz_jsonrpc`
#![allow(clippy::unwrap_used, clippy::panic)]

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use toolforge_fuzz::json::{Doc, random_value};
use toolforge_fuzz::mutate::havoc;
use toolforge_fuzz::{Pool, Rng, Target};
use toolforge_runtime::catalogue::{
    Annotations, Catalogue, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Product, Route,
    ToolDef,
};
use toolforge_runtime::config::{Exposure, UpstreamConfig, validate_upstream};
use toolforge_runtime::server::fuzzing::{Framed, LineFramer, Verdict, classify, decode_line};
use toolforge_runtime::server::stdio::serve_io;
use toolforge_runtime::server::{Core, CoreOptions};

/// Largest generated input (the stdio transport's lines are bounded by
/// the CLI well above the 1 MiB argument limit).
const MAX_INPUT: usize = 1 << 20;

/// Lines MCP clients send, taken from the repository's tests (stdio and
/// HTTP tests, both protocol eras), plus near misses those tests check.
const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"abc","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a_get","arguments":{}}}"#,
    r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"dns_records_list","arguments":{"zone_id":"023e105f4ecef8ad9ca31a8372d0c353","per_page":50}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute","arguments":{"code":"async () => api.request({method: 'GET', path: '/zones'})"}}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"progressToken":1}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{"a":1}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_get","arguments":[1]}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"pi"#,
    "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
    "\r\n",
];

const METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "server/discover",
    "tools/list",
    "tools/call",
    "ping",
    "notifications/cancelled",
    "notifications/progress",
    "resources/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "nope/nope",
    "",
];

const KEYS: &[&str] = &[
    "jsonrpc",
    "id",
    "method",
    "params",
    "result",
    "error",
    "code",
    "message",
    "data",
    "name",
    "arguments",
    "cursor",
    "_meta",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "version",
    "progressToken",
    "requestId",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "task",
];

const STRINGS: &[&str] = &[
    "2.0",
    "1.0",
    "2025-11-25",
    "2025-06-18",
    "2026-07-28",
    "a_get",
    "dns_records_list",
    "search",
    "execute",
    "code",
];

const TOKENS: &[&[u8]] = &[
    b"\"jsonrpc\":\"2.0\",",
    b"\"id\":",
    b"\"method\":",
    b"\"params\":",
    b"\"result\":{}",
    b"\"error\":",
    b"\"tools/call\"",
    b"\"initialize\"",
    b"null",
    b"true",
    b"{}",
    b"[]",
    b"\\u0000",
    b"\\ud800",
    b"\\\"",
    b"1e999",
    b"18446744073709551616",
    b",",
    b":",
    b"\"",
];

fn target(name: &'static str, command: &'static str, seeds: Vec<Vec<u8>>) -> Target {
    Target {
        name,
        test: name,
        work_dir: env!("CARGO_TARGET_TMPDIR"),
        command,
        seeds,
    }
}

#[test]
fn jsonrpc_line() {
    let seeds = SEEDS.iter().map(|s| s.as_bytes().to_vec()).collect();
    toolforge_fuzz::run(
        target(
            "jsonrpc_line",
            "cargo test -p toolforge-runtime --test fuzz_jsonrpc jsonrpc_line",
            seeds,
        ),
        generate_line,
        check_line,
    );
}

/// A JSON-RPC message as a client might write it, right or nearly so.
fn message(rng: &mut Rng) -> Value {
    let mut m = serde_json::Map::new();
    match rng.below(8) {
        0 => {}
        1 => {
            m.insert(
                "jsonrpc".into(),
                json!(*rng.pick(&["1.0", "2", "2.00", ""])),
            );
        }
        2 => {
            m.insert("jsonrpc".into(), json!(2.0));
        }
        _ => {
            m.insert("jsonrpc".into(), json!("2.0"));
        }
    }
    let id = match rng.below(12) {
        0 => None,
        1 => Some(json!(null)),
        2 => Some(json!(rng.next_u64() as i64)),
        3 => Some(json!(u64::MAX)),
        4 => Some(json!(1.5)),
        5 => Some(json!(1.0)),
        6 => Some(json!("")),
        7 => Some(json!([1])),
        8 => Some(json!({"a": 1})),
        9 => Some(json!(true)),
        10 => Some(json!("req-🦀")),
        _ => Some(json!(rng.below(100))),
    };
    if let Some(id) = id {
        m.insert("id".into(), id);
    }
    let method = *rng.pick(METHODS);
    match rng.below(10) {
        0 => {}
        1 => {
            m.insert("method".into(), random_value(rng, 1, KEYS, STRINGS));
        }
        _ => {
            m.insert("method".into(), json!(method));
        }
    }
    let params = match method {
        "initialize" => json!({
            "protocolVersion": *rng.pick(STRINGS),
            "capabilities": random_value(rng, 2, KEYS, STRINGS),
            "clientInfo": {"name": *rng.pick(STRINGS), "version": "1"},
        }),
        "tools/call" => {
            let mut p = json!({"name": *rng.pick(STRINGS)});
            if rng.one_in(2) {
                p["arguments"] = random_value(rng, 3, KEYS, STRINGS);
            }
            p
        }
        "server/discover" => json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": *rng.pick(STRINGS),
            "io.modelcontextprotocol/clientCapabilities": random_value(rng, 1, KEYS, STRINGS),
        }}),
        "notifications/cancelled" => {
            json!({"requestId": random_value(rng, 0, KEYS, STRINGS), "reason": "x"})
        }
        _ => random_value(rng, 3, KEYS, STRINGS),
    };
    if !rng.one_in(4) {
        m.insert("params".into(), params);
    }
    if rng.one_in(10) {
        m.insert("result".into(), random_value(rng, 2, KEYS, STRINGS));
    }
    if rng.one_in(10) {
        m.insert(
            "error".into(),
            json!({"code": rng.next_u64() as i32, "message": "m"}),
        );
    }
    Value::Object(m)
}

fn generate_line(rng: &mut Rng, pool: &Pool) -> Vec<u8> {
    let mut out = match rng.below(10) {
        // a fresh message, sometimes mutated as a tree
        0..=3 => {
            let mut doc = Doc::new(message(rng));
            if rng.one_in(2) {
                doc.mutate(rng, KEYS, STRINGS);
            }
            if rng.one_in(12) {
                let second = message(rng);
                doc.value = json!([doc.value.take(), second]);
            }
            doc.render(rng.one_in(8))
        }
        // an input of the pool, mutated as a tree when it is JSON
        4..=6 => {
            let base = pool.pick(rng).to_vec();
            match Doc::parse(&base) {
                Some(mut doc) => {
                    doc.mutate(rng, KEYS, STRINGS);
                    doc.render(rng.one_in(8))
                }
                None => base,
            }
        }
        // an input of the pool as bytes
        _ => pool.pick(rng).to_vec(),
    };
    if rng.one_in(2) {
        let other = pool.pick(rng).to_vec();
        havoc(rng, &mut out, TOKENS, &other, MAX_INPUT);
    }
    match rng.below(6) {
        0 => out.push(b'\n'),
        1 => out.extend_from_slice(b"\r\n"),
        2 => out.extend_from_slice(b"\r"),
        _ => {}
    }
    out.truncate(MAX_INPUT);
    out
}

/// The line without its `\n` or `\r\n`, as the transport trims it.
fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn check_line(input: &[u8]) -> Result<String, String> {
    let text = trim_line_end(input);
    let line = decode_line(input);
    if text.iter().all(u8::is_ascii_whitespace) {
        return match line {
            Verdict::Ignore => Ok("blank".into()),
            other => Err(format!("a blank line was not ignored: {other:?}")),
        };
    }
    let label = check_verdict(text, &line).map_err(|e| format!("stdio line: {e}"))?;
    // The HTTP transport classifies the body as it is.
    let body = classify(input);
    let http = check_verdict(input, &body).map_err(|e| format!("HTTP body: {e}"))?;
    Ok(format!("{label} | {http}"))
}

/// Checks one verdict on `bytes` (what `classify` was given); returns a
/// label for the outcome.
fn check_verdict(bytes: &[u8], verdict: &Verdict) -> Result<String, String> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let parsed = serde_json::from_slice::<Value>(body).ok();
    match verdict {
        Verdict::Reply(reply) => {
            let code = check_reply(reply)?;
            let id = &reply["id"];
            match (code, &parsed) {
                (-32700, None) => {}
                (-32700, Some(_)) => return Err(format!("valid JSON got a parse error: {reply}")),
                (_, None) => return Err(format!("invalid JSON got {code}, not -32700: {reply}")),
                (-32600, Some(_)) => {
                    if !id.is_null() {
                        return Err(format!("-32600 must have \"id\": null: {reply}"));
                    }
                }
                (-32602 | -32601, Some(request)) => {
                    if !same(request.get("id"), Some(id))
                        || !(id.is_string() || id.is_i64() || id.is_u64())
                    {
                        return Err(format!(
                            "{code} must carry the request's id {:?}: {reply}",
                            request.get("id")
                        ));
                    }
                }
                _ => return Err(format!("unexpected error code {code}: {reply}")),
            }
            if code == -32700 && !id.is_null() {
                return Err(format!("-32700 must have \"id\": null: {reply}"));
            }
            let message = reply["error"]["message"].as_str().unwrap_or_default();
            Ok(format!("reply {code} {}", shape(message)))
        }
        Verdict::Message(message) => {
            let Some(request) = parsed else {
                return Err("a message rmcp accepted is not valid JSON".into());
            };
            let again = serde_json::to_value(&**message)
                .map_err(|e| format!("the accepted message does not serialise: {e}"))?;
            if again["jsonrpc"] != "2.0" {
                return Err(format!("accepted without jsonrpc 2.0: {again}"));
            }
            // The answer goes to the id the client sent, for the method it named.
            for key in ["id", "method"] {
                if again.get(key).is_some() && !same(again.get(key), request.get(key)) {
                    return Err(format!(
                        "`{key}` changed between the line and the message: {:?} became {:?}",
                        request.get(key),
                        again.get(key)
                    ));
                }
            }
            let kind = match (again.get("method"), again.get("id")) {
                (Some(m), Some(_)) => format!("request {m}"),
                (Some(m), None) => format!("notification {m}"),
                _ if again.get("error").is_some() => "error response".into(),
                _ => "response".into(),
            };
            Ok(format!("message {kind}"))
        }
        Verdict::Ignore => {
            // Only a notification that rmcp cannot read is dropped.
            let notification = parsed.as_ref().and_then(Value::as_object).is_some_and(|o| {
                !o.contains_key("id") && o.get("method").is_some_and(Value::is_string)
            });
            if notification {
                Ok("ignored notification".into())
            } else {
                Err("a message that is not a notification was ignored".into())
            }
        }
    }
}

/// Equal JSON values; numbers by value (`1.0` is the id `1`).
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) if x.is_f64() || y.is_f64() => {
            x.as_f64() == y.as_f64()
        }
        _ => a == b,
    }
}

/// The reply is `{"jsonrpc": "2.0", "id", "error": {"code", "message"}}`
/// with a short message; returns the code.
fn check_reply(reply: &Value) -> Result<i64, String> {
    let Some(o) = reply.as_object() else {
        return Err(format!("the reply is not an object: {reply}"));
    };
    let mut keys: Vec<&str> = o.keys().map(String::as_str).collect();
    keys.sort_unstable();
    if keys != ["error", "id", "jsonrpc"] || reply["jsonrpc"] != "2.0" {
        return Err(format!("not a JSON-RPC 2.0 error response: {reply}"));
    }
    let code = reply["error"]["code"]
        .as_i64()
        .ok_or_else(|| format!("no integer error code: {reply}"))?;
    let message = reply["error"]["message"]
        .as_str()
        .ok_or_else(|| format!("no error message: {reply}"))?;
    if message.is_empty() || message.chars().count() > 500 {
        return Err(format!(
            "the error message has {} characters (1 to 500 expected): {reply}",
            message.chars().count()
        ));
    }
    Ok(code)
}

/// A message with its variable parts blanked, as an outcome label.
fn shape(message: &str) -> String {
    message
        .split(" at line")
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .take(80)
        .collect()
}

#[test]
fn stdio_framing() {
    let seeds = SEEDS
        .iter()
        .map(|s| {
            let mut stream = vec![7, 0];
            stream.extend_from_slice(s.as_bytes());
            stream.push(b'\n');
            stream.extend_from_slice(s.as_bytes());
            stream
        })
        .collect();
    toolforge_fuzz::run(
        target(
            "stdio_framing",
            "cargo test -p toolforge-runtime --test fuzz_jsonrpc stdio_framing",
            seeds,
        ),
        generate_stream,
        check_stream,
    );
}

/// Line limits the reader is tried with (the first byte of an input picks one).
const LIMITS: &[usize] = &[1, 2, 3, 8, 16, 64, 200, 4096, 1 << 20];

fn generate_stream(rng: &mut Rng, pool: &Pool) -> Vec<u8> {
    let mut out = vec![rng.next_u64() as u8, rng.next_u64() as u8];
    if rng.one_in(2) {
        // A base input with its framing bytes, mutated.
        let base = pool.pick(rng);
        out = base.to_vec();
        if out.len() < 2 {
            out.resize(2, 0);
        }
        let other = pool.pick(rng).to_vec();
        let mut body = out.split_off(2);
        havoc(rng, &mut body, TOKENS, &other, 1 << 14);
        out.append(&mut body);
        if rng.one_in(3) {
            out[0] = rng.next_u64() as u8;
            out[1] = rng.next_u64() as u8;
        }
    } else {
        // Several lines: messages, blank lines, long lines, no final newline.
        for _ in 0..rng.range(1, 8) {
            match rng.below(6) {
                0 => out.extend_from_slice(b"\r\n"),
                1 => out.extend(std::iter::repeat_n(b'x', rng.range(1, 300))),
                _ => out.extend_from_slice(&Doc::new(message(rng)).render(false)),
            }
            if !rng.one_in(6) {
                out.push(b'\n');
            }
        }
    }
    out
}

/// A reader that hands out `data` in chunks of pseudo-random sizes, now
/// and then returning `Pending` first (woken at once).
struct Chunked {
    data: Vec<u8>,
    at: usize,
    rng: Rng,
    max_chunk: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.rng.one_in(4) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let rest = &this.data[this.at..];
        let n = rest
            .len()
            .min(buf.remaining())
            .min(this.rng.range(1, this.max_chunk));
        buf.put_slice(&rest[..n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// A future that is pending for `polls` polls, then ready.
struct After {
    polls: usize,
}

impl std::future::Future for After {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polls == 0 {
            return Poll::Ready(());
        }
        self.polls -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// What splitting `stream` at `\n` gives, oversized lines dropped.
fn expected_lines(stream: &[u8], max: usize) -> Vec<Framed> {
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |i| i + 1);
        let (line, tail) = rest.split_at(end);
        out.push(if line.len() > max {
            Framed::Oversized
        } else {
            Framed::Line(line.to_vec())
        });
        rest = tail;
    }
    out
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
}

fn check_stream(input: &[u8]) -> Result<String, String> {
    let (Some(&limit), Some(&chunking)) = (input.first(), input.get(1)) else {
        return Ok("short".into());
    };
    let stream = &input[2..];
    let max = LIMITS[usize::from(limit) % LIMITS.len()];
    let max_chunk = [1, 2, 7, 64, 8192][usize::from(chunking) % 5];
    let mut rng = Rng::new(u64::from(chunking));
    let got = RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let mut framer = LineFramer::new(
                Chunked {
                    data: stream.to_vec(),
                    at: 0,
                    rng: rng.clone(),
                    max_chunk,
                },
                max,
            );
            let mut got = Vec::new();
            loop {
                // Cancel the read now and then, as the transport's select! does.
                let cancel = After {
                    polls: rng.below(4),
                };
                let step = tokio::select! {
                    biased;
                    step = framer.next() => step,
                    () = cancel, if rng.one_in(2) => continue,
                };
                match step {
                    Some(step) => got.push(step),
                    None => break got,
                }
            }
        })
    });
    let expected = expected_lines(stream, max);
    if got != expected {
        return Err(format!(
            "line limit {max}, chunks of at most {max_chunk}: read {got:?}, expected {expected:?}"
        ));
    }
    for step in &got {
        if let Framed::Line(line) = step {
            // Every line the reader yields goes to the decoder.
            let _ = decode_line(line);
        }
    }
    Ok(format!(
        "{} lines, {} oversized, limit {max}",
        got.len().min(4),
        got.iter()
            .filter(|s| matches!(s, Framed::Oversized))
            .count()
            .min(4)
    ))
}

static DNS_LIST: ToolDef = ToolDef {
    name: "dns_records_list",
    operation_id: "dns-records-list",
    product: "dns_records",
    title: "List DNS records",
    description: "Lists a zone's DNS records.",
    input_schema: toolforge_runtime::catalogue::SharedText::Text(
        r#"{"type":"object","properties":{"zone_id":{"type":"string","maxLength":32},"per_page":{"type":"number"}},"required":["zone_id"],"additionalProperties":false}"#,
    ),
    output_schema: Some(toolforge_runtime::catalogue::SharedText::Text(
        r#"{"type":"object","properties":{"result":{"type":"array"}}}"#,
    )),
    annotations: Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: true,
    },
    permissions: &["DNS Read"],
    method: Method::Get,
    routes: &[Route {
        when: None,
        template: "/zones/{zone_id}/dns_records",
    }],
    params: &[ParamDef {
        arg: "zone_id",
        name: "zone_id",
        location: ParamLocation::Path,
        style: ParamStyle::Simple,
        explode: false,
        required: true,
        allow_reserved: false,
    }],
    body: None,
    responses: &[],
    envelope: Envelope::Result { list: true },
    deprecated: false,
    security: &[],
    ts_declaration: toolforge_runtime::catalogue::SharedText::Text(""),
};

static CATALOGUE: Catalogue = Catalogue {
    api: "fuzz",
    profile: toolforge_runtime::profile::Profile::generic("FUZZ_API_TOKEN"),
    products: &[Product {
        name: "dns_records",
        tools: std::slice::from_ref(&DNS_LIST),
    }],
    source: r#"{"release":"fuzz"}"#,
    spec: "",
    skills: &[],
};

thread_local! {
    static SESSION_RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
}

/// The server core, built once (inside the runtime: the upstream client
/// wants one). Without a credential, tool calls never reach the network.
fn session_core() -> Arc<Core> {
    static CORE: OnceLock<Arc<Core>> = OnceLock::new();
    Arc::clone(CORE.get_or_init(|| {
        SESSION_RUNTIME.with(|runtime| {
            let _guard = runtime.enter();
            let options = CoreOptions {
                exposure: Exposure::default(),
                upstream: UpstreamConfig {
                    base: validate_upstream("http://127.0.0.1:9/client/v4", true).unwrap(),
                    timeout: Duration::from_secs(1),
                    max_body_bytes: 1 << 16,
                },
                output_schemas: false,
                max_argument_bytes: 4096,
                credential_hint: "set `CLOUDFLARE_API_TOKEN`".into(),
            };
            Arc::new(Core::new(&CATALOGUE, options).unwrap())
        })
    }))
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;

#[test]
fn stdio_session() {
    let seeds = vec![
        format!(
            "{INITIALIZE}\n{}\n{}\n",
            SEEDS[1],
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"dns_records_list","arguments":{"zone_id":"z"}}}"#
        )
        .into_bytes(),
        format!("{}\n{}\n", SEEDS[2], SEEDS[3]).into_bytes(),
        b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n".to_vec(),
    ];
    toolforge_fuzz::run(
        target(
            "stdio_session",
            "cargo test -p toolforge-runtime --test fuzz_jsonrpc stdio_session",
            seeds,
        ),
        generate_session,
        check_session,
    );
}

fn generate_session(rng: &mut Rng, pool: &Pool) -> Vec<u8> {
    if rng.one_in(3) {
        let mut out = pool.pick(rng).to_vec();
        let other = pool.pick(rng).to_vec();
        havoc(rng, &mut out, TOKENS, &other, 1 << 16);
        return out;
    }
    let mut out = Vec::new();
    if !rng.one_in(4) {
        out.extend_from_slice(INITIALIZE.as_bytes());
        out.push(b'\n');
        if !rng.one_in(4) {
            out.extend_from_slice(SEEDS[1].as_bytes());
            out.push(b'\n');
        }
    }
    for _ in 0..rng.range(1, 6) {
        let mut line = match rng.below(4) {
            0 => pool.seed(rng).to_vec(),
            _ => {
                let mut doc = Doc::new(message(rng));
                if rng.one_in(3) {
                    doc.mutate(rng, KEYS, STRINGS);
                }
                doc.render(false)
            }
        };
        if rng.one_in(4) {
            let other = pool.pick(rng).to_vec();
            havoc(rng, &mut line, TOKENS, &other, 1 << 14);
        }
        out.extend_from_slice(&line);
        out.extend_from_slice(if rng.one_in(6) { b"\r\n" } else { b"\n" });
    }
    out
}

fn check_session(input: &[u8]) -> Result<String, String> {
    let core = session_core();
    SESSION_RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (server_read, server_write) = tokio::io::split(server);
            let session = tokio::spawn(serve_io(
                core,
                None,
                1 << 20,
                server_read,
                server_write,
                std::future::pending(),
            ));
            let (mut client_read, mut client_write) = tokio::io::split(client);
            let write = async {
                let _ = client_write.write_all(input).await;
                let _ = client_write.shutdown().await;
            };
            let mut output = Vec::new();
            let read = client_read.read_to_end(&mut output);
            let talk = async { tokio::join!(write, read) };
            if tokio::time::timeout(Duration::from_secs(10), talk)
                .await
                .is_err()
            {
                return Err("the output did not end within 10 s of the input's end".to_string());
            }
            let ended = match tokio::time::timeout(Duration::from_secs(10), session).await {
                Err(_) => {
                    return Err("the session did not end within 10 s of the input's end".into());
                }
                Ok(Err(e)) if e.is_panic() => return Err(format!("the session panicked: {e}")),
                Ok(Err(e)) => return Err(format!("the session task failed: {e}")),
                Ok(Ok(result)) => result.map_or_else(
                    |e| format!("error {}", shape(&e.to_string())),
                    |()| "ok".into(),
                ),
            };
            let mut lines = 0;
            let mut errors = Vec::new();
            for line in output.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let v: Value = serde_json::from_slice(line).map_err(|e| {
                    format!(
                        "an output line is not JSON ({e}): {}",
                        String::from_utf8_lossy(line)
                    )
                })?;
                if v["jsonrpc"] != "2.0" {
                    return Err(format!("an output line is not JSON-RPC 2.0: {v}"));
                }
                if let Some(code) = v["error"]["code"].as_i64() {
                    errors.push(code);
                }
                lines += 1;
            }
            errors.sort_unstable();
            errors.dedup();
            Ok(format!(
                "{ended}, {} lines, errors {errors:?}",
                lines.min(4)
            ))
        })
    })
}
