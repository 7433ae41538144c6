//! A loopback HTTP upstream scripted per test, for fault tests: each
//! request is recorded and answered by the test's handler with a normal
//! response, a hang, a huge streamed body, a redirect or raw bytes.
//!
//! Plain `std::net` threads (one per connection, `Connection: close` on
//! every answer) keep it small and the wire bytes under our control. Every
//! wait is bounded and all threads stop when the guard drops.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest request accepted (head plus body).
const MAX_REQUEST: usize = 64 * 1024 * 1024;
/// Bound on reading a request and writing an answer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a [`Reply::Hang`] keeps a connection open.
const MAX_HANG: Duration = Duration::from_secs(60);

/// A request the upstream received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Method, e.g. `GET`.
    pub method: String,
    /// Request target (path and query) as sent.
    pub target: String,
    /// Header name/value pairs, names as received.
    pub headers: Vec<(String, String)>,
    /// Body bytes (chunked encoding removed).
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// How to answer a request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response with `Content-Length`.
    Respond {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Vec<u8>,
    },
    /// Accept the request and send nothing until the upstream stops (or a
    /// minute passes).
    Hang,
    /// A 200 JSON response of `total` bytes (declared in `Content-Length`,
    /// or chunked when `chunked`), written piece by piece so it is never in
    /// memory at once; stops quietly when the reader goes away.
    Huge {
        /// Body size in bytes.
        total: usize,
        /// Use chunked transfer encoding instead of `Content-Length`.
        chunked: bool,
    },
    /// These bytes verbatim (for malformed HTTP), then close.
    Raw(Vec<u8>),
}

impl Reply {
    /// A JSON response.
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body: body.to_string().into_bytes(),
        }
    }

    /// A response with this content type and body text.
    pub fn text(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
            body: body.as_bytes().to_vec(),
        }
    }

    /// Adds a header to a [`Reply::Respond`] (other replies are unchanged).
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Respond { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// A Cloudflare success envelope around `result`.
    pub fn envelope(result: serde_json::Value) -> Reply {
        Reply::json(
            200,
            &serde_json::json!({"success": true, "errors": [], "messages": [], "result": result}),
        )
    }

    /// A Cloudflare failure envelope with one error.
    pub fn cf_error(status: u16, code: u32, message: &str) -> Reply {
        Reply::json(
            status,
            &serde_json::json!({
                "success": false,
                "errors": [{"code": code, "message": message}],
                "messages": [],
                "result": null,
            }),
        )
    }
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync + 'static;

/// The running upstream; stops (and joins its threads) on drop.
pub struct Upstream {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    acceptor: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Upstream {
    /// Starts on `127.0.0.1:0` with `handler` answering every request.
    ///
    /// # Errors
    ///
    /// Binding fails.
    pub fn start<F>(handler: F) -> std::io::Result<Upstream>
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        Upstream::start_on("127.0.0.1:0", handler)
    }

    /// Starts on `bind` (e.g. `127.0.0.2:0`, another loopback host).
    ///
    /// # Errors
    ///
    /// Binding fails.
    pub fn start_on<F>(bind: &str, handler: F) -> std::io::Result<Upstream>
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(bind)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let acceptor = {
            let stop = Arc::clone(&stop);
            let requests = Arc::clone(&requests);
            let connections = Arc::clone(&connections);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let stop = Arc::clone(&stop);
                    let requests = Arc::clone(&requests);
                    let handler = Arc::clone(&handler);
                    let handle = std::thread::spawn(move || {
                        serve(stream, &stop, &requests, handler.as_ref());
                    });
                    if let Ok(mut list) = connections.lock() {
                        list.push(handle);
                    }
                }
            })
        };
        Ok(Upstream {
            addr,
            stop,
            requests,
            acceptor: Some(acceptor),
            connections,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Forgets the recorded requests.
    pub fn clear(&self) {
        if let Ok(mut r) = self.requests.lock() {
            r.clear();
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let handles = self
            .connections
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        for handle in handles {
            let _ = handle.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    stop: &AtomicBool,
    requests: &Mutex<Vec<Recorded>>,
    handler: &Handler,
) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    if let Ok(mut list) = requests.lock() {
        list.push(request.clone());
    }
    match handler(&request) {
        Reply::Respond {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
        Reply::Hang => {
            let until = Instant::now() + MAX_HANG;
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                // Notice a client that gave up (read returns 0) or keep waiting.
                let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
                let mut probe = [0u8; 1];
                match stream.read(&mut probe) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
        }
        Reply::Huge { total, chunked } => {
            let head = if chunked {
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_owned()
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {total}\r\nConnection: close\r\n\r\n"
                )
            };
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            write_huge(&mut stream, total, chunked, stop);
        }
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes);
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    // Let the peer read everything before the socket is dropped.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut sink = [0u8; 1024];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

/// Writes `{"success":true,"result":"xxxx…"}` padded to exactly `total` bytes.
fn write_huge(stream: &mut TcpStream, total: usize, chunked: bool, stop: &AtomicBool) {
    let prefix = br#"{"success":true,"errors":[],"messages":[],"result":""#;
    let suffix = br#""}"#;
    let filler_len = total.saturating_sub(prefix.len() + suffix.len());
    let piece = vec![b'x'; 64 * 1024];
    let mut send = |bytes: &[u8]| -> bool {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        if chunked {
            let head = format!("{:x}\r\n", bytes.len());
            stream.write_all(head.as_bytes()).is_ok()
                && stream.write_all(bytes).is_ok()
                && stream.write_all(b"\r\n").is_ok()
        } else {
            stream.write_all(bytes).is_ok()
        }
    };
    if !send(prefix) {
        return;
    }
    let mut left = filler_len;
    while left > 0 {
        let n = left.min(piece.len());
        if !send(&piece[..n]) {
            return;
        }
        left -= n;
    }
    if !send(suffix) {
        return;
    }
    if chunked {
        let _ = stream.write_all(b"0\r\n\r\n");
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 || raw.len() > MAX_REQUEST {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end - 4]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.splitn(3, ' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = raw[head_end..].to_vec();
    if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        while !body.ends_with(b"0\r\n\r\n") {
            let n = stream.read(&mut buf).ok()?;
            if n == 0 || body.len() > MAX_REQUEST {
                return None;
            }
            body.extend_from_slice(&buf[..n]);
        }
        body = dechunk(&body)?;
    } else if let Some(length) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        if length > MAX_REQUEST {
            return None;
        }
        while body.len() < length {
            let n = stream.read(&mut buf).ok()?;
            if n == 0 {
                return None;
            }
            body.extend_from_slice(&buf[..n]);
        }
        body.truncate(length);
    }
    Some(Recorded {
        method,
        target,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http;

    fn get(addr: SocketAddr, target: &str, timeout: Duration) -> Result<http::Response, String> {
        let request = http::Request {
            method: "GET".to_owned(),
            target: target.to_owned(),
            headers: vec![("Authorization".to_owned(), "Bearer t".to_owned())],
            body: None,
        };
        http::send(addr, &request, timeout).map_err(|e| e.to_string())
    }

    #[test]
    fn scripted_answers_and_recording() {
        let upstream = Upstream::start(|req| match req.path() {
            "/ok" => Reply::envelope(serde_json::json!({"id": "a"})),
            "/raw" => Reply::Raw(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{[".to_vec()),
            "/huge" => Reply::Huge {
                total: 200_000,
                chunked: true,
            },
            "/hang" => Reply::Hang,
            _ => Reply::cf_error(404, 7003, "no route").with_header("X-A", "b"),
        })
        .unwrap();
        let ok = get(upstream.addr(), "/ok?x=1", Duration::from_secs(5)).unwrap();
        assert_eq!(ok.status, 200);
        let body: serde_json::Value = serde_json::from_slice(&ok.body).unwrap();
        assert_eq!(body["result"]["id"], "a");
        let missing = get(upstream.addr(), "/nope", Duration::from_secs(5)).unwrap();
        assert_eq!((missing.status, missing.header("x-a")), (404, Some("b")));
        assert_eq!(
            get(upstream.addr(), "/raw", Duration::from_secs(5))
                .unwrap()
                .text(),
            "{["
        );
        let huge = get(upstream.addr(), "/huge", Duration::from_secs(5)).unwrap();
        assert_eq!(huge.body.len(), 200_000);
        assert!(serde_json::from_slice::<serde_json::Value>(&huge.body).is_ok());
        let started = Instant::now();
        assert!(get(upstream.addr(), "/hang", Duration::from_millis(300)).is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
        let seen = upstream.requests();
        assert_eq!(seen.len(), 5);
        assert_eq!(
            (seen[0].method.as_str(), seen[0].target.as_str()),
            ("GET", "/ok?x=1")
        );
        assert_eq!(seen[0].header("authorization"), Some("Bearer t"));
        let started = Instant::now();
        drop(upstream);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn request_bodies_with_length_or_chunks() {
        let upstream = Upstream::start(|_| Reply::text(201, "text/plain", "ok")).unwrap();
        let request = http::Request {
            method: "POST".to_owned(),
            target: "/p".to_owned(),
            headers: vec![],
            body: Some(b"hello".to_vec()),
        };
        let response = http::send(upstream.addr(), &request, Duration::from_secs(5)).unwrap();
        assert_eq!(response.status, 201);
        let mut stream = TcpStream::connect(upstream.addr()).unwrap();
        stream
            .write_all(b"PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let _ = stream.read_to_end(&mut answer);
        assert!(answer.starts_with(b"HTTP/1.1 201"));
        let seen = upstream.requests();
        assert_eq!(seen[0].body, b"hello");
        assert_eq!(seen[1].body, b"abcde");
    }
}
