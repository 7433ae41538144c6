//! Cuts through a secret in each form the redactor reads.

use super::super::forms::pair_forms;
use super::*;

const SECRET: &str = "CS-SECRET-value";

fn r() -> Redactor {
    let mut forms = vec![SECRET.to_owned()];
    forms.extend(pair_forms(&format!("client-id:{SECRET}")));
    Redactor::new(forms.iter().map(String::as_str))
}

#[test]
fn short_text_is_kept_whole_and_redacted() {
    assert_eq!(r().clip("a CS-SECRET-value b", 100), "a [REDACTED] b");
    assert_eq!(r().clip("plain", 5), "plain");
}

#[test]
fn a_secret_the_cut_would_split_is_redacted_before_the_cut() {
    // 40 characters of `Basic <base64>`, as token_type used to be quoted.
    let b64 = "Y2xpZW50LWlkOkNTLVNFQ1JFVC12YWx1ZQ==";
    let out = r().clip(&format!("a `Basic {b64}` token"), 40);
    assert!(out.starts_with("a `Basic [REDACTED]"), "{out}");
}

#[test]
fn a_beginning_left_at_the_cut_is_dropped() {
    // The text itself holds only the start of a secret (an upstream that
    // cut it), and our cut ends inside it.
    for head in [
        "x CS-SECRET-val",
        "x cs-secret-v",
        "x %43%53-SECRET",
        "x \\u0043S-SEC",
        "x &#67;S-SE",
        "x CS-SEC\\",
        "x CS-SEC%2",
        "x Y2xpZW50LWlkOkNTLVNFQ1",
    ] {
        let text = format!("{head}!!!!!!!!");
        let out = r().clip(&text, head.chars().count());
        assert_eq!(out, "x …", "{text}");
    }
}

#[test]
fn an_escape_broken_by_the_cut_is_dropped() {
    for text in ["x \\u00", "x %4", "x &#6", "x \\"] {
        let out = r().clip(&format!("{text}1234567890"), text.len());
        assert_eq!(out, "x …", "{text}");
    }
    // An escape completed before the cut stays.
    assert_eq!(r().clip("x \\n more", 4), "x \\n…");
}

#[test]
fn the_cut_respects_characters_and_unrelated_endings() {
    assert_eq!(r().clip("ééééé", 2), "éé…");
    assert_eq!(r().clip("hello world", 5), "hello…");
    // One redactor's beginning is enough to drop the tail.
    let other = Redactor::new(["hello-there"]);
    assert_eq!(
        clip_redacted("say hello world", 9, &[&r(), &other]),
        "say …"
    );
}
