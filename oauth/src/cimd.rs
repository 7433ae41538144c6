//! Fetching Client ID Metadata Documents without letting a stranger turn
//! the server into an amplifier: one HTTP client for every fetch (the root
//! certificate store is loaded once), whose resolver times the host lookup
//! out and refuses private addresses itself (so a second DNS answer cannot
//! rebind a checked name); results cached with an LRU bound, failures too
//! for a short time; one fetch at a time per id; new ids rate-limited per
//! address and fetches in flight capped in total.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::clients::{ClientError, ClientInfo, is_public};
use super::config::CimdConfig;
use super::limits::{Limits, RateLimiter};

/// Why the resolver refused a host (found again in reqwest's error chain).
#[derive(Debug, thiserror::Error)]
enum LookupRefused {
    #[error("host does not resolve")]
    NoAddress,
    #[error("host resolves to a private or loopback address")]
    Private,
    #[error("host lookup timed out")]
    Timeout,
}

/// The resolver of the shared client.
#[derive(Debug, Clone)]
struct CheckedResolver {
    timeout: Duration,
    allow_private: bool,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let lookup = tokio::net::lookup_host((host.as_str(), 0));
            let addrs: Vec<SocketAddr> = match tokio::time::timeout(this.timeout, lookup).await {
                Err(_) => return Err(Box::new(LookupRefused::Timeout) as _),
                Ok(Err(_)) => return Err(Box::new(LookupRefused::NoAddress) as _),
                Ok(Ok(addrs)) => addrs.collect(),
            };
            if addrs.is_empty() {
                return Err(Box::new(LookupRefused::NoAddress) as _);
            }
            if !this.allow_private && addrs.iter().any(|a| !is_public(a.ip())) {
                return Err(Box::new(LookupRefused::Private) as _);
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[derive(Debug, Clone)]
struct Entry {
    at: Instant,
    used: u64,
    result: Result<ClientInfo, ClientError>,
}

#[derive(Debug, Default)]
struct Cache {
    entries: HashMap<String, Entry>,
    tick: u64,
}

/// The fetcher and its cache.
#[derive(Debug)]
pub(super) struct Cimd {
    config: CimdConfig,
    client: OnceLock<Option<reqwest::Client>>,
    cache: Mutex<Cache>,
    inflight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    new_ids: RateLimiter,
    fetches: tokio::sync::Semaphore,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Cimd {
    pub(super) fn new(config: CimdConfig, limits: &Limits) -> Self {
        Self {
            config,
            client: OnceLock::new(),
            cache: Mutex::new(Cache::default()),
            inflight: Mutex::new(HashMap::new()),
            new_ids: RateLimiter::new(limits.cimd_fetches),
            fetches: tokio::sync::Semaphore::new(limits.max_concurrent_cimd_fetches.max(1)),
        }
    }

    fn cached(&self, client_id: &str) -> Option<Result<ClientInfo, ClientError>> {
        let mut cache = lock(&self.cache);
        cache.tick = cache.tick.wrapping_add(1);
        let tick = cache.tick;
        let positive = Duration::from_secs(self.config.cache_secs);
        let negative = Duration::from_secs(self.config.negative_cache_secs);
        let entry = cache.entries.get_mut(client_id)?;
        let ttl = if entry.result.is_ok() {
            positive
        } else {
            negative
        };
        if entry.at.elapsed() >= ttl {
            return None;
        }
        entry.used = tick;
        Some(entry.result.clone())
    }

    fn remember(&self, client_id: &str, result: &Result<ClientInfo, ClientError>) {
        let ttl = if result.is_ok() {
            self.config.cache_secs
        } else {
            self.config.negative_cache_secs
        };
        if ttl == 0 {
            return;
        }
        let mut cache = lock(&self.cache);
        cache.tick = cache.tick.wrapping_add(1);
        let tick = cache.tick;
        let max = self.config.max_cached.max(1);
        if cache.entries.len() >= max && !cache.entries.contains_key(client_id) {
            // The least recently used entry goes, not the whole cache.
            if let Some(oldest) = cache
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            {
                cache.entries.remove(&oldest);
            }
        }
        cache.entries.insert(
            client_id.to_owned(),
            Entry {
                at: Instant::now(),
                used: tick,
                result: result.clone(),
            },
        );
    }

    /// How many documents and failures are cached (for tests).
    pub(super) fn cached_len(&self) -> usize {
        lock(&self.cache).entries.len()
    }

    /// The client a metadata URL names: from the cache, or fetched once
    /// for all concurrent askers.
    pub(super) async fn resolve(
        &self,
        client_id: &str,
        peer: Option<IpAddr>,
    ) -> Result<ClientInfo, ClientError> {
        if let Some(hit) = self.cached(client_id) {
            return hit;
        }
        let url = self.check_url(client_id)?;
        self.new_ids.check(peer).map_err(ClientError::TooMany)?;
        let flight = lock(&self.inflight)
            .entry(client_id.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
            .clone();
        let _turn = flight.lock().await;
        // Whoever fetched while this request waited left the answer.
        if let Some(hit) = self.cached(client_id) {
            return hit;
        }
        let result = match self.fetches.try_acquire() {
            Ok(_permit) => {
                let result = self.fetch(client_id, url).await;
                self.remember(client_id, &result);
                result
            }
            Err(_) => Err(ClientError::TooMany(1)),
        };
        lock(&self.inflight).remove(client_id);
        result
    }

    /// The checks that need no network: scheme, path, no fragment or
    /// credentials, and an address literal must be public.
    fn check_url(&self, client_id: &str) -> Result<url::Url, ClientError> {
        let url = url::Url::parse(client_id).map_err(|_| ClientError::Unknown)?;
        let https = url.scheme() == "https";
        if !(https || (self.config.allow_http && url.scheme() == "http")) {
            return Err(ClientError::Unknown);
        }
        if url.path() == "/"
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(ClientError::Metadata(
                "URL must be https with a path, without fragment or credentials".into(),
            ));
        }
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => None,
            None => return Err(ClientError::Unknown),
        };
        if !self.config.allow_private_addresses && literal.is_some_and(|ip| !is_public(ip)) {
            return Err(ClientError::Metadata(
                "host resolves to a private or loopback address".into(),
            ));
        }
        Ok(url)
    }

    fn client(&self) -> Option<&reqwest::Client> {
        self.client
            .get_or_init(|| {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let timeout = Duration::from_millis(self.config.timeout_ms);
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(timeout)
                    .connect_timeout(timeout)
                    .no_proxy()
                    // No idle sockets kept to hosts a stranger named.
                    .pool_max_idle_per_host(0)
                    .dns_resolver(Arc::new(CheckedResolver {
                        timeout: Duration::from_millis(self.config.dns_timeout_ms),
                        allow_private: self.config.allow_private_addresses,
                    }))
                    .build()
                    .ok()
            })
            .as_ref()
    }

    async fn fetch(&self, client_id: &str, url: url::Url) -> Result<ClientInfo, ClientError> {
        let bad = |why: &str| ClientError::Metadata(why.to_owned());
        let client = self.client().ok_or_else(|| bad("cannot be fetched"))?;
        let mut response = client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| bad(&send_failure(&e)))?;
        if response.status().is_redirection() {
            return Err(bad("answered with a redirect (not followed)"));
        }
        if !response.status().is_success() {
            return Err(bad(&format!(
                "answered HTTP {}",
                response.status().as_u16()
            )));
        }
        let max = self.config.max_bytes;
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(bad(&format!("is larger than {max} bytes")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|_| bad("could not be read"))?
        {
            if body.len().saturating_add(chunk.len()) > max {
                return Err(bad(&format!("is larger than {max} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        super::clients::document_info(client_id, &body)
    }
}

/// What a failed send says: the resolver's refusal when it was one.
fn send_failure(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<LookupRefused>() {
            return refused.to_string();
        }
        source = err.source();
    }
    if e.is_timeout() {
        "timed out".to_owned()
    } else {
        "cannot be fetched".to_owned()
    }
}

#[cfg(test)]
#[path = "cimd_tests.rs"]
mod tests;
