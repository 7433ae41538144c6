#![allow(clippy::unwrap_used)]
//! Token answers as a hostile or broken endpoint writes them: numbers that
//! overflow, wrong types, and text quoting the client credentials.

use serde_json::json;

use super::*;
use crate::redact::forms::{pair_forms, sent_forms};

const ID: &str = "client-id";
const SECRET: &str = "CS-SECRET-value";

fn client() -> Redactor {
    let mut forms = sent_forms(ID);
    forms.extend(sent_forms(SECRET));
    forms.extend(pair_forms(&format!("{ID}:{SECRET}")));
    Redactor::new(forms.iter().map(String::as_str))
}

fn ok(body: &str) -> Answer {
    read(200, body.as_bytes(), &client()).unwrap()
}

#[test]
fn expires_in_of_any_size_or_type_saturates_at_the_cap() {
    let day = MAX_LIFETIME;
    for (expires_in, want) in [
        (json!(3600), Duration::from_secs(3600)),
        (json!(0), Duration::ZERO),
        // 2^63, 2^64 - 1, 2^64 (a float to serde_json), 1e300
        (json!(9_223_372_036_854_775_808_u64), day),
        (json!(u64::MAX), day),
        (json!(18_446_744_073_709_551_616.0_f64), day),
        (json!(1e300), day),
        (json!(-1), Duration::ZERO),
        (json!(i64::MIN), Duration::ZERO),
        (json!(-1e300), Duration::ZERO),
        (json!(90.5), Duration::from_secs_f64(90.5)),
        (json!("3600"), Duration::from_secs(3600)),
        (json!(" 7 "), Duration::from_secs(7)),
        (json!("9223372036854775808"), day),
        (json!("18446744073709551615"), day),
        (json!("18446744073709551616"), day),
        (json!("99999999999999999999999999999999"), day),
        (json!("1e400"), day),
        (json!("inf"), day),
        (json!("-5"), Duration::ZERO),
        (json!("-1e400"), Duration::ZERO),
        (json!("NaN"), day),
        (json!("soon"), day),
        (json!(""), day),
        (json!(true), day),
        (json!([1]), day),
        (json!({"secs": 1}), day),
        (json!(null), day),
    ] {
        let body = json!({"access_token": "t", "expires_in": expires_in}).to_string();
        assert_eq!(ok(&body).lifetime, want, "{body}");
    }
    assert_eq!(ok(r#"{"access_token":"t"}"#).lifetime, day);
}

#[test]
fn a_number_beyond_f64_is_not_json_and_does_not_panic() {
    // serde_json refuses `1e400` as a number: the answer is not JSON.
    let err = read(
        200,
        br#"{"access_token":"t","expires_in":1e400}"#,
        &client(),
    )
    .unwrap_err();
    assert!(err.contains("not JSON"), "{err}");
}

/// The Basic header the token request sent, as an endpoint would quote it.
fn basic() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{ID}:{SECRET}"))
}

fn assert_quotes_nothing(err: &str) {
    let b64 = basic();
    for leak in [ID, SECRET, "CS-SECRE", &b64, &b64[..16], "Basic "] {
        assert!(!err.contains(leak), "{leak} in {err}");
    }
}

#[test]
fn a_refusal_quoting_the_basic_header_is_not_quoted() {
    let c = client();
    for body in [
        json!({"error": "invalid_client", "error_description": format!("bad header: Basic {}", basic())}),
        json!({"error": "invalid_client", "error_description": format!("secret {SECRET} for {ID}")}),
        json!({"error": format!("Basic {}", basic())}),
        json!({"error": "invalid_client", "error_description": "client authentication failed"}),
        json!({"error": 7, "error_description": ["x"]}),
    ] {
        let err = read(400, body.to_string().as_bytes(), &c).unwrap_err();
        assert!(err.starts_with("the token endpoint answered 400"), "{err}");
        assert_quotes_nothing(&err);
    }
    let quoted =
        json!({"error": "invalid_client", "error_description": format!("Basic {}", basic())});
    let err = read(401, quoted.to_string().as_bytes(), &c).unwrap_err();
    assert!(err.contains("`invalid_client`"), "{err}");
    assert!(err.contains("quotes the client credentials"), "{err}");
    let unregistered = json!({"error": "x-custom", "error_description": "plain"});
    let err = read(400, unregistered.to_string().as_bytes(), &c).unwrap_err();
    assert!(err.contains("unregistered error code"), "{err}");
    assert!(!err.contains("x-custom") && !err.contains("plain"), "{err}");
}

#[test]
fn a_token_type_is_never_quoted() {
    let c = client();
    for kind in [
        json!(format!("Basic {}", basic())),
        json!(basic()),
        json!(format!("{SECRET}{SECRET}")),
        json!("mac"),
    ] {
        let body = json!({"access_token": "t", "token_type": kind}).to_string();
        let err = read(200, body.as_bytes(), &c).unwrap_err();
        assert!(err.contains("only bearer"), "{err}");
        assert!(!err.contains("mac"), "{err}");
        assert_quotes_nothing(&err);
    }
    let err = read(200, br#"{"access_token":"t","token_type":9}"#, &c).unwrap_err();
    assert!(err.contains("not a string"), "{err}");
    assert_eq!(
        ok(r#"{"access_token":"t","token_type":"BEARER"}"#).token,
        "t"
    );
    assert_eq!(ok(r#"{"access_token":"t","token_type":null}"#).token, "t");
}

#[test]
fn wrong_types_and_unsendable_tokens_are_refused() {
    let c = client();
    for body in [
        r#"{"access_token":7}"#,
        r#"{"access_token":""}"#,
        r#"{"access_token":null}"#,
        r#"[]"#,
        r#""tok""#,
        r#"{"access_token":"a\u0000b"}"#,
        r#"{"access_token":"é"}"#,
    ] {
        assert!(read(200, body.as_bytes(), &c).is_err(), "{body}");
    }
}
