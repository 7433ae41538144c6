//! Fuzz target for OAuth token endpoint answers (see `toolforge-fuzz` for
//! the driver, budgets and crash files):
//!
//! - `token_response`: an HTTP status and a body, read as the
//!   client-credentials source reads a token endpoint's answer
//!   ([`TokenSource::answer`]). Bodies are token answers and refusals with
//!   `expires_in` of every size, sign and type (2^63, 2^64, `1e400`,
//!   negative, fractional, strings, arrays), wrong types for every member,
//!   the client credentials quoted in every form they are sent in (raw,
//!   form-encoded, the Basic pair's base64, cut short, JSON-escaped), and
//!   long strings; mutated at the JSON and the byte level. Properties: no
//!   panic; a token is renewed within [`MAX_LIFETIME`]; an error holds no
//!   form of the client ID or secret, not even eight characters of one,
//!   and stays short (nothing of the answer is quoted).
//!
//! `TOOLFORGE_FUZZ_SECS=60 cargo test -p toolforge-runtime --test fuzz_token_response`
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use toolforge_fuzz::json::{Doc, random_value};
use toolforge_fuzz::mutate::havoc;
use toolforge_fuzz::{Pool, Rng, Target};
use toolforge_runtime::credential::TokenSource;
use toolforge_runtime::credential::token_answer::MAX_LIFETIME;

/// Largest input: the status, then at most the 64 KiB a token answer may
/// have.
const MAX_INPUT: usize = 2 + 64 * 1024;

const CLIENT_ID: &str = "fuzz-client.id";
const CLIENT_SECRET: &str = "Fz S3cret+/=value";

const STATUSES: &[u16] = &[
    200, 200, 200, 201, 204, 299, 400, 401, 403, 429, 500, 503, 0, 999,
];

const KEYS: &[&str] = &[
    "access_token",
    "token_type",
    "expires_in",
    "refresh_token",
    "scope",
    "error",
    "error_description",
    "error_uri",
    "id_token",
];

/// The secret's forms as the token request sends them, and quotes of them.
fn secret_strings() -> Vec<String> {
    let b64 = |pair: &str| base64::engine::general_purpose::STANDARD.encode(pair);
    let form = |s: &str| -> String { url::form_urlencoded::byte_serialize(s.as_bytes()).collect() };
    let basic = b64(&format!("{}:{}", form(CLIENT_ID), form(CLIENT_SECRET)));
    vec![
        CLIENT_ID.to_owned(),
        CLIENT_SECRET.to_owned(),
        form(CLIENT_SECRET),
        format!("Basic {basic}"),
        basic.clone(),
        basic[..basic.len() / 2].to_owned(),
        b64(&format!("{CLIENT_ID}:{CLIENT_SECRET}")),
        format!("{CLIENT_ID}:{CLIENT_SECRET}"),
        format!(
            "client_id={}&client_secret={}",
            form(CLIENT_ID),
            form(CLIENT_SECRET)
        ),
        CLIENT_SECRET.to_uppercase(),
        CLIENT_SECRET[..9].to_owned(),
    ]
}

const PLAIN_STRINGS: &[&str] = &[
    "bearer",
    "Bearer",
    "BEARER",
    "mac",
    "DPoP",
    "invalid_client",
    "invalid_request",
    "invalid_scope",
    "x-custom",
    "3600",
    "-1",
    "1e400",
    "NaN",
    "inf",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    " 60 ",
    "",
    "tok\r\nX-Injected: 1",
    "tok\u{0}",
    "é",
];

/// Number texts serde_json's `Value` cannot all hold as written.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "59",
    "60",
    "3600",
    "-1",
    "-9223372036854775808",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "1e300",
    "1e400",
    "-1e400",
    "1.5",
    "0.0000001",
    "4.9e-324",
    "1E+2",
];

fn target(name: &'static str, command: &'static str, seeds: Vec<Vec<u8>>) -> Target {
    Target {
        name,
        test: name,
        work_dir: env!("CARGO_TARGET_TMPDIR"),
        command,
        seeds,
    }
}

fn input(status: u16, body: &[u8]) -> Vec<u8> {
    let mut out = status.to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn seeds() -> Vec<Vec<u8>> {
    let basic = &secret_strings()[3];
    [
        (
            200,
            r#"{"access_token":"tok","token_type":"Bearer","expires_in":3600}"#.to_owned(),
        ),
        (
            200,
            r#"{"access_token":"tok","expires_in":9223372036854775808}"#.to_owned(),
        ),
        (
            200,
            r#"{"access_token":"tok","expires_in":18446744073709551615}"#.to_owned(),
        ),
        (
            200,
            r#"{"access_token":"tok","expires_in":"18446744073709551615"}"#.to_owned(),
        ),
        (
            200,
            r#"{"access_token":"tok","expires_in":"1e400"}"#.to_owned(),
        ),
        (200, r#"{"access_token":"tok","expires_in":-5}"#.to_owned()),
        (
            200,
            format!(r#"{{"access_token":"tok","token_type":"{basic}"}}"#),
        ),
        (
            400,
            format!(r#"{{"error":"invalid_client","error_description":"bad {basic}"}}"#),
        ),
        (401, format!(r#"{{"error":"{basic}"}}"#)),
        (
            400,
            format!(r#"{{"error":"invalid_request","error_description":"{CLIENT_SECRET}"}}"#),
        ),
    ]
    .into_iter()
    .map(|(s, b)| input(s, b.as_bytes()))
    .collect()
}

#[test]
fn token_response() {
    toolforge_fuzz::run(
        target(
            "token_response",
            "cargo test -p toolforge-runtime --test fuzz_token_response token_response",
            seeds(),
        ),
        generate,
        check,
    );
}

/// A token answer or refusal, right or nearly so.
fn answer(rng: &mut Rng, doc: &mut Doc, strings: &[&str]) -> Value {
    let mut m = serde_json::Map::new();
    for key in KEYS {
        if !rng.one_in(3) {
            continue;
        }
        let value = match rng.below(8) {
            0 => doc.raw((*rng.pick(NUMBERS)).to_owned()),
            1 => json!(*rng.pick(strings)),
            2 => json!(rng.pick(strings).repeat(rng.range(1, 2000))),
            3 => random_value(rng, 2, KEYS, strings),
            4 => json!(rng.next_u64()),
            5 => json!(-(rng.below(1 << 30) as i64)),
            6 => json!(rng.next_u64() as f64 * 1e10),
            _ => json!(format!("{}{}", rng.pick(strings), rng.pick(strings))),
        };
        m.insert((*key).to_owned(), value);
    }
    if rng.one_in(2) {
        m.insert("access_token".into(), json!("tok-123"));
    }
    Value::Object(m)
}

fn generate(rng: &mut Rng, pool: &Pool) -> Vec<u8> {
    let secrets = secret_strings();
    let mut strings: Vec<&str> = PLAIN_STRINGS.to_vec();
    strings.extend(secrets.iter().map(String::as_str));
    let status = *rng.pick(STATUSES);
    let body = match rng.below(10) {
        0..=4 => {
            let mut doc = Doc::new(Value::Null);
            doc.value = answer(rng, &mut doc, &strings);
            if rng.one_in(3) {
                doc.mutate(rng, KEYS, &strings);
            }
            doc.render(rng.one_in(8))
        }
        5..=7 => {
            let base = pool.pick(rng).get(2..).unwrap_or_default().to_vec();
            match Doc::parse(&base) {
                Some(mut doc) => {
                    doc.mutate(rng, KEYS, &strings);
                    doc.render(rng.one_in(8))
                }
                None => base,
            }
        }
        _ => pool.pick(rng).get(2..).unwrap_or_default().to_vec(),
    };
    let mut out = input(status, &body);
    if rng.one_in(3) {
        let other = pool.pick(rng).to_vec();
        let tokens: Vec<&[u8]> = strings.iter().map(|s| s.as_bytes()).collect();
        havoc(rng, &mut out, &tokens, &other, MAX_INPUT);
    }
    out.truncate(MAX_INPUT);
    out
}

fn check(input: &[u8]) -> Result<String, String> {
    let (status, body) = match input {
        [a, b, rest @ ..] => (u16::from_be_bytes([*a, *b]), rest),
        _ => (200, input),
    };
    let source = TokenSource::new(
        "fuzz",
        "https://auth.example/token",
        &["read"],
        CLIENT_ID.to_owned(),
        CLIENT_SECRET.to_owned(),
    );
    let before = Instant::now();
    match source.answer("auth.example/token", status, body) {
        Ok(token) => {
            let latest = Instant::now() + MAX_LIFETIME + Duration::from_secs(1);
            if token.renew_at() > latest {
                return Err("a token outlives MAX_LIFETIME".into());
            }
            let life = token.renew_at().saturating_duration_since(before);
            Ok(format!("ok, life {}", bucket(life)))
        }
        Err(e) => {
            let text = e.to_string();
            leak(&text)?;
            if text.len() > 400 {
                return Err(format!("a {}-byte error: {text}", text.len()));
            }
            // The label is the error's wording without numbers.
            Ok(text.chars().filter(|c| !c.is_ascii_digit()).collect())
        }
    }
}

/// Why `text` shows part of the client credentials, if it does.
fn leak(text: &str) -> Result<(), String> {
    let lower = text.to_ascii_lowercase();
    for form in secret_strings() {
        let form = form.to_ascii_lowercase();
        let chars: Vec<char> = form.chars().collect();
        for window in chars.windows(8.min(chars.len())) {
            let part: String = window.iter().collect();
            if lower.contains(&part) {
                return Err(format!("`{part}` of a secret form in: {text}"));
            }
        }
    }
    Ok(())
}

fn bucket(life: Duration) -> &'static str {
    match life.as_secs() {
        0 => "0",
        1..=59 => "<1m",
        60..=86_399 => "<1d",
        _ => "1d",
    }
}
