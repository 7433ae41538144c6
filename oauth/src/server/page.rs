//! The consent and error pages: plain HTML forms (no JavaScript), every
//! interpolated value escaped, framing and scripts forbidden by headers.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// What the consent page shows.
pub struct Consent<'a> {
    /// The client's name (or its id).
    pub client: &'a str,
    /// The client id.
    pub client_id: &'a str,
    /// The host the browser returns to.
    pub redirect_host: &'a str,
    /// The upstream provider's name.
    pub provider: &'a str,
    /// Products to choose from.
    pub products: &'a [String],
    /// The scope catalogue (the advanced template's list).
    pub scopes: &'a [crate::config::ScopeEntry],
    /// Scopes the client asked for: the advanced template is preselected
    /// with them.
    pub preselected: Option<&'a [String]>,
    /// The signed authorization request.
    pub request: &'a str,
    /// The CSRF token.
    pub csrf: &'a str,
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.4}fieldset{margin:1rem 0}button{font-size:1rem;padding:.4rem 1rem;margin-right:.5rem}.products{max-height:12rem;overflow:auto}";

/// The consent page.
pub fn consent(c: &Consent<'_>) -> String {
    let mut products = String::new();
    for p in c.products {
        let p = escape(p);
        products.push_str(&format!(
            "<label><input type=\"checkbox\" name=\"products\" value=\"{p}\"> {p}</label><br>\n"
        ));
    }
    let mut scope_list = String::new();
    for s in c.scopes {
        scope_list.push_str(&format!(
            "<li><code>{}</code>: {}</li>\n",
            escape(&s.id),
            escape(&s.description)
        ));
    }
    let listed: Vec<&str> = match c.preselected {
        Some(asked) => asked.iter().map(String::as_str).collect(),
        None => c.scopes.iter().map(|s| s.id.as_str()).collect(),
    };
    let all_scopes = escape(&listed.join(" "));
    // *Minimal* is the default: clients ask for more as calls need it
    // (step-up); a step-up's page preselects the asked scopes instead.
    let (minimal_checked, advanced_checked) = if c.preselected.is_some() {
        ("", " checked")
    } else {
        (" checked", "")
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Authorize {client}</title>\
<meta name=\"viewport\" content=\"width=device-width\"><style>{STYLE}</style></head><body>\n\
<h1>Authorize <span id=\"client-name\">{client}</span></h1>\n\
<p><strong id=\"client-name-2\">{client}</strong> (<code id=\"client-id\">{client_id}</code>) wants to use this server's tools with your {provider} account. \
After you approve, you sign in with <strong id=\"provider\">{provider}</strong>, and the browser returns to <strong id=\"redirect-host\">{host}</strong>.</p>\n\
<form method=\"post\" action=\"/authorize\">\n\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
<input type=\"hidden\" name=\"request\" value=\"{request}\">\n\
<fieldset><legend>What may this session do?</legend>\n\
<label><input type=\"radio\" id=\"exposure-minimal\" name=\"exposure\" value=\"minimal\"{minimal_checked}> Minimal: only what every session needs; your application asks for more when a call needs it</label><br>\n\
<label><input type=\"radio\" id=\"exposure-read_only\" name=\"exposure\" value=\"read_only\"> Read only</label><br>\n\
<label><input type=\"radio\" id=\"exposure-products\" name=\"exposure\" value=\"products\"> Only the skills chosen below</label><br>\n\
<label><input type=\"radio\" id=\"exposure-all\" name=\"exposure\" value=\"all\"> Full: everything your account allows</label><br>\n\
<label><input type=\"radio\" id=\"exposure-advanced\" name=\"exposure\" value=\"advanced\"{advanced_checked}> Advanced: exactly the scopes listed here</label>\n\
<input type=\"text\" id=\"scopes\" name=\"scopes\" value=\"{all_scopes}\" size=\"40\" aria-label=\"Scopes (space separated)\">\n\
<div class=\"products\">\n{products}</div>\n\
<details><summary>Scopes</summary><ul>\n{scope_list}</ul></details></fieldset>\n\
<button id=\"approve\" type=\"submit\" name=\"decision\" value=\"approve\">Approve and sign in</button>\n\
<button id=\"deny\" type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>\n\
</form></body></html>\n",
        client = escape(c.client),
        client_id = escape(c.client_id),
        provider = escape(c.provider),
        host = escape(c.redirect_host),
        csrf = escape(c.csrf),
        request = escape(c.request),
    )
}

/// An error page (for requests that must not redirect: unknown client,
/// bad redirect URI, bad state).
pub fn error(status: StatusCode, title: &str, detail: &str) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\
<body><h1>{t}</h1><p id=\"error\">{d}</p></body></html>\n",
        t = escape(title),
        d = escape(detail),
    );
    html(status, body)
}

/// An HTML response with the page security headers.
pub fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure_headers(h);
    response
}

/// Framing, scripts, caching and referrers off for every page and redirect.
pub fn secure_headers(h: &mut http::HeaderMap) {
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: with `no-referrer` a browser posts
    // the consent form with `Origin: null`, which the Origin allowlist
    // refuses; cross-origin navigations (to the provider, back to the
    // client) still carry no referrer.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// A 302 to `location` with cookies to set.
pub fn redirect(location: &str, cookies: &[String]) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(location) {
        h.insert(header::LOCATION, v);
    }
    for cookie in cookies {
        if let Ok(v) = HeaderValue::from_str(cookie) {
            h.append(header::SET_COOKIE, v);
        }
    }
    secure_headers(h);
    response
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, path /, Secure on https.
pub fn cookie(name: &str, value: &str, max_age: u64, secure: bool) -> String {
    format!(
        "{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{}",
        if secure { "; Secure" } else { "" }
    )
}

/// A cookie's value from the request headers.
pub fn read_cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_interpolated_is_escaped() {
        let evil = "<script>alert('x')</script>\"&";
        let page = consent(&Consent {
            client: evil,
            client_id: evil,
            redirect_host: evil,
            provider: evil,
            products: &[evil.to_owned()],
            scopes: &[crate::config::ScopeEntry {
                id: evil.to_owned(),
                description: evil.to_owned(),
                read_only: true,
                permissions: vec![],
            }],
            preselected: Some(&[evil.to_owned()]),
            request: evil,
            csrf: evil,
        });
        assert!(!page.contains("<script>"));
        assert!(!page.contains("alert('x')"));
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;"));
    }

    fn page(preselected: Option<&[String]>) -> String {
        consent(&Consent {
            client: "c",
            client_id: "c",
            redirect_host: "h",
            provider: "p",
            products: &[],
            scopes: &[],
            preselected,
            request: "r",
            csrf: "t",
        })
    }

    #[test]
    fn minimal_is_the_default_and_a_step_up_preselects_advanced() {
        let plain = page(None);
        assert!(plain.contains("value=\"minimal\" checked"), "{plain}");
        assert_eq!(plain.matches(" checked").count(), 1, "{plain}");
        let asked = ["zone:read".to_owned()];
        let step_up = page(Some(&asked));
        assert!(step_up.contains("value=\"advanced\" checked"), "{step_up}");
        assert_eq!(step_up.matches(" checked").count(), 1, "{step_up}");
    }

    #[test]
    fn cookies_read_back() {
        let mut h = http::HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; tf_csrf=xyz; b=2"),
        );
        assert_eq!(read_cookie(&h, "tf_csrf"), Some("xyz"));
        assert_eq!(read_cookie(&h, "tf"), None);
    }
}
