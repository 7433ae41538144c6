//! An upstream that echoes the credential back in the forms an API
//! plausibly uses, and an oracle that finds the credential in any of them.
//!
//! [`EchoCase::random`] draws one response from a seeded RNG: a status, a
//! JSON body with the token written escaped (`\u`, wholly or in part, hex
//! of either case), `\/`-escaped, URL-encoded (wholly or in part),
//! HTML-referenced, case-changed or as `Bearer <token>`, at random places
//! (values, keys, error messages), and header values (`Retry-After`, an odd
//! `Content-Type`, a redirect `Location` whose host holds the token,
//! `X-Echo`) doing the same. [`holds`] decodes with its own small decoders,
//! independent of the server's redactor, so it is a real check of it.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

use crate::upstream::Reply;

/// Characters of generated tokens (what API tokens are made of).
const TOKEN_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-";

/// A seeded source of tokens and echo cases.
#[derive(Debug)]
pub struct EchoRng(StdRng);

impl EchoRng {
    /// A generator with a fixed seed (tests stay deterministic).
    pub fn new(seed: u64) -> Self {
        Self(StdRng::seed_from_u64(seed))
    }

    /// A random token of 20 to 40 characters; every other one is letters
    /// and digits only (it can then also be a host name in a redirect).
    pub fn token(&mut self) -> String {
        let alphabet = if self.0.random_bool(0.5) {
            TOKEN_CHARS
        } else {
            &TOKEN_CHARS[..62]
        };
        let len = self.0.random_range(20..=40);
        (0..len)
            .map(|_| char::from(alphabet[self.0.random_range(0..alphabet.len())]))
            .collect()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.0.random_range(0..items.len())]
    }

    /// The token written in one random form, fit for a JSON string.
    pub fn form(&mut self, token: &str) -> String {
        let kind = self.0.random_range(0..7);
        let mut out = String::new();
        for c in token.chars() {
            let on = self.0.random_bool(0.6);
            let code = u32::from(c);
            match kind {
                0 => out.push(c),
                1 if on => {
                    let hex = if self.0.random_bool(0.5) {
                        format!("{code:04x}")
                    } else {
                        format!("{code:04X}")
                    };
                    out.push_str(&format!("\\u{hex}"));
                }
                2 if on => out.push_str(&format!("%{code:02X}")),
                3 if on => out.push_str(&format!("&#{code};")),
                4 if on => out.push(if c.is_ascii_uppercase() {
                    c.to_ascii_lowercase()
                } else {
                    c.to_ascii_uppercase()
                }),
                5 if c == '/' => out.push_str("\\/"),
                _ => out.push(c),
            }
        }
        if kind == 6 {
            format!("Bearer {out}")
        } else {
            out
        }
    }

    /// The token in a form fit for an HTTP header value (no `\u`).
    fn header_form(&mut self, token: &str) -> String {
        loop {
            let form = self.form(token);
            if !form.contains('\\') {
                return form;
            }
        }
    }

    /// Random filler text, JSON-escaped.
    fn filler(&mut self) -> String {
        let words = [
            "", "id ", "token=", "auth: ", "échec ", "日本 ", "x&y ", "100% ", "\\n",
        ];
        (0..self.0.random_range(0..3))
            .map(|_| *self.pick(&words))
            .collect()
    }

    /// One echoing response.
    pub fn case(&mut self, token: &str) -> EchoCase {
        let status = *self.pick(&[200u16, 200, 200, 400, 403, 429, 302, 500]);
        let form = |rng: &mut Self| format!("{}{}{}", rng.filler(), rng.form(token), rng.filler());
        let (a, b, c, d) = (form(self), form(self), form(self), form(self));
        let body = if status == 200 {
            format!(
                r#"{{"success":true,"errors":[],"messages":[{{"code":1,"message":"{d}"}}],"result":{{"id":"{a}","name":"example.com","status":"active","meta":{{"{b}":[1,"{c}"]}}}}}}"#
            )
        } else {
            format!(
                r#"{{"success":false,"errors":[{{"code":9103,"message":"{a}"}},{{"code":1,"message":"seen {b}"}}],"messages":["{c}"],"result":{{"{d}":null}}}}"#
            )
        };
        let mut headers = vec![("X-Echo".to_owned(), self.header_form(token))];
        let json = if status == 200 || self.0.random_bool(0.5) {
            "application/json".to_owned()
        } else {
            format!("application/json; charset={}", self.header_form(token))
        };
        headers.push(("Content-Type".to_owned(), json));
        match status {
            429 => headers.push(("Retry-After".to_owned(), self.header_form(token))),
            302 => {
                // The host holds the token when it can be a host name;
                // otherwise the token goes into the path.
                let host_safe = token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
                let shown = if self.0.random_bool(0.5) {
                    token.to_ascii_uppercase()
                } else {
                    token.to_owned()
                };
                let location = if host_safe {
                    self.pick(&["https://{}.evil.example/x", "//{}.evil.example/x"])
                        .replace("{}", &shown)
                } else {
                    format!("/x?t={}", self.header_form(token))
                };
                headers.push(("Location".to_owned(), location));
            }
            _ => {}
        }
        EchoCase {
            status,
            headers,
            body,
        }
    }
}

impl EchoRng {
    /// The attacks of issue 10, one response each, before the random ones.
    pub fn named_cases(token: &str) -> Vec<(&'static str, EchoCase)> {
        let escaped: String = token
            .chars()
            .map(|c| format!("\\u{:04x}", u32::from(c)))
            .collect();
        let mut one = token.chars();
        let first = one
            .next()
            .map(|c| format!("\\u{:04X}", u32::from(c)))
            .unwrap_or_default();
        let one_escaped = format!("{first}{}", one.as_str());
        let percent: String = token.bytes().map(|b| format!("%{b:02x}")).collect();
        let envelope = |result: String| {
            format!(
                r#"{{"success":true,"errors":[],"messages":[],"result":{{"id":"{result}","name":"example.com","status":"active"}}}}"#
            )
        };
        let failure = |message: String| {
            format!(
                r#"{{"success":false,"errors":[{{"code":10000,"message":"{message}"}}],"messages":[],"result":null}}"#
            )
        };
        let case = |status: u16, headers: Vec<(&str, String)>, body: String| EchoCase {
            status,
            headers: headers
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect(),
            body,
        };
        let json = || ("Content-Type", "application/json".to_owned());
        let host_safe = token.bytes().all(|b| b.is_ascii_alphanumeric());
        let location = if host_safe {
            format!("https://{}.evil.example/next", token.to_ascii_uppercase())
        } else {
            format!("//evil.example/next?t={}", token.to_ascii_uppercase())
        };
        vec![
            (
                "a body wholly \\u-escaped",
                case(200, vec![json()], envelope(escaped.clone())),
            ),
            (
                "one character \\u-escaped in errors[].message",
                case(
                    400,
                    vec![json()],
                    failure(format!("bad token {one_escaped}")),
                ),
            ),
            (
                "Retry-After quoting the token",
                case(
                    429,
                    vec![json(), ("Retry-After", token.to_owned())],
                    failure("slow down".into()),
                ),
            ),
            (
                "a redirect Location in upper case",
                case(
                    302,
                    vec![json(), ("Location", location)],
                    failure("moved".into()),
                ),
            ),
            (
                "an odd Content-Type in an error",
                case(
                    500,
                    vec![("Content-Type", format!("application/x-{token}"))],
                    format!("upstream failed for {escaped}"),
                ),
            ),
            ("URL-encoded", case(200, vec![json()], envelope(percent))),
            (
                "Bearer, case-changed",
                case(
                    403,
                    vec![json()],
                    failure(format!("BEARER {}", token.to_ascii_uppercase())),
                ),
            ),
        ]
    }
}

/// One echoing response of the upstream.
#[derive(Debug, Clone)]
pub struct EchoCase {
    /// HTTP status.
    pub status: u16,
    /// Header name/value pairs.
    pub headers: Vec<(String, String)>,
    /// The JSON body text.
    pub body: String,
}

impl EchoCase {
    /// The reply the scripted upstream sends.
    pub fn reply(&self) -> Reply {
        Reply::Respond {
            status: self.status,
            headers: self.headers.clone(),
            body: self.body.clone().into_bytes(),
        }
    }
}

/// Whether `text` holds `token` in any form [`EchoRng`] writes, after
/// decoding JSON escapes, URL-encoding and HTML references, ignoring case
/// and whitespace (`split('').join(' ')` in the sandbox).
pub fn holds(text: &str, token: &str) -> bool {
    let token = token.to_ascii_lowercase();
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut views = vec![text.to_owned(), squeezed];
    for _ in 0..2 {
        let more: Vec<String> = views
            .iter()
            .flat_map(|v| [json_unescape(v), percent_decode(v), html_decode(v)])
            .collect();
        views.extend(more);
    }
    views
        .iter()
        .any(|v| v.to_ascii_lowercase().contains(&token))
}

fn hex_value(digits: &str) -> Option<char> {
    u32::from_str_radix(digits, 16)
        .ok()
        .and_then(char::from_u32)
}

fn json_unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().map(|&(_, n)| n) {
            Some('u') => match text.get(i + 2..i + 6).and_then(hex_value) {
                Some(decoded) => {
                    out.push(decoded);
                    for _ in 0..5 {
                        chars.next();
                    }
                }
                None => out.push(c),
            },
            Some(n @ ('/' | '"' | '\\')) => {
                out.push(n);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn html_decode(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("&#") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let end = tail.find(';').filter(|&e| e <= 8);
        let decoded = end.and_then(|e| {
            let digits = &tail[..e];
            match digits.strip_prefix(['x', 'X']) {
                Some(hex) => hex_value(hex),
                None => digits.parse::<u32>().ok().and_then(char::from_u32),
            }
        });
        match (decoded, end) {
            (Some(c), Some(e)) => {
                out.push(c);
                rest = &tail[e + 1..];
            }
            _ => {
                out.push_str("&#");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_sees_every_form_the_generator_writes() {
        let mut rng = EchoRng::new(7);
        for _ in 0..200 {
            let token = rng.token();
            let form = rng.form(&token);
            assert!(holds(&form, &token), "{form} / {token}");
            let case = rng.case(&token);
            assert!(holds(&case.body, &token), "{}", case.body);
            let spaced: String = form.chars().flat_map(|c| [c, ' ']).collect();
            assert!(holds(&spaced, &token));
            assert!(!holds("[REDACTED] nothing else", &token));
            for (name, case) in EchoRng::named_cases(&token) {
                let all = format!("{} {:?}", case.body, case.headers);
                assert!(holds(&all, &token), "{name}: {all}");
            }
        }
    }
}
