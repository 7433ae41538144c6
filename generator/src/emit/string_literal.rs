//! Rust string literals, written exactly as `proc_macro2::Literal::string`
//! writes them, without its per-character `escape_debug` on plain text.
//!
//! Tool statics hold every description and name as a literal; for a spec
//! like Cloudflare's that escaping was a visible part of emitting.

/// Whether `b` is written as itself: printable ASCII other than `"` and
/// `\` (what `char::escape_debug` leaves alone among ASCII).
fn plain(b: u8) -> bool {
    (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\'
}

/// The text of the Rust string literal of `s`, quotes included.
pub fn string_literal(s: &str) -> String {
    let mut repr = String::with_capacity(s.len() + 2);
    repr.push('"');
    let mut rest = s;
    loop {
        let run = rest.bytes().position(|b| !plain(b)).unwrap_or(rest.len());
        repr.push_str(&rest[..run]);
        let mut chars = rest[run..].chars();
        let Some(ch) = chars.next() else { break };
        // proc_macro2's own rules for the rest (its fallback `escape_utf8`).
        if ch == '\0' {
            let octal_follows = chars
                .as_str()
                .starts_with(|next| ('0'..='7').contains(&next));
            repr.push_str(if octal_follows { r"\x00" } else { r"\0" });
        } else if ch == '\'' {
            repr.push(ch);
        } else {
            repr.extend(ch.escape_debug());
        }
        rest = chars.as_str();
    }
    repr.push('"');
    repr
}

#[cfg(test)]
mod tests {
    use super::string_literal;

    fn same_as_proc_macro2(s: &str) {
        assert_eq!(
            string_literal(s),
            proc_macro2::Literal::string(s).to_string(),
            "{s:?}"
        );
    }

    #[test]
    fn every_char_in_every_neighbourhood_is_written_as_proc_macro2_writes_it() {
        let singles = (0u32..0x800)
            .chain([
                0x200b, 0x2028, 0x2029, 0xfeff, 0xe000, 0xfffd, 0x1f600, 0x10ffff,
            ])
            .filter_map(char::from_u32);
        for c in singles {
            for (before, after) in [
                ("", ""),
                ("a", "b"),
                ("x", "7"),
                ("\u{301}", "8"),
                ("\0", "0"),
            ] {
                same_as_proc_macro2(&format!("{before}{c}{after}"));
            }
        }
    }

    #[test]
    fn long_and_mixed_texts() {
        same_as_proc_macro2("");
        same_as_proc_macro2(
            "Lists the zones.\n\nSee `GET /zones` for \"all\" of them\\ 'quoted'\t\r",
        );
        same_as_proc_macro2("e\u{301}t\u{e9} \u{1b}[0m \u{7f} \0\0 \x001 \x008 \u{ad}");
        same_as_proc_macro2(&"The quick brown fox. ".repeat(500));
    }
}
