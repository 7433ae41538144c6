//! Reading back compact JSON the writer produced: the members of an
//! inlined target, to merge the keys beside its `$ref` in place.

use crate::quoted::quoted_end;

/// The top-level members of a compact JSON object written by this module:
/// `(key bytes with quotes, value bytes)`. `None` if `bytes` is not one.
pub(super) fn object_members(bytes: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let inner = bytes.strip_prefix(b"{")?.strip_suffix(b"}")?;
    let mut out = Vec::new();
    let mut i = 0;
    while i < inner.len() {
        let key_end = quoted_end(inner, i)?;
        let key = &inner[i..key_end];
        if inner.get(key_end) != Some(&b':') {
            return None;
        }
        let value_start = key_end + 1;
        let value_end = skip_value(inner, value_start)?;
        out.push((key, &inner[value_start..value_end]));
        i = value_end;
        match inner.get(i) {
            Some(b',') => i += 1,
            None => {}
            Some(_) => return None,
        }
    }
    Some(out)
}

/// End (exclusive) of the JSON value starting at `start` (iterative).
fn skip_value(s: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    loop {
        match *s.get(i)? {
            b'"' => i = quoted_end(s, i)?,
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            b',' if depth == 0 => return Some(i),
            _ => i += 1,
        }
        if depth == 0 && matches!(s.get(i), None | Some(b',')) {
            return Some(i);
        }
    }
}
