//! Who an MCP client is: a Client ID Metadata Document (the client id is
//! an https URL, fetched with a size cap, a timeout, no redirects and
//! public addresses only, then cached: see [`super::cimd`]) or a
//! dynamically registered client.
//! Redirect URIs are https or loopback http, matched exactly.

use std::net::IpAddr;

use serde::Deserialize;

use super::cimd::Cimd;
use super::config::CimdConfig;
use super::limits::Limits;
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
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
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
    /// Too many new metadata URLs from this address, or fetches in flight:
    /// retry after this many seconds.
    #[error("too many new client metadata documents; retry in {0} s")]
    TooMany(u64),
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
    cimd: Cimd,
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
    /// A resolver with this fetch policy and these limits.
    pub fn new(config: CimdConfig, limits: &Limits) -> Self {
        Self {
            cimd: Cimd::new(config, limits),
        }
    }

    /// The client a `client_id` names; `peer` is the asking address (new
    /// metadata URLs are rate-limited per address).
    ///
    /// # Errors
    ///
    /// See [`ClientError`].
    pub async fn resolve(
        &self,
        client_id: &str,
        peer: Option<IpAddr>,
        store: &dyn GrantStore,
    ) -> Result<ClientInfo, ClientError> {
        if client_id.starts_with("https://") || client_id.starts_with("http://") {
            return self.cimd.resolve(client_id, peer).await;
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

    /// How many metadata documents (and failures) are cached.
    pub fn cached_documents(&self) -> usize {
        self.cimd.cached_len()
    }
}

/// The client a fetched metadata document describes, when it is usable
/// for `client_id`.
pub(super) fn document_info(client_id: &str, body: &[u8]) -> Result<ClientInfo, ClientError> {
    let bad = |why: &str| ClientError::Metadata(why.to_owned());
    let doc: Document =
        serde_json::from_slice(body).map_err(|_| bad("is not a client metadata JSON object"))?;
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
    if doc.redirect_uris.is_empty() || !doc.redirect_uris.iter().all(|u| redirect_uri_acceptable(u))
    {
        return Err(bad("needs redirect_uris, each https or loopback http"));
    }
    Ok(ClientInfo {
        client_id: doc.client_id,
        name: doc.client_name.map(|n| n.chars().take(100).collect()),
        redirect_uris: doc.redirect_uris,
    })
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
