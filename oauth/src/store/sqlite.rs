//! Opening the embedded grant store: one SQLite file (WAL journal, a busy
//! timeout so concurrent writers wait rather than fail). The store body is
//! [`super::sql`]'s.

use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::StoreError;
use super::dialect::Db;
use super::rows;
use super::sql::SqlStore;

/// How long a statement waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long opening retries a file that another connection is switching to
/// WAL at that moment: SQLite answers `database is locked` to that at once,
/// without waiting in its busy handler (several servers, or a server and
/// `toolforge-oauth` tooling, opening one fresh file together).
const OPEN_RETRY_FOR: Duration = BUSY_TIMEOUT;

/// How long an operation waits for a free pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes of write-ahead log kept after a checkpoint.
const JOURNAL_SIZE_LIMIT: u64 = 4 * 1024 * 1024;

fn open_error(message: impl std::fmt::Display) -> StoreError {
    StoreError::Open {
        backend: "sqlite",
        message: message.to_string(),
    }
}

/// Opens `sqlite:PATH`, creating the file when it is missing, and applies
/// the migrations it lacks.
///
/// # Errors
///
/// A malformed URL, an unopenable file, or a failed migration.
pub(super) async fn open(url: &str) -> Result<SqlStore, StoreError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| open_error(format!("bad URL: {}", rows::describe(&e))))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
        // A checkpoint leaves the log at most this long (it is reused, not
        // regrown, between checkpoints).
        .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT.to_string());
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    let pool = loop {
        let connected = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await;
        match connected {
            Ok(pool) => break pool,
            Err(e) if is_locked(&e) && started.elapsed() < OPEN_RETRY_FOR => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Err(e) => return Err(open_error(rows::describe(&e))),
        }
    };
    SqlStore::migrated(Db::Sqlite(pool)).await
}

/// Whether SQLite answered `SQLITE_BUSY` or `SQLITE_LOCKED` (extended codes
/// included: the primary code is the low byte).
fn is_locked(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = error else {
        return false;
    };
    db.code()
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| matches!(code & 0xff, 5 | 6))
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
