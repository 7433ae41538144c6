//! The grant store's behaviour as one suite that every backend must pass
//! (not part of the API: the runtime's unit tests run it on SQLite, and
//! `tests/tests/test_grant_store.rs` on SQLite and a real PostgreSQL).
//!
//! Each case takes the store, uses ids and hashes of its own (so cases can
//! share one store) and returns `Err(message)` on the first broken
//! expectation. Times are fixed ([`NOW`]); nothing sleeps.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::GrantStore;
use crate::model::{
    AuthCode, CodeUse, Exposure, Grant, PendingSignIn, RefreshUse, RegisteredClient, TokenHash,
    TokenKind, TokenRecord, UnixTime,
};

#[path = "suite_cases.rs"]
mod cases;
pub use cases::*;

/// What a case returns: `Err` names the broken expectation.
pub type Outcome = Result<(), String>;

/// A case of the suite.
pub type Case = fn(Arc<dyn GrantStore>) -> Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// The suite's clock: every case passes times relative to it.
pub const NOW: UnixTime = 1_800_000_000;

/// How many tasks race for one code, state or CAS.
pub const RACERS: usize = 16;

/// Returns `Err(message)` from the case when `cond` is false.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}
pub(crate) use ensure;

/// Returns `Err` (with both sides) from the case when they differ.
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($msg:tt)+) => {{
        let (left, right) = (&$left, &$right);
        if left != right {
            return Err(format!("{}: {:?} != {:?}", format!($($msg)+), left, right));
        }
    }};
}
pub(crate) use ensure_eq;

/// Turns a store error into the case's failure message.
pub(crate) fn fail<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e}")
}

/// The stand-in for the server's keyed hash: SHA-256 of `label`.
#[must_use]
pub fn hash(label: &str) -> TokenHash {
    TokenHash(Sha256::digest(label.as_bytes()).into())
}

/// The stand-in for sealing (the store never seals): `plain` XOR 0xA5, so
/// the bytes differ from the plaintext but are known to the test.
#[must_use]
pub fn seal(plain: &str) -> Vec<u8> {
    plain.bytes().map(|b| b ^ 0xA5).collect()
}

/// A grant `id` of client `client`, ending at `NOW + 86400`, with no
/// refresh token yet.
#[must_use]
pub fn grant(id: &str) -> Grant {
    Grant {
        id: id.to_owned(),
        client_id: format!("https://client.example/{id}.json"),
        resource: "https://mcp.example.com/mcp".to_owned(),
        scopes: vec!["account:read".to_owned(), "zone:read".to_owned()],
        exposure: Exposure {
            read_only: true,
            products: Some(vec!["dns".to_owned(), "workers".to_owned()]),
            scopes: None,
        },
        created_at: NOW - 10,
        expires_at: NOW + 86_400,
        upstream_sealed: seal(&format!("upstream tokens of {id}")),
        upstream_expires_at: Some(NOW + 3600),
        version: 0,
        refresh_current: None,
        refresh_previous: None,
        step_up: None,
        revoked: false,
    }
}

/// The authorization code `label` of grant `grant_id`, expiring at
/// `NOW + 60`.
#[must_use]
pub fn code(label: &str, grant_id: &str) -> AuthCode {
    AuthCode {
        hash: hash(label),
        grant_id: grant_id.to_owned(),
        client_id: format!("https://client.example/{grant_id}.json"),
        redirect_uri: "http://127.0.0.1:33418/callback".to_owned(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".to_owned(),
        expires_at: NOW + 60,
        wrapped_key: seal(&format!("grant key under {label}")),
    }
}

/// The token `label` of `kind` for `grant_id`, expiring at `expires_at`.
#[must_use]
pub fn token(label: &str, kind: TokenKind, grant_id: &str, expires_at: UnixTime) -> TokenRecord {
    TokenRecord {
        hash: hash(label),
        kind,
        grant_id: grant_id.to_owned(),
        expires_at,
        wrapped_key: seal(&format!("grant key under {label}")),
    }
}

/// An access and a refresh token `{prefix}-a` / `{prefix}-r` of `grant_id`
/// (an hour and a day).
#[must_use]
pub fn pair(prefix: &str, grant_id: &str) -> (TokenRecord, TokenRecord) {
    (
        token(
            &format!("{prefix}-a"),
            TokenKind::Access,
            grant_id,
            NOW + 3600,
        ),
        token(
            &format!("{prefix}-r"),
            TokenKind::Refresh,
            grant_id,
            NOW + 86_400,
        ),
    )
}

/// A sign-in in flight with state `label`, expiring at `expires_at`.
#[must_use]
pub fn pending(label: &str, expires_at: UnixTime) -> PendingSignIn {
    PendingSignIn {
        hash: hash(label),
        browser: hash(&format!("{label} browser")),
        expires_at,
        sealed: seal(&format!("request of {label}")),
    }
}

/// A registered client `id`.
#[must_use]
pub fn client(id: &str) -> RegisteredClient {
    RegisteredClient {
        client_id: id.to_owned(),
        metadata: format!(r#"{{"client_name":"{id}","redirect_uris":["http://127.0.0.1/cb"]}}"#),
        created_at: NOW,
    }
}

/// Creates grant `id` with code `{id}-code`, takes the code and issues the
/// first tokens `{id}-0-a` / `{id}-0-r`: a grant as after the code
/// exchange.
///
/// # Errors
///
/// A store call failed or did not behave.
pub async fn exchanged(store: &dyn GrantStore, id: &str) -> Result<Grant, String> {
    store
        .create_grant(&grant(id), &code(&format!("{id}-code"), id))
        .await
        .map_err(fail("create_grant"))?;
    let used = store
        .take_code(&hash(&format!("{id}-code")), NOW)
        .await
        .map_err(fail("take_code"))?;
    ensure!(
        matches!(used, CodeUse::Fresh(_)),
        "the new code is not fresh: {used:?}"
    );
    let (access, refresh) = pair(&format!("{id}-0"), id);
    store
        .issue_tokens(&access, &refresh)
        .await
        .map_err(fail("issue_tokens"))?;
    store
        .grant(id)
        .await
        .map_err(fail("grant"))?
        .ok_or_else(|| format!("grant {id} vanished"))
}

/// Presents refresh token `presented`, asking for `{next}-a` / `{next}-r`.
///
/// # Errors
///
/// The store call failed.
pub async fn rotate(
    store: &dyn GrantStore,
    grant_id: &str,
    presented: &str,
    next: &str,
) -> Result<RefreshUse, String> {
    let (access, refresh) = pair(next, grant_id);
    store
        .rotate_refresh(&hash(presented), &access, &refresh, NOW)
        .await
        .map_err(fail("rotate_refresh"))
}

/// Runs every case of [`CASES`] on `store`, printing each outcome; fails
/// with every broken case's message.
///
/// # Errors
///
/// One or more cases failed.
pub async fn run_all(store: Arc<dyn GrantStore>) -> Result<usize, String> {
    let mut failures = Vec::new();
    for (name, case) in CASES {
        match case(Arc::clone(&store)).await {
            Ok(()) => println!("store suite ({}): {name} ... ok", store.backend()),
            Err(message) => {
                println!(
                    "store suite ({}): {name} ... FAILED: {message}",
                    store.backend()
                );
                failures.push(format!("{name}: {message}"));
            }
        }
    }
    if failures.is_empty() {
        Ok(CASES.len())
    } else {
        Err(format!(
            "{} of {} store cases failed on {}:\n  {}",
            failures.len(),
            CASES.len(),
            store.backend(),
            failures.join("\n  ")
        ))
    }
}

/// The plaintext markers a dump must not contain and the bytes it must
/// (see [`write_dump_fixture`]).
#[derive(Debug, Clone)]
pub struct DumpMarkers {
    /// Token, code and upstream-token values in the clear: never given to
    /// the store, so never in it.
    pub absent: Vec<String>,
    /// Hashes and sealed values the store was given: must be in it (this
    /// proves the dump is read correctly).
    pub present: Vec<Vec<u8>>,
}

/// Writes a grant, its code, tokens, a rotation and a pending sign-in whose
/// hashes and sealed values derive from recognisable plaintext markers.
///
/// # Errors
///
/// A store call failed.
pub async fn write_dump_fixture(store: &dyn GrantStore) -> Result<DumpMarkers, String> {
    let id = "dump-grant";
    let code_value = "PLAIN-CODE-VALUE-3a9f";
    let access_value = "PLAIN-ACCESS-TOKEN-VALUE-5d21";
    let refresh_value = "PLAIN-REFRESH-TOKEN-VALUE-88c0";
    let rotated_value = "PLAIN-ROTATED-REFRESH-VALUE-1e7b";
    let upstream_value = "PLAIN-UPSTREAM-ACCESS-TOKEN-c4e2";
    let state_value = "PLAIN-STATE-VALUE-0b6d";
    let mut g = grant(id);
    g.upstream_sealed = seal(upstream_value);
    store
        .create_grant(&g, &code(code_value, id))
        .await
        .map_err(fail("create_grant"))?;
    let access = token(access_value, TokenKind::Access, id, NOW + 3600);
    let refresh = token(refresh_value, TokenKind::Refresh, id, NOW + 86_400);
    store
        .issue_tokens(&access, &refresh)
        .await
        .map_err(fail("issue_tokens"))?;
    let next_access = token("PLAIN-NEXT-ACCESS-77f3", TokenKind::Access, id, NOW + 3600);
    let next_refresh = token(rotated_value, TokenKind::Refresh, id, NOW + 86_400);
    let used = store
        .rotate_refresh(&hash(refresh_value), &next_access, &next_refresh, NOW)
        .await
        .map_err(fail("rotate_refresh"))?;
    ensure!(
        matches!(used, RefreshUse::Rotated { .. }),
        "rotation refused: {used:?}"
    );
    store
        .put_pending(&pending(state_value, NOW + 600))
        .await
        .map_err(fail("put_pending"))?;
    Ok(DumpMarkers {
        absent: [
            code_value,
            access_value,
            refresh_value,
            rotated_value,
            upstream_value,
            state_value,
            "PLAIN-NEXT-ACCESS-77f3",
        ]
        .map(str::to_owned)
        .to_vec(),
        // The first access token's row went with the rotation (a refresh
        // ends it); the one rotation issued is there.
        present: vec![
            hash("PLAIN-NEXT-ACCESS-77f3").0.to_vec(),
            hash(rotated_value).0.to_vec(),
            hash(state_value).0.to_vec(),
            seal(upstream_value),
        ],
    })
}

/// Checks a raw dump (file bytes, or rows as text with binary as hex):
/// every `present` value is there (raw or as lowercase hex) and no
/// `absent` marker is (raw or as hex).
///
/// # Errors
///
/// A marker is in the dump, or a given value is missing.
pub fn check_dump(markers: &DumpMarkers, dump: &[u8]) -> Outcome {
    let contains = |needle: &[u8]| {
        !needle.is_empty() && dump.windows(needle.len()).any(|window| window == needle)
    };
    for value in &markers.present {
        ensure!(
            contains(value) || contains(hex::encode(value).as_bytes()),
            "the dump lacks a value the store was given ({} bytes): is it the store's dump?",
            value.len()
        );
    }
    for marker in &markers.absent {
        ensure!(
            !contains(marker.as_bytes()),
            "the dump holds `{marker}` in the clear"
        );
        ensure!(
            !contains(hex::encode(marker).as_bytes()),
            "the dump holds `{marker}` as hex"
        );
    }
    Ok(())
}

/// Every row of every table of the PostgreSQL database at `url`, as text
/// (`SELECT t::text`; `bytea` prints as `\x` and lowercase hex).
///
/// # Errors
///
/// The database cannot be reached or read.
pub async fn postgres_dump(url: &str) -> Result<String, String> {
    use sqlx::Row;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .map_err(|e| format!("connect for the dump: {}", super::rows::describe(&e)))?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema() ORDER BY table_name",
    )
    .fetch_all(&pool)
    .await
    .map_err(|e| format!("list tables: {}", super::rows::describe(&e)))?;
    let mut dump = String::new();
    for table in tables {
        let quoted = format!("\"{}\"", table.replace('"', "\"\""));
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT t::text FROM {quoted} t"
        )))
        .fetch_all(&pool)
        .await
        .map_err(|e| format!("read {table}: {}", super::rows::describe(&e)))?;
        dump.push_str(&format!("-- {table}: {} rows\n", rows.len()));
        for row in rows {
            let text: String = row.try_get(0).map_err(|e| format!("read {table}: {e}"))?;
            dump.push_str(&text);
            dump.push('\n');
        }
    }
    pool.close().await;
    Ok(dump)
}
