//! A tiny HTTP/1.1 client over `std::net::TcpStream`, enough to talk to a
//! local mock server: one request per connection (`Connection: close`) with
//! [`send`], or several in turn on one keep-alive connection with
//! [`KeepAlive`]; `Content-Length` bodies, bounded timeouts and response
//! size, and `Content-Length`, chunked or read-to-close response bodies.
//!
//! A crate such as `ureq` would do the same, but this keeps the test
//! dependency tree small and the wire bytes entirely under our control.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Largest response accepted.
const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// A request to send.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Method, e.g. `GET`.
    pub method: String,
    /// Request target: path and query, already percent-encoded.
    pub target: String,
    /// Extra headers (`Host`, `Connection` and `Content-Length` are added).
    pub headers: Vec<(String, String)>,
    /// Body bytes, sent with `Content-Length`.
    pub body: Option<Vec<u8>>,
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Header name/value pairs, names as received.
    pub headers: Vec<(String, String)>,
    /// Body bytes (chunked encoding removed).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as (lossy) UTF-8 text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why a request failed at the transport level.
#[derive(Debug)]
pub enum HttpError {
    /// Connecting, writing or reading failed (or timed out).
    Io(std::io::Error),
    /// The response is not valid HTTP/1.x.
    Malformed(String),
    /// The response is larger than the limit.
    TooLarge,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Io(e) => write!(f, "I/O error: {e}"),
            HttpError::Malformed(why) => write!(f, "malformed HTTP response: {why}"),
            HttpError::TooLarge => write!(f, "response larger than {MAX_RESPONSE} bytes"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<std::io::Error> for HttpError {
    fn from(e: std::io::Error) -> Self {
        HttpError::Io(e)
    }
}

/// Sends `request` to `addr` and reads the whole response. Connecting,
/// each read and each write are bounded by `timeout`.
///
/// # Errors
///
/// Transport failures, timeouts, and responses that are not HTTP/1.x.
pub fn send(addr: SocketAddr, request: &Request, timeout: Duration) -> Result<Response, HttpError> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&encode(addr, request))?;
    stream.flush()?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if raw.len() > MAX_RESPONSE {
            return Err(HttpError::TooLarge);
        }
        // Stop as soon as a complete Content-Length response is in, so a
        // server ignoring `Connection: close` cannot stall us.
        if let Some(total) = complete_length(&raw) {
            raw.truncate(total);
            break;
        }
    }
    parse(&raw)
}

/// The wire bytes of a request (with `Connection: close`).
pub fn encode(addr: SocketAddr, request: &Request) -> Vec<u8> {
    encode_with(addr, request, false)
}

/// The wire bytes of a request; `keep_alive` leaves out `Connection: close`.
pub fn encode_with(addr: SocketAddr, request: &Request, keep_alive: bool) -> Vec<u8> {
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {addr}\r\n",
        request.method, request.target
    );
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    }
    for (name, value) in &request.headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    let body = request.body.as_deref().unwrap_or_default();
    let sends_length =
        request.body.is_some() || matches!(request.method.as_str(), "POST" | "PUT" | "PATCH");
    if sends_length {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// End of the header block (index just past `\r\n\r\n`).
fn header_end(raw: &[u8]) -> Option<usize> {
    raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Total length of a response with a `Content-Length` header, once fully read.
fn complete_length(raw: &[u8]) -> Option<usize> {
    let end = header_end(raw)?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let length = head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())
            .flatten()
    })?;
    (raw.len() >= end + length).then_some(end + length)
}

/// Total length of a complete response with a `Content-Length` or chunked
/// body, once fully read (`None` while more is due, or when the body is
/// delimited by the end of the connection).
fn complete_response(raw: &[u8]) -> Option<usize> {
    let end = header_end(raw)?;
    let head = std::str::from_utf8(&raw[..end]).ok()?.to_ascii_lowercase();
    let chunked = head.lines().skip(1).any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim() == "transfer-encoding" && value.contains("chunked")
        })
    });
    if !chunked {
        return complete_length(raw);
    }
    let mut at = end;
    loop {
        let line_end = at + raw.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[at..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            // No trailers from the servers under test: the last chunk is followed by CRLF.
            return (raw.len() >= at + 2).then_some(at + 2);
        }
        at += size + 2;
        if raw.len() < at {
            return None;
        }
    }
}

/// One keep-alive HTTP/1.1 connection: requests are sent one at a time and
/// each response is read to its end (`Content-Length` or chunked), leaving
/// the connection open for the next.
#[derive(Debug)]
pub struct KeepAlive {
    stream: TcpStream,
    addr: SocketAddr,
    /// Bytes read past the previous response.
    pending: Vec<u8>,
}

impl KeepAlive {
    /// Connects to `addr`; connecting and each later read and write are
    /// bounded by `timeout`.
    ///
    /// # Errors
    ///
    /// Connecting fails or times out.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<KeepAlive, HttpError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let _ = stream.set_nodelay(true);
        Ok(KeepAlive {
            stream,
            addr,
            pending: Vec::new(),
        })
    }

    /// Sends `request` (without `Connection: close`) and reads its response.
    ///
    /// # Errors
    ///
    /// Transport failures, timeouts, the server closing before a whole
    /// response, and responses that are not HTTP/1.x.
    pub fn send(&mut self, request: &Request) -> Result<Response, HttpError> {
        self.send_bytes(&encode_with(self.addr, request, true))
    }

    /// Sends pre-encoded request bytes and reads one response.
    ///
    /// # Errors
    ///
    /// As [`KeepAlive::send`].
    pub fn send_bytes(&mut self, bytes: &[u8]) -> Result<Response, HttpError> {
        self.stream.write_all(bytes)?;
        let mut raw = std::mem::take(&mut self.pending);
        let mut buf = [0u8; 16 * 1024];
        let total = loop {
            if let Some(total) = complete_response(&raw) {
                break total;
            }
            let n = self.stream.read(&mut buf)?;
            if n == 0 {
                return Err(HttpError::Malformed(format!(
                    "the connection closed after {} bytes of a response",
                    raw.len()
                )));
            }
            raw.extend_from_slice(&buf[..n]);
            if raw.len() > MAX_RESPONSE {
                return Err(HttpError::TooLarge);
            }
        };
        self.pending = raw.split_off(total);
        parse(&raw)
    }

    /// Waits at most `limit` for the server to close the connection, and
    /// returns how long that took.
    ///
    /// # Errors
    ///
    /// Bytes arrived instead, the limit passed, or reading failed otherwise
    /// (a reset counts as closed).
    pub fn wait_closed(&mut self, limit: Duration) -> Result<Duration, HttpError> {
        let started = std::time::Instant::now();
        let extra = read_until_closed(&mut self.stream, limit)?;
        if !extra.is_empty() || !self.pending.is_empty() {
            return Err(HttpError::Malformed(format!(
                "{} unexpected bytes before the close",
                extra.len() + self.pending.len()
            )));
        }
        Ok(started.elapsed())
    }
}

/// Reads everything `stream` delivers until the peer closes it (end of
/// stream, or a reset), at most `limit` in all.
///
/// # Errors
///
/// The limit passed first (`TimedOut`), other read errors, or more than the
/// response limit arrived.
pub fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Result<Vec<u8>, HttpError> {
    let deadline = std::time::Instant::now() + limit;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(HttpError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("still open after {limit:?} ({} bytes received)", raw.len()),
            )));
        }
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.read(&mut buf) {
            Ok(0) => return Ok(raw),
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > MAX_RESPONSE {
                    return Err(HttpError::TooLarge);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(raw),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(HttpError::Io(e)),
        }
    }
}

/// Parses a complete response.
///
/// # Errors
///
/// The bytes are not an HTTP/1.x response.
pub fn parse(raw: &[u8]) -> Result<Response, HttpError> {
    let end =
        header_end(raw).ok_or_else(|| HttpError::Malformed("no end of headers".to_owned()))?;
    let head = std::str::from_utf8(&raw[..end - 4])
        .map_err(|_| HttpError::Malformed("headers are not UTF-8".to_owned()))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed(format!("status line {status_line:?}")));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| HttpError::Malformed(format!("status line {status_line:?}")))?;
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| HttpError::Malformed(format!("header line {line:?}")))?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let rest = &raw[end..];
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _): &&(String, String)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let body =
        if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
            dechunk(rest)?
        } else if let Some(length) = find("content-length") {
            let length: usize = length
                .parse()
                .map_err(|_| HttpError::Malformed(format!("Content-Length {length:?}")))?;
            rest.get(..length)
                .ok_or_else(|| HttpError::Malformed("body shorter than Content-Length".to_owned()))?
                .to_vec()
        } else {
            rest.to_vec()
        };
    Ok(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| HttpError::Malformed("chunk size line".to_owned()))?;
        let size_text = std::str::from_utf8(&rest[..line_end])
            .map_err(|_| HttpError::Malformed("chunk size".to_owned()))?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Malformed(format!("chunk size {size_text:?}")))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest
            .get(..size)
            .ok_or_else(|| HttpError::Malformed("truncated chunk".to_owned()))?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn parses_length_chunked_and_close_delimited_bodies() {
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabcdef").unwrap();
        assert_eq!(
            (r.status, r.body.as_slice(), r.header("x-a")),
            (200, &b"abc"[..], Some("b"))
        );
        let r = parse(b"HTTP/1.1 422 Unprocessable Entity\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n").unwrap();
        assert_eq!((r.status, r.text().as_str()), (422, "abcde"));
        let r = parse(b"HTTP/1.0 404 Not Found\r\n\r\nrest").unwrap();
        assert_eq!(r.text(), "rest");
        assert!(parse(b"SSH-2.0\r\n\r\n").is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab").is_err());
    }

    #[test]
    fn complete_responses_are_found_by_length_or_last_chunk() {
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nNEXT";
        assert_eq!(complete_response(chunked), Some(chunked.len() - 4));
        assert_eq!(complete_response(&chunked[..chunked.len() - 6]), None);
        let sized = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokNEXT";
        assert_eq!(complete_response(sized), Some(sized.len() - 4));
        assert_eq!(complete_response(b"HTTP/1.1 200 OK\r\n"), None);
    }

    #[test]
    fn keep_alive_sends_several_requests_on_one_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while seen.windows(4).filter(|w| w == b"\r\n\r\n").count() < 2 {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0);
                seen.extend_from_slice(&buf[..n]);
                if seen.windows(4).filter(|w| w == b"\r\n\r\n").count() == 1 {
                    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
                        .unwrap();
                }
            }
            conn.write_all(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n",
            )
            .unwrap();
            String::from_utf8(seen).unwrap()
        });
        let mut conn = KeepAlive::connect(addr, Duration::from_secs(5)).unwrap();
        let get = Request {
            method: "GET".to_owned(),
            target: "/".to_owned(),
            ..Request::default()
        };
        assert_eq!(conn.send(&get).unwrap().text(), "a");
        assert_eq!(conn.send(&get).unwrap().text(), "b");
        let seen = server.join().unwrap();
        assert!(!seen.contains("Connection: close"), "{seen}");
        // The server thread has ended and dropped its socket: closed.
        assert!(conn.wait_closed(Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn round_trip_against_a_loopback_server() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.ends_with(b"hello") {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0);
                seen.extend_from_slice(&buf[..n]);
            }
            conn.write_all(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            String::from_utf8(seen).unwrap()
        });
        let request = Request {
            method: "POST".to_owned(),
            target: "/a%2Fb?x=1".to_owned(),
            headers: vec![("Content-Type".to_owned(), "text/plain".to_owned())],
            body: Some(b"hello".to_vec()),
        };
        let response = send(addr, &request, Duration::from_secs(5)).unwrap();
        assert_eq!((response.status, response.text().as_str()), (201, "ok"));
        let seen = server.join().unwrap();
        assert!(seen.starts_with("POST /a%2Fb?x=1 HTTP/1.1\r\n"), "{seen}");
        assert!(
            seen.contains("\r\nContent-Length: 5\r\n")
                && seen.contains("\r\nConnection: close\r\n")
        );
    }
}
