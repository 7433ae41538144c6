//! The upstream HTTP client, built off the start-up path.
//!
//! Building the client loads the platform's trust roots (every file under
//! the system certificate directory is read and parsed): milliseconds a
//! server would otherwise spend before it listens. The server asks for it
//! with [`LazyClient::warm_up`] on the listing's encoding thread a second
//! after start (on two cores, building it beside the main thread delayed
//! the listening socket, and building it right after the listing delayed
//! writing that listing to the first client); the first request that needs
//! it waits for the build, or builds it itself when nothing warmed it up. A client that cannot be built is logged once by
//! the warm-up and reported by every request as [`UpstreamError::Client`].

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::UpstreamError;

/// A `reqwest::Client` made once: by [`LazyClient::warm_up`] or by the
/// first request.
#[derive(Debug, Clone)]
pub(super) struct LazyClient(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    timeout: Duration,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl LazyClient {
    /// A client to be built on warm-up or first use (no redirects, no
    /// proxies, `timeout` for a whole exchange and at most 10 s to
    /// connect).
    pub(super) fn new(timeout: Duration) -> Self {
        Self(Arc::new(Inner {
            timeout,
            client: OnceLock::new(),
        }))
    }

    /// Builds the client now, on the calling thread, unless it is built or
    /// being built; logs a client that cannot be built.
    pub(super) fn warm_up(&self) {
        if let Err(e) = self.get() {
            tracing::warn!(error = %e, "the upstream HTTP client could not be created; every upstream request will fail");
        }
    }

    /// The client, waiting for the build when it is under way.
    ///
    /// # Errors
    ///
    /// [`UpstreamError::Client`] when the TLS stack cannot be set up.
    pub(super) fn get(&self) -> Result<&reqwest::Client, UpstreamError> {
        self.0
            .client
            .get_or_init(|| build(self.0.timeout))
            .as_ref()
            .map_err(|e| UpstreamError::Client(e.clone()))
    }
}

fn build(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .no_proxy()
        .user_agent(concat!("toolforge-runtime/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(super::describe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_built_once_and_shared_by_clones() {
        let lazy = LazyClient::new(Duration::from_secs(5));
        assert!(lazy.0.client.get().is_none(), "nothing is built before use");
        lazy.warm_up();
        let copy = lazy.clone();
        let a: *const reqwest::Client = lazy.get().expect("client");
        let b: *const reqwest::Client = copy.get().expect("client");
        assert_eq!(a, b, "one client for the server, however many handles");
    }
}
