//! The one scanner for `"`-delimited text with backslash escapes, shared by
//! the readers of compact JSON the generator wrote and by the placeholder
//! pass over formatted Rust (whose string literals escape the same way).

/// Index just past the quoted string starting at `start`, which must be a
/// `"`; `None` if it is not one or the string never ends.
/// (`memchr2` skips the long runs of plain text in descriptions.)
pub(crate) fn quoted_end(bytes: &[u8], start: usize) -> Option<usize> {
    if bytes.get(start) != Some(&b'"') {
        return None;
    }
    let mut i = start + 1;
    while i < bytes.len() {
        i += memchr::memchr2(b'\\', b'"', bytes.get(i..)?)?;
        match bytes.get(i)? {
            b'\\' => i += 2,
            _ => return Some(i + 1),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::quoted_end;

    #[test]
    fn strings_end_after_their_closing_quote() {
        assert_eq!(quoted_end(br#""abc",1"#, 0), Some(5));
        assert_eq!(quoted_end(br#"x"""#, 1), Some(3));
        assert_eq!(quoted_end(br#"{"k":"v"}"#, 5), Some(8));
    }

    #[test]
    fn escaped_quotes_and_backslashes_do_not_end_a_string() {
        assert_eq!(quoted_end(br#""a\"b""#, 0), Some(6));
        assert_eq!(quoted_end(br#""a\\"b"#, 0), Some(5));
        assert_eq!(quoted_end(br#""\\\"""#, 0), Some(6));
    }

    #[test]
    fn unterminated_or_misplaced_strings_are_none() {
        assert_eq!(quoted_end(br#""abc"#, 0), None);
        assert_eq!(quoted_end(br#""abc\"#, 0), None);
        assert_eq!(quoted_end(br#""abc\""#, 0), None);
        assert_eq!(quoted_end(b"abc", 0), None);
        assert_eq!(quoted_end(b"", 0), None);
        assert_eq!(quoted_end(b"\"", 5), None);
    }
}
