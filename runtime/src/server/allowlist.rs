//! The `Host` and `Origin` allowlists of the HTTP transport: requests that
//! fail them are refused 403 before anything else (DNS rebinding,
//! cross-site requests).

use std::net::SocketAddr;

/// The `Host` values allowed for a server bound to `addr`.
pub fn default_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    let own = addr.to_string();
    if !hosts.contains(&own) && !addr.ip().is_unspecified() {
        hosts.push(own);
    }
    hosts
}

/// Whether a `Host` header value is allowed. An entry with a port must
/// match exactly; an entry without one matches the host on any port.
pub fn host_allowed(host: Option<&str>, allowed: &[String]) -> bool {
    let Some(host) = host.map(|h| h.trim().to_ascii_lowercase()) else {
        return false;
    };
    let bare = strip_port(&host);
    allowed.iter().any(|entry| {
        let entry = entry.trim().to_ascii_lowercase();
        entry == host || (strip_port(&entry) == entry && entry == bare)
    })
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port or [v6]
        return rest.find(']').map_or(host, |end| &host[..end + 2]);
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// Whether an `Origin` header value is allowed: absent always is; present
/// must equal an allowed entry (case-insensitive, trailing `/` ignored).
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.trim().trim_end_matches('/');
    allowed
        .iter()
        .any(|a| a.trim().trim_end_matches('/').eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Vec<String> {
        let mut h = default_hosts("127.0.0.1:8787".parse().unwrap());
        h.push("mcp.example.com".into());
        h
    }

    #[test]
    fn host_allowlist() {
        let h = hosts();
        for ok in [
            "127.0.0.1:8787",
            "localhost:8787",
            "LOCALHOST:8787",
            "[::1]:8787",
            "mcp.example.com",
            "mcp.example.com:443",
        ] {
            assert!(host_allowed(Some(ok), &h), "{ok}");
        }
        for bad in [
            "127.0.0.1:9999",
            "evil.com:8787",
            "localhost",
            "[::1]:1",
            "mcp.example.com.evil.com",
        ] {
            assert!(!host_allowed(Some(bad), &h), "{bad}");
        }
        assert!(!host_allowed(None, &h));
        assert_eq!(strip_port("[::1]:8"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("a:b"), "a:b");
    }

    #[test]
    fn origin_allowlist() {
        assert!(origin_allowed(None, &[]));
        assert!(!origin_allowed(Some("http://localhost:3000"), &[]));
        let allowed = vec!["https://app.example.com".to_owned()];
        assert!(origin_allowed(Some("https://APP.example.com/"), &allowed));
        assert!(!origin_allowed(
            Some("https://app.example.com:8443"),
            &allowed
        ));
        assert!(!origin_allowed(Some("null"), &allowed));
    }

    #[test]
    fn default_hosts_include_the_bound_address() {
        let h = default_hosts("127.0.0.2:5".parse().unwrap());
        assert!(h.contains(&"127.0.0.2:5".to_owned()));
        let h = default_hosts("0.0.0.0:5".parse().unwrap());
        assert_eq!(h.len(), 3);
    }
}
