//! The embedded grant store: one SQLite file (WAL journal, a busy timeout so
//! concurrent writers wait rather than fail). Writes that read first run
//! under `BEGIN IMMEDIATE`, which takes the write lock up front, so two
//! connections never interleave inside one rotation.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};

use super::rows::{self, Standing, query_error};
use super::{GrantStore, StoreError, migrations};
use crate::model::{
    AuthCode, CodeUse, Grant, PendingSignIn, PendingStepUp, RefreshUse, RegisteredClient,
    TokenHash, TokenKind, TokenRecord, UnixTime,
};

/// How long a statement waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an operation waits for a free pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes of write-ahead log kept after a checkpoint.
const JOURNAL_SIZE_LIMIT: u64 = 4 * 1024 * 1024;

/// The grant store in a SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

fn open_error(message: impl std::fmt::Display) -> StoreError {
    StoreError::Open {
        backend: "sqlite",
        message: message.to_string(),
    }
}

impl SqliteStore {
    /// Opens `sqlite:PATH`, creating the file when it is missing, and
    /// applies the migrations it lacks.
    ///
    /// # Errors
    ///
    /// A malformed URL, an unopenable file, or a failed migration.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| open_error(format!("bad URL: {}", rows::describe(&e))))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true)
            // A checkpoint leaves the log at most this long (it is reused,
            // not regrown, between checkpoints).
            .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT.to_string());
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| open_error(rows::describe(&e)))?;
        let store = Self { pool };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let fail = |what: &str, e: sqlx::Error| {
            open_error(format!("migration: {what}: {}", rows::describe(&e)))
        };
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| fail("begin", e))?;
        sqlx::query(migrations::VERSION_TABLE)
            .execute(&mut *tx)
            .await
            .map_err(|e| fail("version table", e))?;
        let current: i64 = sqlx::query_scalar(migrations::CURRENT_VERSION)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| fail("current version", e))?;
        for migration in migrations::pending(current).map_err(open_error)? {
            for statement in migration.sqlite {
                sqlx::query(*statement)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| fail(migration.description, e))?;
            }
            sqlx::query("INSERT INTO toolforge_schema_version (version, applied_at) VALUES (?, ?)")
                .bind(migration.version)
                .bind(now_unix())
                .execute(&mut *tx)
                .await
                .map_err(|e| fail(migration.description, e))?;
        }
        tx.commit().await.map_err(|e| fail("commit", e))
    }

    async fn begin_immediate(
        &self,
        operation: &'static str,
    ) -> Result<Transaction<'static, Sqlite>, StoreError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| query_error(operation, &e))
    }
}

/// The wall clock, for `toolforge_schema_version.applied_at` only.
fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Revokes `grant_id` inside `tx`: the grant is marked, its access tokens
/// deleted, and its refresh tokens and codes kept (so a replay is still
/// recognised) but with their wrapped keys erased and codes marked used.
async fn revoke_in(
    tx: &mut Transaction<'static, Sqlite>,
    operation: &'static str,
    grant_id: &str,
) -> Result<(), StoreError> {
    let statements = [
        "UPDATE oauth_grants SET revoked = TRUE WHERE id = ?",
        "DELETE FROM oauth_tokens WHERE grant_id = ? AND kind = 'access'",
        "UPDATE oauth_tokens SET wrapped_key = X'' WHERE grant_id = ?",
        "UPDATE oauth_codes SET used = TRUE, wrapped_key = X'' WHERE grant_id = ?",
    ];
    for statement in statements {
        sqlx::query(statement)
            .bind(grant_id)
            .execute(&mut **tx)
            .await
            .map_err(|e| query_error(operation, &e))?;
    }
    Ok(())
}

async fn insert_token(
    tx: &mut Transaction<'static, Sqlite>,
    operation: &'static str,
    token: &TokenRecord,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO oauth_tokens (hash, kind, grant_id, expires_at, wrapped_key) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind(token.hash.0.as_slice())
    .bind(rows::kind_name(token.kind))
    .bind(&token.grant_id)
    .bind(token.expires_at)
    .bind(token.wrapped_key.as_slice())
    .execute(&mut **tx)
    .await
    .map_err(|e| query_error(operation, &e))?;
    Ok(())
}

async fn grant_in(
    tx: &mut Transaction<'static, Sqlite>,
    operation: &'static str,
    grant_id: &str,
) -> Result<Option<Grant>, StoreError> {
    let row = sqlx::query(GRANT_BY_ID)
        .bind(grant_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|e| query_error(operation, &e))?;
    row.map(|r| rows::grant(&r, operation)).transpose()
}

/// One grant by id, every column [`rows::grant`] reads.
const GRANT_BY_ID: &str = "SELECT id, client_id, resource, scopes, exposure, created_at, \
     expires_at, upstream_sealed, upstream_expires_at, version, refresh_current, \
     refresh_previous, revoked, step_up_scope, step_up_at FROM oauth_grants WHERE id = ?";

#[async_trait::async_trait]
impl GrantStore for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(|e| query_error("ping", &e))?;
        Ok(())
    }

    async fn put_pending(&self, pending: &PendingSignIn) -> Result<bool, StoreError> {
        // A replayed consent form derives the same hash: it stores nothing.
        let done = sqlx::query(
            "INSERT INTO oauth_pending (hash, browser, expires_at, sealed) VALUES (?, ?, ?, ?) \
             ON CONFLICT (hash) DO NOTHING",
        )
        .bind(pending.hash.0.as_slice())
        .bind(pending.browser.0.as_slice())
        .bind(pending.expires_at)
        .bind(pending.sealed.as_slice())
        .execute(&self.pool)
        .await
        .map_err(|e| query_error("put_pending", &e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn count_pending(&self, now: UnixTime) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_pending WHERE expires_at > ?")
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| query_error("count_pending", &e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn take_pending(
        &self,
        hash: &TokenHash,
        now: UnixTime,
    ) -> Result<Option<PendingSignIn>, StoreError> {
        // One statement: of two racing callers, one deletes the row and the
        // other finds nothing.
        let row = sqlx::query(
            "DELETE FROM oauth_pending WHERE hash = ? AND expires_at > ? \
             RETURNING hash, browser, expires_at, sealed",
        )
        .bind(hash.0.as_slice())
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| query_error("take_pending", &e))?;
        row.map(|r| rows::pending(&r, "take_pending")).transpose()
    }

    async fn create_grant(&self, grant: &Grant, code: &AuthCode) -> Result<(), StoreError> {
        const OP: &str = "create_grant";
        let exposure = rows::exposure_json(OP, &grant.exposure)?;
        let mut tx = self.begin_immediate(OP).await?;
        sqlx::query(
            "INSERT INTO oauth_grants (id, client_id, resource, scopes, exposure, created_at, \
             expires_at, upstream_sealed, upstream_expires_at, version, refresh_current, \
             refresh_previous, revoked) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&grant.id)
        .bind(&grant.client_id)
        .bind(&grant.resource)
        .bind(rows::scopes_json(&grant.scopes))
        .bind(exposure)
        .bind(grant.created_at)
        .bind(grant.expires_at)
        .bind(grant.upstream_sealed.as_slice())
        .bind(grant.upstream_expires_at)
        .bind(grant.version)
        .bind(grant.refresh_current.as_ref().map(|h| h.0.to_vec()))
        .bind(grant.refresh_previous.as_ref().map(|h| h.0.to_vec()))
        .bind(grant.revoked)
        .execute(&mut *tx)
        .await
        .map_err(|e| query_error(OP, &e))?;
        sqlx::query(
            "INSERT INTO oauth_codes (hash, grant_id, client_id, redirect_uri, code_challenge, \
             expires_at, wrapped_key, used) VALUES (?, ?, ?, ?, ?, ?, ?, FALSE)",
        )
        .bind(code.hash.0.as_slice())
        .bind(&code.grant_id)
        .bind(&code.client_id)
        .bind(&code.redirect_uri)
        .bind(&code.code_challenge)
        .bind(code.expires_at)
        .bind(code.wrapped_key.as_slice())
        .execute(&mut *tx)
        .await
        .map_err(|e| query_error(OP, &e))?;
        // A sign-in is a registered client's use: it keeps the client.
        sqlx::query("UPDATE oauth_clients SET last_used_at = ? WHERE client_id = ?")
            .bind(grant.created_at)
            .bind(&grant.client_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| query_error(OP, &e))?;
        tx.commit().await.map_err(|e| query_error(OP, &e))
    }

    async fn take_code(&self, hash: &TokenHash, now: UnixTime) -> Result<CodeUse, StoreError> {
        const OP: &str = "take_code";
        // A bogus code is found absent by a read: only a stored code takes
        // the write path (on SQLite, the one write lock).
        let known: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_codes WHERE hash = ?")
            .bind(hash.0.as_slice())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| query_error(OP, &e))?;
        if known == 0 {
            return Ok(CodeUse::Unknown);
        }
        let mut tx = self.begin_immediate(OP).await?;
        let taken = sqlx::query(
            "UPDATE oauth_codes SET used = TRUE WHERE hash = ? AND used = FALSE AND expires_at > ? \
             RETURNING hash, grant_id, client_id, redirect_uri, code_challenge, expires_at, \
             wrapped_key",
        )
        .bind(hash.0.as_slice())
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| query_error(OP, &e))?;
        let result = if let Some(row) = taken {
            let code = rows::code(&row, OP)?;
            // The wrapped key has done its job; a used code unwraps nothing.
            sqlx::query("UPDATE oauth_codes SET wrapped_key = X'' WHERE hash = ?")
                .bind(hash.0.as_slice())
                .execute(&mut *tx)
                .await
                .map_err(|e| query_error(OP, &e))?;
            CodeUse::Fresh(code)
        } else {
            let row = sqlx::query("SELECT grant_id, used FROM oauth_codes WHERE hash = ?")
                .bind(hash.0.as_slice())
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| query_error(OP, &e))?;
            match row {
                Some(row) => {
                    let used: bool = row.try_get("used").map_err(|e| StoreError::Corrupt {
                        operation: OP,
                        message: format!("column `used`: {}", rows::describe(&e)),
                    })?;
                    let grant_id: String =
                        row.try_get("grant_id").map_err(|e| StoreError::Corrupt {
                            operation: OP,
                            message: format!("column `grant_id`: {}", rows::describe(&e)),
                        })?;
                    if used {
                        CodeUse::Replayed { grant_id }
                    } else {
                        CodeUse::Unknown
                    }
                }
                None => CodeUse::Unknown,
            }
        };
        tx.commit().await.map_err(|e| query_error(OP, &e))?;
        Ok(result)
    }

    async fn issue_tokens(
        &self,
        access: &TokenRecord,
        refresh: &TokenRecord,
    ) -> Result<(), StoreError> {
        const OP: &str = "issue_tokens";
        rows::check_new_tokens(OP, &access.grant_id, access, refresh)?;
        let mut tx = self.begin_immediate(OP).await?;
        let updated = sqlx::query(
            "UPDATE oauth_grants SET refresh_current = ?, refresh_previous = NULL WHERE id = ?",
        )
        .bind(refresh.hash.0.as_slice())
        .bind(&refresh.grant_id)
        .execute(&mut *tx)
        .await
        .map_err(|e| query_error(OP, &e))?;
        if updated.rows_affected() != 1 {
            return Err(StoreError::Query {
                operation: OP,
                message: "no such grant".to_owned(),
            });
        }
        insert_token(&mut tx, OP, access).await?;
        insert_token(&mut tx, OP, refresh).await?;
        tx.commit().await.map_err(|e| query_error(OP, &e))
    }

    async fn token(
        &self,
        hash: &TokenHash,
        now: UnixTime,
    ) -> Result<Option<(TokenRecord, Grant)>, StoreError> {
        const OP: &str = "token";
        let row = sqlx::query(
            "SELECT t.hash, t.kind, t.grant_id, t.expires_at AS token_expires_at, t.wrapped_key, \
             g.id, g.client_id, g.resource, g.scopes, g.exposure, g.created_at, g.expires_at, \
             g.upstream_sealed, g.upstream_expires_at, g.version, g.refresh_current, \
             g.refresh_previous, g.revoked, g.step_up_scope, g.step_up_at \
             FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id \
             WHERE t.hash = ? AND t.expires_at > ? AND g.expires_at > ?",
        )
        .bind(hash.0.as_slice())
        .bind(now)
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| query_error(OP, &e))?;
        let Some(row) = row else { return Ok(None) };
        let grant = rows::grant(&row, OP)?;
        let token = rows::token_with(&row, OP, "token_expires_at")?;
        Ok(Some((token, grant)))
    }

    async fn rotate_refresh(
        &self,
        presented: &TokenHash,
        new_access: &TokenRecord,
        new_refresh: &TokenRecord,
        now: UnixTime,
    ) -> Result<RefreshUse, StoreError> {
        const OP: &str = "rotate_refresh";
        let mut tx = self.begin_immediate(OP).await?;
        let row = sqlx::query(
            "SELECT hash, kind, grant_id, expires_at, wrapped_key FROM oauth_tokens WHERE hash = ?",
        )
        .bind(presented.0.as_slice())
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| query_error(OP, &e))?;
        let Some(row) = row else {
            return Ok(RefreshUse::Invalid);
        };
        let record = rows::token(&row, OP)?;
        if record.kind != TokenKind::Refresh || record.expires_at <= now {
            return Ok(RefreshUse::Invalid);
        }
        let Some(grant) = grant_in(&mut tx, OP, &record.grant_id).await? else {
            return Ok(RefreshUse::Invalid);
        };
        if grant.revoked || grant.expires_at <= now {
            return Ok(RefreshUse::Invalid);
        }
        let standing = rows::standing(&grant, presented);
        if standing == Standing::Older {
            revoke_in(&mut tx, OP, &grant.id).await?;
            tx.commit().await.map_err(|e| query_error(OP, &e))?;
            return Ok(RefreshUse::Reused);
        }
        rows::check_new_tokens(OP, &grant.id, new_access, new_refresh)?;
        // The token that drops out of the two slots keeps its row (a later
        // use is reuse) but can no longer unwrap the grant key, until the
        // next rotation drops another.
        let (previous, dropped) = match standing {
            Standing::Current => (Some(*presented), grant.refresh_previous),
            _ => (grant.refresh_previous, grant.refresh_current),
        };
        // Rows rotation superseded go: the grant's earlier access tokens
        // (a refresh ends them) and refresh tokens dropped before this one.
        for statement in [
            "DELETE FROM oauth_tokens WHERE grant_id = ? AND kind = 'access'",
            "DELETE FROM oauth_tokens WHERE grant_id = ? AND kind = 'refresh' \
             AND wrapped_key = X''",
        ] {
            sqlx::query(statement)
                .bind(&grant.id)
                .execute(&mut *tx)
                .await
                .map_err(|e| query_error(OP, &e))?;
        }
        if let Some(dropped) = dropped {
            sqlx::query("UPDATE oauth_tokens SET wrapped_key = X'' WHERE hash = ?")
                .bind(dropped.0.as_slice())
                .execute(&mut *tx)
                .await
                .map_err(|e| query_error(OP, &e))?;
        }
        sqlx::query(
            "UPDATE oauth_grants SET refresh_current = ?, refresh_previous = ? WHERE id = ?",
        )
        .bind(new_refresh.hash.0.as_slice())
        .bind(previous.map(|h| h.0.to_vec()))
        .bind(&grant.id)
        .execute(&mut *tx)
        .await
        .map_err(|e| query_error(OP, &e))?;
        insert_token(&mut tx, OP, new_access).await?;
        insert_token(&mut tx, OP, new_refresh).await?;
        let grant = grant_in(&mut tx, OP, &grant.id)
            .await?
            .ok_or_else(|| StoreError::Corrupt {
                operation: OP,
                message: "the grant vanished during rotation".to_owned(),
            })?;
        tx.commit().await.map_err(|e| query_error(OP, &e))?;
        Ok(RefreshUse::Rotated {
            grant,
            presented: record,
        })
    }

    async fn update_upstream(
        &self,
        grant_id: &str,
        expected_version: i64,
        sealed: &[u8],
        upstream_expires_at: Option<UnixTime>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE oauth_grants SET upstream_sealed = ?, upstream_expires_at = ?, \
             version = version + 1 WHERE id = ? AND version = ? AND revoked = FALSE",
        )
        .bind(sealed)
        .bind(upstream_expires_at)
        .bind(grant_id)
        .bind(expected_version)
        .execute(&self.pool)
        .await
        .map_err(|e| query_error("update_upstream", &e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn mark_step_up(
        &self,
        grant_id: &str,
        pending: &PendingStepUp,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE oauth_grants SET step_up_scope = ?, step_up_at = ? \
             WHERE id = ? AND revoked = FALSE",
        )
        .bind(&pending.scope)
        .bind(pending.at)
        .bind(grant_id)
        .execute(&self.pool)
        .await
        .map_err(|e| query_error("mark_step_up", &e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn grant(&self, grant_id: &str) -> Result<Option<Grant>, StoreError> {
        let row = sqlx::query(GRANT_BY_ID)
            .bind(grant_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| query_error("grant", &e))?;
        row.map(|r| rows::grant(&r, "grant")).transpose()
    }

    async fn revoke_grant(&self, grant_id: &str) -> Result<(), StoreError> {
        const OP: &str = "revoke_grant";
        let mut tx = self.begin_immediate(OP).await?;
        revoke_in(&mut tx, OP, grant_id).await?;
        tx.commit().await.map_err(|e| query_error(OP, &e))
    }

    async fn register_client(&self, client: &RegisteredClient) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (?, ?, ?)")
            .bind(&client.client_id)
            .bind(&client.metadata)
            .bind(client.created_at)
            .execute(&self.pool)
            .await
            .map_err(|e| query_error("register_client", &e))?;
        Ok(())
    }

    async fn client(&self, client_id: &str) -> Result<Option<RegisteredClient>, StoreError> {
        let row = sqlx::query(
            "SELECT client_id, metadata, created_at FROM oauth_clients WHERE client_id = ?",
        )
        .bind(client_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| query_error("client", &e))?;
        row.map(|r| rows::client(&r, "client")).transpose()
    }

    async fn count_unused_clients(&self) -> Result<u64, StoreError> {
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM oauth_clients WHERE last_used_at IS NULL")
                .fetch_one(&self.pool)
                .await
                .map_err(|e| query_error("count_unused_clients", &e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn expire_clients(
        &self,
        unused_before: UnixTime,
        idle_before: UnixTime,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM oauth_clients WHERE (last_used_at IS NULL AND created_at < ?) \
             OR last_used_at < ?",
        )
        .bind(unused_before)
        .bind(idle_before)
        .execute(&self.pool)
        .await
        .map_err(|e| query_error("expire_clients", &e))?;
        Ok(done.rows_affected())
    }

    async fn purge_expired(&self, now: UnixTime) -> Result<u64, StoreError> {
        const OP: &str = "purge_expired";
        let mut tx = self.begin_immediate(OP).await?;
        let mut purged = 0;
        for statement in [
            "DELETE FROM oauth_pending WHERE expires_at <= ?1",
            "DELETE FROM oauth_codes WHERE expires_at <= ?1 \
             OR grant_id IN (SELECT id FROM oauth_grants WHERE expires_at <= ?1)",
            "DELETE FROM oauth_tokens WHERE expires_at <= ?1 \
             OR grant_id IN (SELECT id FROM oauth_grants WHERE expires_at <= ?1)",
            "DELETE FROM oauth_grants WHERE expires_at <= ?1",
        ] {
            purged += sqlx::query(statement)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(|e| query_error(OP, &e))?
                .rows_affected();
        }
        tx.commit().await.map_err(|e| query_error(OP, &e))?;
        Ok(purged)
    }

    async fn compact(&self) -> Result<(), StoreError> {
        // After a purge the log holds the deletions: copy them into the
        // database and truncate the log to nothing (a reader in progress
        // makes this a partial checkpoint; the next run finishes it).
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await
            .map_err(|e| query_error("compact", &e))?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
