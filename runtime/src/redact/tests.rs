use super::*;

const TOKEN: &str = "Tok3n_abcDEF-123.xyz";

fn r() -> Redactor {
    Redactor::new([TOKEN])
}

fn escape_all(s: &str) -> String {
    s.chars().map(|c| format!("\\u{:04x}", c as u32)).collect()
}

#[test]
fn plain_and_case_changed_forms() {
    let r = r();
    assert_eq!(r.redact_str("a Tok3n_abcDEF-123.xyz b"), "a [REDACTED] b");
    assert_eq!(
        r.redact_str(&format!("Bearer {}", TOKEN.to_ascii_lowercase())),
        "Bearer [REDACTED]"
    );
    assert_eq!(r.redact_str(&TOKEN.to_ascii_uppercase()), "[REDACTED]");
    assert!(matches!(r.redact_str("nothing here"), Cow::Borrowed(_)));
}

#[test]
fn json_escapes_wholly_or_in_part() {
    let r = r();
    let whole = format!(r#"{{"echo":"{}"}}"#, escape_all(TOKEN));
    assert_eq!(r.redact_str(&whole), r#"{"echo":"[REDACTED]"}"#);
    // one character escaped, upper-case hex digits
    let one = format!(r#"{{"echo":"\u0054{}"}}"#, &TOKEN[1..]);
    assert_eq!(r.redact_str(&one), r#"{"echo":"[REDACTED]"}"#);
    let upper = r#"["\u0054\u006F\u006B3n_abcDEF-123.xyz"]"#;
    assert_eq!(r.redact_str(upper), r#"["[REDACTED]"]"#);
}

#[test]
fn url_encoding_and_html_references() {
    let r = r();
    let pct: String = TOKEN.bytes().map(|b| format!("%{b:02X}")).collect();
    assert_eq!(r.redact_str(&format!("?t={pct}&x=1")), "?t=[REDACTED]&x=1");
    let mixed = "Tok3n%5fabc&#68;&#x45;F-123&#46;xyz";
    assert_eq!(r.redact_str(mixed), "[REDACTED]");
}

#[test]
fn special_characters_in_the_secret() {
    let secret = r#"a/b"c\d%41&e"#;
    let r = Redactor::new([secret]);
    // raw form
    assert_eq!(r.redact_str(secret), REDACTED);
    // JSON-encoded by serde_json (escapes `"` and `\`), and with `\/`
    let json = serde_json::to_string(&serde_json::json!({ "k": secret })).unwrap();
    let out = r.redact_str(&json);
    assert_eq!(out, r#"{"k":"[REDACTED]"}"#);
    let slashed = json.replace('/', "\\/");
    assert_eq!(r.redact_str(&slashed), r#"{"k":"[REDACTED]"}"#);
    // percent-encoded, the literal `%` as %25
    let pct: String = secret.bytes().map(|b| format!("%{b:02x}")).collect();
    assert_eq!(r.redact_str(&pct), REDACTED);
}

#[test]
fn escapes_are_never_split_so_json_stays_json() {
    let r = r();
    // an escaped backslash followed by text that only looks like an escape
    let tricky = format!(r#"{{"a":"\\u0054{}"}}"#, &TOKEN[1..]);
    let out = r.redact_str(&tricky);
    // `\\` is a backslash, then literally `u0054ok3n…`: no secret there
    assert_eq!(out, tricky);
    assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok());
    // a match right after an escape keeps the escape
    let after = format!(r#"{{"a":"\n{TOKEN}\""}}"#);
    let out = r.redact_str(&after);
    assert_eq!(out, r#"{"a":"\n[REDACTED]\""}"#);
}

#[test]
fn several_secrets_longest_first_and_empty_ones_skipped() {
    let r = Redactor::new(["abcd1234", "abcd1234-long", ""]);
    assert_eq!(
        r.redact_str("x abcd1234-long y abcd1234 z ab"),
        "x [REDACTED] y [REDACTED] z ab"
    );
    assert!(Redactor::new([""]).is_empty());
    assert!(Redactor::new(["ab"]).contains(b"xAB"));
}

#[test]
fn truncated_escapes_at_the_end_are_plain_bytes() {
    let r = r();
    for text in ["\\u00", "%4", "&#12", "&#x;", "\\", "%", "&"] {
        assert_eq!(r.redact_str(text), text);
    }
    let cut = &escape_all(TOKEN)[..20];
    assert_eq!(r.redact_str(cut), cut);
}

#[test]
fn bytes_and_non_utf8_input() {
    let r = r();
    let mut body = b"\xff\xfe ".to_vec();
    body.extend_from_slice(TOKEN.as_bytes());
    body.extend_from_slice(b" \xc3\xa9");
    let out = r.redact_bytes(body);
    assert_eq!(out, b"\xff\xfe [REDACTED] \xc3\xa9".to_vec());
}
