//! Removing secrets from text an upstream produced, in every form an
//! upstream plausibly echoes them in.
//!
//! An API that quotes the request back (an error that repeats the
//! `Authorization` header, a debug endpoint, a redirect URL) may encode the
//! credential on the way: JSON `\u0074`-escapes (wholly or for one
//! character), `\/`, URL percent-encoding, HTML character references, or a
//! changed letter case. Comparing raw bytes misses all of those, and once a
//! JSON parser or the sandbox has decoded the text it is too late. A
//! [`Redactor`] therefore matches on the *decoded* form: it walks the text as
//! a sequence of units, each an escape sequence or one byte, decodes every
//! unit, folds ASCII case, and replaces each run of units that spells a
//! secret with [`REDACTED`]. Replacements cover whole units, so a redacted
//! JSON document is still JSON and parses to strings without the secret.
//!
//! A secret is matched in the forms it is written in; the forms it is
//! *sent* in that no decoding undoes (base64 of a basic pair, `+` for a
//! space) come from [`forms`] and are secrets of their own. Text quoted
//! in part is redacted whole and then cut with [`Redactor::clip`], which
//! never leaves a secret's beginning at the cut.
//!
//! Cost: one pass over the bytes. Bytes that can neither start an escape nor
//! match a secret's first character are skipped through a lookup table
//! (benchmark: `cargo bench -p toolforge-runtime --bench redact`).

use std::borrow::Cow;

mod clip;
pub mod forms;

pub use clip::clip_redacted;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Bytes that start an escape the redactor decodes.
const INTRODUCERS: [u8; 3] = [b'\\', b'%', b'&'];

/// Finds and replaces a fixed set of ASCII secrets in decoded text.
#[derive(Clone)]
pub struct Redactor {
    /// Each secret's bytes, ASCII-lowercased.
    needles: Vec<Box<[u8]>>,
    /// Bytes where a match attempt may start: an escape introducer or any
    /// case of a needle's first byte.
    starts: [bool; 256],
    /// Bytes that may follow a plain first byte: any case of a needle's
    /// second byte, or an escape introducer. Most letters that could start
    /// a secret are ruled out by the next byte without decoding anything.
    seconds: [bool; 256],
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.needles.len())
    }
}

impl Redactor {
    /// A redactor for `secrets`. Secrets with non-ASCII bytes are matched on
    /// their raw bytes only; empty secrets and duplicates are skipped. Even
    /// a short secret is redacted everywhere: a garbled result is better
    /// than a leaked credential.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut needles: Vec<Box<[u8]>> = Vec::new();
        for secret in secrets {
            if secret.is_empty() {
                continue;
            }
            let needle: Box<[u8]> = secret.bytes().map(|b| b.to_ascii_lowercase()).collect();
            if !needles.contains(&needle) {
                needles.push(needle);
            }
        }
        // Longest first: a secret that contains another is replaced whole.
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        let mut starts = [false; 256];
        let mut seconds = [false; 256];
        for b in INTRODUCERS {
            starts[usize::from(b)] = true;
            seconds[usize::from(b)] = true;
        }
        for needle in &needles {
            let first = needle[0];
            starts[usize::from(first)] = true;
            starts[usize::from(first.to_ascii_uppercase())] = true;
            match needle.get(1) {
                Some(&second) => {
                    seconds[usize::from(second)] = true;
                    seconds[usize::from(second.to_ascii_uppercase())] = true;
                }
                None => seconds = [true; 256],
            }
        }
        Self {
            needles,
            starts,
            seconds,
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// Whether `text` holds a secret in any of the recognised forms.
    pub fn contains(&self, text: &[u8]) -> bool {
        self.next_match(text, 0).is_some()
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when
    /// there was nothing to replace.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_slice(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Replacements cover whole units and every escape unit is ASCII,
            // so the remaining bytes keep their UTF-8 boundaries; lossy
            // conversion is only a guard.
            Cow::Owned(bytes) => Cow::Owned(match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }),
        }
    }

    /// `bytes` with every secret replaced by [`REDACTED`] (no copy when
    /// there is none).
    pub fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        match self.redact_slice(&bytes) {
            Cow::Borrowed(_) => bytes,
            Cow::Owned(out) => out,
        }
    }

    fn redact_slice<'a>(&self, text: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(first) = self.next_match(text, 0) else {
            return Cow::Borrowed(text);
        };
        let mut out = Vec::with_capacity(text.len());
        let mut copied = 0;
        let mut found = Some(first);
        while let Some((start, end)) = found {
            out.extend_from_slice(&text[copied..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            copied = end;
            found = self.next_match(text, end);
        }
        out.extend_from_slice(&text[copied..]);
        Cow::Owned(out)
    }

    /// The byte span of the first secret at or after unit boundary `from`,
    /// widened to whole units.
    ///
    /// A match may start at any byte, also inside an escape: the raw text
    /// is what a client reading the body as text sees (`%A` followed by the
    /// token spells `%A0…` and would hide it from a unit-by-unit walk).
    /// Such a span is widened to the escape around it, so the replacement
    /// never leaves half an escape behind.
    fn next_match(&self, text: &[u8], from: usize) -> Option<(usize, usize)> {
        if self.needles.is_empty() {
            return None;
        }
        // The unit (from `from`'s segmentation) that holds byte `i`.
        let (mut unit_start, mut unit_end) = (from, from);
        let mut i = from;
        loop {
            while i < text.len() && !self.starts[usize::from(text[i])] {
                i += 1;
            }
            if i >= text.len() {
                return None;
            }
            // A plain first byte must be followed by the second byte or an
            // escape. Passing a plain byte keeps the unit bookkeeping right:
            // it is a one-byte unit, and units only change where a byte is
            // examined.
            if !INTRODUCERS.contains(&text[i])
                && !text
                    .get(i + 1)
                    .is_some_and(|&next| self.seconds[usize::from(next)])
            {
                i += 1;
                continue;
            }
            // Skipped bytes are one-byte units (escape introducers are
            // start bytes), so `i` past the current unit starts a new one.
            if i >= unit_end {
                unit_start = i;
                unit_end = i + unit(text, i).1;
            }
            for needle in &self.needles {
                if let Some(end) = match_at(text, i, needle) {
                    let mut widened = unit_start;
                    while widened < end {
                        widened += unit(text, widened).1;
                    }
                    return Some((unit_start, widened));
                }
            }
            i += 1;
        }
    }
}

/// Where a match of `needle` starting at byte `at` ends.
fn match_at(text: &[u8], at: usize, needle: &[u8]) -> Option<usize> {
    let mut budget = MATCH_BUDGET;
    match_from(text, at, needle, &mut budget)
}

/// Steps one match attempt may take: the search branches only where the
/// secret itself holds `%` or `&` (see [`match_from`]), so honest secrets
/// never come near it.
const MATCH_BUDGET: u32 = 4096;

/// Matches `needle` from `i`, unit by unit. A `%` or `&` that starts a valid
/// escape may also stand for itself (a secret can contain `%41` literally);
/// the decoded reading is tried first. A backslash escape is only read
/// decoded, so a replacement never splits one and JSON stays JSON.
fn match_from(text: &[u8], mut i: usize, needle: &[u8], budget: &mut u32) -> Option<usize> {
    for (k, &want) in needle.iter().enumerate() {
        *budget = budget.checked_sub(1)?;
        let &raw = text.get(i)?;
        let (got, len) = unit(text, i);
        if len > 1 && matches!(raw, b'%' | b'&') && raw == want {
            if got == Some(want)
                && let Some(end) = match_from(text, i + len, &needle[k + 1..], budget)
            {
                return Some(end);
            }
            i += 1;
            continue;
        }
        if got != Some(want) {
            return None;
        }
        i += len;
    }
    Some(i)
}

/// The unit starting at `i`: its decoded ASCII byte, lowercased (`None` for
/// a decoded character outside ASCII), and its length in bytes (≥ 1).
fn unit(text: &[u8], i: usize) -> (Option<u8>, usize) {
    let b = text[i];
    let decoded = match b {
        b'\\' => backslash_escape(&text[i..]),
        b'%' => hex_at(text, i + 1, 2).map(|code| (ascii(code), 3)),
        b'&' => char_reference(&text[i..]),
        _ => None,
    };
    decoded.unwrap_or((Some(b.to_ascii_lowercase()), 1))
}

/// `\uXXXX`, `\xHH` and the one-character escapes of JSON and JavaScript.
fn backslash_escape(rest: &[u8]) -> Option<(Option<u8>, usize)> {
    match rest.get(1)? {
        b'u' => hex_at(rest, 2, 4).map(|code| (ascii(code), 6)),
        b'x' => hex_at(rest, 2, 2).map(|code| (ascii(code), 4)),
        c @ (b'"' | b'\\' | b'/' | b'\'') => Some((Some(*c), 2)),
        b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'0' => Some((None, 2)),
        _ => None,
    }
}

/// `&#NN;`, `&#xHH;` and the named references for ASCII punctuation.
fn char_reference(rest: &[u8]) -> Option<(Option<u8>, usize)> {
    const NAMED: [(&[u8], u8); 5] = [
        (b"&quot;", b'"'),
        (b"&amp;", b'&'),
        (b"&lt;", b'<'),
        (b"&gt;", b'>'),
        (b"&apos;", b'\''),
    ];
    if rest.get(1) != Some(&b'#') {
        return NAMED
            .iter()
            .find(|(name, _)| {
                rest.len() >= name.len() && rest[..name.len()].eq_ignore_ascii_case(name)
            })
            .map(|(name, c)| (Some(*c), name.len()));
    }
    let (radix, digits_at) = match rest.get(2) {
        Some(b'x' | b'X') => (16, 3),
        _ => (10, 2),
    };
    // At most 7 digits (U+10FFFF is 1114111), then `;`.
    let digits = rest[digits_at..]
        .iter()
        .take(8)
        .take_while(|b| char::from(**b).is_digit(radix))
        .count();
    if digits == 0 || digits > 7 || rest.get(digits_at + digits) != Some(&b';') {
        return None;
    }
    let text = std::str::from_utf8(&rest[digits_at..digits_at + digits]).ok()?;
    let code = u32::from_str_radix(text, radix).ok()?;
    Some((ascii(code), digits_at + digits + 1))
}

fn ascii(code: u32) -> Option<u8> {
    u8::try_from(code)
        .ok()
        .filter(u8::is_ascii)
        .map(|b| b.to_ascii_lowercase())
}

/// The value of `n` hex digits at `text[at..]`, if they are all there.
fn hex_at(text: &[u8], at: usize, n: usize) -> Option<u32> {
    let digits = text.get(at..at + n)?;
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = char::from(d).to_digit(16)?;
        Some(acc * 16 + v)
    })
}

#[cfg(test)]
mod tests;
