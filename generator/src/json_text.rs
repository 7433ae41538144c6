//! Compact JSON text of a `Value`, byte for byte what
//! `serde_json::to_writer` writes, made without the serializer machinery.
//!
//! The generator writes hundreds of megabytes of schema text for a spec
//! like Stripe's (every output schema is interned by its text, the
//! resolved spec is written whole). Most of that is strings that need no
//! escaping: they are checked eight bytes at a time and copied whole.

use serde_json::Value;

/// What follows the backslash for each byte that JSON text escapes
/// (`u` for `\u00XX`), 0 for a byte written as it is. The same table as
/// serde_json's: `"`, `\` and the control characters below 0x20.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `word` is escaped in JSON text.
fn needs_escape(word: u64) -> bool {
    // A byte is zero in `x` exactly when the high bit of
    // `(x - 0x01..) & !x & 0x80..` is set for some byte (no false
    // positives when asked "any?"); below 0x20 is the same test with 0x20.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    (control | zero(word ^ (ONES * u64::from(b'"'))) | zero(word ^ (ONES * u64::from(b'\\')))) != 0
}

/// Length of `s` as a JSON string literal (quotes and escapes included),
/// what [`write_str`] appends; eight bytes at a time where none is escaped.
pub(crate) fn str_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut len = bytes.len() + 2;
    let mut chunks = bytes.chunks_exact(8);
    let escaped = |b: u8| match ESCAPE[usize::from(b)] {
        0 => 0,
        b'u' => 5,
        _ => 1,
    };
    for word in &mut chunks {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        if needs_escape(u64::from_le_bytes(eight)) {
            len += word.iter().map(|&b| escaped(b)).sum::<usize>();
        }
    }
    len + chunks
        .remainder()
        .iter()
        .map(|&b| escaped(b))
        .sum::<usize>()
}

/// Appends `s` as a JSON string literal.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(word);
            if !needs_escape(u64::from_le_bytes(eight)) {
                i += 8;
                continue;
            }
        }
        // Within the next eight bytes (or the tail) byte by byte.
        let end = (i + 8).min(bytes.len());
        while i < end {
            let b = bytes[i];
            let escape = ESCAPE[usize::from(b)];
            if escape != 0 {
                out.extend_from_slice(&bytes[start..i]);
                out.push(b'\\');
                out.push(escape);
                if escape == b'u' {
                    out.extend_from_slice(b"00");
                    out.push(HEX[usize::from(b >> 4)]);
                    out.push(HEX[usize::from(b & 0xf)]);
                }
                start = i + 1;
            }
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends the compact JSON text of `value`.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    write_nested(out, value);
}

/// [`write_value`], returning how deep arrays and objects nest in `value`
/// (what [`nesting`](crate::schema::nesting) gives), found on the way.
pub(crate) fn write_nested(out: &mut Vec<u8>, value: &Value) -> usize {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Rare in schemas: serde_json's own number formatting (itoa, ryu).
        // Writing to a Vec cannot fail.
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_str(out, s),
        Value::Array(_) | Value::Object(_) => {
            return write_members(out, value, |out, _, _, member| write_nested(out, member));
        }
    }
    0
}

/// Appends the array or object `value` with each member written by
/// `member` (given its key, or `None` and its index; it returns the
/// member's nesting), and returns the nesting of what was written (0 for
/// anything else, which writes nothing).
pub(crate) fn write_members(
    out: &mut Vec<u8>,
    value: &Value,
    mut member: impl FnMut(&mut Vec<u8>, Option<&str>, usize, &Value) -> usize,
) -> usize {
    let mut deepest = 0;
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                deepest = deepest.max(member(out, None, i, item));
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                deepest = deepest.max(member(out, Some(key), i, item));
            }
            out.push(b'}');
        }
        _ => return 0,
    }
    1 + deepest
}

/// Appends the compact JSON text of `schema` with the text of each placed
/// body (by name) in its root `$defs` entry, a `null` placeholder: what
/// writing the schema with the bodies filled in gives.
pub(crate) fn write_placed(out: &mut Vec<u8>, schema: &Value, placed: &[(&str, &str)]) {
    let Value::Object(map) = schema else {
        return write_value(out, schema);
    };
    if placed.is_empty() {
        return write_value(out, schema);
    }
    out.push(b'{');
    for (i, (key, item)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        let Value::Object(defs) = item else {
            write_value(out, item);
            continue;
        };
        if key != "$defs" {
            write_value(out, item);
            continue;
        }
        out.push(b'{');
        for (j, (name, def)) in defs.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            write_str(out, name);
            out.push(b':');
            match placed.iter().find(|(n, _)| n == name) {
                Some((_, text)) if def.is_null() => out.extend_from_slice(text.as_bytes()),
                _ => write_value(out, def),
            }
        }
        out.push(b'}');
    }
    out.push(b'}');
}

/// The compact JSON text of `value` (what `serde_json::to_string` gives).
pub(crate) fn to_string(value: &Value) -> String {
    let mut out = Vec::new();
    write_value(&mut out, value);
    // Only whole UTF-8 strings and ASCII are written.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde(value: &Value) {
        if let Value::String(text) = value {
            assert_eq!(
                str_len(text),
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
        let mut ours = Vec::new();
        let nesting = write_nested(&mut ours, value);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(value).unwrap(),
            "{value:?}"
        );
        assert_eq!(nesting, crate::schema::nesting(value), "{value:?}");
    }

    #[test]
    fn every_single_byte_and_char_escapes_as_serde_json_does() {
        for c in (0u32..0x300).chain([0x2028, 0x2029, 0xfeff, 0x1f600]) {
            let Some(c) = char::from_u32(c) else { continue };
            // At every offset within and across an eight-byte word.
            for pad in 0..17 {
                let s: String = "a".repeat(pad) + &c.to_string() + &"b".repeat(17 - pad);
                same_as_serde(&Value::String(s.clone()));
                same_as_serde(&json!({ s.clone(): [s] }));
            }
        }
    }

    #[test]
    fn long_mixed_strings_and_every_value_kind() {
        let mut s = String::new();
        for i in 0..2000u32 {
            s.push(char::from_u32(i % 0x80 + if i % 7 == 0 { 0x400 } else { 0 }).unwrap());
        }
        same_as_serde(&Value::String(s.clone()));
        same_as_serde(&json!({
            "null": null, "t": true, "f": false, "int": -12, "big": u64::MAX,
            "float": 1.5e300, "small": 0.1, "neg": -0.0,
            "empty": {}, "none": [], "nested": [[{"a": [1, {"b": s}]}]],
            "quote\"key\\": "tab\there\nline\u{1}\u{1f}\u{7f}",
        }));
        assert_eq!(to_string(&json!({"a": [1, "x"]})), r#"{"a":[1,"x"]}"#);
    }

    #[test]
    fn the_word_test_flags_exactly_the_escaped_bytes() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut word = [b'a'; 8];
                word[at] = b;
                assert_eq!(
                    needs_escape(u64::from_le_bytes(word)),
                    ESCAPE[usize::from(b)] != 0,
                    "byte {b:#x} at {at}"
                );
            }
        }
    }
}
