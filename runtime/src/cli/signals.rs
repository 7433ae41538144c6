//! SIGINT and SIGTERM: the first starts the graceful shutdown (stop
//! accepting, let in-flight requests finish); a second during the drain
//! ends it at once, for an operator who does not want to wait.

use tokio::sync::watch;

/// The shutdown signals received so far, counted by a background task.
#[derive(Debug, Clone)]
pub(crate) struct Signals(watch::Receiver<u32>);

impl Signals {
    /// Starts counting SIGINT and SIGTERM. Must run inside the runtime.
    pub(crate) fn listen() -> Signals {
        let (tx, rx) = watch::channel(0u32);
        tokio::spawn(async move {
            #[cfg(unix)]
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            #[cfg(not(unix))]
            let mut term: Option<()> = None;
            let mut sigint = true;
            loop {
                tokio::select! {
                    got = tokio::signal::ctrl_c(), if sigint => {
                        if got.is_err() {
                            // No SIGINT handler: SIGTERM alone still counts.
                            sigint = false;
                            continue;
                        }
                    }
                    () = terminate(&mut term) => {}
                }
                tx.send_modify(|n| *n = n.saturating_add(1));
                if tx.is_closed() {
                    return;
                }
            }
        });
        Signals(rx)
    }

    /// Resolves once `n` signals have arrived (never, when signals cannot
    /// be received at all).
    async fn nth(mut self, n: u32) {
        if self.0.wait_for(|count| *count >= n).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves on the first signal.
    pub(crate) async fn first(self) {
        self.nth(1).await;
        tracing::info!("signal received, shutting down");
    }

    /// Resolves on the second signal (only the HTTP drain listens for it).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) async fn second(self) {
        self.nth(2).await;
    }
}

/// The next SIGTERM (never, where there is none).
#[cfg(unix)]
async fn terminate(term: &mut Option<tokio::signal::unix::Signal>) {
    match term {
        Some(s) => {
            if s.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

#[cfg(not(unix))]
async fn terminate(_: &mut Option<()>) {
    std::future::pending::<()>().await;
}
