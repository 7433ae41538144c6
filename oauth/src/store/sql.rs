//! The grant store body both backends share: every statement written once
//! (see [`super::dialect`] for what differs), every operation one atomic
//! step. Writes that read first run in a write transaction: SQLite's
//! `BEGIN IMMEDIATE` takes the write lock up front and PostgreSQL locks the
//! grant row (`{lock}`), so two connections never interleave inside one
//! rotation. Single use of codes and sign-in states is one `UPDATE …
//! RETURNING` / `DELETE … RETURNING`.

use super::dialect::{Arg, Db, Tx};
use super::rows::{self, Standing};
use super::{GrantStore, StoreError, migrations};
use crate::model::{
    AuthCode, CodeUse, Grant, PendingSignIn, PendingStepUp, RefreshUse, RegisteredClient,
    TokenHash, TokenKind, TokenRecord, UnixTime,
};

/// The grant store in a SQL database.
#[derive(Debug, Clone)]
pub struct SqlStore {
    pub(super) db: Db,
}

/// One grant by id, every column [`rows::grant`] reads.
const GRANT_BY_ID: &str = "SELECT id, client_id, resource, scopes, exposure, created_at, \
     expires_at, upstream_sealed, upstream_expires_at, version, refresh_current, \
     refresh_previous, revoked, step_up_scope, step_up_at FROM oauth_grants WHERE id = $1";

/// [`GRANT_BY_ID`], locking the row until the transaction ends.
const GRANT_BY_ID_LOCKED: &str = "SELECT id, client_id, resource, scopes, exposure, \
     created_at, expires_at, upstream_sealed, upstream_expires_at, version, refresh_current, \
     refresh_previous, revoked, step_up_scope, step_up_at FROM oauth_grants WHERE id = $1 {lock}";

/// A failed migration step, as an open error.
fn migration_error(backend: &'static str, what: &str, error: StoreError) -> StoreError {
    let message = match error {
        StoreError::Query { message, .. } | StoreError::Corrupt { message, .. } => message,
        other => other.to_string(),
    };
    StoreError::Open {
        backend,
        message: format!("migration: {what}: {message}"),
    }
}

/// The wall clock, for `toolforge_schema_version.applied_at` only.
fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl SqlStore {
    /// Wraps an open pool and applies the migrations it lacks, in one
    /// transaction (instances opening together migrate one at a time).
    pub(super) async fn migrated(db: Db) -> Result<Self, StoreError> {
        let backend = db.name();
        let fail = |what: &'static str| move |e| migration_error(backend, what, e);
        let mut tx = db.begin("migrate").await.map_err(fail("begin"))?;
        tx.lock_for_migration()
            .await
            .map_err(fail("advisory lock"))?;
        tx.execute("migrate", migrations::VERSION_TABLE, &[])
            .await
            .map_err(fail("version table"))?;
        let current = tx
            .count("migrate", migrations::CURRENT_VERSION, &[])
            .await
            .map_err(fail("current version"))?;
        let pending = migrations::pending(current)
            .map_err(|message| StoreError::Open { backend, message })?;
        for migration in pending {
            for statement in db.statements(migration) {
                tx.execute("migrate", statement, &[])
                    .await
                    .map_err(fail(migration.description))?;
            }
            tx.execute(
                "migrate",
                "INSERT INTO toolforge_schema_version (version, applied_at) VALUES ($1, $2)",
                &[Arg::Int(migration.version), Arg::Int(now_unix())],
            )
            .await
            .map_err(fail(migration.description))?;
        }
        tx.commit("migrate").await.map_err(fail("commit"))?;
        Ok(Self { db })
    }
}

/// Revokes `grant_id` inside `tx`: the grant is marked, its access tokens
/// deleted, and its refresh tokens and codes kept (so a replay is still
/// recognised) but with their wrapped keys erased and codes marked used.
async fn revoke_in(tx: &mut Tx, operation: &'static str, grant_id: &str) -> Result<(), StoreError> {
    for statement in [
        "UPDATE oauth_grants SET revoked = TRUE WHERE id = $1",
        "DELETE FROM oauth_tokens WHERE grant_id = $1 AND kind = 'access'",
        "UPDATE oauth_tokens SET wrapped_key = {empty} WHERE grant_id = $1",
        "UPDATE oauth_codes SET used = TRUE, wrapped_key = {empty} WHERE grant_id = $1",
    ] {
        tx.execute(operation, statement, &[Arg::Text(grant_id)])
            .await?;
    }
    Ok(())
}

async fn insert_token(
    tx: &mut Tx,
    operation: &'static str,
    token: &TokenRecord,
) -> Result<(), StoreError> {
    tx.execute(
        operation,
        "INSERT INTO oauth_tokens (hash, kind, grant_id, expires_at, wrapped_key) \
         VALUES ($1, $2, $3, $4, $5)",
        &[
            Arg::Bytes(&token.hash.0),
            Arg::Text(rows::kind_name(token.kind)),
            Arg::Text(&token.grant_id),
            Arg::Int(token.expires_at),
            Arg::Bytes(&token.wrapped_key),
        ],
    )
    .await?;
    Ok(())
}

/// The grant, its row locked until `tx` ends.
async fn grant_in(
    tx: &mut Tx,
    operation: &'static str,
    grant_id: &str,
) -> Result<Option<Grant>, StoreError> {
    let row = tx
        .fetch_optional(operation, GRANT_BY_ID_LOCKED, &[Arg::Text(grant_id)])
        .await?;
    row.map(|r| r.grant(operation)).transpose()
}

fn opt_hash(hash: Option<&TokenHash>) -> Arg<'_> {
    Arg::OptBytes(hash.map(|h| h.0.as_slice()))
}

#[async_trait::async_trait]
impl GrantStore for SqlStore {
    fn backend(&self) -> &'static str {
        self.db.name()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.db.execute("ping", "SELECT 1", &[]).await.map(drop)
    }

    async fn put_pending(&self, pending: &PendingSignIn) -> Result<bool, StoreError> {
        // A replayed consent form derives the same hash: it stores nothing.
        let done = self
            .db
            .execute(
                "put_pending",
                "INSERT INTO oauth_pending (hash, browser, expires_at, sealed) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING",
                &[
                    Arg::Bytes(&pending.hash.0),
                    Arg::Bytes(&pending.browser.0),
                    Arg::Int(pending.expires_at),
                    Arg::Bytes(&pending.sealed),
                ],
            )
            .await?;
        Ok(done == 1)
    }

    async fn count_pending(&self, now: UnixTime) -> Result<u64, StoreError> {
        let n = self
            .db
            .count(
                "count_pending",
                "SELECT COUNT(*) FROM oauth_pending WHERE expires_at > $1",
                &[Arg::Int(now)],
            )
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn take_pending(
        &self,
        hash: &TokenHash,
        now: UnixTime,
    ) -> Result<Option<PendingSignIn>, StoreError> {
        // One statement: of two racing callers, one deletes the row and the
        // other finds nothing.
        let row = self
            .db
            .fetch_optional(
                "take_pending",
                "DELETE FROM oauth_pending WHERE hash = $1 AND expires_at > $2 \
                 RETURNING hash, browser, expires_at, sealed",
                &[Arg::Bytes(&hash.0), Arg::Int(now)],
            )
            .await?;
        row.map(|r| r.pending("take_pending")).transpose()
    }

    async fn create_grant(&self, grant: &Grant, code: &AuthCode) -> Result<(), StoreError> {
        const OP: &str = "create_grant";
        let exposure = rows::exposure_json(OP, &grant.exposure)?;
        let scopes = rows::scopes_json(&grant.scopes);
        let mut tx = self.db.begin(OP).await?;
        tx.execute(
            OP,
            "INSERT INTO oauth_grants (id, client_id, resource, scopes, exposure, created_at, \
             expires_at, upstream_sealed, upstream_expires_at, version, refresh_current, \
             refresh_previous, revoked) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            &[
                Arg::Text(&grant.id),
                Arg::Text(&grant.client_id),
                Arg::Text(&grant.resource),
                Arg::Text(&scopes),
                Arg::Text(&exposure),
                Arg::Int(grant.created_at),
                Arg::Int(grant.expires_at),
                Arg::Bytes(&grant.upstream_sealed),
                Arg::OptInt(grant.upstream_expires_at),
                Arg::Int(grant.version),
                opt_hash(grant.refresh_current.as_ref()),
                opt_hash(grant.refresh_previous.as_ref()),
                Arg::Bool(grant.revoked),
            ],
        )
        .await?;
        tx.execute(
            OP,
            "INSERT INTO oauth_codes (hash, grant_id, client_id, redirect_uri, code_challenge, \
             expires_at, wrapped_key, used) VALUES ($1, $2, $3, $4, $5, $6, $7, FALSE)",
            &[
                Arg::Bytes(&code.hash.0),
                Arg::Text(&code.grant_id),
                Arg::Text(&code.client_id),
                Arg::Text(&code.redirect_uri),
                Arg::Text(&code.code_challenge),
                Arg::Int(code.expires_at),
                Arg::Bytes(&code.wrapped_key),
            ],
        )
        .await?;
        // A sign-in is a registered client's use: it keeps the client.
        tx.execute(
            OP,
            "UPDATE oauth_clients SET last_used_at = $1 WHERE client_id = $2",
            &[Arg::Int(grant.created_at), Arg::Text(&grant.client_id)],
        )
        .await?;
        tx.commit(OP).await
    }

    async fn take_code(&self, hash: &TokenHash, now: UnixTime) -> Result<CodeUse, StoreError> {
        const OP: &str = "take_code";
        // A bogus code is found absent by a read: only a stored code takes
        // the write path (on SQLite, the one write lock).
        let known = self
            .db
            .count(
                OP,
                "SELECT COUNT(*) FROM oauth_codes WHERE hash = $1",
                &[Arg::Bytes(&hash.0)],
            )
            .await?;
        if known == 0 {
            return Ok(CodeUse::Unknown);
        }
        let mut tx = self.db.begin(OP).await?;
        let taken = tx
            .fetch_optional(
                OP,
                "UPDATE oauth_codes SET used = TRUE \
                 WHERE hash = $1 AND used = FALSE AND expires_at > $2 \
                 RETURNING hash, grant_id, client_id, redirect_uri, code_challenge, expires_at, \
                 wrapped_key",
                &[Arg::Bytes(&hash.0), Arg::Int(now)],
            )
            .await?;
        let result = if let Some(row) = taken {
            let code = row.code(OP)?;
            // The wrapped key has done its job; a used code unwraps nothing.
            tx.execute(
                OP,
                "UPDATE oauth_codes SET wrapped_key = {empty} WHERE hash = $1",
                &[Arg::Bytes(&hash.0)],
            )
            .await?;
            CodeUse::Fresh(code)
        } else {
            let row = tx
                .fetch_optional(
                    OP,
                    "SELECT grant_id, used FROM oauth_codes WHERE hash = $1",
                    &[Arg::Bytes(&hash.0)],
                )
                .await?;
            match row.map(|r| r.code_state(OP)).transpose()? {
                Some((grant_id, true)) => CodeUse::Replayed { grant_id },
                Some((_, false)) | None => CodeUse::Unknown,
            }
        };
        tx.commit(OP).await?;
        Ok(result)
    }

    async fn issue_tokens(
        &self,
        access: &TokenRecord,
        refresh: &TokenRecord,
    ) -> Result<(), StoreError> {
        const OP: &str = "issue_tokens";
        rows::check_new_tokens(OP, &access.grant_id, access, refresh)?;
        let mut tx = self.db.begin(OP).await?;
        let updated = tx
            .execute(
                OP,
                "UPDATE oauth_grants SET refresh_current = $1, refresh_previous = NULL \
                 WHERE id = $2",
                &[Arg::Bytes(&refresh.hash.0), Arg::Text(&refresh.grant_id)],
            )
            .await?;
        if updated != 1 {
            return Err(StoreError::Query {
                operation: OP,
                message: "no such grant".to_owned(),
            });
        }
        insert_token(&mut tx, OP, access).await?;
        insert_token(&mut tx, OP, refresh).await?;
        tx.commit(OP).await
    }

    async fn token(
        &self,
        hash: &TokenHash,
        now: UnixTime,
    ) -> Result<Option<(TokenRecord, Grant)>, StoreError> {
        const OP: &str = "token";
        let row = self
            .db
            .fetch_optional(
                OP,
                "SELECT t.hash, t.kind, t.grant_id, t.expires_at AS token_expires_at, \
                 t.wrapped_key, g.id, g.client_id, g.resource, g.scopes, g.exposure, \
                 g.created_at, g.expires_at, g.upstream_sealed, g.upstream_expires_at, \
                 g.version, g.refresh_current, g.refresh_previous, g.revoked, \
                 g.step_up_scope, g.step_up_at \
                 FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id \
                 WHERE t.hash = $1 AND t.expires_at > $2 AND g.expires_at > $3",
                &[Arg::Bytes(&hash.0), Arg::Int(now), Arg::Int(now)],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let grant = row.grant(OP)?;
        let token = row.token_with(OP, "token_expires_at")?;
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
        let mut tx = self.db.begin(OP).await?;
        let row = tx
            .fetch_optional(
                OP,
                "SELECT hash, kind, grant_id, expires_at, wrapped_key FROM oauth_tokens \
                 WHERE hash = $1",
                &[Arg::Bytes(&presented.0)],
            )
            .await?;
        let Some(row) = row else {
            return Ok(RefreshUse::Invalid);
        };
        let record = row.token(OP)?;
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
            tx.commit(OP).await?;
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
            "DELETE FROM oauth_tokens WHERE grant_id = $1 AND kind = 'access'",
            "DELETE FROM oauth_tokens WHERE grant_id = $1 AND kind = 'refresh' \
             AND wrapped_key = {empty}",
        ] {
            tx.execute(OP, statement, &[Arg::Text(&grant.id)]).await?;
        }
        if let Some(dropped) = dropped {
            tx.execute(
                OP,
                "UPDATE oauth_tokens SET wrapped_key = {empty} WHERE hash = $1",
                &[Arg::Bytes(&dropped.0)],
            )
            .await?;
        }
        tx.execute(
            OP,
            "UPDATE oauth_grants SET refresh_current = $1, refresh_previous = $2 WHERE id = $3",
            &[
                Arg::Bytes(&new_refresh.hash.0),
                opt_hash(previous.as_ref()),
                Arg::Text(&grant.id),
            ],
        )
        .await?;
        insert_token(&mut tx, OP, new_access).await?;
        insert_token(&mut tx, OP, new_refresh).await?;
        let grant = grant_in(&mut tx, OP, &grant.id)
            .await?
            .ok_or_else(|| StoreError::Corrupt {
                operation: OP,
                message: "the grant vanished during rotation".to_owned(),
            })?;
        tx.commit(OP).await?;
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
        let done = self
            .db
            .execute(
                "update_upstream",
                "UPDATE oauth_grants SET upstream_sealed = $1, upstream_expires_at = $2, \
                 version = version + 1 WHERE id = $3 AND version = $4 AND revoked = FALSE",
                &[
                    Arg::Bytes(sealed),
                    Arg::OptInt(upstream_expires_at),
                    Arg::Text(grant_id),
                    Arg::Int(expected_version),
                ],
            )
            .await?;
        Ok(done == 1)
    }

    async fn mark_step_up(
        &self,
        grant_id: &str,
        pending: &PendingStepUp,
    ) -> Result<bool, StoreError> {
        let done = self
            .db
            .execute(
                "mark_step_up",
                "UPDATE oauth_grants SET step_up_scope = $1, step_up_at = $2 \
                 WHERE id = $3 AND revoked = FALSE",
                &[
                    Arg::Text(&pending.scope),
                    Arg::Int(pending.at),
                    Arg::Text(grant_id),
                ],
            )
            .await?;
        Ok(done == 1)
    }

    async fn grant(&self, grant_id: &str) -> Result<Option<Grant>, StoreError> {
        let row = self
            .db
            .fetch_optional("grant", GRANT_BY_ID, &[Arg::Text(grant_id)])
            .await?;
        row.map(|r| r.grant("grant")).transpose()
    }

    async fn revoke_grant(&self, grant_id: &str) -> Result<(), StoreError> {
        const OP: &str = "revoke_grant";
        let mut tx = self.db.begin(OP).await?;
        revoke_in(&mut tx, OP, grant_id).await?;
        tx.commit(OP).await
    }

    async fn register_client(&self, client: &RegisteredClient) -> Result<(), StoreError> {
        self.db
            .execute(
                "register_client",
                "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES ($1, $2, $3)",
                &[
                    Arg::Text(&client.client_id),
                    Arg::Text(&client.metadata),
                    Arg::Int(client.created_at),
                ],
            )
            .await
            .map(drop)
    }

    async fn client(&self, client_id: &str) -> Result<Option<RegisteredClient>, StoreError> {
        let row = self
            .db
            .fetch_optional(
                "client",
                "SELECT client_id, metadata, created_at FROM oauth_clients WHERE client_id = $1",
                &[Arg::Text(client_id)],
            )
            .await?;
        row.map(|r| r.client("client")).transpose()
    }

    async fn count_unused_clients(&self) -> Result<u64, StoreError> {
        let n = self
            .db
            .count(
                "count_unused_clients",
                "SELECT COUNT(*) FROM oauth_clients WHERE last_used_at IS NULL",
                &[],
            )
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn expire_clients(
        &self,
        unused_before: UnixTime,
        idle_before: UnixTime,
    ) -> Result<u64, StoreError> {
        self.db
            .execute(
                "expire_clients",
                "DELETE FROM oauth_clients WHERE (last_used_at IS NULL AND created_at < $1) \
                 OR last_used_at < $2",
                &[Arg::Int(unused_before), Arg::Int(idle_before)],
            )
            .await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.db.compact().await
    }

    async fn purge_expired(&self, now: UnixTime) -> Result<u64, StoreError> {
        const OP: &str = "purge_expired";
        let mut tx = self.db.begin(OP).await?;
        let mut purged = 0;
        for statement in [
            "DELETE FROM oauth_pending WHERE expires_at <= $1",
            "DELETE FROM oauth_codes WHERE expires_at <= $1 \
             OR grant_id IN (SELECT id FROM oauth_grants WHERE expires_at <= $1)",
            "DELETE FROM oauth_tokens WHERE expires_at <= $1 \
             OR grant_id IN (SELECT id FROM oauth_grants WHERE expires_at <= $1)",
            "DELETE FROM oauth_grants WHERE expires_at <= $1",
        ] {
            purged =
                u64::saturating_add(purged, tx.execute(OP, statement, &[Arg::Int(now)]).await?);
        }
        tx.commit(OP).await?;
        Ok(purged)
    }
}
