//! The grant store: one trait, two backends selected by the store URL
//! (`sqlite:PATH` embedded, the default; `postgres://…` for several server
//! instances behind a load balancer). Both run the same migrations on open
//! and behave the same; single use of codes and sign-in states is atomic in
//! both (one statement or one transaction).

use std::sync::Arc;

use super::model::{
    AuthCode, CodeUse, Grant, PendingSignIn, PendingStepUp, RefreshUse, RegisteredClient,
    TokenHash, TokenRecord, UnixTime,
};

/// A store operation that failed. Messages never carry a token, a hash or
/// a sealed value; a database error's own text may name a table or column.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store URL is neither `sqlite:` nor `postgres://` / `postgresql://`.
    #[error("grant store URL must start with `sqlite:` or `postgres://` (got scheme `{scheme}`)")]
    Scheme {
        /// The scheme given.
        scheme: String,
    },
    /// Opening or migrating the store failed.
    #[error("cannot open the grant store ({backend}): {message}")]
    Open {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// What went wrong (credentials in a URL are not repeated).
        message: String,
    },
    /// A query failed.
    #[error("grant store {operation} failed: {message}")]
    Query {
        /// Which operation (`take_code`, `rotate_refresh`, …).
        operation: &'static str,
        /// The database's message.
        message: String,
    },
    /// A row could not be decoded (a corrupt or foreign store).
    #[error("grant store {operation}: unreadable row: {message}")]
    Corrupt {
        /// Which operation.
        operation: &'static str,
        /// What is wrong with the row.
        message: String,
    },
}

/// Durable OAuth state. Every method is one atomic step.
#[async_trait::async_trait]
pub trait GrantStore: Send + Sync + std::fmt::Debug {
    /// `sqlite` or `postgres` (for logs and metrics).
    fn backend(&self) -> &'static str;

    /// A cheap round trip (`/readyz`).
    async fn ping(&self) -> Result<(), StoreError>;

    /// Stores an upstream sign-in in flight; `false` (nothing stored) when
    /// one with this hash exists (a replayed consent form).
    async fn put_pending(&self, pending: &PendingSignIn) -> Result<bool, StoreError>;

    /// How many sign-ins are pending and unexpired at `now`.
    async fn count_pending(&self, now: UnixTime) -> Result<u64, StoreError>;

    /// Removes and returns the sign-in with this state hash, if it exists
    /// and has not expired at `now`. A second call for the same hash finds
    /// nothing, also when two callers race.
    async fn take_pending(
        &self,
        hash: &TokenHash,
        now: UnixTime,
    ) -> Result<Option<PendingSignIn>, StoreError>;

    /// Stores a new grant and the authorization code that completes it,
    /// and records the sign-in as the grant's client's last use.
    async fn create_grant(&self, grant: &Grant, code: &AuthCode) -> Result<(), StoreError>;

    /// Marks the code used and returns it the first time (an unknown code
    /// is found so by a read, without taking a write lock); a later call (or
    /// a racing one) gets [`CodeUse::Replayed`] with its grant id. An
    /// expired code is [`CodeUse::Unknown`].
    async fn take_code(&self, hash: &TokenHash, now: UnixTime) -> Result<CodeUse, StoreError>;

    /// Stores the first access and refresh tokens of a grant (after the
    /// code exchange) and makes the refresh token current.
    async fn issue_tokens(
        &self,
        access: &TokenRecord,
        refresh: &TokenRecord,
    ) -> Result<(), StoreError>;

    /// The token with this hash and its grant, when the token has not
    /// expired at `now` (a revoked grant is returned with `revoked` set; the
    /// caller refuses it).
    async fn token(
        &self,
        hash: &TokenHash,
        now: UnixTime,
    ) -> Result<Option<(TokenRecord, Grant)>, StoreError>;

    /// Presents a refresh token (see `RefreshUse`): when it is the grant's
    /// current one, it becomes previous and `new_refresh` current; when it
    /// is the previous one, `new_refresh` replaces the (unused) current one;
    /// any other refresh token of the grant revokes the grant. `new_access`
    /// is stored on rotation and replaces the grant's earlier access tokens
    /// (deleted: a refresh ends the access tokens it supersedes). Of the
    /// refresh tokens that dropped out of the two slots only the latest
    /// keeps its row (presenting it is reuse); older ones are deleted, so a
    /// grant holds at most one access and three refresh rows. All in one
    /// transaction.
    async fn rotate_refresh(
        &self,
        presented: &TokenHash,
        new_access: &TokenRecord,
        new_refresh: &TokenRecord,
        now: UnixTime,
    ) -> Result<RefreshUse, StoreError>;

    /// Replaces the sealed upstream tokens when the grant's version is
    /// still `expected_version` (another instance may have refreshed first);
    /// returns whether it did.
    async fn update_upstream(
        &self,
        grant_id: &str,
        expected_version: i64,
        sealed: &[u8],
        upstream_expires_at: Option<UnixTime>,
    ) -> Result<bool, StoreError>;

    /// Records the step-up challenge just sent to a grant's session
    /// (replacing an earlier one); `false` when the grant is unknown or
    /// revoked. A new grant starts with none ([`Self::create_grant`]
    /// ignores `Grant::step_up`).
    async fn mark_step_up(
        &self,
        grant_id: &str,
        pending: &PendingStepUp,
    ) -> Result<bool, StoreError>;

    /// The grant with this id (revoked or not).
    async fn grant(&self, grant_id: &str) -> Result<Option<Grant>, StoreError>;

    /// Revokes a grant: every token and code of it stops working.
    async fn revoke_grant(&self, grant_id: &str) -> Result<(), StoreError>;

    /// Stores a dynamically registered client.
    async fn register_client(&self, client: &RegisteredClient) -> Result<(), StoreError>;

    /// A dynamically registered client.
    async fn client(&self, client_id: &str) -> Result<Option<RegisteredClient>, StoreError>;

    /// How many registered clients were never used for a sign-in.
    async fn count_unused_clients(&self) -> Result<u64, StoreError>;

    /// Deletes registered clients never used and registered before
    /// `unused_before`, and used ones last used before `idle_before`;
    /// returns how many went.
    async fn expire_clients(
        &self,
        unused_before: UnixTime,
        idle_before: UnixTime,
    ) -> Result<u64, StoreError>;

    /// Gives space back after a purge (SQLite: checkpoints and truncates
    /// the write-ahead log); nothing to do elsewhere.
    async fn compact(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Deletes expired sign-ins, codes and tokens, and grants past their
    /// end; returns how many rows went.
    async fn purge_expired(&self, now: UnixTime) -> Result<u64, StoreError>;
}

/// Opens (creating and migrating) the store a URL names.
///
/// # Errors
///
/// An unknown scheme, or the backend cannot be opened or migrated.
pub async fn open(url: &str) -> Result<Arc<dyn GrantStore>, StoreError> {
    let scheme = url.split(':').next().unwrap_or_default();
    match scheme {
        "sqlite" => Ok(Arc::new(sqlite::open(url).await?)),
        "postgres" | "postgresql" => Ok(Arc::new(postgres::open(url).await?)),
        other => Err(StoreError::Scheme {
            scheme: other.to_owned(),
        }),
    }
}

mod dialect;
mod migrations;
mod postgres;
mod rows;
mod sql;
mod sqlite;
#[cfg(any(test, feature = "testing"))]
pub mod suite;
