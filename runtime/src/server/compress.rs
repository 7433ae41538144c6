//! HTTP response compression: `tools/list` pre-encoded once as gzip and
//! brotli, and other JSON responses over [`MIN_COMPRESS_BYTES`] compressed
//! on the fly, each as the request's `Accept-Encoding` allows (brotli
//! preferred, then gzip).
//!
//! The listing is megabytes on large APIs, so it is compressed once, in a
//! background thread started by the first request that accepts an encoding
//! (until it is ready, listings go out uncompressed; starting it at start-up
//! put about 200 ms of CPU on one of two cores during the cold start), and
//! every compressed answer shares those bytes. A
//! `tools/list` answer differs per request only in what follows the tools
//! array (the request id, `_meta`), so it is written with the array first:
//! `{"result":{"tools":LISTING,…rest of result},…rest of message}`. The
//! constant head and the listing are compressed once; per response only the
//! small tail is encoded and appended:
//!
//! - gzip: the shared part is a deflate stream ended by a sync flush (byte
//!   aligned, not final); the tail is a fresh final deflate stream, and the
//!   trailer's CRC-32 continues the shared part's (one gzip member, so
//!   every decoder reads it);
//! - brotli: the shared part is flushed (byte aligned, not last); the tail
//!   is appended as uncompressed meta-blocks and an empty last meta-block
//!   (RFC 7932 §9.2), which need no encoder state.
//!
//! A narrowed session's listing (kept per exposure, `listing/narrowed.rs`)
//! is compressed the same way, once per kept listing, on first demand.

use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress, Status};
use http::{HeaderMap, HeaderValue, header};
use http_body::Body as _;
use serde_json::{Map, Value};

use crate::listing::{Listing, NARROWED_BUDGET, Recent, Spliced, Variant};

/// JSON responses smaller than this go out as they are.
pub const MIN_COMPRESS_BYTES: usize = 1024;
/// Responses larger than this are not compressed on the fly (they pass
/// through unread).
pub const MAX_ON_THE_FLY_BYTES: usize = 32 << 20;
/// The head every compressed listing answer starts with.
const HEAD: &[u8] = br#"{"result":{"tools":"#;
/// Brotli quality and window for the listing (encoded once).
const LISTING_BROTLI: (u32, u32) = (9, 22);
/// Brotli quality for responses compressed on the fly.
const FLY_BROTLI: u32 = 4;

/// A content coding this server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// No compression.
    Identity,
    /// `gzip` (RFC 1952).
    Gzip,
    /// `br` (RFC 7932).
    Brotli,
}

impl Encoding {
    /// The `Content-Encoding` token, and the metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Gzip => "gzip",
            Self::Brotli => "br",
        }
    }

    /// The best coding an `Accept-Encoding` header allows: `br`, then
    /// `gzip` (a `*` allows both; `q=0` refuses one).
    pub fn negotiate(headers: &HeaderMap) -> Self {
        let mut br = None;
        let mut gzip = None;
        let mut star = None;
        for value in headers.get_all(header::ACCEPT_ENCODING) {
            let Ok(value) = value.to_str() else { continue };
            for item in value.split(',') {
                let mut parts = item.split(';');
                let token = parts.next().unwrap_or("").trim().to_ascii_lowercase();
                let q = parts
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .filter_map(|q| q.trim().parse::<f32>().ok())
                    .next()
                    .unwrap_or(1.0);
                match token.as_str() {
                    "br" => br = Some(q > 0.0),
                    "gzip" | "x-gzip" => gzip = Some(q > 0.0),
                    "*" => star = Some(q > 0.0),
                    _ => {}
                }
            }
        }
        if br.or(star).unwrap_or(false) {
            Self::Brotli
        } else if gzip.or(star).unwrap_or(false) {
            Self::Gzip
        } else {
            Self::Identity
        }
    }
}

/// The listing variants, compressed once.
#[derive(Debug)]
pub struct Precompressed {
    listing: Arc<Listing>,
    variants: [OnceLock<Encoded>; Variant::COUNT],
    started: [std::sync::Once; Variant::COUNT],
    /// Narrowed sessions' listings and their compressed forms, the most
    /// recently used last. A listing is known by its bytes' allocation:
    /// kept listings are shared, never copied, and holding the bytes here
    /// keeps the allocation from being reused by another listing.
    narrowed: Mutex<Recent<NarrowedForm>>,
}

/// A narrowed listing held by [`Precompressed`], and its compressed form.
#[derive(Debug)]
struct NarrowedForm {
    listing: Bytes,
    encoded: Arc<OnceLock<Encoded>>,
    /// Whether its encoding was started: on the listing's second answer,
    /// so an exposure asked for once costs no more than on the fly.
    started: bool,
}

/// `HEAD` + one listing variant, compressed.
#[derive(Debug)]
struct Encoded {
    /// gzip header + deflate stream, sync-flushed.
    gzip: Bytes,
    /// CRC-32 and length of the uncompressed shared part.
    crc: u32,
    len: u64,
    /// Brotli stream, flushed, not finished.
    brotli: Bytes,
}

impl Precompressed {
    /// Nothing encoded yet: each variant is encoded on first demand.
    pub fn new(listing: Arc<Listing>) -> Arc<Self> {
        Arc::new(Self {
            listing,
            variants: std::array::from_fn(|_| OnceLock::new()),
            started: std::array::from_fn(|_| std::sync::Once::new()),
            narrowed: Mutex::default(),
        })
    }

    /// Starts encoding a variant (once) on its own thread.
    fn start(self: &Arc<Self>, variant: Variant) {
        let v = variant.index();
        self.started[v].call_once(|| {
            let this = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("listing-compress".into())
                .spawn(move || {
                    let bytes = this.listing.bytes(variant);
                    let _ = this.variants[v].set(encode_shared(&bytes));
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start the listing compression thread; listings stay uncompressed");
            }
        });
    }

    /// The compressed form of a spliced `tools/list` answer, when the
    /// variant is encoded (else `None`: send it as it is). Starts encoding
    /// the variant on first demand.
    pub fn answer(self: &Arc<Self>, spliced: &Spliced, encoding: Encoding) -> Option<Spliced> {
        if encoding == Encoding::Identity {
            return None;
        }
        // A narrowed session's listing has no shared compressed form (and
        // must never be answered with another's).
        let variant = spliced.variant?;
        let Some(encoded) = self.variants[variant.index()].get() else {
            self.start(variant);
            return None;
        };
        compose(encoded, spliced, encoding)
    }

    /// The compressed form of a spliced narrowed `tools/list` answer (a
    /// [`Spliced`] without a variant), when its listing is encoded (else
    /// `None`: the on-the-fly layer compresses it). Starts encoding that
    /// listing on first demand.
    pub fn answer_narrowed(
        self: &Arc<Self>,
        spliced: &Spliced,
        encoding: Encoding,
    ) -> Option<Spliced> {
        if encoding == Encoding::Identity || spliced.variant.is_some() {
            return None;
        }
        let cell = self.narrowed_cell(&spliced.listing);
        compose(cell.get()?, spliced, encoding)
    }

    /// The compressed form's cell of narrowed `listing`, its encoding
    /// started on a thread of its own the second time it is asked for; the
    /// least recently used past [`NARROWED_BUDGET`] are let go.
    fn narrowed_cell(&self, listing: &Bytes) -> Arc<OnceLock<Encoded>> {
        let mut kept = self.narrowed.lock().unwrap_or_else(|e| e.into_inner());
        let same = |b: &Bytes| b.as_ptr() == listing.as_ptr() && b.len() == listing.len();
        let Some(form) = kept.find(|f| same(&f.listing)) else {
            let form = NarrowedForm {
                listing: listing.clone(),
                encoded: Arc::new(OnceLock::new()),
                started: false,
            };
            let kept = kept.push(form, NARROWED_BUDGET, |f| f.listing.len());
            return Arc::clone(&kept.encoded);
        };
        let encoded = Arc::clone(&form.encoded);
        if !form.started {
            form.started = true;
            let (bytes, target) = (form.listing.clone(), Arc::clone(&encoded));
            let spawned = std::thread::Builder::new()
                .name("listing-compress".into())
                .spawn(move || {
                    let _ = target.set(encode_shared(&bytes));
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start a listing compression thread; this listing stays compressed on the fly");
            }
        }
        encoded
    }
}

/// `spliced` (its listing compressed as `encoded`) as `encoding`: the
/// shared stream, then this response's tail.
fn compose(encoded: &Encoded, spliced: &Spliced, encoding: Encoding) -> Option<Spliced> {
    let tail = reordered_tail(&spliced.prefix, &spliced.suffix)?;
    let tail = match encoding {
        Encoding::Gzip => gzip_tail(encoded, &tail),
        Encoding::Brotli => brotli_tail(&tail),
        Encoding::Identity => return None,
    };
    let shared = match encoding {
        Encoding::Gzip => encoded.gzip.clone(),
        _ => encoded.brotli.clone(),
    };
    // Two pieces: the shared stream, then this response's tail.
    Some(Spliced {
        prefix: shared,
        listing: Bytes::from(tail),
        suffix: Bytes::new(),
        variant: spliced.variant,
    })
}

/// What follows the tools array once it is written first: `,…rest of
/// result},…rest of message}` (`None` when the response is not the shape
/// rmcp writes).
fn reordered_tail(prefix: &[u8], suffix: &[u8]) -> Option<Vec<u8>> {
    let mut whole = prefix.to_vec();
    whole.extend_from_slice(b"[]");
    whole.extend_from_slice(suffix);
    let Value::Object(mut message) = serde_json::from_slice::<Value>(&whole).ok()? else {
        return None;
    };
    let Value::Object(mut result) = message.remove("result")? else {
        return None;
    };
    result.remove("tools")?;
    let mut tail = Vec::new();
    push_members(&mut tail, &result)?;
    tail.push(b'}');
    push_members(&mut tail, &message)?;
    tail.push(b'}');
    Some(tail)
}

/// `,"k":v` for each member.
fn push_members(out: &mut Vec<u8>, map: &Map<String, Value>) -> Option<()> {
    for (k, v) in map {
        out.push(b',');
        serde_json::to_writer(&mut *out, k).ok()?;
        out.push(b':');
        serde_json::to_writer(&mut *out, v).ok()?;
    }
    Some(())
}

const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Raw deflate of `input` into `out`, ending with `flush`.
fn deflate(out: &mut Vec<u8>, input: &[u8], level: Compression, flush: FlushCompress) {
    let mut c = Compress::new(level, false);
    out.reserve(input.len() / 4 + 64);
    loop {
        let read = usize::try_from(c.total_in()).unwrap_or(input.len());
        let rest = input.get(read..).unwrap_or_default();
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        match c.compress_vec(rest, out, flush) {
            Ok(Status::StreamEnd) => return,
            Ok(_) => {
                let done = usize::try_from(c.total_in()).unwrap_or(0) >= input.len();
                // A sync flush is complete once all input is read and the
                // output buffer was not filled up.
                if done && flush != FlushCompress::Finish && out.capacity() > out.len() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "deflate failed");
                return;
            }
        }
    }
}

fn encode_shared(listing: &[u8]) -> Encoded {
    let mut plain = Vec::with_capacity(HEAD.len() + listing.len());
    plain.extend_from_slice(HEAD);
    plain.extend_from_slice(listing);
    let mut gzip = GZIP_HEADER.to_vec();
    deflate(&mut gzip, &plain, Compression::best(), FlushCompress::Sync);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&plain);
    let (quality, window) = LISTING_BROTLI;
    let mut writer = brotli::CompressorWriter::new(Vec::new(), 1 << 16, quality, window);
    let flushed = writer.write_all(&plain).and_then(|()| writer.flush());
    let brotli = match flushed {
        Ok(()) => writer.get_ref().clone(),
        Err(_) => Vec::new(),
    };
    Encoded {
        gzip: Bytes::from(gzip),
        crc: crc.finalize(),
        len: plain.len() as u64,
        brotli: Bytes::from(brotli),
    }
}

fn gzip_tail(encoded: &Encoded, tail: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tail.len() + 32);
    deflate(&mut out, tail, Compression::fast(), FlushCompress::Finish);
    let mut crc = crc32fast::Hasher::new_with_initial(encoded.crc);
    crc.update(tail);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    let total = encoded.len + tail.len() as u64;
    // ISIZE is the length modulo 2^32.
    out.extend_from_slice(&((total & 0xffff_ffff) as u32).to_le_bytes());
    out
}

/// `tail` as uncompressed brotli meta-blocks, then the empty last one.
fn brotli_tail(tail: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tail.len() + 8);
    for chunk in tail.chunks(1 << 16) {
        // ISLAST=0, MNIBBLES=4 (code 0), MLEN-1 in 16 bits, ISUNCOMPRESSED=1,
        // then zero bits to the byte boundary: 24 bits in all.
        let header = (((chunk.len() - 1) as u32) << 3) | (1 << 19);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(chunk);
    }
    // ISLAST=1, ISLASTEMPTY=1.
    out.push(0x03);
    out
}

/// `body` compressed as `encoding` (on the fly).
pub fn compress(body: &[u8], encoding: Encoding) -> Option<Vec<u8>> {
    match encoding {
        Encoding::Identity => None,
        Encoding::Gzip => {
            let mut out = GZIP_HEADER.to_vec();
            deflate(&mut out, body, Compression::new(5), FlushCompress::Finish);
            let mut crc = crc32fast::Hasher::new();
            crc.update(body);
            out.extend_from_slice(&crc.finalize().to_le_bytes());
            out.extend_from_slice(&((body.len() as u64 & 0xffff_ffff) as u32).to_le_bytes());
            Some(out)
        }
        Encoding::Brotli => {
            let mut out = Vec::with_capacity(body.len() / 4 + 64);
            let mut writer = brotli::CompressorWriter::new(&mut out, 1 << 14, FLY_BROTLI, 22);
            writer.write_all(body).ok()?;
            drop(writer);
            Some(out)
        }
    }
}

/// Sets `Content-Encoding` and `Vary` for a compressed answer.
pub fn mark(headers: &mut HeaderMap, encoding: Encoding) {
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(
        header::CONTENT_ENCODING,
        HeaderValue::from_static(encoding.as_str()),
    );
    headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
}

/// Marks a response the on-the-fly compression leaves alone (a listing
/// sent uncompressed while its compressed form is being prepared).
#[derive(Debug, Clone, Copy)]
pub struct LeaveUncompressed;

/// Middleware: compresses a JSON response over [`MIN_COMPRESS_BYTES`]
/// (with a known length up to [`MAX_ON_THE_FLY_BYTES`]) that is not encoded
/// yet, as the request's `Accept-Encoding` allows.
pub async fn on_the_fly(req: Request, next: Next) -> Response {
    let encoding = Encoding::negotiate(req.headers());
    let resp = next.run(req).await;
    if encoding == Encoding::Identity
        || resp.headers().contains_key(header::CONTENT_ENCODING)
        || resp.extensions().get::<LeaveUncompressed>().is_some()
    {
        return resp;
    }
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let size = resp.body().size_hint().exact();
    let fits =
        size.is_some_and(|n| n >= MIN_COMPRESS_BYTES as u64 && n <= MAX_ON_THE_FLY_BYTES as u64);
    if !json || !fits {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_ON_THE_FLY_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "could not read a response body to compress");
            return Response::from_parts(parts, Body::empty());
        }
    };
    match compress(&bytes, encoding) {
        Some(packed) if packed.len() < bytes.len() => {
            mark(&mut parts.headers, encoding);
            Response::from_parts(parts, Body::from(packed))
        }
        _ => Response::from_parts(parts, Body::from(bytes)),
    }
}

#[cfg(test)]
mod tests;
