//! The Prometheus endpoint on its own listener (`--metrics-listen ADDR`),
//! separate from `/mcp` so it can stay on an internal interface: `GET
//! /metrics` answers the text exposition format (0.0.4); every other path
//! is 404. No authentication: bind it where only the scraper reaches it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;

use super::ServeError;

/// How often histograms are compacted between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Binds `listen`, prints `metrics on http://IP:PORT/metrics` to stderr and
/// serves the exposition in a background task for the life of the process.
///
/// # Errors
///
/// The address cannot be bound.
pub async fn spawn_metrics(
    listen: SocketAddr,
    handle: PrometheusHandle,
) -> Result<SocketAddr, ServeError> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| ServeError::Io {
            context: format!("cannot listen on {listen} for metrics"),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Io {
        context: "cannot read the metrics address".into(),
        source,
    })?;
    eprintln!("metrics on http://{bound}/metrics");
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(UPKEEP_EVERY);
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let handle = handle.clone();
                    async move { Ok::<_, Infallible>(answer(&handle, &req)) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                // A scrape is small; a stuck scraper is cut off.
                let _ = tokio::time::timeout(Duration::from_secs(30), conn).await;
            });
        }
    });
    Ok(bound)
}

fn answer(handle: &PrometheusHandle, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = if req.uri().path() == "/metrics" {
        (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            handle.render(),
        )
    } else {
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "Not Found: metrics are at /metrics\n".to_owned(),
        )
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}
