//! Percent-encoding sets and helpers shared by the request builders.

use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything except RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
pub(crate) const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`COMPONENT`] but keeping RFC 3986 reserved characters, for query
/// parameters with `allowReserved`.
///
/// `#` stays encoded: unencoded it would end the query and silently drop
/// everything after it.
const QUERY_RESERVED: &AsciiSet = &COMPONENT
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'[')
    .remove(b']')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=');

/// Characters a literal path template part may not carry unencoded.
const PATH_LITERAL: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// Characters a cookie value may not carry (RFC 6265 `cookie-octet`), plus `%`.
const COOKIE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b',')
    .add(b';')
    .add(b'\\')
    .add(b'%');

/// `application/x-www-form-urlencoded` (WHATWG): keeps `*-._` and
/// alphanumerics; space is handled separately as `+`.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// Encodes a value so it stays inside one URL component (path segment,
/// query name or value).
pub(crate) fn component(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

/// Encodes a query value, keeping reserved characters when `allow_reserved`.
pub(crate) fn query_value(text: &str, allow_reserved: bool) -> String {
    let set = if allow_reserved {
        QUERY_RESERVED
    } else {
        COMPONENT
    };
    utf8_percent_encode(text, set).to_string()
}

/// Encodes the literal text of a path template.
pub(crate) fn path_literal(text: &str) -> String {
    utf8_percent_encode(text, PATH_LITERAL).to_string()
}

/// Encodes a cookie name or value.
pub(crate) fn cookie(text: &str) -> String {
    utf8_percent_encode(text, COOKIE).to_string()
}

/// Encodes a name or value for a form-urlencoded body.
pub(crate) fn form(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, piece) in text.split(' ').enumerate() {
        if i > 0 {
            out.push('+');
        }
        out.extend(utf8_percent_encode(piece, FORM));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_keeps_only_unreserved() {
        assert_eq!(component("aZ09-._~"), "aZ09-._~");
        assert_eq!(component("a/b?c#d%e f"), "a%2Fb%3Fc%23d%25e%20f");
        assert_eq!(component("ü"), "%C3%BC");
        assert_eq!(
            component(":@!$&'()*+,;=[]"),
            "%3A%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%5B%5D"
        );
    }

    #[test]
    fn allow_reserved_keeps_reserved_but_not_hash_or_percent() {
        assert_eq!(query_value(":/?[]@!$&'()*+,;=", true), ":/?[]@!$&'()*+,;=");
        assert_eq!(query_value("#% ", true), "%23%25%20");
        assert_eq!(query_value("a/b", false), "a%2Fb");
    }

    #[test]
    fn form_uses_plus_for_space() {
        assert_eq!(form("a b+c&d=e*~"), "a+b%2Bc%26d%3De*%7E");
        assert_eq!(form("%20"), "%2520");
    }

    #[test]
    fn literal_and_cookie_sets() {
        assert_eq!(path_literal("/a b/{x}?#"), "/a%20b/%7Bx%7D%3F%23");
        assert_eq!(path_literal("/a%2Fb:c"), "/a%2Fb:c");
        assert_eq!(cookie("a b;c,d\"e\\%=ü"), "a%20b%3Bc%2Cd%22e%5C%25=%C3%BC");
    }
}
