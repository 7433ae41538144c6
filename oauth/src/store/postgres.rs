//! Opening the shared grant store: PostgreSQL, for several server
//! instances behind a load balancer. The store body is [`super::sql`]'s;
//! what is PostgreSQL's own here is the connection probe and keeping the
//! URL's password out of every error.

use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

use super::StoreError;
use super::dialect::Db;
use super::rows;
use super::sql::SqlStore;

/// How long an operation waits for a free pooled connection (or a new one).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// The URL's password as written, whether or not the URL parses (the
/// userinfo before the last `@` of the authority).
fn password_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority_end = rest.rfind('@')?;
    let (_, password) = rest[..authority_end].split_once(':')?;
    Some(password).filter(|p| !p.is_empty())
}

/// Removes the URL's password (as written and percent-decoded) from
/// `message`.
fn redact(message: &str, url: &str) -> String {
    let mut message = message.to_owned();
    let parsed = url::Url::parse(url).ok();
    let written = [
        password_of(url),
        parsed.as_ref().and_then(url::Url::password),
    ];
    for password in written.into_iter().flatten() {
        let decoded = percent_encoding::percent_decode_str(password)
            .decode_utf8_lossy()
            .into_owned();
        for secret in [password.to_owned(), decoded] {
            if !secret.is_empty() {
                message = message.replace(&secret, "***");
            }
        }
    }
    message
}

fn open_error(message: impl std::fmt::Display, url: &str) -> StoreError {
    StoreError::Open {
        backend: "postgres",
        message: redact(&message.to_string(), url),
    }
}

/// Opens `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?…]` and applies the
/// migrations it lacks.
///
/// # Errors
///
/// A malformed URL, an unreachable or refusing server, or a failed
/// migration. The URL's password is never part of the message.
pub(super) async fn open(url: &str) -> Result<SqlStore, StoreError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| open_error(format!("bad URL: {}", rows::describe(&e)), url))?;
    // One direct connection first: the pool retries until its timeout and
    // then reports only that; this fails at once with the cause.
    let probe = PgConnection::connect_with(&options)
        .await
        .map_err(|e| open_error(rows::describe(&e), url))?;
    probe
        .close()
        .await
        .map_err(|e| open_error(rows::describe(&e), url))?;
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|e| open_error(rows::describe(&e), url))?;
    SqlStore::migrated(Db::Postgres(pool))
        .await
        .map_err(|e| match e {
            StoreError::Open { backend, message } => StoreError::Open {
                backend,
                message: redact(&message, url),
            },
            other => other,
        })
}

#[cfg(test)]
mod tests {
    use super::{password_of, redact};

    #[test]
    fn passwords_are_redacted_even_from_malformed_urls() {
        let url = "postgres://user:pa%24s@w/rd@db.example:5432/grants";
        assert_eq!(password_of(url), Some("pa%24s@w/rd"));
        let message = "connecting as user:pa$s@w/rd and pa%24s@w/rd failed";
        let redacted = redact(message, url);
        assert!(
            !redacted.contains("pa$s") && !redacted.contains("pa%24s"),
            "{redacted}"
        );
        assert_eq!(password_of("postgres://user@db/grants"), None);
        assert_eq!(password_of("postgres://user:@db/grants"), None);
    }
}
