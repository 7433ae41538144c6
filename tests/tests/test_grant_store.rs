//! The grant store suite on both backends: SQLite in a temporary file and
//! a real PostgreSQL server started for the test (see
//! `toolforge_tests::postgres`; set `TOOLFORGE_SKIP_POSTGRES=1` to skip it
//! where PostgreSQL is not installed). Also, on PostgreSQL: instances
//! migrating one fresh database together, reopening, and a dump of every
//! row holding no token in the clear.

use std::sync::Arc;
use std::time::Duration;

use toolforge_runtime::oauth::store::{self, GrantStore, suite};
use toolforge_tests::postgres::Postgres;
use toolforge_tests::with_deadline;

/// Bound on each test body (the suite takes seconds).
const LIMIT: Duration = Duration::from_secs(180);

fn block_on<T>(body: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?
        .block_on(body)
}

async fn open(url: &str) -> Result<Arc<dyn GrantStore>, String> {
    store::open(url)
        .await
        .map_err(|e| format!("open {url}: {e}"))
}

#[test]
fn store_suite_passes_on_sqlite() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let url = format!("sqlite:{}", dir.path().join("grants.db").display());
    let cases = with_deadline(LIMIT, move || {
        block_on(async move {
            let store = open(&url).await?;
            assert_eq!(store.backend(), "sqlite");
            suite::run_all(store).await
        })
    })??;
    assert_eq!(cases, suite::CASES.len());
    Ok(())
}

#[test]
fn store_suite_passes_on_postgres() -> Result<(), String> {
    let Some(pg) = Postgres::start_or_skip()? else {
        return Ok(());
    };
    let url = pg.create_database("suite")?;
    let cases = with_deadline(LIMIT, move || {
        block_on(async move {
            let store = open(&url).await?;
            assert_eq!(store.backend(), "postgres");
            suite::run_all(store).await
        })
    })??;
    assert_eq!(cases, suite::CASES.len());
    drop(pg);
    Ok(())
}

#[test]
fn postgres_instances_migrate_together_reopen_and_dump_no_secret() -> Result<(), String> {
    let Some(pg) = Postgres::start_or_skip()? else {
        return Ok(());
    };
    let fresh = pg.create_database("fresh")?;
    let dump_url = pg.create_database("dump")?;
    with_deadline(LIMIT, move || {
        block_on(async move {
            // Four instances starting together on an empty database: the
            // advisory lock makes one migrate and the others find it done.
            let (a, b, c, d) = tokio::join!(open(&fresh), open(&fresh), open(&fresh), open(&fresh));
            for store in [a, b, c, d] {
                store?;
            }
            let store = open(&fresh).await?;
            suite::exchanged(&*store, "reopen").await?;
            drop(store);
            let store = open(&fresh).await?;
            let grant = store.grant("reopen").await.map_err(|e| e.to_string())?;
            assert!(grant.is_some(), "reopening lost the grant");
            let dump = suite::postgres_dump(&fresh).await?;
            let versions = dump
                .lines()
                .find(|l| l.starts_with("-- toolforge_schema_version:"))
                .ok_or("no toolforge_schema_version table in the dump")?;
            // Two migrations (2: client last use, expiry indexes), each
            // recorded once.
            assert_eq!(
                versions, "-- toolforge_schema_version: 3 rows",
                "migrations recorded once"
            );

            // Trust authentication ignores a password, so one in the URL
            // must show nowhere: not in the store's Debug, not in an error.
            let with_password = fresh.replace("toolforge@", "toolforge:hunter2-pg-secret@");
            let store = open(&with_password).await?;
            assert!(!format!("{store:?}").contains("hunter2"), "{store:?}");
            let missing = with_password.replace("/fresh", "/no_such_database");
            let err = store::open(&missing)
                .await
                .err()
                .ok_or("opened a missing database")?;
            let text = format!("{err} {err:?}");
            assert!(
                text.contains("no_such_database") && !text.contains("hunter2"),
                "{text}"
            );

            let store = open(&dump_url).await?;
            let markers = suite::write_dump_fixture(&*store).await?;
            let dump = suite::postgres_dump(&dump_url).await?;
            assert!(dump.contains("-- oauth_grants: 1 rows"), "{dump}");
            suite::check_dump(&markers, dump.as_bytes())
        })
    })??;
    drop(pg);
    Ok(())
}
