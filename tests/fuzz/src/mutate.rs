//! Byte-level mutations ("havoc"): truncation, deletion, duplication,
//! dictionary tokens, invalid UTF-8, byte order marks, line-end games,
//! crossover with another input, deep nesting and huge numbers.

use crate::Rng;

/// Byte sequences that are not UTF-8, or are traps for UTF-8 handling.
pub const BAD_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\xfe\xff",
    b"\xc0\x80",             // overlong NUL
    b"\x80",                 // lone continuation byte
    b"\xe2\x82",             // truncated 3-byte sequence
    b"\xed\xa0\x80",         // UTF-16 surrogate encoded in UTF-8
    b"\xf4\x90\x80\x80",     // beyond U+10FFFF
    b"\xf0\x9f\x98",         // truncated emoji
    b"\x00",                 // NUL
    "\u{feff}".as_bytes(),   // a BOM in the middle
    "\u{202e}".as_bytes(),   // right-to-left override
    "\u{10ffff}".as_bytes(), // the last code point
];

/// Byte order marks.
pub const BOMS: &[&[u8]] = &[
    b"\xef\xbb\xbf",
    b"\xef\xbb\xbf\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xfe\xff",
    b"\x00\x00\xfe\xff",
];

/// Numbers at and beyond the edges of `i64`, `u64` and `f64`, and
/// malformed ones.
pub const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "1e308",
    "1e309",
    "-1e309",
    "1e-400",
    "4.9e-324",
    "1.7976931348623157e308",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890",
    "0.000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
    "1E+2",
    "1e",
    "01",
    "1.",
    ".5",
    "+1",
    "0x10",
    "NaN",
    "Infinity",
    "-",
];

/// One random byte-level mutation of `data`. `tokens` is the harness's
/// dictionary; `other` another input for crossover.
pub fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, tokens: &[&[u8]], other: &[u8]) {
    let len = data.len();
    match rng.below(16) {
        // truncate
        0 => data.truncate(rng.below(len + 1)),
        // delete a range
        1 if len > 0 => {
            let at = rng.below(len);
            let n = rng.size(len - at).max(1);
            data.drain(at..at + n);
        }
        // duplicate a range in place
        2 if len > 0 => {
            let at = rng.below(len);
            let n = rng.size(len - at).max(1);
            let piece = data[at..at + n].to_vec();
            let to = rng.below(data.len() + 1);
            data.splice(to..to, piece);
        }
        // a dictionary token
        3 | 4 if !tokens.is_empty() => {
            let token = rng_pick(rng, tokens);
            insert(rng, data, token);
        }
        // overwrite a byte with an interesting one
        5 if len > 0 => {
            let at = rng.below(len);
            data[at] = *rng.pick(&[
                0, 0xff, 0x7f, 0x80, b'"', b'\\', b'\n', b'\r', b'{', b'}', b'[', b']', b',', b':',
                b' ', b'\t', b'0', b'-',
            ]);
        }
        // flip a bit
        6 if len > 0 => {
            let at = rng.below(len);
            data[at] ^= 1 << rng.below(8);
        }
        // invalid UTF-8
        7 => {
            let bad = rng_pick(rng, BAD_UTF8);
            insert(rng, data, bad);
        }
        // a byte order mark in front
        8 => {
            let bom = rng_pick(rng, BOMS).to_vec();
            data.splice(0..0, bom);
        }
        // line ends: CRLF everywhere, a lone CR, a newline in the middle
        9 => match rng.below(3) {
            0 => {
                let mut out = Vec::with_capacity(data.len() + 8);
                for &b in data.iter() {
                    if b == b'\n' {
                        out.push(b'\r');
                    }
                    out.push(b);
                }
                *data = out;
            }
            1 => insert(rng, data, b"\r"),
            _ => insert(rng, data, b"\n"),
        },
        // crossover: our head, their tail
        10 if !other.is_empty() => {
            data.truncate(rng.below(len + 1));
            let from = rng.below(other.len());
            data.extend_from_slice(&other[from..]);
        }
        // repeat a short range many times
        11 if len > 0 => {
            let at = rng.below(len);
            let n = rng.size(len - at).clamp(1, 64);
            let times = if rng.one_in(8) { 2000 } else { 20 };
            let piece = data[at..at + n].repeat(rng.range(2, times));
            data.splice(at..at, piece);
        }
        // deep nesting at a random point
        12 => {
            let depth = nesting_depth(rng);
            let (open, close): (&[u8], &[u8]) = *rng.pick(&[
                (&b"["[..], &b"]"[..]),
                (&b"{\"a\":"[..], &b"}"[..]),
                (&b"- "[..], &b""[..]),
                (&b"{a: "[..], &b"}"[..]),
            ]);
            let at = rng.below(len + 1);
            let mut piece = open.repeat(depth);
            if rng.one_in(2) {
                piece.extend_from_slice(b"1");
                piece.extend(close.repeat(depth));
            }
            data.splice(at..at, piece);
        }
        // a run of digits becomes an edge-case number
        13 => {
            let number = rng.pick(NUMBERS).as_bytes();
            match data.iter().position(|b| b.is_ascii_digit()) {
                Some(first) if rng.one_in(2) => {
                    let end = data[first..]
                        .iter()
                        .position(|b| !b.is_ascii_digit())
                        .map_or(data.len(), |e| first + e);
                    data.splice(first..end, number.iter().copied());
                }
                _ => insert(rng, data, number),
            }
        }
        // a random byte string
        14 => {
            let n = rng.size(32).max(1);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            insert(rng, data, &bytes);
        }
        // swap two bytes
        _ if len > 1 => {
            let a = rng.below(len);
            let b = rng.below(len);
            data.swap(a, b);
        }
        _ => data.push(rng.next_u64() as u8),
    }
}

/// Applies one to eight mutations (exponentially fewer of the many);
/// the result is cut to `max_len`.
pub fn havoc(rng: &mut Rng, data: &mut Vec<u8>, tokens: &[&[u8]], other: &[u8], max_len: usize) {
    let rounds = 1 << rng.below(4);
    for _ in 0..rounds {
        mutate_once(rng, data, tokens, other);
        if data.len() > max_len {
            data.truncate(max_len);
        }
    }
}

/// A nesting depth around the interesting bounds (serde's 128, the
/// generator's 64, and far beyond).
pub fn nesting_depth(rng: &mut Rng) -> usize {
    *rng.pick(&[2, 10, 63, 64, 65, 127, 128, 129, 200, 1000, 10_000, 100_000])
}

fn rng_pick<'a>(rng: &mut Rng, items: &[&'a [u8]]) -> &'a [u8] {
    items[rng.below(items.len())]
}

fn insert(rng: &mut Rng, data: &mut Vec<u8>, piece: &[u8]) {
    let at = rng.below(data.len() + 1);
    data.splice(at..at, piece.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn havoc_changes_inputs_and_respects_the_cap() {
        let mut rng = Rng::new(1);
        let seed = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
        let mut changed = 0;
        for _ in 0..2000 {
            let mut data = seed.clone();
            havoc(&mut rng, &mut data, &[b"null"], b"[1,2]", 4096);
            assert!(data.len() <= 4096);
            if data != seed {
                changed += 1;
            }
        }
        assert!(changed > 1800, "{changed}");
    }
}
