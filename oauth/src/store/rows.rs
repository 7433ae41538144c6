//! What both backends share: decoding rows into the model (a row that does
//! not decode is [`StoreError::Corrupt`], never a panic), encoding the JSON
//! columns, and turning database errors into [`StoreError`] without any
//! bound value in the message.

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::StoreError;
use crate::model::{
    AuthCode, Exposure, Grant, PendingSignIn, PendingStepUp, RegisteredClient, TokenHash,
    TokenKind, TokenRecord,
};

/// A query error, with the database's own message only: a PostgreSQL
/// error's detail (which may quote a key value) is left out.
pub(super) fn query_error(operation: &'static str, error: &sqlx::Error) -> StoreError {
    StoreError::Query {
        operation,
        message: describe(error),
    }
}

/// A database error's text without bound values.
pub(super) fn describe(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("{} (code {code})", db.message()),
            None => db.message().to_owned(),
        },
        sqlx::Error::ColumnDecode { index, .. } => format!("cannot decode column {index}"),
        other => other.to_string(),
    }
}

/// The store name of a token kind.
pub(super) fn kind_name(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::Access => "access",
        TokenKind::Refresh => "refresh",
    }
}

/// Scopes as stored (a JSON array).
pub(super) fn scopes_json(scopes: &[String]) -> String {
    serde_json::Value::from(scopes.to_vec()).to_string()
}

/// Exposure as stored (a JSON object).
pub(super) fn exposure_json(
    operation: &'static str,
    exposure: &Exposure,
) -> Result<String, StoreError> {
    serde_json::to_string(exposure).map_err(|e| StoreError::Query {
        operation,
        message: format!("cannot encode the exposure: {e}"),
    })
}

fn get<'r, R, T>(row: &'r R, operation: &'static str, column: &'static str) -> Result<T, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(column).map_err(|e| StoreError::Corrupt {
        operation,
        message: format!("column `{column}`: {}", describe(&e)),
    })
}

fn hash_of(
    bytes: Vec<u8>,
    operation: &'static str,
    column: &'static str,
) -> Result<TokenHash, StoreError> {
    <[u8; 32]>::try_from(bytes.as_slice())
        .map(TokenHash)
        .map_err(|_| StoreError::Corrupt {
            operation,
            message: format!("column `{column}` holds {} bytes, not 32", bytes.len()),
        })
}

fn opt_hash_of(
    bytes: Option<Vec<u8>>,
    operation: &'static str,
    column: &'static str,
) -> Result<Option<TokenHash>, StoreError> {
    bytes.map(|b| hash_of(b, operation, column)).transpose()
}

/// Decodes a grant row (every column of `oauth_grants`, by name).
pub(super) fn grant<'r, R>(row: &'r R, operation: &'static str) -> Result<Grant, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let scopes: String = get(row, operation, "scopes")?;
    let scopes: Vec<String> = serde_json::from_str(&scopes).map_err(|e| StoreError::Corrupt {
        operation,
        message: format!("column `scopes` is not a JSON list of strings: {e}"),
    })?;
    let exposure: String = get(row, operation, "exposure")?;
    let exposure: Exposure = serde_json::from_str(&exposure).map_err(|e| StoreError::Corrupt {
        operation,
        message: format!("column `exposure` is not an exposure: {e}"),
    })?;
    let step_up_scope: Option<String> = get(row, operation, "step_up_scope")?;
    let step_up_at: Option<i64> = get(row, operation, "step_up_at")?;
    Ok(Grant {
        id: get(row, operation, "id")?,
        client_id: get(row, operation, "client_id")?,
        resource: get(row, operation, "resource")?,
        scopes,
        exposure,
        created_at: get(row, operation, "created_at")?,
        expires_at: get(row, operation, "expires_at")?,
        upstream_sealed: get(row, operation, "upstream_sealed")?,
        upstream_expires_at: get(row, operation, "upstream_expires_at")?,
        version: get(row, operation, "version")?,
        refresh_current: opt_hash_of(
            get(row, operation, "refresh_current")?,
            operation,
            "refresh_current",
        )?,
        refresh_previous: opt_hash_of(
            get(row, operation, "refresh_previous")?,
            operation,
            "refresh_previous",
        )?,
        revoked: get(row, operation, "revoked")?,
        step_up: match (step_up_scope, step_up_at) {
            (Some(scope), Some(at)) => Some(PendingStepUp { scope, at }),
            _ => None,
        },
    })
}

/// Decodes a token row (every column of `oauth_tokens`, by name).
pub(super) fn token<'r, R>(row: &'r R, operation: &'static str) -> Result<TokenRecord, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    token_with(row, operation, "expires_at")
}

/// Decodes a token row whose expiry is in column `expires` (a join with
/// the grant renames it).
pub(super) fn token_with<'r, R>(
    row: &'r R,
    operation: &'static str,
    expires: &'static str,
) -> Result<TokenRecord, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let kind: String = get(row, operation, "kind")?;
    let kind = match kind.as_str() {
        "access" => TokenKind::Access,
        "refresh" => TokenKind::Refresh,
        _ => {
            return Err(StoreError::Corrupt {
                operation,
                message: "column `kind` is neither `access` nor `refresh`".to_owned(),
            });
        }
    };
    Ok(TokenRecord {
        hash: hash_of(get(row, operation, "hash")?, operation, "hash")?,
        kind,
        grant_id: get(row, operation, "grant_id")?,
        expires_at: get(row, operation, expires)?,
        wrapped_key: get(row, operation, "wrapped_key")?,
    })
}

/// Decodes a code row (the columns of `oauth_codes` but `used`).
pub(super) fn code<'r, R>(row: &'r R, operation: &'static str) -> Result<AuthCode, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(AuthCode {
        hash: hash_of(get(row, operation, "hash")?, operation, "hash")?,
        grant_id: get(row, operation, "grant_id")?,
        client_id: get(row, operation, "client_id")?,
        redirect_uri: get(row, operation, "redirect_uri")?,
        code_challenge: get(row, operation, "code_challenge")?,
        expires_at: get(row, operation, "expires_at")?,
        wrapped_key: get(row, operation, "wrapped_key")?,
    })
}

/// Decodes a code's `grant_id` and `used` columns.
pub(super) fn code_state<'r, R>(
    row: &'r R,
    operation: &'static str,
) -> Result<(String, bool), StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok((
        get(row, operation, "grant_id")?,
        get(row, operation, "used")?,
    ))
}

/// Decodes a pending sign-in row (`hash, browser, expires_at, sealed`).
pub(super) fn pending<'r, R>(
    row: &'r R,
    operation: &'static str,
) -> Result<PendingSignIn, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(PendingSignIn {
        hash: hash_of(get(row, operation, "hash")?, operation, "hash")?,
        browser: hash_of(get(row, operation, "browser")?, operation, "browser")?,
        expires_at: get(row, operation, "expires_at")?,
        sealed: get(row, operation, "sealed")?,
    })
}

/// Decodes a client row (`client_id, metadata, created_at`).
pub(super) fn client<'r, R>(
    row: &'r R,
    operation: &'static str,
) -> Result<RegisteredClient, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(RegisteredClient {
        client_id: get(row, operation, "client_id")?,
        metadata: get(row, operation, "metadata")?,
        created_at: get(row, operation, "created_at")?,
    })
}

/// Where a presented refresh token stands in its grant's rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    /// It is `refresh_current`.
    Current,
    /// It is `refresh_previous` (the current one is unused).
    Previous,
    /// An older refresh token of the grant: reuse.
    Older,
}

/// Where `presented` stands in `grant`'s rotation.
pub(super) fn standing(grant: &Grant, presented: &TokenHash) -> Standing {
    if grant.refresh_current.as_ref() == Some(presented) {
        Standing::Current
    } else if grant.refresh_previous.as_ref() == Some(presented) {
        Standing::Previous
    } else {
        Standing::Older
    }
}

/// Refuses new tokens that do not belong to `grant_id` or have the wrong kind
/// (a caller's mistake that would otherwise attach tokens to another grant).
pub(super) fn check_new_tokens(
    operation: &'static str,
    grant_id: &str,
    access: &TokenRecord,
    refresh: &TokenRecord,
) -> Result<(), StoreError> {
    if access.kind != TokenKind::Access || refresh.kind != TokenKind::Refresh {
        return Err(StoreError::Query {
            operation,
            message: "the new tokens must be one access and one refresh token".to_owned(),
        });
    }
    if access.grant_id != grant_id || refresh.grant_id != grant_id {
        return Err(StoreError::Query {
            operation,
            message: "the new tokens belong to another grant".to_owned(),
        });
    }
    Ok(())
}
