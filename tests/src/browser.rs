//! A plain-HTTP "browser" for OAuth sign-in flows: loopback `http://` URLs
//! only, a cookie jar that follows the browser rules that matter here
//! (cookies belong to a host, whatever the port; `Path` scoping; deletion by
//! `Max-Age=0` or a past `Expires`), redirects followed by hand, and just
//! enough HTML reading to fill in and submit the forms of toolforge's
//! consent page and the test provider's login and consent pages
//! (`tests/js/oauth-upstream.mjs`).
//!
//! [`Browser::sign_in`] walks a whole authorization: our consent page
//! (approve or deny, with an exposure choice), the upstream login and
//! consent, the upstream callback, and stops at the first redirect to the
//! MCP client's redirect URI without fetching it.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::time::Duration;

use crate::http::{self, Request, Response};

/// Timeout of each request.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Most requests one sign-in may take.
const MAX_STEPS: usize = 24;

/// A parsed loopback `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Where to connect.
    pub addr: SocketAddr,
    /// The host as written (`127.0.0.1`, `localhost`), without the port.
    pub host: String,
    /// The authority as written (`host:port`), for the `Host` header.
    pub authority: String,
    /// Path and query (`/` when empty).
    pub target: String,
}

impl Url {
    /// Parses `http://HOST:PORT/PATH?QUERY`.
    ///
    /// # Errors
    ///
    /// Not `http://`, no port, or a host that does not resolve.
    pub fn parse(url: &str) -> Result<Url, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("not an http:// URL: {}", clip_url(url)))?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        let mut target = rest[end..].split('#').next().unwrap_or("").to_owned();
        if !target.starts_with('/') {
            target.insert(0, '/');
        }
        let (host, _) = authority
            .rsplit_once(':')
            .ok_or_else(|| format!("no port in {}", clip_url(url)))?;
        let addr = authority
            .to_socket_addrs()
            .map_err(|e| format!("{authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("{authority} resolves to nothing"))?;
        Ok(Url {
            addr,
            host: host.trim_matches(['[', ']']).to_owned(),
            authority: authority.to_owned(),
            target,
        })
    }

    /// The path (no query).
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("/")
    }

    /// `http://authority`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.authority)
    }

    /// A `Location` value resolved against this URL.
    pub fn join(&self, location: &str) -> String {
        if location.starts_with("http://") || location.starts_with("https://") {
            location.to_owned()
        } else if location.starts_with('/') {
            format!("{}{location}", self.origin())
        } else {
            let dir = self.path().rsplit_once('/').map_or("", |(d, _)| d);
            format!("{}{dir}/{location}", self.origin())
        }
    }
}

/// A URL without its query (for messages: queries carry codes and state).
pub fn clip_url(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?…"),
        None => url.to_owned(),
    }
}

/// The first value of query parameter `name` in `url`, percent-decoded.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1.split('#').next()?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes and `+` (form encoding).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(v) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                None => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `application/x-www-form-urlencoded` of `fields`.
pub fn form_encode(fields: &[(String, String)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// One HTML tag's attributes (names lower-cased, values entity-decoded).
pub type Attrs = BTreeMap<String, String>;

/// Every `<tag …>` in `html` with its attributes, in document order.
pub fn tags(html: &str, tag: &str) -> Vec<Attrs> {
    let lower = html.to_ascii_lowercase();
    let open = format!("<{tag}");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&open) {
        let start = from + at + open.len();
        from = start;
        if !lower[start..].starts_with(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/') {
            continue;
        }
        let end = html[start..].find('>').map_or(html.len(), |e| start + e);
        out.push(parse_attrs(&html[start..end]));
        from = end;
    }
    out
}

fn parse_attrs(text: &str) -> Attrs {
    let mut attrs = Attrs::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == '/') {
            i += 1;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '=' && chars[i] != '/' {
            i += 1;
        }
        let name: String = chars[start..i]
            .iter()
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            i += 1;
            continue;
        }
        let mut value = String::new();
        if i < chars.len() && chars[i] == '=' {
            i += 1;
            if i < chars.len() && (chars[i] == '"' || chars[i] == '\'') {
                let quote = chars[i];
                i += 1;
                let vstart = i;
                while i < chars.len() && chars[i] != quote {
                    i += 1;
                }
                value = chars[vstart..i].iter().collect();
                i += 1;
            } else {
                let vstart = i;
                while i < chars.len() && !chars[i].is_whitespace() {
                    i += 1;
                }
                value = chars[vstart..i].iter().collect();
            }
        }
        attrs.insert(name, decode_entities(&value));
    }
    attrs
}

/// Decodes the HTML character references a server's escaping produces.
pub fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';').filter(|&e| e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A `<form>`: its attributes and the inputs and buttons inside it.
#[derive(Debug, Clone, Default)]
pub struct Form {
    /// The form tag's attributes (`action`, `method`).
    pub attrs: Attrs,
    /// Its `<input>` tags.
    pub inputs: Vec<Attrs>,
    /// Its `<button>` tags.
    pub buttons: Vec<Attrs>,
}

impl Form {
    /// Name/value of every hidden input.
    pub fn hidden(&self) -> Vec<(String, String)> {
        self.inputs
            .iter()
            .filter(|i| {
                i.get("type")
                    .is_some_and(|t| t.eq_ignore_ascii_case("hidden"))
            })
            .filter_map(|i| {
                Some((
                    i.get("name")?.clone(),
                    i.get("value").cloned().unwrap_or_default(),
                ))
            })
            .collect()
    }

    /// The input with this `id`.
    pub fn input_by_id(&self, id: &str) -> Option<&Attrs> {
        self.inputs
            .iter()
            .find(|i| i.get("id").map(String::as_str) == Some(id))
    }

    /// The button with this `id`.
    pub fn button_by_id(&self, id: &str) -> Option<&Attrs> {
        self.buttons
            .iter()
            .find(|b| b.get("id").map(String::as_str) == Some(id))
    }
}

/// Every form in `html`.
pub fn forms(html: &str) -> Vec<Form> {
    let lower = html.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("<form") {
        let start = from + at;
        let end = lower[start..]
            .find("</form>")
            .map_or(html.len(), |e| start + e);
        let body = &html[start..end];
        let mut form = Form {
            attrs: tags(body, "form").into_iter().next().unwrap_or_default(),
            inputs: tags(body, "input"),
            buttons: tags(body, "button"),
        };
        form.attrs
            .entry("method".to_owned())
            .or_insert_with(|| "get".to_owned());
        out.push(form);
        from = end.max(start + 5);
    }
    out
}

#[derive(Debug, Clone)]
struct Cookie {
    name: String,
    value: String,
    host: String,
    path: String,
}

/// What to answer on toolforge's consent page.
#[derive(Debug, Clone)]
pub struct Consent {
    /// `approve` or `deny`.
    pub decision: String,
    /// `minimal`, `read_only`, `products`, `all` or `advanced`; empty:
    /// the one the page preselects.
    pub exposure: String,
    /// Products ticked when `exposure` is `products`.
    pub products: Vec<String>,
}

impl Default for Consent {
    fn default() -> Self {
        Consent {
            decision: "approve".to_owned(),
            exposure: "all".to_owned(),
            products: Vec::new(),
        }
    }
}

/// What a sign-in left.
#[derive(Debug, Clone, Default)]
pub struct SignIn {
    /// The redirect to the client's redirect URI (not fetched).
    pub final_url: String,
    /// `METHOD path status` of each request, in order (no queries).
    pub trace: Vec<String>,
    /// The consent page's HTML.
    pub consent_html: String,
    /// The consent page's response headers.
    pub consent_headers: Vec<(String, String)>,
}

/// A cookie-keeping HTTP client that walks sign-in pages.
#[derive(Debug, Default)]
pub struct Browser {
    jar: Vec<Cookie>,
}

impl Browser {
    /// An empty browser (no cookies).
    pub fn new() -> Browser {
        Browser::default()
    }

    /// How many cookies it holds (for assertions).
    pub fn cookie_count(&self) -> usize {
        self.jar.len()
    }

    fn cookie_header(&self, url: &Url) -> Option<String> {
        let path = url.path();
        let pairs: Vec<String> = self
            .jar
            .iter()
            .filter(|c| c.host.eq_ignore_ascii_case(&url.host))
            .filter(|c| {
                path == c.path
                    || path.starts_with(&c.path)
                        && (c.path.ends_with('/') || path[c.path.len()..].starts_with('/'))
            })
            .map(|c| format!("{}={}", c.name, c.value))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }

    fn store(&mut self, url: &Url, response: &Response) {
        for (name, value) in &response.headers {
            if !name.eq_ignore_ascii_case("set-cookie") {
                continue;
            }
            let mut parts = value.split(';');
            let Some((cname, cvalue)) = parts.next().and_then(|p| p.trim().split_once('=')) else {
                continue;
            };
            let default_path = url.path().rsplit_once('/').map_or("/", |(d, _)| d);
            let mut path = if default_path.is_empty() {
                "/"
            } else {
                default_path
            }
            .to_owned();
            let mut delete = false;
            for attr in parts {
                let (k, v) = attr.trim().split_once('=').unwrap_or((attr.trim(), ""));
                match k.to_ascii_lowercase().as_str() {
                    "path" if v.starts_with('/') => path = v.to_owned(),
                    "max-age" => delete |= v.trim().parse::<i64>().is_ok_and(|s| s <= 0),
                    "expires" => delete |= v.contains("1970"),
                    _ => {}
                }
            }
            self.jar
                .retain(|c| !(c.name == cname && c.path == path && c.host == url.host));
            if !delete {
                self.jar.push(Cookie {
                    name: cname.to_owned(),
                    value: cvalue.to_owned(),
                    host: url.host.clone(),
                    path,
                });
            }
        }
    }

    /// Sends one request (cookies attached, `Set-Cookie` stored).
    ///
    /// # Errors
    ///
    /// A bad URL or a transport failure.
    pub fn request(
        &mut self,
        method: &str,
        url: &str,
        form: Option<&[(String, String)]>,
    ) -> Result<Response, String> {
        self.request_from(method, url, form, None)
    }

    /// As [`Browser::request`], with the `Origin` a form submission sends:
    /// `origin` when given (a browser sends `null` from a page served with
    /// `Referrer-Policy: no-referrer`, per the Fetch standard), else the
    /// target's own origin.
    ///
    /// # Errors
    ///
    /// A bad URL or a transport failure.
    pub fn request_from(
        &mut self,
        method: &str,
        url: &str,
        form: Option<&[(String, String)]>,
        origin: Option<&str>,
    ) -> Result<Response, String> {
        let parsed = Url::parse(url)?;
        let mut headers = vec![
            (
                "Accept".to_owned(),
                "text/html,application/json;q=0.9".to_owned(),
            ),
            ("User-Agent".to_owned(), "toolforge-e2e-browser".to_owned()),
        ];
        if let Some(cookies) = self.cookie_header(&parsed) {
            headers.push(("Cookie".to_owned(), cookies));
        }
        let body = form.map(|f| {
            headers.push((
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ));
            let origin = origin.map_or_else(|| parsed.origin(), str::to_owned);
            headers.push(("Origin".to_owned(), origin));
            form_encode(f).into_bytes()
        });
        let request = Request {
            method: method.to_owned(),
            target: parsed.target.clone(),
            headers,
            body,
        };
        let response = http::send(parsed.addr, &request, TIMEOUT)
            .map_err(|e| format!("{method} {}: {e}", clip_url(url)))?;
        self.store(&parsed, &response);
        Ok(response)
    }

    /// Walks an authorization from `start` (toolforge's `/authorize` URL)
    /// until a redirect to a URL starting with `stop_prefix` (the client's
    /// redirect URI), answering toolforge's consent page with `consent`,
    /// the upstream login with `login` / `password`, and the upstream
    /// consent with Continue.
    ///
    /// # Errors
    ///
    /// A page it does not recognise, an unexpected status, or too many steps;
    /// the message has the trace and a clip of the last page.
    pub fn sign_in(
        &mut self,
        start: &str,
        stop_prefix: &str,
        consent: &Consent,
        login: &str,
        password: &str,
    ) -> Result<SignIn, String> {
        let mut out = SignIn::default();
        let mut next: (String, String, Option<Vec<(String, String)>>) =
            ("GET".to_owned(), start.to_owned(), None);
        // The Origin the next form submission carries (see `request_from`).
        let mut form_origin: Option<String> = None;
        for _ in 0..MAX_STEPS {
            let (method, url, form) = next;
            let response =
                self.request_from(&method, &url, form.as_deref(), form_origin.as_deref())?;
            let here = Url::parse(&url)?;
            out.trace.push(format!(
                "{method} {}{} {}",
                here.origin(),
                here.path(),
                response.status
            ));
            if (300..400).contains(&response.status) {
                let location = response.header("location").ok_or_else(|| {
                    format!(
                        "{} without Location; trace: {:?}",
                        response.status, out.trace
                    )
                })?;
                let target = here.join(location);
                if target.starts_with(stop_prefix) {
                    out.final_url = target;
                    return Ok(out);
                }
                next = ("GET".to_owned(), target, None);
                continue;
            }
            let html = response.text();
            form_origin = response
                .header("referrer-policy")
                .is_some_and(|p| {
                    p.split(',')
                        .any(|p| p.trim().eq_ignore_ascii_case("no-referrer"))
                })
                .then(|| "null".to_owned());
            if response.status != 200 {
                return Err(format!(
                    "{method} {} answered {}; trace: {:?}\n{}",
                    clip_url(&url),
                    response.status,
                    out.trace,
                    crate::mcp::clip(&html, 2000)
                ));
            }
            let forms = forms(&html);
            let (form, fields) = if let Some(form) = forms.iter().find(|f| {
                f.buttons
                    .iter()
                    .any(|b| b.get("name").map(String::as_str) == Some("decision"))
            }) {
                out.consent_html = html.clone();
                out.consent_headers = response.headers.clone();
                let mut fields = form.hidden();
                // No choice: the template the page preselects, as a
                // browser submits it.
                let exposure = if consent.exposure.is_empty() {
                    form.inputs
                        .iter()
                        .find(|i| {
                            i.get("name").map(String::as_str) == Some("exposure")
                                && i.contains_key("checked")
                        })
                        .and_then(|i| i.get("value").cloned())
                        .unwrap_or_default()
                } else {
                    consent.exposure.clone()
                };
                fields.push(("exposure".to_owned(), exposure));
                // The advanced template's text field goes with its value,
                // as a browser sends it.
                if let Some(scopes) = form.input_by_id("scopes").and_then(|i| i.get("value")) {
                    fields.push(("scopes".to_owned(), scopes.clone()));
                }
                for product in &consent.products {
                    fields.push(("products".to_owned(), product.clone()));
                }
                fields.push(("decision".to_owned(), consent.decision.clone()));
                (form, fields)
            } else if let Some(form) = forms.iter().find(|f| f.input_by_id("login").is_some()) {
                let mut fields = form.hidden();
                fields.push(("login".to_owned(), login.to_owned()));
                fields.push(("password".to_owned(), password.to_owned()));
                (form, fields)
            } else if let Some(form) = forms.iter().find(|f| f.button_by_id("continue").is_some()) {
                (form, form.hidden())
            } else {
                return Err(format!(
                    "a page with no form the walker knows at {}; trace: {:?}\n{}",
                    clip_url(&url),
                    out.trace,
                    crate::mcp::clip(&html, 2000)
                ));
            };
            let action = form
                .attrs
                .get("action")
                .cloned()
                .unwrap_or_else(|| here.target.clone());
            let method = form
                .attrs
                .get("method")
                .cloned()
                .unwrap_or_default()
                .to_ascii_uppercase();
            next = (method, here.join(&action), Some(fields));
        }
        Err(format!(
            "no redirect to {stop_prefix} within {MAX_STEPS} requests; trace: {:?}",
            out.trace
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_queries_and_encoding() {
        let url = Url::parse("http://127.0.0.1:8080/a/b?x=1%202&y=z+w").unwrap();
        assert_eq!(url.path(), "/a/b");
        assert_eq!(url.join("/c"), "http://127.0.0.1:8080/c");
        assert_eq!(url.join("d"), "http://127.0.0.1:8080/a/d");
        assert_eq!(query_param(&url.target, "x").as_deref(), Some("1 2"));
        assert_eq!(
            query_param("http://h:1/?y=z+w", "y").as_deref(),
            Some("z w")
        );
        assert_eq!(percent_decode(&percent_encode("a b/&=é")), "a b/&=é");
        assert_eq!(clip_url("http://h:1/cb?code=secret"), "http://h:1/cb?…");
    }

    #[test]
    fn forms_and_attributes() {
        let html = r#"<form method="post" action="/authorize"><input type="hidden" name="csrf" value="a&amp;b">
            <input type=hidden name='request' value='r&#34;q'><input type="radio" id="exposure-all" name="exposure" value="all" checked>
            <button id="approve" name="decision" value="approve">Approve</button></form>"#;
        let forms = forms(html);
        assert_eq!(forms.len(), 1);
        assert_eq!(forms[0].attrs["action"], "/authorize");
        assert_eq!(
            forms[0].hidden(),
            vec![
                ("csrf".to_owned(), "a&b".to_owned()),
                ("request".to_owned(), "r\"q".to_owned())
            ]
        );
        assert!(
            forms[0]
                .input_by_id("exposure-all")
                .unwrap()
                .contains_key("checked")
        );
        assert_eq!(
            forms[0].button_by_id("approve").unwrap()["value"],
            "approve"
        );
    }

    #[test]
    fn cookies_follow_host_and_path() {
        let mut browser = Browser::new();
        let url = Url::parse("http://127.0.0.1:1/auth/x").unwrap();
        let response = Response {
            status: 200,
            headers: vec![
                (
                    "Set-Cookie".to_owned(),
                    "a=1; path=/interaction/u1; httponly".to_owned(),
                ),
                ("set-cookie".to_owned(), "b=2; Path=/".to_owned()),
            ],
            body: Vec::new(),
        };
        browser.store(&url, &response);
        let other_port = Url::parse("http://127.0.0.1:2/interaction/u1/login").unwrap();
        assert_eq!(
            browser.cookie_header(&other_port).as_deref(),
            Some("a=1; b=2")
        );
        let elsewhere = Url::parse("http://127.0.0.1:2/interaction/u10").unwrap();
        assert_eq!(browser.cookie_header(&elsewhere).as_deref(), Some("b=2"));
        let gone = Response {
            status: 200,
            headers: vec![(
                "Set-Cookie".to_owned(),
                "b=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT".to_owned(),
            )],
            body: Vec::new(),
        };
        browser.store(&url, &gone);
        assert_eq!(browser.cookie_header(&elsewhere), None);
    }
}
