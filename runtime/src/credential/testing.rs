#![allow(clippy::unwrap_used)]
//! A minimal HTTP/1.1 responder on loopback for the credential tests (the
//! network edge is the only mock): it records each request and answers
//! from a closure.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request the endpoint saw.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) head: String,
    pub(crate) body: String,
}

/// Answers each request with `respond(nth request, seen)`.
pub(crate) struct Endpoint {
    pub(crate) base: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn endpoint(
    respond: impl Fn(usize, &Seen) -> (u16, String) + Send + Sync + 'static,
) -> Endpoint {
    endpoint_with_headers(move |n, seen| {
        let (status, body) = respond(n, seen);
        (status, String::new(), body)
    })
    .await
}

/// Like [`endpoint`], with extra header lines (each ending in `\r\n`).
pub(crate) async fn endpoint_with_headers(
    respond: impl Fn(usize, &Seen) -> (u16, String, String) + Send + Sync + 'static,
) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let respond = Arc::new(respond);
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            let respond = respond.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, body_start) = loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break (String::from_utf8_lossy(&buf[..i]).into_owned(), i + 4);
                    }
                };
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                while buf.len() < body_start + length {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let seen = Seen {
                    head,
                    body: String::from_utf8_lossy(&buf[body_start..]).into_owned(),
                };
                let nth = {
                    let mut log = log.lock().unwrap();
                    log.push(seen.clone());
                    log.len()
                };
                let (status, extra, body) = respond(nth, &seen);
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    Endpoint { base, seen, task }
}

impl Seen {
    /// The value of header `name` (case-insensitive), if sent.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// The request target (path and query).
    pub(crate) fn target(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or_default()
    }
}
