//! Who an MCP client is: a Client ID Metadata Document (the client id is
//! an https URL, fetched with a size cap, a timeout, no redirects and
//! public addresses only, then cached) or a dynamically registered client.
//! Redirect URIs are https or loopback http, matched exactly.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::config::CimdConfig;
use super::store::GrantStore;

/// A client the server will issue codes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client id.
    pub client_id: String,
    /// Its display name (from its metadata), if any.
    pub name: Option<String>,
    /// Its registered redirect URIs (exact strings).
    pub redirect_uris: Vec<String>,
}

/// Why a client id does not resolve. Shown on the error page (no redirect).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClientError {
    /// Not a registered id and not an acceptable metadata URL.
    #[error("unknown client_id")]
    Unknown,
    /// The metadata document could not be used.
    #[error("the client's metadata document {0}")]
    Metadata(String),
    /// The store failed.
    #[error("the grant store is unavailable")]
    Store,
}

#[derive(Deserialize)]
struct Document {
    client_id: String,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Resolves client ids, caching fetched metadata documents.
#[derive(Debug)]
pub struct ClientResolver {
    config: CimdConfig,
    cache: Mutex<HashMap<String, (Instant, ClientInfo)>>,
}

/// Whether a redirect URI may be registered: https, or http to a loopback
/// host; no fragment, no credentials.
pub fn redirect_uri_acceptable(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && super::config::secure_or_loopback(&url)
}

/// Whether an address is on the public internet (not loopback, private,
/// link-local, shared, documentation, multicast or reserved).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x64 && s[1] == 0xff9b))
        }
    }
}

impl ClientResolver {
    /// A resolver with this fetch policy.
    pub fn new(config: CimdConfig) -> Self {
        Self {
            config,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The client a `client_id` names.
    ///
    /// # Errors
    ///
    /// See [`ClientError`].
    pub async fn resolve(
        &self,
        client_id: &str,
        store: &dyn GrantStore,
    ) -> Result<ClientInfo, ClientError> {
        if client_id.starts_with("https://") || client_id.starts_with("http://") {
            return self.metadata(client_id).await;
        }
        let registered = store
            .client(client_id)
            .await
            .map_err(|_| ClientError::Store)?
            .ok_or(ClientError::Unknown)?;
        let doc: Document = serde_json::from_str(&registered.metadata)
            .map_err(|_| ClientError::Metadata("is unreadable".into()))?;
        Ok(ClientInfo {
            client_id: registered.client_id,
            name: doc.client_name,
            redirect_uris: doc.redirect_uris,
        })
    }

    async fn metadata(&self, client_id: &str) -> Result<ClientInfo, ClientError> {
        let ttl = Duration::from_secs(self.config.cache_secs);
        if let Ok(cache) = self.cache.lock()
            && let Some((at, info)) = cache.get(client_id)
            && at.elapsed() < ttl
        {
            return Ok(info.clone());
        }
        let info = self.fetch(client_id).await?;
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() > 1024 {
                cache.clear();
            }
            cache.insert(client_id.to_owned(), (Instant::now(), info.clone()));
        }
        Ok(info)
    }

    async fn fetch(&self, client_id: &str) -> Result<ClientInfo, ClientError> {
        let bad = |why: &str| ClientError::Metadata(why.to_owned());
        let url = url::Url::parse(client_id).map_err(|_| ClientError::Unknown)?;
        let https = url.scheme() == "https";
        if !(https || (self.config.allow_http && url.scheme() == "http")) {
            return Err(ClientError::Unknown);
        }
        if url.path() == "/" || url.fragment().is_some() || !url.username().is_empty() {
            return Err(bad(
                "URL must be https with a path, without fragment or credentials",
            ));
        }
        let host = url.host_str().ok_or(ClientError::Unknown)?.to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
            .await
            .map_err(|_| bad("host does not resolve"))?
            .collect();
        let Some(addr) = addrs.first().copied() else {
            return Err(bad("host does not resolve"));
        };
        if !self.config.allow_private_addresses && addrs.iter().any(|a| !is_public(a.ip())) {
            return Err(bad("host resolves to a private or loopback address"));
        }
        let timeout = Duration::from_millis(self.config.timeout_ms);
        // Pinning the checked address: the fetch cannot be rebound to
        // another one by a second DNS answer.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .no_proxy()
            .resolve(&host, addr)
            .build()
            .map_err(|_| bad("cannot be fetched"))?;
        let mut response = client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|_| bad("cannot be fetched"))?;
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
            if body.len() + chunk.len() > max {
                return Err(bad(&format!("is larger than {max} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        let doc: Document = serde_json::from_slice(&body)
            .map_err(|_| bad("is not a client metadata JSON object"))?;
        if doc.client_id != client_id {
            return Err(bad("names another client_id"));
        }
        if doc
            .token_endpoint_auth_method
            .as_deref()
            .is_some_and(|m| m != "none")
        {
            return Err(bad(
                "asks for a token endpoint authentication other than `none`",
            ));
        }
        if doc.redirect_uris.is_empty()
            || !doc.redirect_uris.iter().all(|u| redirect_uri_acceptable(u))
        {
            return Err(bad("needs redirect_uris, each https or loopback http"));
        }
        Ok(ClientInfo {
            client_id: doc.client_id,
            name: doc.client_name.map(|n| n.chars().take(100).collect()),
            redirect_uris: doc.redirect_uris,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_must_be_https_or_loopback_http() {
        for ok in [
            "https://app.example/cb",
            "http://127.0.0.1:3000/cb",
            "http://[::1]/cb",
            "http://localhost:8080/callback",
        ] {
            assert!(redirect_uri_acceptable(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "http://app.example/cb",
            "https://app.example/cb#frag",
            "https://user:pw@app.example/cb",
            "file:///etc/passwd",
            "cb",
        ] {
            assert!(!redirect_uri_acceptable(bad), "{bad}");
        }
    }

    #[test]
    fn private_addresses_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "255.255.255.255",
        ] {
            let ip: IpAddr = private.parse().expect("ip");
            assert!(!is_public(ip), "{private}");
        }
        for public in ["1.1.1.1", "8.8.8.8", "2606:4700:4700::1111"] {
            let ip: IpAddr = public.parse().expect("ip");
            assert!(is_public(ip), "{public}");
        }
    }
}
