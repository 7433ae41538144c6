//! The two SQL dialects the shared store body ([`super::sql`]) speaks,
//! as one enum: which pool, how a write transaction starts (`BEGIN
//! IMMEDIATE` takes SQLite's one write lock up front; PostgreSQL locks the
//! rows it reads with `FOR UPDATE`), the empty-bytes literal, and
//! migration locking. Statements are written once with `$N` placeholders
//! (both drivers bind them by number) and `{empty}` / `{lock}` markers
//! that [`Db::render`] fills in. Each method matches on the backend and
//! runs the same code on its concrete pool, which keeps sqlx's generic
//! bounds out of the store body.

use std::borrow::Cow;

use sqlx::postgres::{PgPool, PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqlitePool, SqliteRow};
use sqlx::{AssertSqlSafe, Transaction};

use super::StoreError;
use super::migrations::Migration;
use super::rows::{self, query_error};
use crate::model::{AuthCode, Grant, PendingSignIn, RegisteredClient, TokenRecord};

/// The advisory lock key held while migrating PostgreSQL (`toolforg` in
/// ASCII).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_666f_7267;

/// A connection pool of one backend.
#[derive(Debug, Clone)]
pub(super) enum Db {
    /// The embedded file.
    Sqlite(SqlitePool),
    /// The shared server.
    Postgres(PgPool),
}

/// An open write transaction (rolled back when dropped uncommitted).
pub(super) enum Tx {
    /// Started with `BEGIN IMMEDIATE`.
    Sqlite(Transaction<'static, Sqlite>),
    /// Started with `BEGIN`.
    Postgres(Transaction<'static, Postgres>),
}

/// A fetched row of either backend.
pub(super) enum DbRow {
    /// From SQLite.
    Sqlite(SqliteRow),
    /// From PostgreSQL.
    Postgres(PgRow),
}

/// A bound value, in the few types the store binds.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg<'a> {
    /// `BLOB` / `BYTEA`.
    Bytes(&'a [u8]),
    /// Nullable `BLOB` / `BYTEA`.
    OptBytes(Option<&'a [u8]>),
    /// `TEXT`.
    Text(&'a str),
    /// `BIGINT`.
    Int(i64),
    /// Nullable `BIGINT`.
    OptInt(Option<i64>),
    /// `BOOLEAN`.
    Bool(bool),
}

/// `$query` with every [`Arg`] of `$args` bound in order (expanded once
/// per backend, so each binds its own concrete types).
macro_rules! bind_all {
    ($query:expr, $args:expr) => {
        $args.iter().fold($query, |q, arg| match *arg {
            Arg::Bytes(v) => q.bind(v),
            Arg::OptBytes(v) => q.bind(v),
            Arg::Text(v) => q.bind(v),
            Arg::Int(v) => q.bind(v),
            Arg::OptInt(v) => q.bind(v),
            Arg::Bool(v) => q.bind(v),
        })
    };
}

/// `template` in one dialect: `{empty}` becomes the empty-bytes literal
/// and ` {lock}` a row lock (none on SQLite, where the write transaction
/// already holds the database's one write lock).
fn render(postgres: bool, template: &'static str) -> AssertSqlSafe<Cow<'static, str>> {
    if !template.contains('{') {
        return AssertSqlSafe(Cow::Borrowed(template));
    }
    let (empty, lock) = if postgres {
        ("''::bytea", " FOR UPDATE")
    } else {
        ("X''", "")
    };
    AssertSqlSafe(Cow::Owned(
        template.replace("{empty}", empty).replace(" {lock}", lock),
    ))
}

impl Db {
    /// `sqlite` or `postgres`.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// `template` in this dialect (see [`render`]).
    fn render(&self, template: &'static str) -> AssertSqlSafe<Cow<'static, str>> {
        render(matches!(self, Self::Postgres(_)), template)
    }

    /// Starts a write transaction.
    pub(super) async fn begin(&self, operation: &'static str) -> Result<Tx, StoreError> {
        let tx = match self {
            Self::Sqlite(pool) => pool.begin_with("BEGIN IMMEDIATE").await.map(Tx::Sqlite),
            Self::Postgres(pool) => pool.begin().await.map(Tx::Postgres),
        };
        tx.map_err(|e| query_error(operation, &e))
    }

    /// Runs a statement outside a transaction; how many rows it changed.
    pub(super) async fn execute(
        &self,
        operation: &'static str,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<u64, StoreError> {
        let sql = self.render(sql);
        let done = match self {
            Self::Sqlite(pool) => bind_all!(sqlx::query(sql), args)
                .execute(pool)
                .await
                .map(|d| d.rows_affected()),
            Self::Postgres(pool) => bind_all!(sqlx::query(sql), args)
                .execute(pool)
                .await
                .map(|d| d.rows_affected()),
        };
        done.map_err(|e| query_error(operation, &e))
    }

    /// Runs a query for at most one row outside a transaction.
    pub(super) async fn fetch_optional(
        &self,
        operation: &'static str,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<DbRow>, StoreError> {
        let sql = self.render(sql);
        let row = match self {
            Self::Sqlite(pool) => bind_all!(sqlx::query(sql), args)
                .fetch_optional(pool)
                .await
                .map(|r| r.map(DbRow::Sqlite)),
            Self::Postgres(pool) => bind_all!(sqlx::query(sql), args)
                .fetch_optional(pool)
                .await
                .map(|r| r.map(DbRow::Postgres)),
        };
        row.map_err(|e| query_error(operation, &e))
    }

    /// Runs a query whose one row is one `BIGINT` (a count).
    pub(super) async fn count(
        &self,
        operation: &'static str,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<i64, StoreError> {
        let sql = self.render(sql);
        let n = match self {
            Self::Sqlite(pool) => {
                bind_all!(sqlx::query_scalar::<_, i64>(sql), args)
                    .fetch_one(pool)
                    .await
            }
            Self::Postgres(pool) => {
                bind_all!(sqlx::query_scalar::<_, i64>(sql), args)
                    .fetch_one(pool)
                    .await
            }
        };
        n.map_err(|e| query_error(operation, &e))
    }

    /// The statements of `migration` in this dialect.
    pub(super) fn statements(&self, migration: &Migration) -> &'static [&'static str] {
        match self {
            Self::Sqlite(_) => migration.sqlite,
            Self::Postgres(_) => migration.postgres,
        }
    }

    /// Gives space back after a purge: SQLite copies the write-ahead log
    /// into the database and truncates it (a reader in progress makes this
    /// a partial checkpoint; the next run finishes it).
    pub(super) async fn compact(&self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(_) => self
                .execute("compact", "PRAGMA wal_checkpoint(TRUNCATE)", &[])
                .await
                .map(drop),
            Self::Postgres(_) => Ok(()),
        }
    }
}

impl Tx {
    /// `template` in this transaction's dialect (see [`render`]).
    fn render(&self, template: &'static str) -> AssertSqlSafe<Cow<'static, str>> {
        render(matches!(self, Self::Postgres(_)), template)
    }

    /// Holds the migration lock until the transaction ends, so instances
    /// starting together migrate one after the other (SQLite's `BEGIN
    /// IMMEDIATE` already does).
    pub(super) async fn lock_for_migration(&mut self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(_) => Ok(()),
            Self::Postgres(_) => self
                .execute(
                    "advisory lock",
                    "SELECT pg_advisory_xact_lock($1)",
                    &[Arg::Int(MIGRATION_LOCK)],
                )
                .await
                .map(drop),
        }
    }

    /// Runs a statement; how many rows it changed.
    pub(super) async fn execute(
        &mut self,
        operation: &'static str,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<u64, StoreError> {
        let sql = self.render(sql);
        let done = match self {
            Self::Sqlite(tx) => bind_all!(sqlx::query(sql), args)
                .execute(&mut **tx)
                .await
                .map(|d| d.rows_affected()),
            Self::Postgres(tx) => bind_all!(sqlx::query(sql), args)
                .execute(&mut **tx)
                .await
                .map(|d| d.rows_affected()),
        };
        done.map_err(|e| query_error(operation, &e))
    }

    /// Runs a query for at most one row.
    pub(super) async fn fetch_optional(
        &mut self,
        operation: &'static str,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<DbRow>, StoreError> {
        let sql = self.render(sql);
        let row = match self {
            Self::Sqlite(tx) => bind_all!(sqlx::query(sql), args)
                .fetch_optional(&mut **tx)
                .await
                .map(|r| r.map(DbRow::Sqlite)),
            Self::Postgres(tx) => bind_all!(sqlx::query(sql), args)
                .fetch_optional(&mut **tx)
                .await
                .map(|r| r.map(DbRow::Postgres)),
        };
        row.map_err(|e| query_error(operation, &e))
    }

    /// Runs a query whose one row is one `BIGINT`.
    pub(super) async fn count(
        &mut self,
        operation: &'static str,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<i64, StoreError> {
        let sql = self.render(sql);
        let n = match self {
            Self::Sqlite(tx) => {
                bind_all!(sqlx::query_scalar::<_, i64>(sql), args)
                    .fetch_one(&mut **tx)
                    .await
            }
            Self::Postgres(tx) => {
                bind_all!(sqlx::query_scalar::<_, i64>(sql), args)
                    .fetch_one(&mut **tx)
                    .await
            }
        };
        n.map_err(|e| query_error(operation, &e))
    }

    /// Commits.
    pub(super) async fn commit(self, operation: &'static str) -> Result<(), StoreError> {
        let done = match self {
            Self::Sqlite(tx) => tx.commit().await,
            Self::Postgres(tx) => tx.commit().await,
        };
        done.map_err(|e| query_error(operation, &e))
    }
}

/// Decodes `$row` with `$decode` (a generic [`rows`] function), whichever
/// backend it came from.
macro_rules! decode {
    ($row:expr, $r:ident => $decode:expr) => {
        match $row {
            DbRow::Sqlite($r) => $decode,
            DbRow::Postgres($r) => $decode,
        }
    };
}

impl DbRow {
    /// A grant row.
    pub(super) fn grant(&self, operation: &'static str) -> Result<Grant, StoreError> {
        decode!(self, r => rows::grant(r, operation))
    }

    /// A token row.
    pub(super) fn token(&self, operation: &'static str) -> Result<TokenRecord, StoreError> {
        decode!(self, r => rows::token(r, operation))
    }

    /// A token row whose expiry is in column `expires`.
    pub(super) fn token_with(
        &self,
        operation: &'static str,
        expires: &'static str,
    ) -> Result<TokenRecord, StoreError> {
        decode!(self, r => rows::token_with(r, operation, expires))
    }

    /// A code row.
    pub(super) fn code(&self, operation: &'static str) -> Result<AuthCode, StoreError> {
        decode!(self, r => rows::code(r, operation))
    }

    /// A code's grant id and whether it was used.
    pub(super) fn code_state(&self, operation: &'static str) -> Result<(String, bool), StoreError> {
        decode!(self, r => rows::code_state(r, operation))
    }

    /// A pending sign-in row.
    pub(super) fn pending(&self, operation: &'static str) -> Result<PendingSignIn, StoreError> {
        decode!(self, r => rows::pending(r, operation))
    }

    /// A client row.
    pub(super) fn client(&self, operation: &'static str) -> Result<RegisteredClient, StoreError> {
        decode!(self, r => rows::client(r, operation))
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn statements_differ_only_in_markers() {
        let plain = "SELECT 1 FROM oauth_grants WHERE id = $1";
        assert_eq!(render(false, plain).0, plain);
        assert_eq!(render(true, plain).0, plain);
        let marked = "UPDATE t SET k = {empty} WHERE id = $1 {lock}";
        assert_eq!(
            render(false, marked).0,
            "UPDATE t SET k = X'' WHERE id = $1"
        );
        assert_eq!(
            render(true, marked).0,
            "UPDATE t SET k = ''::bytea WHERE id = $1 FOR UPDATE"
        );
    }
}
