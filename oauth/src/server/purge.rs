//! The scheduled purge: at start and then every `retention.purge_interval_secs`
//! (jittered, so instances sharing a PostgreSQL store spread out), expired
//! sign-ins, codes, tokens and grants and unused or idle registered
//! clients are deleted, and the store gives the space back.

use std::sync::Arc;
use std::time::Duration;

use crate::limits::Retention;
use crate::store::{GrantStore, StoreError};

/// The running schedule; dropping it stops the task.
#[derive(Debug)]
pub(super) struct PurgeTask(tokio::task::JoinHandle<()>);

impl Drop for PurgeTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the schedule on the current runtime (none outside one, or when
/// the interval is 0).
pub(super) fn spawn(store: Arc<dyn GrantStore>, retention: Retention) -> Option<PurgeTask> {
    if retention.purge_interval_secs == 0 {
        return None;
    }
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    Some(PurgeTask(runtime.spawn(run(store, retention))))
}

async fn run(store: Arc<dyn GrantStore>, retention: Retention) {
    let interval = Duration::from_secs(retention.purge_interval_secs);
    loop {
        match purge_once(store.as_ref(), &retention, super::now()).await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "grant store: expired rows purged"),
            Err(e) => tracing::warn!(error = %e, "grant store purge failed"),
        }
        tokio::time::sleep(interval + jitter(interval)).await;
    }
}

/// Up to a tenth of `interval`, from the clock's nanoseconds (spreading
/// instances out needs no secret randomness).
fn jitter(interval: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tenth = interval.as_millis() / 10;
    let tenth = u64::try_from(tenth).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(u64::from(nanos) % tenth)
}

/// One purge at `now`; returns the rows deleted.
///
/// # Errors
///
/// The store failed.
pub async fn purge_once(
    store: &dyn GrantStore,
    retention: &Retention,
    now: i64,
) -> Result<u64, StoreError> {
    let ago = |secs: u64| now.saturating_sub(i64::try_from(secs).unwrap_or(i64::MAX));
    let mut purged = store.purge_expired(now).await?;
    purged = purged.saturating_add(
        store
            .expire_clients(
                ago(retention.unused_client_secs),
                ago(retention.idle_client_secs),
            )
            .await?,
    );
    store.compact().await?;
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_a_tenth() {
        for secs in [1, 60, 3600] {
            let interval = Duration::from_secs(secs);
            assert!(jitter(interval) <= interval / 10 + Duration::from_millis(1));
        }
    }
}
