//! The Prometheus endpoint on its own listener (`--metrics-listen ADDR`),
//! separate from `/mcp` so it can stay on an internal interface: `GET
//! /metrics` answers the text exposition format (0.0.4); every other path
//! is 404. No authentication: bind it where only the scraper reaches it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{StatusCode, header};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;

use super::ServeError;
use super::accept::accept_until;
use super::connections::{Drain, Gate, Timeouts};

/// How often histograms are compacted between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);
/// The metrics listener's deadlines: a scrape is one small GET; a scraper
/// keeps its connection between scrapes (every 15 to 60 s, usually).
const TIMEOUTS: Timeouts = Timeouts {
    header_read: Duration::from_secs(10),
    idle: Duration::from_secs(90),
    body_read: Duration::from_secs(10),
};

/// Binds `listen`, prints `metrics on http://IP:PORT/metrics` to stderr and
/// serves the exposition in a background task for the life of the process.
/// At most `max_connections` are open at once, under the same rules as the
/// MCP listener (the oldest connection without a request in flight makes
/// room; one peer address may hold all of them, as a scraper is one host).
///
/// # Errors
///
/// The address cannot be bound.
pub async fn spawn_metrics(
    listen: SocketAddr,
    handle: PrometheusHandle,
    max_connections: usize,
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
    let app = Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(Arc::new(handle));
    tokio::spawn(async move {
        let gate = Gate::new(max_connections, max_connections)
            .with_flags("--metrics-max-connections", "--metrics-max-connections");
        let drain = Drain::default();
        accept_until(
            &listener,
            &app,
            &gate,
            TIMEOUTS,
            &drain,
            std::future::pending(),
        )
        .await;
    });
    Ok(bound)
}

async fn metrics(State(handle): State<Arc<PrometheusHandle>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not Found: metrics are at /metrics\n",
    )
        .into_response()
}
