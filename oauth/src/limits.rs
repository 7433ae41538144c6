//! Bounds on what a stranger can make the authorization server store or
//! fetch: per-address token buckets (sign-ins, registrations, new Client ID
//! Metadata Document ids) and totals counted in the grant store. Each
//! refusal carries the seconds after which a retry can succeed, answered
//! as `429` with `Retry-After`.
//!
//! Addresses are the TCP peer's: behind a reverse proxy every user shares
//! the proxy's address, so raise the per-address limits there.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;

/// A per-address rate: `burst` at once, then `per_minute` more each minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Requests one address may make at once.
    pub burst: u32,
    /// Requests one address regains each minute (0: only the burst, ever).
    pub per_minute: u32,
}

/// The `limits` block of the OAuth configuration.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest request body the OAuth routes read (`/authorize`, `/token`,
    /// `/revoke`, `/register`), in bytes.
    pub max_body_bytes: usize,
    /// Upstream sign-ins one address may start (each stores a pending
    /// sign-in until the callback or `lifetimes.sign_in_secs`).
    pub sign_ins: RateLimit,
    /// Pending sign-ins stored at once, from everyone.
    pub max_pending_sign_ins: u64,
    /// Dynamic registrations (`/register`) one address may make.
    pub registrations: RateLimit,
    /// Registered clients not yet used for a sign-in, from everyone.
    pub max_unused_clients: u64,
    /// Redirect URIs one registration may list.
    pub max_redirect_uris: usize,
    /// Longest redirect URI accepted (registration, metadata document or
    /// `/authorize`), in bytes.
    pub max_redirect_uri_bytes: usize,
    /// New Client ID Metadata Document ids (cache misses, each an outbound
    /// fetch) one address may ask for.
    pub cimd_fetches: RateLimit,
    /// Metadata document fetches in flight at once, from everyone.
    pub max_concurrent_cimd_fetches: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 64 * 1024,
            sign_ins: RateLimit {
                burst: 30,
                per_minute: 30,
            },
            max_pending_sign_ins: 10_000,
            registrations: RateLimit {
                burst: 10,
                per_minute: 2,
            },
            max_unused_clients: 5_000,
            max_redirect_uris: 10,
            max_redirect_uri_bytes: 2048,
            cimd_fetches: RateLimit {
                burst: 20,
                per_minute: 20,
            },
            max_concurrent_cimd_fetches: 32,
        }
    }
}

/// The `retention` block: when the scheduled purge runs and how long
/// registered clients live unused.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Retention {
    /// Seconds between purges of expired sign-ins, codes, tokens, grants
    /// and clients (also run at start; 0 turns the schedule off).
    pub purge_interval_secs: u64,
    /// A dynamically registered client never used for a sign-in is
    /// deleted this many seconds after it registered.
    pub unused_client_secs: u64,
    /// A registered client is deleted this many seconds after its last
    /// sign-in.
    pub idle_client_secs: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            purge_interval_secs: 60,
            unused_client_secs: 24 * 3600,
            idle_client_secs: 30 * 24 * 3600,
        }
    }
}

/// Most addresses tracked at once; past it, buckets that refilled are
/// dropped, and if none did, new addresses share one bucket.
const MAX_TRACKED: usize = 65_536;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets keyed by address (an IPv6 address by its /64, which one
/// host usually holds whole).
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

/// The key an address is counted under.
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

impl RateLimiter {
    /// A limiter applying `limit` to each address.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn refill(&self, bucket: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        let gained = elapsed * f64::from(self.limit.per_minute) / 60.0;
        bucket.tokens = (bucket.tokens + gained).min(f64::from(self.limit.burst));
        bucket.at = now;
    }

    /// Takes one request from `ip`'s bucket now.
    ///
    /// # Errors
    ///
    /// The seconds until the bucket holds a request again.
    pub fn check(&self, ip: Option<IpAddr>) -> Result<(), u64> {
        self.check_at(ip, Instant::now())
    }

    /// [`RateLimiter::check`] at a given instant (for tests).
    ///
    /// # Errors
    ///
    /// The seconds until the bucket holds a request again.
    pub fn check_at(&self, ip: Option<IpAddr>, now: Instant) -> Result<(), u64> {
        let key = address_key(ip.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)));
        let mut buckets = match self.buckets.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        // One place stays free for the shared bucket of the overflow.
        let full = |n: usize| n >= MAX_TRACKED - 1;
        if full(buckets.len()) && !buckets.contains_key(&key) {
            let burst = f64::from(self.limit.burst);
            let per_minute = f64::from(self.limit.per_minute);
            buckets.retain(|_, b| {
                let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
                b.tokens + elapsed * per_minute / 60.0 < burst
            });
        }
        let key = if full(buckets.len()) && !buckets.contains_key(&key) {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            key
        };
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: f64::from(self.limit.burst),
            at: now,
        });
        self.refill(bucket, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        if self.limit.per_minute == 0 {
            return Err(3600);
        }
        let missing = 1.0 - bucket.tokens;
        let secs = (missing * 60.0 / f64::from(self.limit.per_minute)).ceil();
        // The float is finite and small (at most 60 s per token).
        Err(if secs.is_finite() && secs >= 1.0 {
            secs as u64
        } else {
            1
        })
    }
}

/// A total counted in the store, re-counted at most once a second and
/// counted up locally in between (so a flood costs one `COUNT` a second,
/// not one per request).
#[derive(Debug, Default)]
pub struct LiveCount {
    state: tokio::sync::Mutex<Option<(Instant, u64)>>,
}

/// How long a store count is trusted.
const RECOUNT: Duration = Duration::from_secs(1);

impl LiveCount {
    /// Admits one more when the total is under `cap`, counting it.
    /// `count` reads the store's total.
    ///
    /// # Errors
    ///
    /// `Err(true)` at the cap, `Err(false)` when the store cannot count.
    pub async fn admit<F, Fut, E>(&self, cap: u64, count: F) -> Result<(), bool>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<u64, E>>,
    {
        let mut state = self.state.lock().await;
        let now = Instant::now();
        let current = match *state {
            Some((at, n)) if now.saturating_duration_since(at) < RECOUNT => n,
            _ => {
                let n = count().await.map_err(|_| false)?;
                *state = Some((now, n));
                n
            }
        };
        if current >= cap {
            return Err(true);
        }
        if let Some((_, n)) = state.as_mut() {
            *n = n.saturating_add(1);
        }
        Ok(())
    }
}

/// The TCP peer's address of a request, put on it as an extension by the
/// HTTP server that mounts these routes (the per-address limits read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The TCP peer's address, when the server put it on the request.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub Option<IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Peer(parts.extensions.get::<ClientAddr>().map(|c| c.0)))
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
