//! Quoting a bounded part of a text that may hold a secret.
//!
//! Redacting after a cut misses a secret the cut splits: the kept part
//! ends with the secret's first characters (in whatever form it was
//! written), which no longer spell the whole secret, and a quote of 40
//! characters of a base64 `Authorization` value decodes to most of the
//! client secret. So the whole text is redacted first, and a cut that
//! leaves the beginning of a secret (in any form the redactor decodes, or
//! an escape the cut broke) at its end drops that beginning too.

use super::{INTRODUCERS, MATCH_BUDGET, Redactor, unit};

/// The longest escape the redactor decodes (`&#1114111;`).
const LONGEST_ESCAPE: usize = 10;

/// The cut marker.
const ELLIPSIS: char = '…';

impl Redactor {
    /// `text` redacted, and cut to at most `max_chars` characters (plus
    /// `…`) without leaving the start of a secret at the cut.
    pub fn clip(&self, text: &str, max_chars: usize) -> String {
        clip_redacted(&self.redact_str(text), max_chars, &[self])
    }

    /// Where the earliest beginning of a secret that runs into the end of
    /// `text` starts (`text.len()` when there is none). A trailing escape
    /// that was cut short counts as a beginning.
    pub fn unfinished_tail(&self, text: &[u8]) -> usize {
        let longest = self.needles.iter().map(|n| n.len()).max().unwrap_or(0);
        let window = longest.saturating_mul(LONGEST_ESCAPE);
        let from = text.len().saturating_sub(window);
        for i in from..text.len() {
            if cut_escape(text, i)
                || self.needles.iter().any(|needle| {
                    let mut budget = MATCH_BUDGET;
                    runs_out(text, i, needle, &mut budget)
                })
            {
                return escape_start(text, i);
            }
        }
        text.len()
    }
}

/// `text` (already redacted by every one of `redactors`) cut to at most
/// `max_chars` characters, with `…` marking a cut; a secret's beginning
/// left at the cut by any of `redactors` is dropped as well.
pub fn clip_redacted(text: &str, max_chars: usize, redactors: &[&Redactor]) -> String {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return text.to_owned();
    };
    let head = &text[..cut];
    let mut keep = redactors
        .iter()
        .map(|r| r.unfinished_tail(head.as_bytes()))
        .min()
        .unwrap_or(cut);
    while !head.is_char_boundary(keep) {
        keep -= 1;
    }
    let mut out = head[..keep].to_owned();
    out.push(ELLIPSIS);
    out
}

/// Whether `needle` matches from `i`, unit by unit, until `text` ends
/// before the needle does (at least one unit matched). Mirrors
/// `match_from`, which it must agree with on what a unit decodes to.
fn runs_out(text: &[u8], mut i: usize, needle: &[u8], budget: &mut u32) -> bool {
    for (k, &want) in needle.iter().enumerate() {
        let Some(left) = budget.checked_sub(1) else {
            return false;
        };
        *budget = left;
        let Some(&raw) = text.get(i) else {
            return true;
        };
        if cut_escape(text, i) {
            return true;
        }
        let (got, len) = unit(text, i);
        if len > 1 && matches!(raw, b'%' | b'&') && raw == want {
            if got == Some(want) && runs_out(text, i + len, &needle[k + 1..], budget) {
                return true;
            }
            i += 1;
            continue;
        }
        if got != Some(want) {
            return false;
        }
        i += len;
    }
    false
}

/// Whether an escape introducer at `i` that reads as a plain byte is
/// close enough to the end of `text` to be an escape the cut broke.
fn cut_escape(text: &[u8], i: usize) -> bool {
    INTRODUCERS.contains(&text[i]) && unit(text, i).1 == 1 && text.len() - i < LONGEST_ESCAPE
}

/// `i`, or the start of an escape that `i` lies inside.
fn escape_start(text: &[u8], i: usize) -> usize {
    (i.saturating_sub(LONGEST_ESCAPE - 1)..i)
        .find(|&k| INTRODUCERS.contains(&text[k]) && k + unit(text, k).1 > i)
        .unwrap_or(i)
}

#[cfg(test)]
#[path = "clip_tests.rs"]
mod tests;
