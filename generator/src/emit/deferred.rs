//! Schema texts written as raw string literals after formatting.
//!
//! Large JSON literals are the bulk of a product module. Sent through
//! `quote` → `syn` → `prettyplease` they are escaped, re-parsed and copied
//! for nothing (the formatter never breaks a literal). Instead each one is
//! a placeholder identifier in the token stream and is substituted, as a
//! raw string (`r#"{"type":"object"}"#`, readable and unescaped), into the
//! formatted text. Substitution happens only in code, never inside string
//! literals or comments, so spec text cannot forge a placeholder.

use proc_macro2::{Ident, Span};

use crate::quoted::quoted_end;

/// Prefix of placeholder identifiers.
const MARK: &str = "__toolforge_text_";

/// Texts waiting for substitution, by placeholder number.
#[derive(Debug, Default)]
pub struct Deferred {
    texts: Vec<String>,
    /// Number of the first placeholder (a part of a module numbers its
    /// placeholders as the whole module would).
    first: usize,
}

/// `text` as a Rust raw string literal with as few `#` as needed. JSON
/// text never holds a bare carriage return, which raw strings reject;
/// such text falls back to an escaped literal.
pub fn raw_literal(text: &str) -> String {
    if text.contains('\r') {
        return super::string_literal::string_literal(text);
    }
    let mut longest = 0;
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'"' {
            let run = bytes[i + 1..].iter().take_while(|c| **c == b'#').count();
            longest = longest.max(run);
        }
    }
    let hashes = "#".repeat(longest + 1);
    let mut out = String::with_capacity(text.len() + 2 * hashes.len() + 3);
    out.push('r');
    out.push_str(&hashes);
    out.push('"');
    out.push_str(text);
    out.push('"');
    out.push_str(&hashes);
    out
}

impl Deferred {
    /// Placeholders numbered from `first`.
    pub fn starting_at(first: usize) -> Self {
        Deferred {
            texts: Vec::new(),
            first,
        }
    }

    /// A placeholder identifier standing for `text` as a string literal.
    pub fn text(&mut self, text: String) -> Ident {
        let id = Ident::new(
            &Self::placeholder(self.first + self.texts.len()),
            Span::call_site(),
        );
        self.texts.push(text);
        id
    }

    /// The placeholder identifier of number `n`.
    pub fn placeholder(n: usize) -> String {
        format!("{MARK}{n}")
    }

    /// Texts given so far.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether no text was given.
    #[cfg(any(test, feature = "oracles"))]
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Replaces every placeholder found in code (outside string literals
    /// and comments) by its literal. `None` if some placeholder is missing
    /// or unknown (a generator bug, reported as an emit error).
    pub fn substitute(&self, formatted: &str) -> Option<String> {
        let extra: usize = self.texts.iter().map(|t| t.len() + 8).sum();
        let mut out = String::with_capacity(formatted.len() + extra);
        let mut used = vec![false; self.texts.len()];
        let bytes = formatted.as_bytes();
        let mut i = 0;
        let mut copied = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => i = quoted_end(bytes, i).unwrap_or(bytes.len()),
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    i = bytes[i..]
                        .iter()
                        .position(|b| *b == b'\n')
                        .map_or(bytes.len(), |n| i + n);
                }
                b'_' if formatted[i..].starts_with(MARK) => {
                    let start = i + MARK.len();
                    let digits = bytes[start..]
                        .iter()
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                    let n: usize = formatted[start..start + digits].parse().ok()?;
                    let n = n.checked_sub(self.first)?;
                    let text = self.texts.get(n)?;
                    out.push_str(&formatted[copied..i]);
                    out.push_str(&raw_literal(text));
                    used[n] = true;
                    i = start + digits;
                    copied = i;
                }
                _ => i += 1,
            }
        }
        out.push_str(&formatted[copied..]);
        used.iter().all(|u| *u).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_literals_pick_enough_hashes() {
        assert_eq!(raw_literal("{}"), "r#\"{}\"#");
        assert_eq!(
            raw_literal(r##"{"$ref":"#/a"}"##),
            "r##\"{\"$ref\":\"#/a\"}\"##"
        );
        assert_eq!(raw_literal("a\rb"), "\"a\\rb\"");
        for text in [r#"x"#, r##""#""##, r###""##"#"###, "ü \\ \" \n"] {
            let lit = raw_literal(text);
            let parsed: syn::LitStr = syn::parse_str(&lit).unwrap();
            assert_eq!(parsed.value(), text);
        }
    }

    #[test]
    fn substitutes_only_in_code() {
        let mut d = Deferred::default();
        let a = d.text("{\"a\":1}".into());
        let b = d.text("[]".into());
        let formatted = format!(
            "/// see {MARK}0 here\nstatic X: &str = {a};\nstatic Y: &str = \"{MARK}1 \\\" {MARK}0\";\nstatic Z: &str = {b};\n"
        );
        let out = d.substitute(&formatted).unwrap();
        assert_eq!(
            out,
            format!(
                "/// see {MARK}0 here\nstatic X: &str = r#\"{{\"a\":1}}\"#;\nstatic Y: &str = \"{MARK}1 \\\" {MARK}0\";\nstatic Z: &str = r#\"[]\"#;\n"
            )
        );
        assert!(d.substitute("static X: &str = \"\";").is_none());
        assert!(d.substitute(&format!("{a} {MARK}7")).is_none());
    }
}
