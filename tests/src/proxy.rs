//! A loopback HTTP/1.1 proxy that adds `Authorization: Bearer <token>` to
//! every request and forwards everything else byte for byte (method,
//! target, `Host`, `Origin`, body), for clients that cannot send a bearer
//! token, such as the MCP conformance suite.
//!
//! Each connection carries one request: the proxy rewrites `Connection` to
//! `close`, so a keep-alive client opens a new connection (and gets a new
//! `Authorization` header) per request.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Idle bound on each direction of a proxied connection.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// The running proxy; stops on drop.
#[derive(Debug)]
pub struct AuthProxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    forwarded: Arc<AtomicUsize>,
    acceptor: Option<JoinHandle<()>>,
}

/// A bound proxy port that forwards nothing yet (so its address can be
/// handed to the server, e.g. as `--allowed-host`, before the server starts).
#[derive(Debug)]
pub struct ProxyListener {
    listener: TcpListener,
    addr: SocketAddr,
}

impl ProxyListener {
    /// The address clients will connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts forwarding to `target`, adding `token`.
    pub fn forward_to(self, target: SocketAddr, token: &str) -> AuthProxy {
        let ProxyListener { listener, addr } = self;
        let stop = Arc::new(AtomicBool::new(false));
        let forwarded = Arc::new(AtomicUsize::new(0));
        let header = format!("Authorization: Bearer {token}\r\n");
        let acceptor = {
            let stop = Arc::clone(&stop);
            let forwarded = Arc::clone(&forwarded);
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let header = header.clone();
                    let forwarded = Arc::clone(&forwarded);
                    std::thread::spawn(move || {
                        let _ = proxy_one(client, target, &header, &forwarded);
                    });
                }
            })
        };
        AuthProxy {
            addr,
            stop,
            forwarded,
            acceptor: Some(acceptor),
        }
    }
}

impl AuthProxy {
    /// Binds `127.0.0.1:0`; [`ProxyListener::forward_to`] starts it.
    ///
    /// # Errors
    ///
    /// Binding fails.
    pub fn bind() -> std::io::Result<ProxyListener> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        Ok(ProxyListener { listener, addr })
    }

    /// Listens on `127.0.0.1:0` and forwards to `target`, adding `token`.
    ///
    /// # Errors
    ///
    /// Binding fails.
    pub fn start(target: SocketAddr, token: &str) -> std::io::Result<AuthProxy> {
        Ok(AuthProxy::bind()?.forward_to(target, token))
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many requests were forwarded.
    pub fn forwarded(&self) -> usize {
        self.forwarded.load(Ordering::SeqCst)
    }
}

impl Drop for AuthProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn proxy_one(
    mut client: TcpStream,
    target: SocketAddr,
    auth: &str,
    forwarded: &AtomicUsize,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(IO_TIMEOUT))?;
    client.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = client.read(&mut buf)?;
        if n == 0 || raw.len() > MAX_HEAD {
            return Err(std::io::Error::other("no complete request head"));
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = rewrite_head(&raw[..head_end], auth);
    let mut upstream = TcpStream::connect_timeout(&target, Duration::from_secs(10))?;
    upstream.set_read_timeout(Some(IO_TIMEOUT))?;
    upstream.set_write_timeout(Some(IO_TIMEOUT))?;
    upstream.write_all(&head)?;
    upstream.write_all(&raw[head_end..])?;
    forwarded.fetch_add(1, Ordering::SeqCst);
    // Client → server for the rest of the body; server → client until close.
    let mut client_read = client.try_clone()?;
    let mut upstream_write = upstream.try_clone()?;
    let pump = std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = client_read.read(&mut buf) {
            if n == 0 || upstream_write.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = upstream_write.shutdown(Shutdown::Write);
    });
    loop {
        let n = upstream.read(&mut buf).unwrap_or_default();
        if n == 0 || client.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = pump.join();
    Ok(())
}

/// The request head with `Authorization` replaced by `auth` and
/// `Connection` (and `Keep-Alive`) replaced by `Connection: close`.
pub fn rewrite_head(head: &[u8], auth: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut out = String::new();
    if let Some(first) = lines.next() {
        out.push_str(first);
        out.push_str("\r\n");
    }
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let name = line.split(':').next().unwrap_or_default().trim();
        if ["authorization", "connection", "keep-alive"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str(auth);
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http;
    use crate::upstream::{Reply, Upstream};

    #[test]
    fn heads_get_the_token_and_close() {
        let head = b"POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nConnection: keep-alive\r\nauthorization: Basic x\r\nContent-Length: 2\r\n\r\n";
        let out = String::from_utf8(rewrite_head(head, "Authorization: Bearer t\r\n")).unwrap();
        assert_eq!(
            out,
            "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nContent-Length: 2\r\nAuthorization: Bearer t\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn forwards_requests_with_the_token() {
        let upstream = Upstream::start(|req| {
            Reply::text(
                200,
                "text/plain",
                &format!(
                    "{} {} {}",
                    req.header("authorization").unwrap_or("-"),
                    req.header("host").unwrap_or("-"),
                    String::from_utf8_lossy(&req.body)
                ),
            )
        })
        .unwrap();
        let proxy = AuthProxy::start(upstream.addr(), "secret").unwrap();
        let request = http::Request {
            method: "POST".to_owned(),
            target: "/mcp".to_owned(),
            headers: vec![],
            body: Some(b"{}".to_vec()),
        };
        let response = http::send(proxy.addr(), &request, Duration::from_secs(10)).unwrap();
        assert_eq!(
            response.text(),
            format!("Bearer secret {} {{}}", proxy.addr())
        );
        assert_eq!(proxy.forwarded(), 1);
    }
}
