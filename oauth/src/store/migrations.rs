//! The grant store's schema, as a versioned list of migrations applied in
//! order on open. Both backends get the same logical schema; only the type
//! names differ (`BLOB` / `BYTEA`). Each backend applies the migrations it
//! has not applied yet inside one transaction and records each version in
//! `toolforge_schema_version`, so opening a store twice (or two instances
//! opening it together) applies each migration once.
//!
//! Columns: token, code and state hashes and sealed values are binary;
//! scopes and exposure are JSON text; times are `BIGINT` Unix seconds.

/// One schema step.
#[derive(Debug)]
pub(super) struct Migration {
    /// Its version (1, 2, …; strictly increasing).
    pub(super) version: i64,
    /// What it does (for error messages).
    pub(super) description: &'static str,
    /// The statements under SQLite.
    pub(super) sqlite: &'static [&'static str],
    /// The same statements under PostgreSQL.
    pub(super) postgres: &'static [&'static str],
}

/// The table recording applied versions (created before any migration).
pub(super) const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS toolforge_schema_version (\
     version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)";

/// The highest applied version (0 for a fresh store).
pub(super) const CURRENT_VERSION: &str =
    "SELECT COALESCE(MAX(version), 0) FROM toolforge_schema_version";

/// Every migration, oldest first.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "grants, tokens, codes, pending sign-ins, clients",
        sqlite: &[
            "CREATE TABLE oauth_grants (
            id TEXT PRIMARY KEY,
            client_id TEXT NOT NULL,
            resource TEXT NOT NULL,
            scopes TEXT NOT NULL,
            exposure TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            upstream_sealed BLOB NOT NULL,
            upstream_expires_at BIGINT,
            version BIGINT NOT NULL,
            refresh_current BLOB,
            refresh_previous BLOB,
            revoked BOOLEAN NOT NULL DEFAULT FALSE
        )",
            "CREATE INDEX oauth_grants_expires ON oauth_grants (expires_at)",
            "CREATE TABLE oauth_tokens (
            hash BLOB PRIMARY KEY,
            kind TEXT NOT NULL,
            grant_id TEXT NOT NULL,
            expires_at BIGINT NOT NULL,
            wrapped_key BLOB NOT NULL
        )",
            "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
            "CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at)",
            "CREATE TABLE oauth_codes (
            hash BLOB PRIMARY KEY,
            grant_id TEXT NOT NULL,
            client_id TEXT NOT NULL,
            redirect_uri TEXT NOT NULL,
            code_challenge TEXT NOT NULL,
            expires_at BIGINT NOT NULL,
            wrapped_key BLOB NOT NULL,
            used BOOLEAN NOT NULL DEFAULT FALSE
        )",
            "CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id)",
            "CREATE TABLE oauth_pending (
            hash BLOB PRIMARY KEY,
            browser BLOB NOT NULL,
            expires_at BIGINT NOT NULL,
            sealed BLOB NOT NULL
        )",
            "CREATE TABLE oauth_clients (
            client_id TEXT PRIMARY KEY,
            metadata TEXT NOT NULL,
            created_at BIGINT NOT NULL
        )",
        ],
        postgres: &[
            "CREATE TABLE oauth_grants (
            id TEXT PRIMARY KEY,
            client_id TEXT NOT NULL,
            resource TEXT NOT NULL,
            scopes TEXT NOT NULL,
            exposure TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            upstream_sealed BYTEA NOT NULL,
            upstream_expires_at BIGINT,
            version BIGINT NOT NULL,
            refresh_current BYTEA,
            refresh_previous BYTEA,
            revoked BOOLEAN NOT NULL DEFAULT FALSE
        )",
            "CREATE INDEX oauth_grants_expires ON oauth_grants (expires_at)",
            "CREATE TABLE oauth_tokens (
            hash BYTEA PRIMARY KEY,
            kind TEXT NOT NULL,
            grant_id TEXT NOT NULL,
            expires_at BIGINT NOT NULL,
            wrapped_key BYTEA NOT NULL
        )",
            "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
            "CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at)",
            "CREATE TABLE oauth_codes (
            hash BYTEA PRIMARY KEY,
            grant_id TEXT NOT NULL,
            client_id TEXT NOT NULL,
            redirect_uri TEXT NOT NULL,
            code_challenge TEXT NOT NULL,
            expires_at BIGINT NOT NULL,
            wrapped_key BYTEA NOT NULL,
            used BOOLEAN NOT NULL DEFAULT FALSE
        )",
            "CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id)",
            "CREATE TABLE oauth_pending (
            hash BYTEA PRIMARY KEY,
            browser BYTEA NOT NULL,
            expires_at BIGINT NOT NULL,
            sealed BYTEA NOT NULL
        )",
            "CREATE TABLE oauth_clients (
            client_id TEXT PRIMARY KEY,
            metadata TEXT NOT NULL,
            created_at BIGINT NOT NULL
        )",
        ],
    },
    Migration {
        version: 2,
        description: "client last use, expiry indexes",
        sqlite: MIGRATION_2,
        postgres: MIGRATION_2,
    },
    Migration {
        version: 3,
        description: "pending step-up on grants",
        sqlite: MIGRATION_3,
        postgres: MIGRATION_3,
    },
];

/// The last step-up challenge sent to a grant's session (scope and time;
/// NULL when none), read by the token endpoint's refresh.
const MIGRATION_3: &[&str] = &[
    "ALTER TABLE oauth_grants ADD COLUMN step_up_scope TEXT",
    "ALTER TABLE oauth_grants ADD COLUMN step_up_at BIGINT",
];

/// Registered clients expire when unused (`last_used_at` is NULL until the
/// first sign-in); the scheduled purge finds expired rows by index.
const MIGRATION_2: &[&str] = &[
    "ALTER TABLE oauth_clients ADD COLUMN last_used_at BIGINT",
    "CREATE INDEX oauth_clients_last_used ON oauth_clients (last_used_at, created_at)",
    "CREATE INDEX oauth_pending_expires ON oauth_pending (expires_at)",
    "CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at)",
];

/// The version a fully migrated store is at.
pub(super) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The migrations above `current`, oldest first; an error message when the
/// store is newer than this build knows.
pub(super) fn pending(current: i64) -> Result<&'static [Migration], String> {
    if current > latest() {
        return Err(format!(
            "the store is at schema version {current}, newer than this server's {}: \
             upgrade the server",
            latest()
        ));
    }
    let from = MIGRATIONS.partition_point(|m| m.version <= current);
    Ok(&MIGRATIONS[from..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_increase_and_backends_match() {
        let mut last = 0;
        for m in MIGRATIONS {
            assert!(m.version > last, "migration {} out of order", m.version);
            last = m.version;
            assert_eq!(
                m.sqlite.len(),
                m.postgres.len(),
                "migration {} ({}) differs between backends",
                m.version,
                m.description
            );
            for (s, p) in m.sqlite.iter().zip(m.postgres) {
                assert_eq!(s.replace("BLOB", "BYTEA"), *p, "migration {}", m.version);
            }
        }
    }

    #[test]
    fn pending_skips_applied_and_refuses_newer() {
        assert_eq!(pending(0).map(<[_]>::len), Ok(MIGRATIONS.len()));
        assert_eq!(pending(latest()).map(<[_]>::len), Ok(0));
        assert!(pending(latest() + 1).is_err());
    }
}
