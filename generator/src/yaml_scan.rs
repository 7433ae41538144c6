//! A linear pre-scan of YAML text for deeply nested flow collections.
//!
//! The YAML scanner (libyaml's, ported to Rust) keeps one "simple key" slot
//! per open flow collection (`[` / `{`) and walks all of them for every
//! token, so `a: [[[[…` costs time quadratic in its nesting: 40,000 levels
//! (80 KB) take most of a minute in a debug build. The deserializer refuses
//! more than 128 levels, but only after the scanner has read everything.
//!
//! [`flow_depth_beyond`] follows libyaml's tokenizer (`fetch_next_token`
//! and the scalar scanners) without building anything: it tracks the
//! block indentation stack, plain, quoted and block scalars, comments,
//! anchors, tags and document markers exactly where they decide whether a
//! `[` or `{` is a token, and counts flow nesting. Where libyaml would
//! fail on the input it stops (libyaml scans no further either). A
//! document it reports is one the deserializer would refuse anyway (more
//! than 128 levels), so nothing that loads today is refused.

/// Where flow collections first nest deeper than `limit`: the line and
/// column (1-based, in characters) of the bracket, or `None` when they
/// never do (or libyaml stops first).
pub(crate) fn flow_depth_beyond(text: &[u8], limit: usize) -> Option<(usize, usize)> {
    scan(text, limit, false)
}

/// Where collections of either style first nest deeper than `limit`: open
/// flow collections plus open block collections (libyaml's indentation
/// stack) at the token that opens one too many, or `None` when they never
/// do (or libyaml stops first). For small documents whose legitimate
/// nesting is shallow (a `SKILL.md` frontmatter), so a bound far below the
/// deserializer's 128 levels refuses the input before libyaml reads it.
pub(crate) fn nesting_beyond(text: &[u8], limit: usize) -> Option<(usize, usize)> {
    scan(text, limit, true)
}

fn scan(text: &[u8], limit: usize, blocks: bool) -> Option<(usize, usize)> {
    // libyaml reads UTF-16 when the text starts with its byte order mark.
    let utf16 = match text {
        [0xFF, 0xFE, rest @ ..] => Some((rest, false)),
        [0xFE, 0xFF, rest @ ..] => Some((rest, true)),
        _ => None,
    };
    let decoded;
    let text = match utf16 {
        Some((rest, big_endian)) => {
            let units: Vec<u16> = rest
                .chunks(2)
                .map(|c| {
                    let pair = [c[0], c.get(1).copied().unwrap_or(0)];
                    if big_endian {
                        u16::from_be_bytes(pair)
                    } else {
                        u16::from_le_bytes(pair)
                    }
                })
                .collect();
            decoded = String::from_utf16_lossy(&units);
            decoded.as_bytes()
        }
        None => text,
    };
    let mut scan = Scan {
        text,
        at: 0,
        line: 0,
        column: 0,
        depth: 0,
        indent: -1,
        indents: Vec::new(),
        key_column: None,
        blocks,
        deep: None,
    };
    scan.run(limit)
}

struct Scan<'a> {
    text: &'a [u8],
    at: usize,
    /// Line of `at` (0-based).
    line: usize,
    /// Column of `at`, in characters (as libyaml counts).
    column: isize,
    /// Open flow collections.
    depth: usize,
    /// libyaml's `indent`: column of the innermost block collection.
    indent: isize,
    indents: Vec<isize>,
    /// Column of the first token of a potential simple key on this line
    /// (block context).
    key_column: Option<isize>,
    /// Whether open block collections count towards the nesting.
    blocks: bool,
    /// Where a block collection first nested too deep (`blocks` only).
    deep: Option<(usize, usize)>,
}

/// Characters of a tag (libyaml's URI characters without `,[]`).
fn tag_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_;/?:@&=+$.%!~*'()".contains(&b)
}

impl Scan<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.at + ahead).copied()
    }

    /// Length of the line break at `at + ahead` (libyaml's breaks: CR, LF,
    /// CRLF, NEL, LS, PS), 0 when there is none.
    fn break_len(&self, ahead: usize) -> usize {
        let rest = self.text.get(self.at + ahead..).unwrap_or_default();
        match rest {
            [b'\r', b'\n', ..] | [0xC2, 0x85, ..] => 2,
            [b'\r' | b'\n', ..] => 1,
            [0xE2, 0x80, 0xA8 | 0xA9, ..] => 3,
            _ => 0,
        }
    }

    fn is_blank(&self, ahead: usize) -> bool {
        matches!(self.peek(ahead), Some(b' ' | b'\t'))
    }

    /// Blank, line break or end of input.
    fn is_blankz(&self, ahead: usize) -> bool {
        matches!(self.peek(ahead), None | Some(0))
            || self.is_blank(ahead)
            || self.break_len(ahead) > 0
    }

    /// Advances one character.
    fn bump(&mut self) {
        let len = match self.peek(0) {
            Some(b) if b >= 0xF0 => 4,
            Some(b) if b >= 0xE0 => 3,
            Some(b) if b >= 0xC0 => 2,
            _ => 1,
        };
        self.at = (self.at + len).min(self.text.len());
        self.column += 1;
    }

    /// Advances over a line break (if there is one).
    fn bump_break(&mut self) {
        let len = self.break_len(0);
        if len > 0 {
            self.at += len;
            self.line += 1;
            self.column = 0;
        }
    }

    fn at_document_marker(&self) -> bool {
        self.column == 0
            && (self.text.get(self.at..self.at + 3) == Some(b"---")
                || self.text.get(self.at..self.at + 3) == Some(b"..."))
            && self.is_blankz(3)
    }

    fn unroll(&mut self, column: isize) {
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    /// Opens a block collection at `column` when it is deeper than the
    /// innermost one; `limit` is only checked when blocks count.
    fn roll(&mut self, column: isize, limit: usize) {
        if self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            if self.blocks && self.nesting() > limit && self.deep.is_none() {
                self.deep = Some(self.position());
            }
        }
    }

    /// Open collections that count towards the limit.
    fn nesting(&self) -> usize {
        if self.blocks {
            self.depth.saturating_add(self.indents.len())
        } else {
            self.depth
        }
    }

    /// The 1-based line and column of `at`.
    fn position(&self) -> (usize, usize) {
        (
            self.line.saturating_add(1),
            usize::try_from(self.column).unwrap_or(0).saturating_add(1),
        )
    }

    /// A token that can start a simple key begins here.
    fn key_token(&mut self) {
        if self.depth == 0 && self.key_column.is_none() {
            self.key_column = Some(self.column);
        }
    }

    fn run(&mut self, limit: usize) -> Option<(usize, usize)> {
        loop {
            self.skip_to_token();
            let b = self.peek(0)?;
            // libyaml's reader refuses control characters: it stops here.
            if (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7F {
                return None;
            }
            let before = self.at;
            if self.depth == 0 {
                self.unroll(self.column);
            }
            if self.column == 0 && b == b'%' {
                self.skip_line(); // a directive
                continue;
            }
            if self.at_document_marker() {
                self.unroll(-1);
                self.key_column = None;
                self.at += 3;
                self.column += 3;
                continue;
            }
            let flow = self.depth > 0;
            match b {
                b'[' | b'{' => {
                    self.key_token();
                    self.depth += 1;
                    if self.nesting() > limit {
                        return Some(self.position());
                    }
                    self.bump();
                }
                b']' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.bump();
                }
                b',' => self.bump(),
                b'-' if self.is_blankz(1) => {
                    if !flow {
                        self.roll(self.column, limit);
                        self.key_column = None;
                    }
                    self.bump();
                }
                b'?' | b':' if flow || self.is_blankz(1) => {
                    if !flow {
                        let column = match b {
                            b':' => self.key_column.unwrap_or(self.column),
                            _ => self.column,
                        };
                        self.roll(column, limit);
                        self.key_column = None;
                    }
                    self.bump();
                }
                b'*' | b'&' => {
                    self.key_token();
                    self.bump();
                    let start = self.at;
                    while self
                        .peek(0)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                    {
                        self.bump();
                    }
                    let follows = self.is_blankz(0)
                        || matches!(
                            self.peek(0),
                            Some(b'?' | b':' | b',' | b']' | b'}' | b'%' | b'@' | b'`')
                        );
                    if self.at == start || !follows {
                        return None; // libyaml: "did not find expected alphabetic or numeric character"
                    }
                }
                b'!' => {
                    self.key_token();
                    self.bump();
                    if self.peek(0) == Some(b'<') {
                        self.bump();
                        while self
                            .peek(0)
                            .is_some_and(|c| tag_char(c) || matches!(c, b',' | b'[' | b']'))
                        {
                            self.bump();
                        }
                        if self.peek(0) != Some(b'>') {
                            return None; // "did not find the expected '>'"
                        }
                        self.bump();
                    } else {
                        while self.peek(0).is_some_and(tag_char) {
                            self.bump();
                        }
                    }
                    if !(self.is_blankz(0) || (flow && self.peek(0) == Some(b','))) {
                        return None; // "did not find expected whitespace or line break"
                    }
                }
                b'|' | b'>' if !flow => {
                    self.block_scalar()?;
                    self.key_column = None;
                }
                b'\'' | b'"' => {
                    self.key_token();
                    self.quoted(b)?;
                }
                // No token starts with these (and no block scalar in flow).
                b'%' | b'@' | b'`' | b'|' | b'>' => return None,
                _ => {
                    self.key_token();
                    self.plain();
                }
            }
            if let Some(deep) = self.deep {
                return Some(deep);
            }
            if self.at == before {
                // Not a token libyaml reads either (an invalid character):
                // step over it rather than stop, never missing a bracket.
                self.bump();
            }
        }
    }

    /// libyaml's `scan_to_next_token`: blanks, byte order marks at the
    /// start of a line, comments and line breaks.
    fn skip_to_token(&mut self) {
        loop {
            if self.column == 0 && self.text.get(self.at..self.at + 3) == Some(b"\xEF\xBB\xBF") {
                self.bump();
            }
            while self.is_blank(0) {
                self.bump();
            }
            if self.peek(0) == Some(b'#') {
                self.skip_line();
            }
            if self.break_len(0) == 0 {
                return;
            }
            self.bump_break();
            if self.depth == 0 {
                self.key_column = None;
            }
        }
    }

    /// To the next line break (not over it).
    fn skip_line(&mut self) {
        while self.peek(0).is_some() && self.break_len(0) == 0 {
            self.bump();
        }
    }

    /// A single- or double-quoted scalar (it may span lines).
    fn quoted(&mut self, quote: u8) -> Option<()> {
        self.bump();
        loop {
            if self.at_document_marker() {
                return None; // "found unexpected document indicator"
            }
            match self.peek(0) {
                None => return None, // "found unexpected end of stream"
                Some(b'\'') if quote == b'\'' && self.peek(1) == Some(b'\'') => {
                    self.bump();
                    self.bump();
                }
                Some(c) if c == quote => {
                    self.bump();
                    return Some(());
                }
                Some(b'\\') if quote == b'"' => {
                    self.bump();
                    if self.break_len(0) > 0 {
                        self.bump_break();
                    } else {
                        self.bump();
                    }
                }
                Some(_) if self.break_len(0) > 0 => {
                    self.bump_break();
                    self.key_column = None;
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// A plain scalar, as libyaml's `scan_plain_scalar` delimits it.
    fn plain(&mut self) {
        let flow = self.depth > 0;
        let indent = self.indent + 1;
        loop {
            if self.at_document_marker() || self.peek(0) == Some(b'#') {
                return;
            }
            while !self.is_blankz(0) {
                let ends = (self.peek(0) == Some(b':')
                    && (self.is_blankz(1)
                        || (flow
                            && matches!(
                                self.peek(1),
                                Some(b',' | b'?' | b'[' | b']' | b'{' | b'}')
                            ))))
                    || (flow && matches!(self.peek(0), Some(b',' | b'[' | b']' | b'{' | b'}')));
                if ends {
                    return;
                }
                self.bump();
            }
            if !(self.is_blank(0) || self.break_len(0) > 0) {
                return;
            }
            while self.is_blank(0) || self.break_len(0) > 0 {
                if self.break_len(0) > 0 {
                    self.bump_break();
                    self.key_column = None;
                } else {
                    self.bump();
                }
            }
            if !flow && self.column < indent {
                return;
            }
        }
    }

    /// A block scalar (`|` or `>`), as libyaml's `scan_block_scalar`
    /// delimits it; `None` where libyaml fails.
    fn block_scalar(&mut self) -> Option<()> {
        self.bump();
        let mut increment = 0;
        for _ in 0..2 {
            match self.peek(0) {
                Some(b'+' | b'-') => self.bump(),
                Some(b'0') => return None, // "found an indentation indicator equal to 0"
                Some(c @ b'1'..=b'9') if increment == 0 => {
                    increment = isize::from(c - b'0');
                    self.bump();
                }
                _ => break,
            }
        }
        while self.is_blank(0) {
            self.bump();
        }
        if self.peek(0) == Some(b'#') {
            self.skip_line();
        }
        if self.peek(0).is_none() {
            return Some(());
        }
        if self.break_len(0) == 0 {
            return None; // "did not find expected comment or line break"
        }
        self.bump_break();
        let mut indent = if increment == 0 {
            0
        } else if self.indent >= 0 {
            self.indent + increment
        } else {
            increment
        };
        self.block_breaks(&mut indent)?;
        while self.column == indent && self.peek(0).is_some() {
            self.skip_line();
            if self.peek(0).is_none() {
                break;
            }
            self.bump_break();
            self.block_breaks(&mut indent)?;
        }
        Some(())
    }

    /// libyaml's `scan_block_scalar_breaks`: indentation and empty lines,
    /// fixing the indentation when it is still 0.
    fn block_breaks(&mut self, indent: &mut isize) -> Option<()> {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || self.column < *indent) && self.peek(0) == Some(b' ') {
                self.bump();
            }
            max_indent = max_indent.max(self.column);
            if (*indent == 0 || self.column < *indent) && self.peek(0) == Some(b'\t') {
                return None; // "found a tab character where an indentation space is expected"
            }
            if self.break_len(0) == 0 {
                break;
            }
            self.bump_break();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beyond(text: &str) -> Option<(usize, usize)> {
        flow_depth_beyond(text.as_bytes(), 3)
    }

    #[test]
    fn counts_flow_nesting() {
        assert_eq!(beyond("a: [[[]]]\n"), None);
        assert_eq!(beyond("a: [[[[]]]]\n"), Some((1, 7)));
        assert_eq!(beyond("a: {b: {c: {d: {}}}}\n"), Some((1, 16)));
        assert_eq!(beyond("- [\n  [\n   [\n    [1]]]]\n"), Some((4, 5)));
        assert_eq!(beyond("a: &x [[[!t [1]]]]\n"), Some((1, 13)));
        assert_eq!(beyond("a: [[[1]]]\nb: [[[1]]]\n"), None);
        assert_eq!(beyond("[[[\"a\":[1]]]]"), Some((1, 8)));
        assert_eq!(beyond("a: [[[ 'x\n ]]' , [1]]]]\n"), Some((2, 8)));
    }

    #[test]
    fn skips_what_libyaml_reads_as_scalars() {
        for text in [
            "a: see [[[[ and {{{{ in a plain scalar\n",
            "a: x[[[[y\n",
            "a: '[[[[' \nb: \"{{{{ \\\" [[[[\"\n",
            "a: 'it''s [[[['\n",
            "a: 'folded over\n  two [[[[ lines'\n",
            "a: \"escaped \\\n  [[[[ break\"\n",
            "# [[[[ a comment\na: 1 # [[[[\n",
            "a: |\n  [[[[ block\n  [[[[ text\n\n  [[[[\nb: 1\n",
            "- >-\n   [[[[ folded\n",
            "a: |2\n    [[[[ indented by the indicator\n",
            "a: plain\n  [[[[ continued\n",
            "- a: plain\n    [[[[ continued\n",
            "a: !<tag:x,[[[[> v\n",
            "a: [x, 'y [[[[', \"{{{{\"]\n",
        ] {
            assert_eq!(beyond(text), None, "{text}");
        }
    }

    #[test]
    fn finds_nesting_after_scalars_end() {
        // A quote closed on a later line: the brackets after it are tokens.
        assert_eq!(beyond("a: 'x\n y' \nb: [[[[1]]]]\n"), Some((3, 7)));
        // Less indented than the block scalar's content: tokens again.
        assert_eq!(beyond("- a: |\n    x\n  b: [[[[1]]]]\n"), Some((3, 9)));
        // A plain scalar ends where the indentation does.
        assert_eq!(beyond("a:\n  b: plain\n  c: [[[[1]]]]\n"), Some((3, 9)));
        // A tag ends at a bracket.
        assert_eq!(beyond("a: [!t[[[1]]]]\n"), None);
        assert_eq!(beyond("a: [[!t [[1]]]]\n"), Some((1, 10)));
    }

    #[test]
    fn stops_where_libyaml_fails() {
        assert_eq!(beyond("a: @x [[[[1]]]]\n"), None);
        assert_eq!(beyond("a: 'unterminated [[[[1]]]]\n"), None);
        assert_eq!(beyond("a: !t[[[[1]]]]\n"), None);
    }

    #[test]
    fn control_characters_and_utf16() {
        // libyaml stops at a NUL; the scan does not loop on it.
        assert_eq!(beyond("\0\0[[[[1]]]]"), None);
        assert_eq!(beyond("a: [[\u{1}[[[1]]]]]"), None);
        // UTF-16 (with its byte order mark) is read as libyaml reads it.
        for big_endian in [false, true] {
            let mut bytes = if big_endian {
                vec![0xFE, 0xFF]
            } else {
                vec![0xFF, 0xFE]
            };
            for unit in "a: [[[[1]]]]\n".encode_utf16() {
                if big_endian {
                    bytes.extend(unit.to_be_bytes());
                } else {
                    bytes.extend(unit.to_le_bytes());
                }
            }
            assert_eq!(flow_depth_beyond(&bytes, 3), Some((1, 7)), "{big_endian}");
        }
    }

    #[test]
    fn deep_input_is_scanned_in_linear_time() {
        let text = format!("a: {}1{}\n", "[".repeat(1_000_000), "]".repeat(1_000_000));
        let started = std::time::Instant::now();
        assert_eq!(flow_depth_beyond(text.as_bytes(), 128), Some((1, 4 + 128)));
        let text = format!("a: {}\n", "[1, ".repeat(500_000));
        assert_eq!(flow_depth_beyond(text.as_bytes(), 1_000_000), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn nesting_counts_block_collections_with_flow_ones() {
        let nest = |t: &str, limit| nesting_beyond(t.as_bytes(), limit);
        // Three block mappings, then a flow sequence: four levels.
        let text = "a:\n  b:\n    c: [1]\n";
        assert_eq!(nest(text, 4), None);
        assert_eq!(nest(text, 3), Some((3, 8)));
        assert_eq!(nest(text, 2), Some((3, 6)));
        // Block sequences on one line, as a hostile frontmatter writes them.
        let text = format!("x: {}1\n", "- ".repeat(100));
        assert_eq!(nest(&text, 101), None);
        assert_eq!(nest(&text, 64), Some((1, 4 + 2 * 63)));
        // Siblings at one indentation do not add up.
        assert_eq!(nest("a: 1\nb: 2\nc:\n  - 1\n  - 2\nd: 3\n", 2), None);
        // The flow-only scan ignores block collections as before.
        assert_eq!(flow_depth_beyond(text.as_bytes(), 1), None);
    }

    #[test]
    fn deep_block_nesting_is_found_in_one_pass() {
        let text = format!("a: {}1\n", "- ".repeat(1_000_000));
        assert_eq!(nesting_beyond(text.as_bytes(), 64), Some((1, 4 + 2 * 63)));
        let text = format!("a: {}1{}\n", "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert_eq!(nesting_beyond(text.as_bytes(), 64), Some((1, 4 + 63)));
    }
}
