//! The store suite on SQLite, and what only SQLite has: the file, its
//! raw bytes, and rows a foreign hand mangled.

use std::sync::Arc;

use crate::model::{CodeUse, Grant, PendingStepUp, RefreshUse};

use super::super::dialect::Db;
use super::super::sql::SqlStore;
use super::open;
use crate::store::{GrantStore, StoreError, suite};

/// The SQLite pool under a store these tests opened.
fn pool(store: &SqlStore) -> &sqlx::SqlitePool {
    match &store.db {
        Db::Sqlite(pool) => pool,
        Db::Postgres(_) => panic!("a SQLite test opened a PostgreSQL store"),
    }
}

fn temp_url(dir: &tempfile::TempDir) -> (std::path::PathBuf, String) {
    let path = dir.path().join("grants.db");
    let url = format!("sqlite:{}", path.display());
    (path, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_suite_passes_on_sqlite() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (path, url) = temp_url(&dir);
    assert!(!path.exists());
    let store = crate::store::open(&url).await.map_err(|e| e.to_string())?;
    assert!(path.exists(), "open did not create the file");
    let cases = suite::run_all(store).await?;
    assert_eq!(cases, suite::CASES.len());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_keeps_data_and_applies_migrations_once() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, url) = temp_url(&dir);
    // Four instances opening a fresh file together.
    let opens = futures_join4(&url).await;
    for open in opens {
        open.map_err(|e| e.to_string())?;
    }
    let store = open(&url).await.map_err(|e| e.to_string())?;
    suite::exchanged(&store, "reopen").await?;
    drop(store);
    let store = open(&url).await.map_err(|e| e.to_string())?;
    let grant = store.grant("reopen").await.map_err(|e| e.to_string())?;
    assert!(grant.is_some(), "reopening lost the grant");
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM toolforge_schema_version ORDER BY version")
            .fetch_all(pool(&store))
            .await
            .map_err(|e| e.to_string())?;
    let expected: Vec<i64> = super::super::migrations::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(versions, expected, "each migration recorded once");
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool(&store))
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(mode, "wal");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_opens_of_one_fresh_file_all_succeed() -> Result<(), String> {
    // Switching a fresh file to WAL is refused at once (`database is
    // locked`) to every connection but one; opening waits and retries.
    for round in 0..10 {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (_, url) = temp_url(&dir);
        let mut opens = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let url = url.clone();
            opens.spawn(async move { open(&url).await.map(drop) });
        }
        while let Some(opened) = opens.join_next().await {
            opened
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("round {round}: {e}"))?;
        }
    }
    Ok(())
}

async fn futures_join4(url: &str) -> [Result<SqlStore, StoreError>; 4] {
    let (a, b, c, d) = tokio::join!(open(url), open(url), open(url), open(url));
    [a, b, c, d]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, url) = temp_url(&dir);
    let store = open(&url).await.map_err(|e| e.to_string())?;
    sqlx::query("INSERT INTO toolforge_schema_version (version, applied_at) VALUES (999, 0)")
        .execute(pool(&store))
        .await
        .map_err(|e| e.to_string())?;
    drop(store);
    let err = open(&url).await.err().ok_or("opened a newer store")?;
    assert!(
        matches!(
            err,
            StoreError::Open {
                backend: "sqlite",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("999"), "{err}");
    Ok(())
}

#[tokio::test]
async fn an_unopenable_path_is_an_open_error() {
    let err = open("sqlite:/nonexistent-toolforge-dir/sub/grants.db")
        .await
        .err();
    assert!(
        matches!(
            err,
            Some(StoreError::Open {
                backend: "sqlite",
                ..
            })
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mangled_row_is_corrupt_not_a_panic() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, url) = temp_url(&dir);
    let store = open(&url).await.map_err(|e| e.to_string())?;
    suite::exchanged(&store, "mangled").await?;
    let mangle = [
        "UPDATE oauth_grants SET scopes = 'not json' WHERE id = 'mangled'",
        "UPDATE oauth_grants SET scopes = '[]', exposure = '{\"unknown\":1}' WHERE id = 'mangled'",
        "UPDATE oauth_grants SET exposure = '{}', refresh_current = X'0102' WHERE id = 'mangled'",
        "UPDATE oauth_grants SET refresh_current = NULL, version = 'x' WHERE id = 'mangled'",
    ];
    for statement in mangle {
        sqlx::query(statement)
            .execute(pool(&store))
            .await
            .map_err(|e| e.to_string())?;
        let got = store.grant("mangled").await;
        assert!(
            matches!(
                got,
                Err(StoreError::Corrupt {
                    operation: "grant",
                    ..
                })
            ),
            "{statement}: {got:?}"
        );
    }
    sqlx::query("UPDATE oauth_tokens SET kind = 'bearer' WHERE grant_id = 'mangled'")
        .execute(pool(&store))
        .await
        .map_err(|e| e.to_string())?;
    let got = store.token(&suite::hash("mangled-0-a"), suite::NOW).await;
    assert!(matches!(got, Err(StoreError::Corrupt { .. })), "{got:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_file_holds_no_token_in_the_clear() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (path, url) = temp_url(&dir);
    let store = open(&url).await.map_err(|e| e.to_string())?;
    let markers = suite::write_dump_fixture(&store).await?;
    // Read while open (recent pages are in the WAL), then after a clean
    // close (checkpointed into the main file).
    let read = |path: &std::path::Path| -> Result<Vec<u8>, String> {
        let mut bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let wal = path.with_extension("db-wal");
        if wal.exists() {
            bytes.extend(std::fs::read(&wal).map_err(|e| format!("{}: {e}", wal.display()))?);
        }
        Ok(bytes)
    };
    suite::check_dump(&markers, &read(&path)?)?;
    pool(&store).close().await;
    suite::check_dump(&markers, &read(&path)?)?;
    Ok(())
}

#[tokio::test]
async fn open_errors_do_not_repeat_a_postgres_password() {
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(1);
    let url = format!("postgres://toolforge:s3cret-pa%24%24word@127.0.0.1:{port}/grants");
    let err = crate::store::open(&url).await.err();
    let text = format!(
        "{err:?} {}",
        err.as_ref().map(ToString::to_string).unwrap_or_default()
    );
    assert!(
        matches!(
            err,
            Some(StoreError::Open {
                backend: "postgres",
                ..
            })
        ),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    let bad = crate::store::open("postgres://u:s3cret@[::1").await.err();
    let text = format!("{bad:?}");
    assert!(bad.is_some() && !text.contains("s3cret"), "{text}");
}

#[tokio::test]
async fn an_unknown_scheme_is_refused() {
    let err = crate::store::open("mysql://localhost/grants").await.err();
    assert!(
        matches!(err, Some(StoreError::Scheme { ref scheme }) if scheme == "mysql"),
        "{err:?}"
    );
    let _: Option<Arc<dyn GrantStore>> = None;
}

/// Bogus codes (a flood of them) are refused by a read: while another
/// connection holds SQLite's one write lock, `take_code` of an unknown
/// code still answers at once instead of queueing behind the writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bogus_code_does_not_wait_for_the_write_lock() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, url) = temp_url(&dir);
    let store = open(&url).await.map_err(|e| e.to_string())?;
    let mut writer = pool(&store).acquire().await.map_err(|e| e.to_string())?;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *writer)
        .await
        .map_err(|e| e.to_string())?;
    // The busy timeout is 10 s: a write-path lookup would still be waiting
    // when this bound (far above a read's cost) runs out.
    let bogus = suite::hash("never-issued-code");
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        store.take_code(&bogus, suite::NOW),
    )
    .await
    .map_err(|_| "take_code of a bogus code waited for the write lock".to_owned())?
    .map_err(|e| e.to_string())?;
    assert_eq!(answer, crate::model::CodeUse::Unknown);
    sqlx::query("ROLLBACK")
        .execute(&mut *writer)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// After a purge, `compact` checkpoints the write-ahead log and truncates
/// it; the log is capped by `journal_size_limit` between checkpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_truncates_the_write_ahead_log() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (path, url) = temp_url(&dir);
    let store = open(&url).await.map_err(|e| e.to_string())?;
    for n in 0..300 {
        store
            .put_pending(&suite::pending(&format!("wal-{n}"), suite::NOW - 1))
            .await
            .map_err(|e| e.to_string())?;
    }
    let wal = path.with_extension("db-wal");
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    assert!(size(&wal) > 0, "the inserts did not reach the log");
    let purged = store
        .purge_expired(suite::NOW)
        .await
        .map_err(|e| e.to_string())?;
    assert!(purged >= 300);
    store.compact().await.map_err(|e| e.to_string())?;
    assert_eq!(size(&wal), 0, "the log was not truncated");
    let limit: i64 = sqlx::query_scalar("PRAGMA journal_size_limit")
        .fetch_one(pool(&store))
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(limit, i64::try_from(super::JOURNAL_SIZE_LIMIT).unwrap_or(0));
    Ok(())
}

/// A store file written by the code before the backends shared one body
/// (schema version 3: a grant after the code exchange with a pending
/// step-up, a registered client, a pending sign-in), as `sqlite3 .dump`.
const SCHEMA_V3_DUMP: &str = "tests/fixtures/grants-schema-v3.sqlite.sql";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_written_by_the_previous_code_opens_and_works() -> Result<(), String> {
    let dump_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_V3_DUMP);
    let dump = std::fs::read_to_string(&dump_path).map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, url) = temp_url(&dir);
    {
        use sqlx::ConnectOptions;
        let options: sqlx::sqlite::SqliteConnectOptions =
            url.parse().map_err(|e: sqlx::Error| e.to_string())?;
        let mut conn = options
            .create_if_missing(true)
            .connect()
            .await
            .map_err(|e| e.to_string())?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(dump))
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
    }
    let store = open(&url).await.map_err(|e| e.to_string())?;
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM toolforge_schema_version ORDER BY version")
            .fetch_all(pool(&store))
            .await
            .map_err(|e| e.to_string())?;
    assert_eq!(versions, [1, 2, 3], "no migration reapplied or added");
    let grant = store
        .grant("before")
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the grant is gone")?;
    assert_eq!(grant, suite_grant_with_step_up());
    let (token, by_token) = store
        .token(&suite::hash("before-0-a"), suite::NOW)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the access token is gone")?;
    assert_eq!(token.kind, crate::model::TokenKind::Access);
    assert_eq!(by_token.id, "before");
    let client = store
        .client("client-before")
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(client, Some(suite::client("client-before")));
    let pending = store
        .take_pending(&suite::hash("pending-before"), suite::NOW)
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(
        pending,
        Some(suite::pending("pending-before", suite::NOW + 600))
    );
    // The used code is a replay; the refresh token still rotates.
    let code = store
        .take_code(&suite::hash("before-code"), suite::NOW)
        .await
        .map_err(|e| e.to_string())?;
    assert!(
        matches!(code, CodeUse::Replayed { ref grant_id } if grant_id == "before"),
        "{code:?}"
    );
    let rotated = suite::rotate(&store, "before", "before-0-r", "before-1").await?;
    assert!(matches!(rotated, RefreshUse::Rotated { .. }), "{rotated:?}");
    Ok(())
}

/// The suite's grant `before` as the fixture stores it: its first refresh
/// token current and the step-up recorded when the fixture was written.
fn suite_grant_with_step_up() -> Grant {
    let mut expected = suite::grant("before");
    expected.refresh_current = Some(suite::hash("before-0-r"));
    expected.step_up = Some(PendingStepUp {
        scope: "zone:write".to_owned(),
        at: suite::NOW,
    });
    expected
}
