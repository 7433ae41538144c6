//! Request bodies are read as they arrive: a request with a
//! `Content-Encoding` other than `identity` is answered `415` with
//! `Accept-Encoding: identity` (RFC 9110 §15.5.16, §12.5.3).
//!
//! Before this check the header was ignored: a gzip body was parsed as if
//! it were JSON (`-32700`), and a plain body labelled gzip was run. No MCP
//! client compresses its requests, and decoding them would need a second
//! bound on what a small body expands to (a zip bomb), so none are decoded.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};

/// Whether every `Content-Encoding` value is `identity` (or there is none).
pub fn is_identity(headers: &HeaderMap) -> bool {
    headers.get_all(header::CONTENT_ENCODING).iter().all(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',')
                .map(str::trim)
                .all(|c| c.is_empty() || c.eq_ignore_ascii_case("identity"))
        })
    })
}

/// Middleware: `415` for an encoded request body, before anything reads it
/// (so with `Connection: close`: the body stays unread).
pub async fn refuse_encoded(req: Request, next: Next) -> Response {
    if is_identity(req.headers()) {
        return next.run(req).await;
    }
    tracing::debug!("refused a request body with a Content-Encoding (415)");
    let mut resp = (
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Unsupported Media Type: request bodies must not be compressed (Content-Encoding: identity only)\n",
    )
        .into_response();
    let headers = resp.headers_mut();
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::CONTENT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_identity_passes() {
        for ok in [
            &[][..],
            &["identity"],
            &["IDENTITY"],
            &[" identity , identity"],
        ] {
            assert!(is_identity(&headers(ok)), "{ok:?}");
        }
        for bad in [
            &["gzip"][..],
            &["br"],
            &["deflate"],
            &["x-gzip"],
            &["identity, gzip"],
            &["identity", "gzip"],
            &["zstd"],
            &["gzip;q=1"],
        ] {
            assert!(!is_identity(&headers(bad)), "{bad:?}");
        }
        let mut opaque = HeaderMap::new();
        opaque.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_bytes(b"\xffgzip").unwrap(),
        );
        assert!(!is_identity(&opaque));
    }
}
