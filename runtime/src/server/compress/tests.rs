use std::io::Read as _;
use std::time::{Duration, Instant};

use rmcp::model::{ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult};
use serde_json::{Value, json};

use super::*;
use crate::request::testing::custom;

fn headers(accept: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_str(accept).unwrap(),
    );
    h
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// `wire` decoded as `encoding` (gzip or brotli).
fn unpack(encoding: Encoding, wire: &[u8]) -> Vec<u8> {
    match encoding {
        Encoding::Gzip => gunzip(wire),
        _ => unbrotli(wire),
    }
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn negotiation_prefers_brotli_and_honours_q_zero() {
    assert_eq!(Encoding::negotiate(&HeaderMap::new()), Encoding::Identity);
    assert_eq!(
        Encoding::negotiate(&headers("gzip, deflate, br")),
        Encoding::Brotli
    );
    assert_eq!(Encoding::negotiate(&headers("gzip")), Encoding::Gzip);
    assert_eq!(
        Encoding::negotiate(&headers("br;q=0, gzip;q=0.5")),
        Encoding::Gzip
    );
    assert_eq!(Encoding::negotiate(&headers("*")), Encoding::Brotli);
    assert_eq!(Encoding::negotiate(&headers("*;q=0")), Encoding::Identity);
    assert_eq!(
        Encoding::negotiate(&headers("identity, zstd")),
        Encoding::Identity
    );
}

#[test]
fn on_the_fly_round_trips() {
    let body: Vec<u8> = json!({"items": (0..500).map(|i| format!("item-{i}")).collect::<Vec<_>>()})
        .to_string()
        .into_bytes();
    let gz = compress(&body, Encoding::Gzip).unwrap();
    assert_eq!(gunzip(&gz), body);
    let br = compress(&body, Encoding::Brotli).unwrap();
    assert_eq!(unbrotli(&br), body);
    assert!(gz.len() < body.len() / 2 && br.len() < body.len() / 2);
}

#[test]
fn brotli_tail_spans_several_meta_blocks() {
    let mut shared = Vec::new();
    let mut w = brotli::CompressorWriter::new(&mut shared, 4096, 5, 22);
    w.write_all(b"hello ").unwrap();
    w.flush().unwrap();
    let mut stream = w.get_ref().to_vec();
    drop(w);
    let tail: Vec<u8> = (0..150_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    stream.extend(brotli_tail(&tail));
    let mut want = b"hello ".to_vec();
    want.extend(&tail);
    assert_eq!(unbrotli(&stream), want);
}

fn response(listing: &Listing, variant: Variant, id: i64) -> Vec<u8> {
    let result = ListToolsResult::with_all_items(vec![listing.placeholder(variant)]);
    let msg = ServerJsonRpcMessage::response(
        ServerResult::ListToolsResult(result),
        RequestId::Number(id),
    );
    serde_json::to_vec(&msg).unwrap()
}

#[test]
fn precompressed_listing_decodes_to_the_same_message() {
    let tools = (0..40)
        .map(|i| {
            custom(move |t| {
                t.name = Box::leak(format!("tool_{i}_list").into_boxed_str());
                t.description = "Lists the things of a zone, page by page.";
                t.output_schema = Some(crate::catalogue::SharedText::Text(r#"{"type":"object"}"#));
            })
        })
        .collect();
    let listing = Arc::new(Listing::new(tools));
    let pre = Precompressed::new(listing.clone());
    let mut shared_streams = Vec::new();
    for variant in Variant::ALL {
        let deadline = Instant::now() + Duration::from_secs(30);
        let spliced = listing.splice(&response(&listing, variant, 41)).unwrap();
        let identity: Value = serde_json::from_slice(&spliced.clone().pieces().concat()).unwrap();
        for encoding in [Encoding::Gzip, Encoding::Brotli] {
            let packed = loop {
                if let Some(p) = pre.answer(&spliced, encoding) {
                    break p;
                }
                assert!(
                    Instant::now() < deadline,
                    "the listing was never compressed"
                );
                std::thread::sleep(Duration::from_millis(5));
            };
            let shared = packed.prefix.clone();
            let wire = packed.clone().pieces().concat();
            let plain = unpack(encoding, &wire);
            let decoded: Value = serde_json::from_slice(&plain).unwrap();
            assert_eq!(decoded, identity, "{encoding:?} {variant:?}");
            assert_eq!(decoded["id"], 41);
            assert!(plain.starts_with(HEAD), "the tools array comes first");
            // Another id shares the same compressed bytes.
            let other = listing.splice(&response(&listing, variant, 42)).unwrap();
            let again = pre.answer(&other, encoding).unwrap();
            assert_eq!(again.prefix.as_ptr(), shared.as_ptr());
            assert!(wire.len() < plain.len());
            shared_streams.push(shared);
        }
    }
    // Eight streams (four variants × two codings), none shared by two.
    let distinct: std::collections::HashSet<_> =
        shared_streams.iter().map(|b| b.as_ptr()).collect();
    assert_eq!(distinct.len(), 2 * Variant::COUNT);
    assert_eq!(
        pre.answer(
            &listing
                .splice(&response(&listing, Variant::DEFAULT, 1))
                .unwrap(),
            Encoding::Identity
        )
        .map(|_| ()),
        None
    );
}

/// A narrowed listing's answer, spliced as the HTTP layer does.
fn narrowed_answer(listing: &Listing, kept: &Bytes, id: i64) -> Spliced {
    let result = ListToolsResult::with_all_items(vec![listing.narrowed_placeholder()]);
    let msg = ServerJsonRpcMessage::response(
        ServerResult::ListToolsResult(result),
        RequestId::Number(id),
    );
    listing
        .splice_narrowed(&serde_json::to_vec(&msg).unwrap(), kept.clone())
        .unwrap()
}

/// Waits (bounded) until `pre` answers `spliced` compressed.
fn compressed_narrowed(pre: &Arc<Precompressed>, spliced: &Spliced, encoding: Encoding) -> Spliced {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(p) = pre.answer_narrowed(spliced, encoding) {
            return p;
        }
        assert!(Instant::now() < deadline, "never compressed");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn each_narrowed_listing_is_compressed_once_and_decodes_to_itself() {
    let tools = (0..3)
        .map(|i| custom(move |t| t.name = Box::leak(format!("tool_{i}").into_boxed_str())))
        .collect();
    let listing = Arc::new(Listing::new(tools));
    let pre = Precompressed::new(listing.clone());
    let lists = [
        Bytes::from(r#"[{"name":"a","inputSchema":{"type":"object"}}]"#.to_owned()),
        Bytes::from(r#"[{"name":"b","inputSchema":{"type":"object"}}]"#.to_owned()),
    ];
    for encoding in [Encoding::Gzip, Encoding::Brotli] {
        let mut shared = Vec::new();
        for kept in &lists {
            let spliced = narrowed_answer(&listing, kept, 5);
            // Never the shared listing's streams.
            assert!(pre.answer(&spliced, encoding).is_none());
            if encoding == Encoding::Gzip {
                // Asked for once: compressed on the fly, nothing started.
                assert!(pre.answer_narrowed(&spliced, encoding).is_none());
                let started = |pre: &Precompressed| {
                    let forms = pre.narrowed.lock().unwrap();
                    forms
                        .iter()
                        .any(|f| f.listing.as_ptr() == kept.as_ptr() && f.started)
                };
                assert!(!started(&pre));
                let _ = pre.answer_narrowed(&spliced, encoding);
                assert!(started(&pre), "the second answer starts it");
            }
            let plain_answer: Value =
                serde_json::from_slice(&spliced.clone().pieces().concat()).unwrap();
            let packed = compressed_narrowed(&pre, &spliced, encoding);
            let wire = packed.clone().pieces().concat();
            let plain = unpack(encoding, &wire);
            let decoded: Value = serde_json::from_slice(&plain).unwrap();
            assert_eq!(decoded, plain_answer, "{encoding:?}");
            assert_eq!(
                decoded["result"]["tools"],
                serde_json::from_slice::<Value>(kept).unwrap()
            );
            // Another id, the same compressed stream.
            let again = pre
                .answer_narrowed(&narrowed_answer(&listing, kept, 6), encoding)
                .unwrap();
            assert_eq!(again.prefix.as_ptr(), packed.prefix.as_ptr());
            shared.push(packed.prefix.as_ptr());
        }
        assert_ne!(shared[0], shared[1], "two listings share no stream");
    }
    // The same text in another allocation is another listing: compressed
    // on its own, never answered with a stream it was not made from.
    let copy = Bytes::from(lists[0].to_vec());
    let spliced = narrowed_answer(&listing, &copy, 7);
    let packed = compressed_narrowed(&pre, &spliced, Encoding::Gzip);
    let decoded: Value = serde_json::from_slice(&gunzip(&packed.pieces().concat())).unwrap();
    assert_eq!(decoded["id"], 7);
    // A shared listing's answer is not a narrowed one.
    let whole = listing
        .splice(&response(&listing, Variant::DEFAULT, 1))
        .unwrap();
    assert!(pre.answer_narrowed(&whole, Encoding::Gzip).is_none());
    assert!(pre.answer_narrowed(&spliced, Encoding::Identity).is_none());
}
