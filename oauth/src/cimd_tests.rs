#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::limits::RateLimit;

/// A loopback document server: answers every request after `delay` with
/// `status` and, for 200, a metadata document naming the requested URL;
/// counts the requests.
async fn documents(status: u16, delay: Duration) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let (served, origin) = (hits.clone(), base.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (served, origin) = (served.clone(), origin.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                served.fetch_add(1, Ordering::SeqCst);
                let path = String::from_utf8_lossy(&head)
                    .split(' ')
                    .nth(1)
                    .unwrap_or("/")
                    .to_owned();
                tokio::time::sleep(delay).await;
                let body = serde_json::json!({
                    "client_id": format!("{origin}{path}"),
                    "redirect_uris": ["http://127.0.0.1:9/cb"],
                })
                .to_string();
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    (base, hits)
}

fn config() -> CimdConfig {
    CimdConfig {
        allow_private_addresses: true,
        allow_http: true,
        timeout_ms: 5000,
        ..CimdConfig::default()
    }
}

fn peer(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

#[tokio::test]
async fn failures_are_cached_for_a_short_time() {
    let (base, hits) = documents(404, Duration::ZERO).await;
    let cimd = Cimd::new(config(), &Limits::default());
    let id = format!("{base}/missing.json");
    for _ in 0..5 {
        let err = cimd.resolve(&id, peer("192.0.2.1")).await.unwrap_err();
        assert_eq!(err, ClientError::Metadata("answered HTTP 404".into()));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "a failure is fetched once");
}

#[tokio::test]
async fn concurrent_requests_for_one_id_make_one_fetch() {
    let (base, hits) = documents(200, Duration::from_millis(300)).await;
    let cimd = Arc::new(Cimd::new(config(), &Limits::default()));
    let id = format!("{base}/slow.json");
    let mut tasks = Vec::new();
    for n in 0..16 {
        let (cimd, id) = (cimd.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            cimd.resolve(&id, peer(&format!("192.0.2.{n}"))).await
        }));
    }
    for task in tasks {
        assert!(task.await.unwrap().is_ok());
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_cache_evicts_the_least_recently_used_entry_not_all() {
    let (base, hits) = documents(200, Duration::ZERO).await;
    let cimd = Cimd::new(
        CimdConfig {
            max_cached: 3,
            ..config()
        },
        &Limits::default(),
    );
    let id = |n: &str| format!("{base}/{n}.json");
    for n in ["a", "b", "c"] {
        cimd.resolve(&id(n), peer("192.0.2.1")).await.unwrap();
    }
    cimd.resolve(&id("a"), peer("192.0.2.1")).await.unwrap();
    cimd.resolve(&id("d"), peer("192.0.2.1")).await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    assert_eq!(cimd.cached_len(), 3);
    // `a` was used last-but-one: still cached; `b` went.
    cimd.resolve(&id("a"), peer("192.0.2.1")).await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    cimd.resolve(&id("b"), peer("192.0.2.1")).await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn new_ids_are_rate_limited_per_address() {
    let (base, hits) = documents(200, Duration::ZERO).await;
    let limits = Limits {
        cimd_fetches: RateLimit {
            burst: 2,
            per_minute: 0,
        },
        ..Limits::default()
    };
    let cimd = Cimd::new(config(), &limits);
    for n in 0..2 {
        cimd.resolve(&format!("{base}/{n}.json"), peer("192.0.2.1"))
            .await
            .unwrap();
    }
    let err = cimd
        .resolve(&format!("{base}/2.json"), peer("192.0.2.1"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::TooMany(_)), "{err:?}");
    // A cached id costs nothing; another address has its own budget.
    cimd.resolve(&format!("{base}/0.json"), peer("192.0.2.1"))
        .await
        .unwrap();
    cimd.resolve(&format!("{base}/2.json"), peer("192.0.2.2"))
        .await
        .unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn fetches_in_flight_are_capped_in_total() {
    let (base, _hits) = documents(200, Duration::from_millis(500)).await;
    let limits = Limits {
        max_concurrent_cimd_fetches: 1,
        ..Limits::default()
    };
    let cimd = Arc::new(Cimd::new(config(), &limits));
    let slow = {
        let (cimd, id) = (cimd.clone(), format!("{base}/first.json"));
        tokio::spawn(async move { cimd.resolve(&id, peer("192.0.2.1")).await })
    };
    // Wait (bounded) until the first fetch holds the only permit.
    for _ in 0..200 {
        if cimd.fetches.available_permits() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let err = cimd
        .resolve(&format!("{base}/second.json"), peer("192.0.2.2"))
        .await
        .unwrap_err();
    assert_eq!(err, ClientError::TooMany(1));
    assert!(slow.await.unwrap().is_ok());
    assert!(cimd.inflight.lock().unwrap().is_empty());
}

#[tokio::test]
async fn private_hosts_are_refused_before_any_connection() {
    let (base, hits) = documents(200, Duration::ZERO).await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let cimd = Cimd::new(
        CimdConfig {
            allow_private_addresses: false,
            ..config()
        },
        &Limits::default(),
    );
    for id in [
        format!("http://127.0.0.1:{port}/x.json"),
        format!("http://localhost:{port}/x.json"),
        format!("http://[::ffff:127.0.0.1]:{port}/x.json"),
    ] {
        let err = cimd.resolve(&id, peer("192.0.2.1")).await.unwrap_err();
        assert_eq!(
            err,
            ClientError::Metadata("host resolves to a private or loopback address".into()),
            "{id}"
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[test]
fn one_http_client_serves_every_fetch() {
    let cimd = Cimd::new(config(), &Limits::default());
    let first = cimd.client().map(|c| c as *const reqwest::Client);
    let second = cimd.client().map(|c| c as *const reqwest::Client);
    assert!(first.is_some());
    assert_eq!(first, second);
}
