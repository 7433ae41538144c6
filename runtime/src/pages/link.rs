//! The `rel="next"` target of an HTTP `Link` header (RFC 8288), as
//! GitHub pages its lists: `<https://api.github.com/x?page=2>; rel="next",
//! <…?page=5>; rel="last"`. A value this reader does not understand gives
//! no target (the answer then says nothing about a next page) rather than
//! a guess.

/// Longest `Link` value read: GitHub's four links fit easily; a longer
/// one is not a paging header worth trusting.
pub const MAX_LINK_BYTES: usize = 8 * 1024;

/// The URI of the link whose `rel` includes `next` in `value`, one
/// `Link` header value; `None` when there is none or the value is
/// malformed or oversized.
pub fn next_target(value: &str) -> Option<&str> {
    if value.len() > MAX_LINK_BYTES {
        return None;
    }
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if rest.is_empty() {
            return None;
        }
        let after_open = rest.strip_prefix('<')?;
        let (target, after) = after_open.split_once('>')?;
        let (params, next) = split_params(after);
        if rel_has_next(params) {
            return Some(target.trim());
        }
        rest = next;
    }
}

/// Splits `; a=b; rel="x y", <next link>…` into this link's parameters
/// and what follows the comma ending them (commas inside quotes stay).
fn split_params(s: &str) -> (&str, &str) {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => return (&s[..i], &s[i + 1..]),
            _ => {}
        }
    }
    (s, "")
}

/// Whether the parameters hold `rel` with the relation type `next`
/// (relation types are case-insensitive and space-separated).
fn rel_has_next(params: &str) -> bool {
    params.split(';').any(|param| {
        let Some((name, value)) = param.split_once('=') else {
            return false;
        };
        name.trim().eq_ignore_ascii_case("rel")
            && value
                .trim()
                .trim_matches('"')
                .split_ascii_whitespace()
                .any(|rel| rel.eq_ignore_ascii_case("next"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_link_is_found_among_others() {
        let github = r#"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last""#;
        assert_eq!(
            next_target(github),
            Some("https://api.github.com/repositories/1/issues?page=2")
        );
        let later =
            r#"<https://a.example/x?page=1>; rel="prev", <https://a.example/x?page=3>; rel="next""#;
        assert_eq!(next_target(later), Some("https://a.example/x?page=3"));
        // Unquoted, upper case, several relation types.
        assert_eq!(next_target("</x?p=2>; REL=Next"), Some("/x?p=2"));
        assert_eq!(
            next_target(r#"</x?p=2>; title="a, b"; rel="next last""#),
            Some("/x?p=2")
        );
    }

    #[test]
    fn no_next_link_or_a_malformed_value_gives_nothing() {
        let last = r#"<https://a.example/x?page=1>; rel="first", <https://a.example/x?page=4>; rel="prev""#;
        assert_eq!(next_target(last), None);
        assert_eq!(next_target(""), None);
        assert_eq!(next_target("https://a.example/x; rel=next"), None);
        assert_eq!(next_target("<https://a.example/x; rel=next"), None);
        // "nextish" is not "next".
        assert_eq!(next_target(r#"</x>; rel="nextish""#), None);
        let huge = format!("</x?{}>; rel=next", "a".repeat(MAX_LINK_BYTES));
        assert_eq!(next_target(&huge), None);
    }
}
