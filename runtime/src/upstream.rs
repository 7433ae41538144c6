//! The upstream HTTP client: sends built requests to the API base URL with
//! the server-held credential, without following redirects, within a
//! timeout, reading at most a bounded number of body bytes.
//!
//! Everything it returns is already scrubbed of the credential: the body,
//! every header value it keeps, and every error text pass through the
//! credential's [`Redactor`](crate::redact::Redactor) here, before a JSON
//! parser, an error message or the sandbox sees them. An upstream that
//! echoes the token escaped, URL-encoded or case-changed is caught because
//! the redactor matches on the decoded form.

use std::error::Error as _;
use std::time::{Duration, Instant};

use http::StatusCode;

use crate::config::UpstreamConfig;
use crate::credential::{Authorization, Credential};
use crate::request::{HttpRequest, header_safe};

mod lazy_client;
use lazy_client::LazyClient;

/// A completed upstream exchange (any status), scrubbed of the credential
/// it was sent with.
#[derive(Debug, Clone)]
pub struct UpstreamResponse {
    /// HTTP status.
    pub status: StatusCode,
    /// `Content-Type`, when sent.
    pub content_type: Option<String>,
    /// `Retry-After`, when sent.
    pub retry_after: Option<String>,
    /// Where a redirect's `Location` points: host (and port) of another
    /// server, or a phrase for this server's own URLs.
    pub location_host: Option<String>,
    /// The target of a `Link: <…>; rel="next"` header (how some APIs
    /// page their lists), scrubbed like every kept header.
    pub next_link: Option<String>,
    /// The body, at most the configured number of bytes.
    pub body: Vec<u8>,
    /// Time from sending to the end of the body.
    pub elapsed: Duration,
}

/// An upstream call that produced no usable response.
///
/// Messages name the method and path (never the query, the base URL's
/// credentials or the token) so they can be shown to the model.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// No answer within the timeout.
    #[error(
        "{method} {path}: the API did not answer within {secs} s (the server's upstream timeout)"
    )]
    Timeout {
        /// HTTP method.
        method: &'static str,
        /// Path without query.
        path: String,
        /// The timeout in seconds.
        secs: u64,
    },
    /// Connection or protocol failure before a response arrived.
    #[error("{method} {path}: could not reach the API: {detail}")]
    Unreachable {
        /// HTTP method.
        method: &'static str,
        /// Path without query.
        path: String,
        /// What failed.
        detail: String,
    },
    /// The body is larger than the configured bound.
    #[error(
        "{method} {path}: the API's response is larger than {limit} bytes, the server's limit; ask for less (filters, a smaller page size)"
    )]
    TooLarge {
        /// HTTP method.
        method: &'static str,
        /// Path without query.
        path: String,
        /// The bound in bytes.
        limit: usize,
    },
    /// The body broke off.
    #[error("{method} {path}: reading the API's response failed: {detail}")]
    Body {
        /// HTTP method.
        method: &'static str,
        /// Path without query.
        path: String,
        /// What failed.
        detail: String,
    },
    /// A built header cannot be sent.
    #[error(
        "{method} {path}: header `{name}` cannot be sent (an invalid name, or a value that is not printable ASCII)"
    )]
    Header {
        /// HTTP method.
        method: &'static str,
        /// Path without query.
        path: String,
        /// The header name.
        name: String,
    },
    /// The request's credentials are not configured or could not be had.
    #[error("{method} {path}: {detail}")]
    Credential {
        /// HTTP method.
        method: &'static str,
        /// Path without query.
        path: String,
        /// What to set, or why a token fetch failed (scrubbed).
        detail: String,
    },
    /// The HTTP client could not be created.
    #[error("could not create the upstream HTTP client: {0}")]
    Client(String),
}

/// The path of a `path?query` string, without the query.
pub fn path_only(path_and_query: &str) -> &str {
    path_and_query
        .split_once('?')
        .map_or(path_and_query, |(p, _)| p)
}

/// Sends requests to one API base URL.
#[derive(Debug, Clone)]
pub struct Upstream {
    client: LazyClient,
    base: String,
    /// `base` parsed once: a request's URL is this with its path and query
    /// set (see [`Upstream::url_for`]), so the host is not parsed per call.
    base_url: url::Url,
    timeout: Duration,
    max_body: usize,
}

impl Upstream {
    /// A client for `config` (no redirects, no proxies, rustls with `ring`),
    /// built by [`Upstream::warm_up`] or the first request; a client that
    /// cannot be built fails each request with [`UpstreamError::Client`].
    ///
    /// # Errors
    ///
    /// None today; the signature keeps room for set-up that can fail.
    pub fn new(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        // Several installs race harmlessly: the first one wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = LazyClient::new(config.timeout);
        Ok(Self {
            client,
            base: config.base.as_str().trim_end_matches('/').to_owned(),
            base_url: config.base.clone(),
            timeout: config.timeout,
            max_body: config.max_body_bytes,
        })
    }

    /// Builds the HTTP client on the calling thread unless it is built
    /// already (the server calls this from the listing's encoding thread a
    /// second after start, so loading the trust roots is not on the
    /// start-up path).
    pub fn warm_up(&self) {
        self.client.warm_up();
    }

    /// The base URL requests are sent to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The URL of `target` (a path from `/` with an optional query) under
    /// the base: the same URL as parsing `base + target`, without parsing
    /// the scheme and host again. A target of another form (no leading
    /// `/`, or a `#`) is parsed whole, as before.
    fn url_for(&self, target: &str) -> Result<url::Url, url::ParseError> {
        if !target.starts_with('/') || target.contains('#') {
            return url::Url::parse(&format!("{}{target}", self.base));
        }
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        let mut url = self.base_url.clone();
        let prefix = self.base_url.path().trim_end_matches('/');
        let mut full = String::with_capacity(prefix.len() + path.len());
        full.push_str(prefix);
        full.push_str(path);
        url.set_path(&full);
        url.set_query(query);
        Ok(url)
    }

    /// Sends `req` with what `credential` has for its requirement and
    /// reads the bounded body. When the API refuses (401) an OAuth token
    /// the server fetched, the token is forgotten and the request sent once
    /// more with a new one.
    ///
    /// # Errors
    ///
    /// Missing credentials, a failed token fetch, a timeout, a connection
    /// failure, an oversized or broken body, or a header that cannot be
    /// sent. Any HTTP status is a successful exchange.
    pub async fn send(
        &self,
        req: &HttpRequest,
        credential: Option<&Credential>,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let mut retried = false;
        loop {
            let auth = self.authorize(req, credential).await?;
            let started = Instant::now();
            let response = self.send_once(req, &auth, credential).await;
            crate::metrics::upstream_response(
                response.as_ref().ok().map(|r| r.status.as_u16()),
                started.elapsed(),
            );
            let response = response?;
            if response.status == StatusCode::UNAUTHORIZED && auth.has_fetched_token() && !retried {
                auth.invalidate_tokens();
                retried = true;
                continue;
            }
            return Ok(response);
        }
    }

    async fn authorize(
        &self,
        req: &HttpRequest,
        credential: Option<&Credential>,
    ) -> Result<Authorization, UpstreamError> {
        let Some(credential) = credential else {
            return Ok(Authorization::default());
        };
        credential
            .authorize(req.security, req.operation, self.client.get()?, &self.base)
            .await
            .map_err(|e| UpstreamError::Credential {
                method: req.method.as_str(),
                path: path_only(&req.path_and_query).to_owned(),
                detail: credential.redact(&e.to_string()),
            })
    }

    async fn send_once(
        &self,
        req: &HttpRequest,
        auth: &Authorization,
        credential: Option<&Credential>,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let method = req.method.as_str();
        let path = path_only(&req.path_and_query).to_owned();
        let http_method =
            http::Method::from_bytes(method.as_bytes()).map_err(|_| UpstreamError::Header {
                method,
                path: path.clone(),
                name: ":method".into(),
            })?;
        let (target, headers) = auth
            .apply(&req.path_and_query, &req.headers)
            .map_err(|name| UpstreamError::Header {
                method,
                path: path.clone(),
                name,
            })?;
        let url = self.url_for(&target).map_err(|_| UpstreamError::Header {
            method,
            path: path.clone(),
            name: ":path".into(),
        })?;
        let mut builder = self
            .client
            .get()?
            .request(http_method, url)
            .header(http::header::ACCEPT, "application/json");
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = &req.body {
            if !header_safe(&body.content_type) {
                return Err(UpstreamError::Header {
                    method,
                    path,
                    name: "Content-Type".into(),
                });
            }
            builder = builder
                .header(http::header::CONTENT_TYPE, body.content_type.as_str())
                .body(body.bytes.clone());
        }
        let started = Instant::now();
        let mut resp = builder
            .send()
            .await
            .map_err(|e| self.failure(e, method, &path, false, credential))?;
        let status = resp.status();
        let scrub = |text: String| match credential {
            Some(c) => c.redact(&text),
            None => text,
        };
        let header = |name: http::HeaderName| {
            resp.headers()
                .get(name)
                .map(|v| quoted_header(v.as_bytes(), credential))
        };
        let content_type = header(http::header::CONTENT_TYPE);
        let retry_after = header(http::header::RETRY_AFTER);
        let location_host =
            header(http::header::LOCATION).map(|loc| scrub(describe_location(&self.base, &loc)));
        let next_link = resp
            .headers()
            .get_all(http::header::LINK)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(crate::pages::next_target)
            .map(|target| scrub(target.to_owned()));
        if resp
            .content_length()
            .is_some_and(|len| len > self.max_body as u64)
        {
            return Err(UpstreamError::TooLarge {
                method,
                path,
                limit: self.max_body,
            });
        }
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len().saturating_add(chunk.len()) > self.max_body {
                        return Err(UpstreamError::TooLarge {
                            method,
                            path,
                            limit: self.max_body,
                        });
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(self.failure(e, method, &path, true, credential)),
            }
        }
        if let Some(c) = credential {
            body = c.redact_bytes(body);
        }
        Ok(UpstreamResponse {
            status,
            content_type,
            retry_after,
            location_host,
            next_link,
            body,
            elapsed: started.elapsed(),
        })
    }

    fn failure(
        &self,
        e: reqwest::Error,
        method: &'static str,
        path: &str,
        in_body: bool,
        credential: Option<&Credential>,
    ) -> UpstreamError {
        let path = path.to_owned();
        if e.is_timeout() {
            return UpstreamError::Timeout {
                method,
                path,
                secs: self.timeout.as_secs(),
            };
        }
        let detail = describe(e);
        let detail = match credential {
            Some(c) => c.redact(&detail),
            None => detail,
        };
        if in_body {
            UpstreamError::Body {
                method,
                path,
                detail,
            }
        } else {
            UpstreamError::Unreachable {
                method,
                path,
                detail,
            }
        }
    }
}

/// A header value as it may be quoted to the model: visible ASCII kept,
/// anything else (control characters, bytes outside ASCII) shown as `\xNN`
/// so it cannot forge lines or smuggle unreadable text, redacted whole and
/// then cut to at most 200 characters (a cut never leaves the start of a
/// secret behind; see [`crate::redact::Redactor::clip`]).
fn quoted_header(raw: &[u8], credential: Option<&Credential>) -> String {
    const MAX: usize = 200;
    let mut out = String::new();
    for &b in raw {
        if (0x20..0x7f).contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    match credential {
        Some(c) => c.clip(&out, MAX),
        None => crate::redact::clip_redacted(&out, MAX, &[]),
    }
}

/// Where a redirect `Location` points, resolved against the base URL as a
/// client would resolve it: `host[:port]` when it leaves the API's server
/// (scheme-relative `//host/x` included), else a phrase saying it stays on
/// this server.
fn describe_location(base: &str, location: &str) -> String {
    let Ok(base) = url::Url::parse(base) else {
        return "an unreadable location".to_owned();
    };
    let Ok(target) = base.join(location.trim()) else {
        return "an unreadable location".to_owned();
    };
    let authority = |u: &url::Url| {
        u.host_str().map(|h| {
            format!(
                "{h}{}",
                u.port().map(|p| format!(":{p}")).unwrap_or_default()
            )
        })
    };
    match authority(&target) {
        Some(host) if authority(&base).as_deref() != Some(host.as_str()) => host,
        Some(_) => "another URL on the API's own server".to_owned(),
        None => format!("a `{}:` URL", target.scheme()),
    }
}

/// A reqwest error with its causes, without the URL.
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut cur: Option<&dyn std::error::Error> = e.source();
    while let Some(err) = cur {
        let s = err.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cur = err.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's URL is exactly what parsing `base + target` gives, for
    /// bases with and without a path and targets with queries, encoded and
    /// raw characters, dot segments, an empty path and a fragment.
    #[test]
    fn request_urls_are_the_parsed_base_plus_target() {
        for base in [
            "https://api.example.com/client/v4",
            "https://api.example.com/client/v4/",
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            "https://Example.COM/a%20b",
        ] {
            let config = UpstreamConfig {
                base: url::Url::parse(base).unwrap(),
                timeout: Duration::from_secs(1),
                max_body_bytes: 10,
            };
            let upstream = Upstream::new(&config).unwrap();
            for target in [
                "/zones",
                "/zones?per_page=5&name=a%20b",
                "/accounts/a%2Fb/things?x=1?y=2",
                "/a/../b/./c",
                "/%2e%2e/x",
                "/caf\u{e9} x/y z?q=\u{e9} \"<>",
                "/",
                "",
                "?a=b",
                "/x#frag",
                "/x?y#frag",
                "/x?",
                "//double/slash",
                "/x|y^z`{}",
            ] {
                let whole = url::Url::parse(&format!("{}{target}", upstream.base)).unwrap();
                let built = upstream.url_for(target).unwrap();
                assert_eq!(built.as_str(), whole.as_str(), "{base} + {target}");
            }
        }
    }

    #[test]
    fn redirect_locations_resolve_like_a_client() {
        let base = "https://api.example.com/client/v4";
        assert_eq!(describe_location(base, "//evil.example/x"), "evil.example");
        assert_eq!(
            describe_location(base, "https://Other.Example:8443/a"),
            "other.example:8443"
        );
        assert_eq!(
            describe_location(base, "/client/v4/zones"),
            "another URL on the API's own server"
        );
        assert_eq!(
            describe_location(base, "zones"),
            "another URL on the API's own server"
        );
        assert_eq!(
            describe_location(base, "https://api.example.com/x"),
            "another URL on the API's own server"
        );
        assert_eq!(
            describe_location(base, "javascript:alert(1)"),
            "a `javascript:` URL"
        );
        assert_eq!(
            describe_location(base, "http://[::1"),
            "an unreadable location"
        );
    }

    #[test]
    fn quoted_header_values_are_visible_ascii() {
        assert_eq!(quoted_header(b"120", None), "120");
        assert_eq!(
            quoted_header("caf\u{e9}\r\nx".as_bytes(), None),
            "caf\\xc3\\xa9\\x0d\\x0ax"
        );
        assert_eq!(quoted_header(&[b'a'; 300], None).chars().count(), 201);
    }

    #[test]
    fn path_only_drops_query() {
        assert_eq!(path_only("/a/b?token=x"), "/a/b");
        assert_eq!(path_only("/a"), "/a");
    }
}
