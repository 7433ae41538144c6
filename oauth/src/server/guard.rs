//! The per-instance bounds of the OAuth routes (see [`crate::limits`])
//! and their `429` answers.

use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

use super::page;
use crate::limits::{LiveCount, RateLimiter};

/// The limiters and totals of one running authorization server.
#[derive(Debug)]
pub(super) struct Guards {
    /// Sign-ins started per address.
    pub sign_ins: RateLimiter,
    /// Registrations per address.
    pub registrations: RateLimiter,
    /// Pending sign-ins stored.
    pub pending: LiveCount,
    /// Registered clients not yet used.
    pub unused_clients: LiveCount,
}

impl Guards {
    pub(super) fn new(limits: &crate::limits::Limits) -> Self {
        Self {
            sign_ins: RateLimiter::new(limits.sign_ins),
            registrations: RateLimiter::new(limits.registrations),
            pending: LiveCount::default(),
            unused_clients: LiveCount::default(),
        }
    }
}

fn with_retry_after(mut response: Response, secs: u64) -> Response {
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_str(&secs.max(1).to_string()).unwrap_or(HeaderValue::from_static("60")),
    );
    response
}

/// The HTML `429` of the browser routes.
pub(super) fn too_many_page(secs: u64) -> Response {
    with_retry_after(
        page::error(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sign-ins",
            "Too many sign-ins were started from here or in total. Wait a moment and start again.",
        ),
        secs,
    )
}

/// The JSON `429` of `/register`.
pub(super) fn too_many_json(secs: u64, description: &str) -> Response {
    with_retry_after(
        super::oauth_error(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            description,
        ),
        secs,
    )
}
