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
    // `\\` is a backslash, then literally `u0054ok3n…`, which a reader of
    // the raw text takes for the token: redacted, and JSON all the same
    assert_eq!(out, r#"{"a":"[REDACTED]"}"#);
    // a raw token that starts inside a percent escape (`%A` + token)
    let inside = format!(r#"{{"a":"%A0{TOKEN}"}}"#);
    let r0 = Redactor::new(["0Tok3n"]);
    assert_eq!(
        r0.redact_str(&inside),
        r#"{"a":"[REDACTED]_abcDEF-123.xyz"}"#
    );
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

mod property {
    //! For random tokens and JSON bodies that embed the token escaped,
    //! partly escaped, URL-encoded, form-encoded, as HTML references,
    //! case-changed, or inside the base64 of a Basic `client-id:token`
    //! pair, at random places (values, keys, error messages), the redacted
    //! body is still JSON and no decoded string of it holds the token or
    //! the pair's base64. A quote cut from a text holding the token in any
    //! of those forms (whole, or already cut by the upstream) ends in no
    //! beginning of them. The oracle decodes with its own code
    //! (serde_json, `percent-encoding`, `base64`, small HTML reference and
    //! `\u` decoders), never with the redactor.

    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use proptest::prelude::*;
    use serde_json::Value;

    use super::super::Redactor;
    use super::super::forms::{pair_forms, sent_forms};

    /// The client ID the token is paired with in Basic forms.
    const ID: &str = "client-id";

    /// The redactor as the server builds it for a client secret `token`.
    fn redactor(token: &str) -> Redactor {
        let mut forms = sent_forms(token);
        forms.extend(pair_forms(&format!("{ID}:{token}")));
        Redactor::new(forms.iter().map(String::as_str))
    }

    /// The base64 of the pair in each alphabet, written by the test.
    fn basic_forms(token: &str) -> Vec<String> {
        let pair = format!("{ID}:{token}");
        [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
            .iter()
            .map(|e| e.encode(&pair))
            .collect()
    }

    /// One way to write the token inside a JSON string.
    #[derive(Debug, Clone)]
    enum Form {
        Raw,
        Bearer,
        UnicodeEscaped { mask: Vec<bool>, upper: bool },
        SlashEscaped,
        Percent { mask: Vec<bool>, upper: bool },
        Html { mask: Vec<bool>, hex: bool },
        Case { flips: Vec<bool> },
        Urlencoded,
        Base64Pair { alphabet: usize },
    }

    fn form() -> impl Strategy<Value = Form> {
        let mask = proptest::collection::vec(any::<bool>(), 64);
        prop_oneof![
            Just(Form::Raw),
            Just(Form::Bearer),
            (mask.clone(), any::<bool>())
                .prop_map(|(mask, upper)| Form::UnicodeEscaped { mask, upper }),
            Just(Form::SlashEscaped),
            (mask.clone(), any::<bool>()).prop_map(|(mask, upper)| Form::Percent { mask, upper }),
            (mask.clone(), any::<bool>()).prop_map(|(mask, hex)| Form::Html { mask, hex }),
            mask.prop_map(|flips| Form::Case { flips }),
            Just(Form::Urlencoded),
            (0..4usize).prop_map(|alphabet| Form::Base64Pair { alphabet }),
        ]
    }

    fn write(token: &str, form: &Form) -> String {
        let on = |mask: &[bool], i: usize| mask.get(i).copied().unwrap_or(true);
        match form {
            Form::Urlencoded => {
                return url::form_urlencoded::byte_serialize(token.as_bytes()).collect();
            }
            Form::Base64Pair { alphabet } => {
                return format!("Basic {}", basic_forms(token)[*alphabet % 4]);
            }
            _ => {}
        }
        token
            .char_indices()
            .map(|(i, c)| match form {
                Form::Raw | Form::Bearer => c.to_string(),
                Form::UnicodeEscaped { mask, upper } if on(mask, i) => {
                    let s = format!("\\u{:04x}", c as u32);
                    if *upper {
                        s.to_uppercase().replace("\\U", "\\u")
                    } else {
                        s
                    }
                }
                Form::SlashEscaped if c == '/' => "\\/".to_owned(),
                Form::Percent { mask, upper } if on(mask, i) => {
                    if *upper {
                        format!("%{:02X}", c as u32)
                    } else {
                        format!("%{:02x}", c as u32)
                    }
                }
                Form::Html { mask, hex } if on(mask, i) => {
                    if *hex {
                        format!("&#x{:x};", c as u32)
                    } else {
                        format!("&#{};", c as u32)
                    }
                }
                Form::Case { flips } if on(flips, i) => {
                    if c.is_ascii_uppercase() {
                        c.to_ascii_lowercase().to_string()
                    } else {
                        c.to_ascii_uppercase().to_string()
                    }
                }
                _ => c.to_string(),
            })
            .collect::<String>()
            .pipe(|s| {
                if matches!(form, Form::Bearer) {
                    format!("Bearer {s}")
                } else {
                    s
                }
            })
    }

    trait Pipe: Sized {
        fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
            f(self)
        }
    }
    impl Pipe for String {}

    /// JSON string content (without quotes) for arbitrary text.
    fn escaped(text: &str) -> String {
        let quoted = serde_json::to_string(text).unwrap_or_default();
        quoted[1..quoted.len() - 1].to_owned()
    }

    fn html_decode(text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("&#") {
            out.push_str(&rest[..at]);
            let tail = &rest[at + 2..];
            let (radix, digits) = match tail.strip_prefix(['x', 'X']) {
                Some(hex) => (16, hex),
                None => (10, tail),
            };
            let end = digits.find(';');
            let decoded = end
                .and_then(|e| u32::from_str_radix(&digits[..e], radix).ok())
                .and_then(char::from_u32);
            match (decoded, end) {
                (Some(c), Some(e)) => {
                    out.push(c);
                    rest = &digits[e + 1..];
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

    /// `\uXXXX` escapes decoded (the rest kept).
    fn unicode_decode(text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("\\u") {
            out.push_str(&rest[..at]);
            let code = rest
                .get(at + 2..at + 6)
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32);
            match code {
                Some(c) => {
                    out.push(c);
                    rest = &rest[at + 6..];
                }
                None => {
                    out.push_str("\\u");
                    rest = &rest[at + 2..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// `text` decoded every way the test encodes, lowercased.
    fn decodings(text: &str) -> Vec<String> {
        let percent = |t: &str| {
            percent_encoding::percent_decode_str(t)
                .decode_utf8_lossy()
                .into_owned()
        };
        let pct = percent(text);
        [
            text.to_owned(),
            pct.clone(),
            percent(&text.replace('+', " ")),
            html_decode(text),
            html_decode(&pct),
            unicode_decode(text),
        ]
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect()
    }

    /// What must never be left: the token and its pair's base64.
    fn needles(token: &str) -> Vec<String> {
        let mut out = vec![token.to_ascii_lowercase()];
        out.extend(basic_forms(token).iter().map(|b| b.to_ascii_lowercase()));
        out
    }

    /// Does `text` hold `token` in any form the test writes?
    fn holds(text: &str, token: &str) -> bool {
        let needles = needles(token);
        decodings(text)
            .iter()
            .any(|t| needles.iter().any(|n| t.contains(n.as_str())))
    }

    /// Does `text` end with four or more leading characters of `token` or
    /// of its pair's base64, in any form the test writes?
    fn ends_with_a_beginning(text: &str, token: &str) -> bool {
        let needles = needles(token);
        decodings(text).iter().any(|t| {
            needles
                .iter()
                .any(|n| (4..n.len()).any(|k| t.ends_with(&n[..k])))
        })
    }

    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            Value::Object(map) => map.iter().for_each(|(k, v)| {
                out.push(k.clone());
                strings(v, out);
            }),
            _ => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn no_decoded_string_holds_the_token(
            token in "[A-Za-z0-9._~+/= -]{8,40}",
            texts in proptest::collection::vec("[ -~é日]{0,12}", 6),
            forms in proptest::collection::vec(form(), 4),
        ) {
            let f: Vec<String> = forms.iter().map(|f| write(&token, f)).collect();
            let t: Vec<String> = texts.iter().map(|t| escaped(t)).collect();
            let body = format!(
                r#"{{"result":{{"id":"{t0}{f0}{t1}","{f1}":[1,"{t2}"],"nested":{{"list":["{t3}{f2}"]}}}},"errors":[{{"code":7,"message":"{t4}{f3}{t5}"}}]}}"#,
                t0 = t[0], t1 = t[1], t2 = t[2], t3 = t[3], t4 = t[4], t5 = t[5],
                f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3],
            );
            let before: Value = serde_json::from_str(&body).expect("the test writes JSON");
            let mut seen = Vec::new();
            strings(&before, &mut seen);
            prop_assert!(seen.iter().any(|s| holds(s, &token)), "the oracle must see the echo: {body}");

            let out = redactor(&token).redact_str(&body).into_owned();
            let after: Value = serde_json::from_str(&out).map_err(|e| TestCaseError::fail(format!("{e}: {out}")))?;
            let mut left = Vec::new();
            strings(&after, &mut left);
            for s in &left {
                prop_assert!(!holds(s, &token), "{s:?} in {out}");
            }
            prop_assert!(!holds(&out, &token), "{out}");
        }

        #[test]
        fn a_cut_quote_ends_in_no_beginning_of_a_secret(
            token in "[A-Za-z0-9._~+/= -]{8,40}",
            head in "[ -~é]{0,20}",
            tail in "[ -~é]{0,20}",
            form in form(),
            upstream_cut in proptest::option::of(1usize..200),
            at in 0usize..400,
        ) {
            let written = write(&token, &form);
            // The upstream may itself have cut the echo short; then the
            // text ends inside it.
            let text = match upstream_cut {
                Some(n) => {
                    let n = n % written.len();
                    format!("{head}{}", &written[..n.max(1)])
                }
                None => format!("{head}{written}{tail}"),
            };
            let chars = text.chars().count();
            let max = if upstream_cut.is_some() { at % chars } else { at % (chars + 5) };
            let out = redactor(&token).clip(&text, max);
            let kept = out.strip_suffix('…').unwrap_or(&out);
            prop_assert!(!holds(kept, &token), "{kept:?} from {text:?}");
            if kept.len() < out.len() {
                prop_assert!(!ends_with_a_beginning(kept, &token), "{kept:?} from {text:?}");
            }
        }
    }
}
