//! Root `$defs` split out of schema texts, so each definition is emitted
//! once for every tool that uses it.
//!
//! APIs whose objects refer to each other (Stripe's expandable fields, a
//! `customer` inside every `charge` and back) give each tool's output
//! schema the same hundred recursive definitions in its root `$defs`. The
//! generated crate keeps each distinct definition text once (a
//! `crate::schemas` constant named by content hash) and each tool keeps
//! its root text without `$defs` plus the list of `(name, definition)`
//! pairs; the runtime puts them back together with [`assemble`]'s twin,
//! `toolforge_runtime::catalogue::assemble_schema`, giving back the exact
//! text the tool had before the split.

/// A schema text with its root `$defs` taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The root object without its `$defs` member.
    pub root: String,
    /// Each `$defs` entry in order: its name and its JSON text.
    pub defs: Vec<(String, &'a str)>,
}

/// Index just past the JSON string starting at `start` (a `"`).
/// (`memchr2` skips the long runs of plain text in descriptions.)
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        i += memchr::memchr2(b'\\', b'"', bytes.get(i..)?)?;
        match bytes[i] {
            b'\\' => i += 2,
            _ => return Some(i + 1),
        }
    }
    None
}

/// Index just past the JSON value starting at `start` (no whitespace, as
/// `serde_json::to_string` writes it).
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']'))
                .unwrap_or(bytes.len() - start);
            (len > 0).then_some(start + len)
        }
    }
}

/// The members of the object text `text[start..end]` (which must be one
/// whole object): `(key start, key end, value start, value end)` each.
fn members(text: &str, start: usize, end: usize) -> Option<Vec<(usize, usize, usize, usize)>> {
    let bytes = &text.as_bytes()[..end];
    if bytes.get(start) != Some(&b'{') || bytes.last() != Some(&b'}') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = start + 1;
    if bytes.get(i) == Some(&b'}') {
        return (i + 1 == end).then_some(out);
    }
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, i)?;
        if bytes.get(key_end) != Some(&b':') {
            return None;
        }
        let value_end = value_end(bytes, key_end + 1)?;
        out.push((i, key_end, key_end + 1, value_end));
        match bytes.get(value_end) {
            Some(b',') => i = value_end + 1,
            Some(b'}') if value_end + 1 == end => return Some(out),
            _ => return None,
        }
    }
}

/// `text` (compact JSON) split at its root `$defs` when that is the root
/// object's last member and holds at least one entry; `None` otherwise,
/// and whenever [`assemble`] would not give `text` back exactly.
pub fn split_defs(text: &str) -> Option<Split<'_>> {
    let root = members(text, 0, text.len())?;
    let &(key_start, key_end, value_start, value_end) = root.last()?;
    if &text[key_start..key_end] != "\"$defs\"" {
        return None;
    }
    let entries = members(text, value_start, value_end)?;
    if entries.is_empty() {
        return None;
    }
    let mut defs = Vec::with_capacity(entries.len());
    for (ks, ke, vs, ve) in entries {
        let name: String = serde_json::from_str(&text[ks..ke]).ok()?;
        defs.push((name, &text[vs..ve]));
    }
    // The member before `$defs` ends with `,`; the only member leaves `{`.
    let cut = if root.len() == 1 {
        key_start
    } else {
        key_start - 1
    };
    let split = Split {
        root: format!("{}}}", &text[..cut]),
        defs,
    };
    let pairs: Vec<(&str, &str)> = split.defs.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    (assemble(&split.root, &pairs) == text).then_some(split)
}

/// The schema text of `root` with `defs` as its root `$defs` (the last
/// member): the inverse of [`split_defs`], written as the runtime does.
pub fn assemble(root: &str, defs: &[(&str, &str)]) -> String {
    let Some(body) = root.strip_suffix('}').filter(|_| !defs.is_empty()) else {
        return root.to_string();
    };
    let size: usize = defs.iter().map(|(n, d)| n.len() + d.len() + 4).sum();
    let mut out = String::with_capacity(root.len() + size + 12);
    out.push_str(body);
    if body != "{" {
        out.push(',');
    }
    out.push_str("\"$defs\":{");
    for (i, (name, def)) in defs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String((*name).to_string()).to_string());
        out.push(':');
        out.push_str(def);
    }
    out.push_str("}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> Option<Split<'_>> {
        let split = split_defs(text)?;
        let pairs: Vec<(&str, &str)> = split.defs.iter().map(|(n, d)| (n.as_str(), *d)).collect();
        assert_eq!(assemble(&split.root, &pairs), text);
        Some(split)
    }

    #[test]
    fn splits_the_last_root_defs() {
        let text = r##"{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}},"m\"x":{"enum":["}",{"a":[1,2]}]}}}"##;
        let split = round_trip(text).unwrap();
        assert_eq!(
            split.root,
            r##"{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}}"##
        );
        assert_eq!(split.defs.len(), 2);
        assert_eq!(split.defs[1].0, "m\"x");
        assert_eq!(split.defs[1].1, r#"{"enum":["}",{"a":[1,2]}]}"#);
        let only = r#"{"$defs":{"a":true}}"#;
        assert_eq!(round_trip(only).unwrap().root, "{}");
    }

    #[test]
    fn leaves_other_texts_whole() {
        for text in [
            r#"{"type":"object"}"#,
            r#"{"$defs":{},"type":"object"}"#,
            r#"{"$defs":{"a":{}},"type":"object"}"#,
            r#"{"$defs":{}}"#,
            r#"{"properties":{"$defs":{"a":{}}}}"#,
            r#"[{"$defs":{"a":{}}}]"#,
            r#"{ "$defs": {"a": {}} }"#,
            r#"{"a":"\"$defs\":{"}"#,
            "true",
            "",
            "{",
        ] {
            assert!(split_defs(text).is_none(), "{text}");
        }
        assert_eq!(assemble(r#"{"a":1}"#, &[]), r#"{"a":1}"#);
        assert_eq!(assemble("true", &[("a", "{}")]), "true");
    }
}
