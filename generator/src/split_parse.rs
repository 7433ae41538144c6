//! Parsing a large JSON document on several threads.
//!
//! `serde_json` parses a whole document on one thread, and for a spec of
//! a few megabytes that is the longest step before anything else can run.
//! [`parse`] finds the members of the root object, and of its large member
//! objects, with a byte scan, parses each of those values with `serde_json`
//! on the rayon pool, and puts the objects back together in order: the
//! same [`Value`] as `serde_json::from_slice` (members inserted in order,
//! so a repeated key keeps its first place and its last value). It gives
//! up (`None`) wherever it could differ, and the caller parses the whole
//! document as before: any syntax error (so messages keep their line and
//! column) and documents nested deeper than [`MAX_DEPTH`] (whose recursion
//! limit `serde_json` counts from the root).

use std::ops::Range;

use rayon::prelude::*;
use serde_json::{Map, Value};

/// Documents smaller than this are parsed in one piece.
const MIN_SPLIT_BYTES: usize = 256 * 1024;
/// Member objects smaller than this are parsed in one piece.
const MIN_SPLIT_MEMBER_BYTES: usize = 64 * 1024;
/// How many object levels below the root are split.
const MAX_SPLIT_LEVELS: usize = 3;
/// Deepest nesting parsed in pieces (`serde_json` refuses 128 levels).
const MAX_DEPTH: usize = 100;

/// A value of the document: parsed whole, or an object split into members.
enum Part {
    Whole,
    /// Members in order, each key as the range of its JSON string.
    Object(Vec<(Range<usize>, Part)>),
}

/// `bytes` (a JSON document whose root is an object) parsed as
/// `serde_json::from_slice` parses it, or `None` when that is left to
/// `serde_json` (small documents, syntax errors, deep nesting).
pub(crate) fn parse(bytes: &[u8]) -> Option<Value> {
    if bytes.len() < MIN_SPLIT_BYTES {
        return None;
    }
    let mut scan = Scanner {
        bytes,
        deepest: 0,
        wholes: Vec::new(),
    };
    let start = scan.skip_ws(0);
    let (root, end) = scan.object(start, 0, 0)?;
    if scan.skip_ws(end) != bytes.len() || scan.deepest > MAX_DEPTH {
        return None;
    }
    let values: Vec<Value> = scan
        .wholes
        .par_iter()
        .map(|range| serde_json::from_slice(&bytes[range.clone()]).ok())
        .collect::<Option<_>>()?;
    let mut values = values.into_iter();
    assemble(bytes, root, &mut values)
}

/// The value of `part`, taking parsed values from `values` in order.
fn assemble(bytes: &[u8], part: Part, values: &mut impl Iterator<Item = Value>) -> Option<Value> {
    match part {
        Part::Whole => values.next(),
        Part::Object(members) => {
            let mut map = Map::with_capacity(members.len());
            for (key, member) in members {
                let key: String = serde_json::from_slice(&bytes[key]).ok()?;
                map.insert(key, assemble(bytes, member, values)?);
            }
            Some(Value::Object(map))
        }
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    /// Deepest nesting seen (the root object is level 1).
    deepest: usize,
    /// The values to parse whole, in document order.
    wholes: Vec<Range<usize>>,
}

impl Scanner<'_> {
    fn skip_ws(&self, mut i: usize) -> usize {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(i) {
            i += 1;
        }
        i
    }

    /// The object at `start` (at `depth` levels below the root, split
    /// when `level` allows) and the index just past it.
    fn object(&mut self, start: usize, depth: usize, level: usize) -> Option<(Part, usize)> {
        if self.bytes.get(start) != Some(&b'{') {
            return None;
        }
        self.deepest = self.deepest.max(depth + 1);
        let mut members = Vec::new();
        let mut i = self.skip_ws(start + 1);
        if self.bytes.get(i) == Some(&b'}') {
            return Some((Part::Object(members), i + 1));
        }
        loop {
            let key_end = self.string_end(i)?;
            let key = i..key_end;
            i = self.skip_ws(key_end);
            if self.bytes.get(i) != Some(&b':') {
                return None;
            }
            let value_start = self.skip_ws(i + 1);
            let (part, value_end) =
                if level < MAX_SPLIT_LEVELS && self.bytes.get(value_start) == Some(&b'{') {
                    // Split while scanning, so each byte is read once; a
                    // member that turns out small is parsed whole after all.
                    let first_whole = self.wholes.len();
                    let (part, end) = self.object(value_start, depth + 1, level + 1)?;
                    if end - value_start >= MIN_SPLIT_MEMBER_BYTES {
                        (part, end)
                    } else {
                        self.wholes.truncate(first_whole);
                        self.wholes.push(value_start..end);
                        (Part::Whole, end)
                    }
                } else {
                    let end = self.value_end(value_start, depth + 1)?;
                    self.wholes.push(value_start..end);
                    (Part::Whole, end)
                };
            members.push((key, part));
            i = self.skip_ws(value_end);
            match self.bytes.get(i) {
                Some(b',') => i = self.skip_ws(i + 1),
                Some(b'}') => return Some((Part::Object(members), i + 1)),
                _ => return None,
            }
        }
    }

    /// Index just past the string starting at `start`.
    fn string_end(&self, start: usize) -> Option<usize> {
        if self.bytes.get(start) != Some(&b'"') {
            return None;
        }
        // Specs are mostly text inside strings, so a vectorised search for
        // the two bytes that matter in a string is most of the scan's speed.
        let mut i = start + 1;
        loop {
            i += memchr::memchr2(b'"', b'\\', self.bytes.get(i..)?)?;
            if self.bytes[i] == b'"' {
                return Some(i + 1);
            }
            i += 2;
        }
    }

    /// Index just past the value starting at `start` (`depth` levels below
    /// the root), found by brackets and strings only (`serde_json` checks
    /// the rest when it parses the value).
    fn value_end(&mut self, start: usize, depth: usize) -> Option<usize> {
        match self.bytes.get(start)? {
            b'"' => self.string_end(start),
            b'{' | b'[' => {
                let mut open = 0usize;
                let mut i = start;
                loop {
                    let skip = self
                        .bytes
                        .get(i..)?
                        .iter()
                        .position(|&b| STRUCTURAL[usize::from(b)])?;
                    i += skip;
                    match self.bytes[i] {
                        b'"' => {
                            i = self.string_end(i)?;
                            continue;
                        }
                        b'{' | b'[' => {
                            open += 1;
                            self.deepest = self.deepest.max(depth + open);
                        }
                        _ => {
                            open -= 1;
                            if open == 0 {
                                return Some(i + 1);
                            }
                        }
                    }
                    i += 1;
                }
            }
            _ => {
                let len = self.bytes[start..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                    .unwrap_or(self.bytes.len() - start);
                (len > 0).then_some(start + len)
            }
        }
    }
}

/// The bytes that open a string or open or close a container.
static STRUCTURAL: [bool; 256] = {
    let mut table = [false; 256];
    table[b'"' as usize] = true;
    table[b'{' as usize] = true;
    table[b'}' as usize] = true;
    table[b'[' as usize] = true;
    table[b']' as usize] = true;
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A document over the split threshold: `filler` pads it.
    fn big(inner: &str) -> String {
        let filler: Vec<String> = (0..4000)
            .map(|i| {
                format!(r#""k{i}": {{"type": "string", "description": "text {i} \u00e9 \"q\""}}"#)
            })
            .collect();
        format!(
            r#"{{"openapi": "3.0.3", "components": {{"schemas": {{{}}}}}, {inner}}}"#,
            filler.join(",\n  ")
        )
    }

    /// The parse equals serde_json's, member order and values included.
    fn same(text: &str) {
        let expected: Value = serde_json::from_str(text).unwrap();
        let got = parse(text.as_bytes()).expect("split");
        assert_eq!(got, expected);
        let keys = |v: &Value| -> Vec<String> {
            v["components"]["schemas"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(keys(&got), keys(&expected));
    }

    #[test]
    fn equals_serde_json() {
        same(&big(
            r#""paths": {"/a": {"get": {"x": [1, 2.5, -3e2, true, null, "s"]}}}"#,
        ));
        // A repeated key keeps its first place and its last value.
        same(&big(
            r#""openapi": "3.1.0", "info": {}, "e": [], "s": "}{][\\\"""#,
        ));
        same(&big("\"x\" : { } ,\n\t\"y\"\r\n:\n[ ]"));
    }

    #[test]
    fn small_invalid_and_deep_documents_are_left_to_serde_json() {
        assert!(parse(br#"{"a": 1}"#).is_none());
        for bad in [
            big(r#""a": 1,"#),
            big(r#""a": tru"#),
            big(r#""a" 1"#),
            big(r#""a": "\x""#),
            big(r#""a": [1,]"#),
            big(r#""a": {"b": 1}}, "c": 2"#),
            // A bad key, at the root and inside a member scanned for splitting.
            big(r#""\x": 1"#),
            big(r#""a": {"b": {"\x": 1}}"#),
            big(r#""a": {"b": {"c" 1}}"#),
            format!("{} x", big(r#""a": 1"#)),
        ] {
            assert!(serde_json::from_str::<Value>(&bad).is_err(), "{bad:.80}");
            assert!(parse(bad.as_bytes()).is_none(), "{bad:.80}");
        }
        let deep = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(big(&format!(r#""d": {deep}"#)).as_bytes()).is_none());
        let shallow = format!("{}1{}", "[".repeat(50), "]".repeat(50));
        same(&big(&format!(r#""d": {shallow}"#)));
    }
}
