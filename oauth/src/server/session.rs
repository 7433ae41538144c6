//! The per-request path of `/mcp`: the bearer token is hashed and looked
//! up (through a short cache), checked for kind, expiry, audience and
//! revocation, and the grant's upstream tokens are unsealed for this
//! request only, refreshed first when they have expired (one refresh per
//! grant at a time).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::crypto;
use super::super::events::{AuthEvent, record};
use super::super::model::{Exposure, Grant, TokenHash, TokenKind, TokenRecord};
use super::super::upstream::{UpstreamOAuthError, UpstreamTokens};
use super::{OAuthServer, now};

/// An authenticated `/mcp` request.
pub struct Session {
    /// The grant.
    pub grant_id: String,
    /// The upstream access token, for this request only.
    pub upstream_token: String,
    /// What the session may do.
    pub exposure: Exposure,
    /// Upstream scopes granted.
    pub scopes: Vec<String>,
    /// The MCP client the grant was made to (picks how a step-up is
    /// delivered).
    pub client_id: String,
    /// The scoped URL (its path after `/mcp`) the grant was made for.
    pub scoped: Option<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("grant_id", &self.grant_id)
            .field("exposure", &self.exposure)
            .finish_non_exhaustive()
    }
}

/// Why a bearer token was refused (always a 401 `invalid_token`, except
/// when the store cannot be reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Unknown, expired, revoked, or for another resource.
    InvalidToken,
    /// The grant store or the upstream provider is unreachable (503).
    Unavailable,
}

/// A validated token's record and grant, still sealed: the upstream token
/// is decrypted again for every request, so plaintext never sits in the
/// cache.
#[derive(Clone)]
struct Cached {
    at: Instant,
    record: TokenRecord,
    grant: Grant,
}

/// Validated access tokens of this instance, for at most `ttl`.
#[derive(Default)]
pub(super) struct TokenCache {
    ttl: Duration,
    entries: Mutex<HashMap<TokenHash, Cached>>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl TokenCache {
    pub(super) fn new(ttl_secs: u64) -> Self {
        Self {
            ttl: Duration::from_secs(ttl_secs),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TokenHash, Cached>> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn get(&self, hash: &TokenHash, now: i64) -> Option<Cached> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.lock();
        let hit = entries.get(hash)?;
        let fresh = hit.at.elapsed() < self.ttl
            && hit.record.expires_at > now
            && hit.grant.upstream_expires_at.is_none_or(|e| e > now + 30);
        fresh.then(|| hit.clone())
    }

    fn put(&self, hash: TokenHash, entry: Cached) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= 50_000 {
            let ttl = self.ttl;
            entries.retain(|_, e| e.at.elapsed() < ttl);
            if entries.len() >= 50_000 {
                entries.clear();
            }
        }
        entries.insert(hash, entry);
    }

    /// Drops every cached token of a grant (revocation on this instance
    /// takes effect at once).
    pub(super) fn forget_grant(&self, grant_id: &str) {
        self.lock().retain(|_, e| e.grant.id != grant_id);
    }
}

/// The upstream tokens sealed in a grant, opened with a token of it.
pub(super) fn unseal(token: &str, record: &TokenRecord, grant: &Grant) -> Option<UpstreamTokens> {
    let key = crypto::unwrap_grant_key(token, &grant.id, &record.wrapped_key)?;
    let plain = crypto::open(&key, &grant.upstream_sealed, grant.id.as_bytes())?;
    serde_json::from_slice(&plain).ok()
}

impl OAuthServer {
    /// Validates a bearer token for `/mcp` and opens the grant's upstream
    /// token for this request.
    ///
    /// # Errors
    ///
    /// See [`Rejection`].
    pub async fn authenticate(&self, bearer: &str) -> Result<Session, Rejection> {
        self.authenticate_at(bearer, None).await
    }

    /// [`OAuthServer::authenticate`] at `/mcp` or at a scoped URL: the
    /// token's grant must have been made for exactly that resource.
    ///
    /// # Errors
    ///
    /// See [`Rejection`].
    pub async fn authenticate_at(
        &self,
        bearer: &str,
        scoped: Option<&str>,
    ) -> Result<Session, Rejection> {
        let now = now();
        let hash = self.setup.keys.hash(bearer);
        let resource = match scoped {
            Some(suffix) => format!("{}{suffix}", self.resource),
            None => self.resource.clone(),
        };
        if let Some(hit) = self.cache.get(&hash, now)
            && let Some(upstream) = unseal(bearer, &hit.record, &hit.grant)
        {
            if hit.grant.resource != resource {
                record(AuthEvent::Rejected);
                return Err(Rejection::InvalidToken);
            }
            return Ok(Session {
                grant_id: hit.grant.id,
                upstream_token: upstream.access_token,
                exposure: hit.grant.exposure,
                scopes: hit.grant.scopes,
                client_id: hit.grant.client_id,
                scoped: scoped.map(str::to_owned),
            });
        }
        let result = self
            .authenticate_from_store(bearer, hash, now, &resource)
            .await
            .map(|session| Session {
                scoped: scoped.map(str::to_owned),
                ..session
            });
        if result.is_err() {
            record(AuthEvent::Rejected);
        }
        result
    }

    async fn authenticate_from_store(
        &self,
        bearer: &str,
        hash: TokenHash,
        now: i64,
        resource: &str,
    ) -> Result<Session, Rejection> {
        let store = &self.setup.store;
        let (record, grant) = match store.token(&hash, now).await {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Rejection::InvalidToken),
            Err(e) => {
                tracing::error!(error = %e, "token lookup");
                return Err(Rejection::Unavailable);
            }
        };
        if record.kind != TokenKind::Access
            || grant.revoked
            || record.expires_at <= now
            || grant.expires_at <= now
            || !crypto::same(record.hash.0.as_slice(), hash.0.as_slice())
            || grant.resource != resource
        {
            return Err(Rejection::InvalidToken);
        }
        let Some(key) = crypto::unwrap_grant_key(bearer, &grant.id, &record.wrapped_key) else {
            return Err(Rejection::InvalidToken);
        };
        let mut upstream = open(&key, &grant).ok_or(Rejection::InvalidToken)?;
        let mut grant = grant;
        if upstream.expires_at.is_some_and(|e| e <= now + 30) {
            let (fresh, refreshed) = self.refresh_upstream(&key, &grant, now).await?;
            upstream = fresh;
            grant = refreshed;
        }
        self.cache.put(
            hash,
            Cached {
                at: Instant::now(),
                record,
                grant: grant.clone(),
            },
        );
        Ok(Session {
            grant_id: grant.id,
            upstream_token: upstream.access_token,
            exposure: grant.exposure,
            scopes: grant.scopes,
            client_id: grant.client_id,
            scoped: None,
        })
    }

    /// Refreshes the grant's upstream token: one refresh per grant at a
    /// time on this instance; across instances the version check makes the
    /// loser reread the winner's tokens.
    async fn refresh_upstream(
        &self,
        key: &[u8; crypto::KEY_LEN],
        grant: &Grant,
        now: i64,
    ) -> Result<(UpstreamTokens, Grant), Rejection> {
        let lock = self.refresh_lock(&grant.id);
        let _guard = lock.lock().await;
        // Someone may have refreshed while this request waited.
        let current = match self.setup.store.grant(&grant.id).await {
            Ok(Some(g)) if !g.revoked => g,
            Ok(_) => return Err(Rejection::InvalidToken),
            Err(_) => return Err(Rejection::Unavailable),
        };
        let tokens = open(key, &current).ok_or(Rejection::InvalidToken)?;
        if tokens.expires_at.is_none_or(|e| e > now + 30) {
            return Ok((tokens, current));
        }
        match self.setup.upstream.refresh(&tokens, now).await {
            Ok(fresh) => {
                let plain = serde_json::to_vec(&fresh).map_err(|_| Rejection::Unavailable)?;
                let sealed = crypto::seal(key, &plain, current.id.as_bytes())
                    .map_err(|_| Rejection::Unavailable)?;
                match self
                    .setup
                    .store
                    .update_upstream(&current.id, current.version, &sealed, fresh.expires_at)
                    .await
                {
                    Ok(true) => {
                        record(AuthEvent::UpstreamRefreshed);
                        let updated = Grant {
                            upstream_sealed: sealed,
                            upstream_expires_at: fresh.expires_at,
                            version: current.version + 1,
                            ..current
                        };
                        Ok((fresh, updated))
                    }
                    // Another instance refreshed first: use its tokens.
                    Ok(false) => match self.setup.store.grant(&current.id).await {
                        Ok(Some(g)) if !g.revoked => {
                            let tokens = open(key, &g).ok_or(Rejection::InvalidToken)?;
                            Ok((tokens, g))
                        }
                        Ok(_) => Err(Rejection::InvalidToken),
                        Err(_) => Err(Rejection::Unavailable),
                    },
                    Err(_) => Err(Rejection::Unavailable),
                }
            }
            Err(UpstreamOAuthError::Refused(why)) => {
                tracing::info!(grant = %current.id, reason = %why, "upstream refused the refresh: grant revoked");
                super::token::revoke(self, &current.id).await;
                Err(Rejection::InvalidToken)
            }
            Err(UpstreamOAuthError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "upstream refresh failed");
                Err(Rejection::Unavailable)
            }
        }
    }
}

fn open(key: &[u8; crypto::KEY_LEN], grant: &Grant) -> Option<UpstreamTokens> {
    let plain = crypto::open(key, &grant.upstream_sealed, grant.id.as_bytes())?;
    serde_json::from_slice(&plain).ok()
}
