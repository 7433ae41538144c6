//! Progress reports from a Code Mode run: the MCP handler passes a
//! [`ProgressFn`] when the client sent a progress token, and `execute`
//! awaits it once per API request, before sending the request (so the
//! notifications precede the result, in order).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future a [`ProgressFn`] returns.
pub type ProgressFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Called with the number of API requests so far (1, 2, …) and a short
/// message naming the operation (`GET /zones/{zone_id}`: method and path
/// template, never a filled path, argument or credential).
pub type ProgressFn = Arc<dyn Fn(u32, String) -> ProgressFuture + Send + Sync>;

/// A [`ProgressFn`] held by a value that must be `Debug`.
#[derive(Clone)]
pub struct Reporter(pub ProgressFn);

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}
