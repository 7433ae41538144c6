//! Reading a token endpoint's answer (RFC 6749 §5.1 and §5.2) without
//! trusting any of it.
//!
//! The endpoint has just been sent the client secret (in a Basic header or
//! a form body), so anything it writes may quote it, whole or encoded or
//! cut: no text of the answer is quoted in an error. Errors say what was
//! wrong structurally; the only words taken over are RFC 6749's registered
//! error codes, compared against a fixed list. Numbers are read without
//! arithmetic that can overflow: `expires_in` may be any JSON number or
//! string (huge, negative, fractional, `1e400`).

use std::time::Duration;

use serde_json::Value;

use crate::redact::Redactor;
use crate::request::header_safe;

/// The longest lifetime believed: a token is fetched again after at most
/// one day, whatever `expires_in` says (also when it says nothing), so a
/// huge value neither overflows the clock nor keeps a token forever.
pub const MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// Error codes of RFC 6749 §5.2, plus the two of §4.1.2.1 servers also
/// send from token endpoints: the only answer text an error repeats.
const REGISTERED_ERRORS: [&str; 8] = [
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "server_error",
    "temporarily_unavailable",
];

/// A usable answer: the token and how long to use it.
#[derive(Debug)]
pub(super) struct Answer {
    /// The access token (header-safe, non-empty).
    pub(super) token: String,
    /// How long it may be used, at most [`MAX_LIFETIME`].
    pub(super) lifetime: Duration,
}

/// Reads an answer with HTTP status `status`. `client` knows the client
/// credentials in every form sent; it only decides what an error says
/// about the answer, never what it quotes.
pub(super) fn read(status: u16, body: &[u8], client: &Redactor) -> Result<Answer, String> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        return Err(refusal(status, json.as_ref(), client));
    }
    let Some(json) = json else {
        return Err("the token endpoint's answer is not JSON".to_owned());
    };
    let token = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or("the token endpoint's answer has no `access_token`")?;
    match json.get("token_type") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind.eq_ignore_ascii_case("bearer") => {}
        Some(Value::String(_)) => {
            return Err("the token endpoint issued a token whose `token_type` is not `bearer` (not shown); only bearer tokens are supported".to_owned());
        }
        Some(_) => {
            return Err("the token endpoint's `token_type` is not a string; only bearer tokens are supported".to_owned());
        }
    }
    if !header_safe(token) {
        return Err("the access token cannot be sent in an HTTP header".to_owned());
    }
    Ok(Answer {
        token: token.to_owned(),
        lifetime: lifetime(json.get("expires_in")),
    })
}

/// What a refusal (a status other than 2xx) says: the status, the error
/// code when registered, and whether a description was given.
fn refusal(status: u16, json: Option<&Value>, client: &Redactor) -> String {
    let mut detail = format!("the token endpoint answered {status}");
    let field = |name: &str| json.and_then(|v| v.get(name));
    match field("error") {
        Some(Value::String(code)) => match REGISTERED_ERRORS.iter().find(|c| **c == code) {
            Some(known) => detail.push_str(&format!(" `{known}`")),
            None => detail.push_str(" with an unregistered error code (not shown)"),
        },
        Some(_) => detail.push_str(" with an error code that is not a string"),
        None => {}
    }
    if let Some(description) = field("error_description") {
        let quotes = description
            .as_str()
            .is_some_and(|d| client.contains(d.as_bytes()));
        detail.push_str(if quotes {
            "; its `error_description` quotes the client credentials (not shown)"
        } else {
            "; its `error_description` is not shown (a token endpoint's text may quote the client credentials)"
        });
    }
    detail
}

/// `expires_in` as a lifetime: non-negative whole or fractional seconds,
/// as a number or a string, capped at [`MAX_LIFETIME`]; a negative one is
/// zero (the token is used once), anything else unreadable or absent is
/// [`MAX_LIFETIME`].
pub(super) fn lifetime(value: Option<&Value>) -> Duration {
    let read = match value {
        Some(Value::Number(n)) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(secs), _, _) => Some(from_secs(secs)),
            (None, Some(_), _) => Some(Duration::ZERO),
            (None, None, Some(f)) => from_f64(f),
            (None, None, None) => None,
        },
        Some(Value::String(s)) => from_text(s.trim()),
        _ => None,
    };
    read.unwrap_or(MAX_LIFETIME)
}

fn from_secs(secs: u64) -> Duration {
    Duration::from_secs(secs.min(MAX_LIFETIME.as_secs()))
}

/// Whole seconds, or (past `u64`, negative or fractional) a float.
fn from_text(text: &str) -> Option<Duration> {
    if let Ok(secs) = text.parse::<u64>() {
        return Some(from_secs(secs));
    }
    text.parse::<f64>().ok().and_then(from_f64)
}

/// `f` seconds, saturating: NaN is unreadable, infinity the cap.
fn from_f64(f: f64) -> Option<Duration> {
    if f.is_nan() {
        return None;
    }
    if f <= 0.0 {
        return Some(Duration::ZERO);
    }
    Some(Duration::try_from_secs_f64(f).map_or(MAX_LIFETIME, |d| d.min(MAX_LIFETIME)))
}

#[cfg(test)]
#[path = "token_answer_tests.rs"]
mod tests;
