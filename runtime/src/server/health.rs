//! `/healthz` and `/readyz` for load balancers and orchestrators.
//!
//! `/healthz` answers `200 ok` whenever the process serves HTTP at all.
//! `/readyz` answers `200` when the catalogue is loaded (the core exists and
//! lists at least one tool) and every configured [`ReadinessCheck`] passes
//! (for example the OAuth grant store is reachable), and `503` with the
//! failing checks named otherwise, and from the moment the server starts
//! draining (SIGTERM), so a load balancer stops sending new requests.
//!
//! Both are served before the Host/Origin allowlists and client
//! authentication (probes come from the orchestrator with whatever `Host`
//! it uses) and reveal nothing but check names and their states.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;
use serde_json::{Map, Value, json};

use super::Core;

/// How long one readiness check may take before it counts as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The future a [`ReadinessCheck`] returns: `Err` carries a short reason
/// (no credentials, no customer data: it is shown to anyone who can reach
/// `/readyz`).
pub type ReadinessFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// A dependency `/readyz` checks on every probe, such as a grant store.
///
/// Each check runs with a [`CHECK_TIMEOUT`]; a check that takes longer fails
/// with `timed out`.
pub trait ReadinessCheck: Send + Sync + Debug {
    /// A stable, short name shown in the `/readyz` answer (`grant_store`).
    fn name(&self) -> &str;
    /// Whether the dependency is usable right now.
    fn check(&self) -> ReadinessFuture<'_>;
}

/// The state behind the health routes.
#[derive(Debug)]
pub struct Health {
    core: Arc<Core>,
    checks: Vec<Arc<dyn ReadinessCheck>>,
    draining: AtomicBool,
}

impl Health {
    /// Health over `core` with these extra readiness checks.
    pub fn new(core: Arc<Core>, checks: Vec<Arc<dyn ReadinessCheck>>) -> Arc<Self> {
        Arc::new(Self {
            core,
            checks,
            draining: AtomicBool::new(false),
        })
    }

    /// Marks the server as draining: `/readyz` answers 503 from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether [`Health::start_draining`] was called.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The readiness verdict and its JSON body.
    pub async fn readiness(&self) -> (bool, Value) {
        let mut checks = Map::new();
        let mut ready = true;
        let catalogue = self.core.tool_count() > 0;
        ready &= catalogue;
        checks.insert(
            "catalogue".into(),
            Value::from(if catalogue { "ok" } else { "no tools loaded" }),
        );
        for check in &self.checks {
            let state = match tokio::time::timeout(CHECK_TIMEOUT, check.check()).await {
                Ok(Ok(())) => "ok".to_owned(),
                Ok(Err(reason)) => reason,
                Err(_) => "timed out".to_owned(),
            };
            ready &= state == "ok";
            checks.insert(check.name().to_owned(), Value::from(state));
        }
        if self.draining() {
            ready = false;
        }
        let status = match (ready, self.draining()) {
            (true, _) => "ready",
            (false, true) => "draining",
            (false, false) => "not ready",
        };
        (ready, json!({"status": status, "checks": checks}))
    }
}

/// The `/healthz` and `/readyz` routes.
pub fn routes(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn healthz() -> Response {
    (
        StatusCode::OK,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "ok\n",
    )
        .into_response()
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    let (ready, body) = health.readiness().await;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}
