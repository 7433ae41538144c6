#![allow(clippy::unwrap_used, clippy::panic)]
//! Compressed answers from the real server, decoded from the bytes on the
//! wire: `tools/list` with `Accept-Encoding: gzip` and `br` (the listing
//! pre-encoded once) decodes to the same message as the uncompressed one,
//! for two request ids; a large `tools/call` answer is compressed on the
//! fly; a small one, and any answer to a client that accepts no encoding,
//! goes out as it is.

use std::io::Read as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_tests::mcp::RawClient;
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "compress-client-token-3c4d";
const UPSTREAM_TOKEN: &str = "compress-upstream-secret-aa11";
const BIG_ZONE: &str = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1";
const LIMIT: Duration = Duration::from_secs(90);

fn decode(encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        None => out.extend_from_slice(body),
        Some("gzip") => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        Some("br") => {
            brotli::Decompressor::new(body, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        Some(other) => panic!("unexpected Content-Encoding {other}"),
    }
    out
}

/// POSTs a JSON-RPC request; returns (Content-Encoding, wire bytes, decoded JSON).
fn post(
    client: &RawClient,
    id: u64,
    method: &str,
    params: Value,
    accept: &str,
) -> (Option<String>, usize, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let extra: Vec<(&str, &str)> = if accept.is_empty() {
        vec![]
    } else {
        vec![("Accept-Encoding", accept)]
    };
    let resp = client
        .post_raw(body.to_string().as_bytes(), &extra)
        .unwrap();
    assert_eq!(resp.status, 200, "{}", resp.text());
    let encoding = resp.header("content-encoding").map(str::to_owned);
    if encoding.is_some() {
        assert!(
            resp.header("vary")
                .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")),
            "{:?}",
            resp.headers
        );
    }
    let plain = decode(encoding.as_deref(), &resp.body);
    (
        encoding,
        resp.body.len(),
        serde_json::from_slice(&plain).unwrap(),
    )
}

#[test]
fn listing_and_large_answers_are_compressed_as_accepted() {
    with_deadline(LIMIT, || {
        let upstream = Upstream::start(|req| {
            if req.path().ends_with(BIG_ZONE) {
                let words: Vec<String> = (0..2000).map(|i| format!("record-{i}.example.com")).collect();
                Reply::envelope(json!({"id": BIG_ZONE, "name": "big.example", "status": "active", "name_servers": words}))
            } else {
                Reply::envelope(json!({"id": "x", "name": "small.example", "status": "active"}))
            }
        })
        .unwrap();
        let config = ServerConfig::new([
            "--upstream".to_owned(),
            upstream.url(),
            "--allow-loopback-upstream".to_owned(),
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let client = RawClient::new(server.addr(), CLIENT_TOKEN);

        let (enc, plain_len, plain) = post(&client, 1, "tools/list", json!({}), "");
        assert_eq!(enc, None);
        assert!(!plain["result"]["tools"].as_array().unwrap().is_empty());
        for accept in ["gzip", "br", "gzip, deflate, br"] {
            // The compressed form is prepared in the background at start-up;
            // until then the listing goes out as it is.
            let deadline = Instant::now() + Duration::from_secs(30);
            let (enc, wire, got) = loop {
                let (enc, wire, got) = post(&client, 2, "tools/list", json!({}), accept);
                if enc.is_some() {
                    break (enc, wire, got);
                }
                assert!(Instant::now() < deadline, "tools/list was never compressed");
                std::thread::sleep(Duration::from_millis(20));
            };
            let want = if accept == "gzip" { "gzip" } else { "br" };
            assert_eq!(enc.as_deref(), Some(want));
            assert_eq!(got["id"], 2);
            assert_eq!(got["result"], plain["result"], "{accept}");
            assert!(wire * 3 < plain_len, "{accept}: {wire} of {plain_len} bytes");
            let (_, _, again) = post(&client, 3, "tools/list", json!({}), accept);
            assert_eq!((again["id"].clone(), &again["result"]), (json!(3), &plain["result"]));
        }

        let call = |zone: &str, accept: &str| {
            post(&client, 9, "tools/call", json!({"name": "zones_get", "arguments": {"zone_id": zone}}), accept)
        };
        let (enc, _, small) = call("0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", "gzip, br");
        assert_eq!(enc, None, "a small answer is sent as it is");
        assert_ne!(small["result"]["isError"], true, "{small}");
        let (enc, plain_big, big) = call(BIG_ZONE, "");
        assert_eq!(enc, None);
        for accept in ["gzip", "br"] {
            let (enc, wire, got) = call(BIG_ZONE, accept);
            assert_eq!(enc.as_deref(), Some(accept));
            assert_eq!(got, big);
            assert!(wire * 3 < plain_big, "{accept}: {wire} of {plain_big}");
        }
    })
    .unwrap();
}

/// Request bodies are never decoded (issue 39): before, `Content-Encoding`
/// was ignored, so a gzip body was parsed as JSON (`-32700`) and a plain
/// body labelled gzip was run. Now any coding but `identity` is a 415 that
/// says which coding is accepted, before the body is read (a gzip bomb
/// costs nothing).
#[test]
fn encoded_request_bodies_are_refused_415() {
    use std::io::Write as _;
    with_deadline(LIMIT, || {
        let config = ServerConfig::new([
            "--upstream",
            "http://127.0.0.1:9",
            "--allow-loopback-upstream",
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let client = RawClient::new(server.addr(), CLIENT_TOKEN);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(body.as_bytes()).unwrap();
        let gzipped = gz.finish().unwrap();
        // 8 MiB of zeros in a few KiB: never inflated.
        let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        bomb.write_all(&vec![0u8; 8 << 20]).unwrap();
        let bomb = bomb.finish().unwrap();
        for (what, bytes, coding) in [
            ("a gzip body", gzipped.as_slice(), "gzip"),
            ("a plain body labelled gzip", body.as_bytes(), "gzip"),
            ("a gzip bomb", bomb.as_slice(), "gzip"),
            ("brotli", body.as_bytes(), "br"),
            ("deflate", body.as_bytes(), "deflate"),
            (
                "a list ending in identity",
                body.as_bytes(),
                "gzip, identity",
            ),
            ("an unknown coding", body.as_bytes(), "zstd"),
        ] {
            let resp = client
                .post_raw(bytes, &[("Content-Encoding", coding)])
                .unwrap();
            assert_eq!(resp.status, 415, "{what}: {}", resp.text());
            assert_eq!(resp.header("accept-encoding"), Some("identity"), "{what}");
            assert!(resp.text().contains("must not be compressed"), "{what}");
        }
        let resp = client
            .post_raw(body.as_bytes(), &[("Content-Encoding", "identity")])
            .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
    })
    .unwrap();
}

/// The `?output_schemas=1` listing (the other pre-encoded variant) is
/// compressed as the plain one is, and decodes to the uncompressed answer.
#[test]
fn the_output_schemas_listing_is_compressed_too() {
    with_deadline(LIMIT, || {
        let config = ServerConfig::new([
            "--upstream",
            "http://127.0.0.1:9",
            "--allow-loopback-upstream",
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let client = RawClient {
            path: "/mcp?output_schemas=1".to_owned(),
            ..RawClient::new(server.addr(), CLIENT_TOKEN)
        };
        let (enc, plain_len, plain) = post(&client, 1, "tools/list", json!({}), "");
        assert_eq!(enc, None);
        let tools = plain["result"]["tools"].as_array().unwrap();
        assert!(
            tools.iter().any(|t| t.get("outputSchema").is_some()),
            "no output schema listed"
        );
        for accept in ["gzip", "br"] {
            let deadline = Instant::now() + Duration::from_secs(60);
            let (enc, wire, got) = loop {
                let (enc, wire, got) = post(&client, 2, "tools/list", json!({}), accept);
                if enc.is_some() {
                    break (enc, wire, got);
                }
                assert!(
                    Instant::now() < deadline,
                    "{accept}: the output-schemas listing was never compressed"
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            assert_eq!(enc.as_deref(), Some(accept));
            assert_eq!(got["id"], 2);
            assert_eq!(got["result"], plain["result"], "{accept}");
            assert!(
                wire * 3 < plain_len,
                "{accept}: {wire} of {plain_len} bytes"
            );
        }
    })
    .unwrap();
}
