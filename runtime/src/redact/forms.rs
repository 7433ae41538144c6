//! The forms a secret takes on the wire, so a [`Redactor`](super::Redactor)
//! can be given every one of them.
//!
//! The redactor decodes escapes (JSON, percent, HTML) and folds case by
//! itself, but two encodings cannot be undone unit by unit: the `+` that
//! form encoding (`application/x-www-form-urlencoded`, used for query
//! parameters and `client_secret_post` bodies) writes for a space, and
//! base64, which spreads each byte over two characters. Those forms are
//! added as secrets of their own.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// `secret` as sent raw (a header, a cookie) and form-encoded (a query
/// parameter, a form body); duplicates left out.
pub fn sent_forms(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_owned()];
    push_new(&mut out, form_encode(secret));
    out
}

/// An HTTP basic pair `user:password` (RFC 7617) or an OAuth client's
/// `urlencode(id):urlencode(secret)` (RFC 6749 §2.3.1) as sent: the pair
/// itself and its base64, padded and unpadded, in the standard and the
/// URL-safe alphabet (an echo may re-encode the header it quotes).
pub fn pair_forms(pair: &str) -> Vec<String> {
    let mut out = vec![pair.to_owned()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        push_new(&mut out, engine.encode(pair));
    }
    out
}

/// `s` form-encoded (`application/x-www-form-urlencoded`: a space is `+`).
pub fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn push_new(out: &mut Vec<String>, form: String) {
    if !out.contains(&form) {
        out.push(form);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_of_a_secret_and_a_pair() {
        assert_eq!(sent_forms("abc"), ["abc"]);
        assert_eq!(sent_forms("a b+c"), ["a b+c", "a+b%2Bc"]);
        let forms = pair_forms("client-id:CS-SECRET");
        assert_eq!(forms[0], "client-id:CS-SECRET");
        assert!(forms.contains(&"Y2xpZW50LWlkOkNTLVNFQ1JFVA==".to_owned()));
        assert!(forms.contains(&"Y2xpZW50LWlkOkNTLVNFQ1JFVA".to_owned()));
        // `~~~` gives a `+`, which the URL-safe alphabet writes as `-`.
        let forms = pair_forms("u:~~~");
        assert!(forms.contains(&"dTp+fn4=".to_owned()), "{forms:?}");
        assert!(forms.contains(&"dTp-fn4=".to_owned()), "{forms:?}");
    }
}
