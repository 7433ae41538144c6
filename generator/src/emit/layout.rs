//! Tool rows (the `ToolDef` literals of a module's `ROWS` table) written
//! directly in `prettyplease`'s layout.
//!
//! Going through `quote` → `syn` → `prettyplease` was most of the time of
//! emitting a large API's modules (Microsoft Graph's run to 250 MB), yet a
//! tool row has a fixed shape. [`Doc`] describes that shape and
//! [`Doc::render`] lays it out as `prettyplease` does: a group stays on one
//! line when it fits in the margin (a struct literal only when it is short
//! too), otherwise it breaks one element a line. Near either threshold the
//! layout is not predicted: `render` gives `None` and the caller formats
//! that item with `prettyplease` itself, so the text is the same either way
//! (the tests compare both on every tool of the fixtures).

/// Columns `prettyplease` fills before breaking a group.
const MARGIN: usize = 89;
/// Widest struct literal `prettyplease` keeps on one line.
const STRUCT_MAX_WIDTH: usize = 34;

/// An expression of a tool static.
#[derive(Debug, Clone)]
pub enum Doc {
    /// Text that never breaks (a literal, a path, a number).
    Atom(String),
    /// A deferred schema literal: `prettyplease` sees the placeholder
    /// identifier, so the text is laid out as wide as the placeholder.
    Deferred {
        /// The text written by the direct layout (empty when only tokens
        /// are made from the doc).
        text: String,
        /// The placeholder identifier ([`super::deferred::Deferred::placeholder`]).
        placeholder: String,
    },
    /// `Path { field: value, … }`.
    Struct(&'static str, Vec<(&'static str, Doc)>),
    /// `&[a, b]`.
    Slice(Vec<Doc>),
    /// `(a, b)`.
    Tuple(Vec<Doc>),
    /// `f(a, b)`.
    Call(&'static str, Vec<Doc>),
}

/// Whether a group laid out flat from `col`, `flat` wide, fits in the
/// margin: `Some(true)` fits, `Some(false)` does not, `None` when that
/// depends on whether the `suffix` columns that follow it on its line
/// (a comma, closing brackets) count.
fn fits(col: usize, flat: usize, suffix: usize) -> Option<bool> {
    if col + flat + suffix <= MARGIN {
        Some(true)
    } else if col + flat > MARGIN {
        Some(false)
    } else {
        None
    }
}

impl Doc {
    /// A string literal atom (escaped as `proc_macro2` writes it).
    pub fn str(s: &str) -> Doc {
        Doc::Atom(super::string_literal::string_literal(s))
    }

    /// `Some(doc)`.
    pub fn some(doc: Doc) -> Doc {
        Doc::Call("Some", vec![doc])
    }

    /// The width of the one-line layout, in bytes or in characters.
    fn width_in(&self, bytes: bool) -> usize {
        let list = |items: &[Doc]| {
            items.iter().map(|d| d.width_in(bytes)).sum::<usize>()
                + 2 * items.len().saturating_sub(1)
        };
        match self {
            Doc::Atom(s) if bytes => s.len(),
            Doc::Atom(s) => s.chars().count(),
            Doc::Deferred { placeholder, .. } => placeholder.len(),
            Doc::Struct(path, fields) => {
                let inner: usize = fields
                    .iter()
                    .map(|(n, v)| n.len() + 2 + v.width_in(bytes))
                    .sum();
                path.len() + 4 + inner + 2 * fields.len().saturating_sub(1)
            }
            Doc::Slice(items) => 3 + list(items),
            Doc::Tuple(items) => 2 + list(items),
            Doc::Call(f, args) => f.len() + 2 + list(args),
        }
    }

    /// `decide` applied to the width of the one-line layout; `None` when
    /// the answer depends on whether widths count bytes or characters
    /// (non-ASCII text that sits near a threshold).
    fn by_width(&self, decide: impl Fn(usize) -> Option<bool>) -> Option<bool> {
        let bytes = decide(self.width_in(true))?;
        (bytes == decide(self.width_in(false))?).then_some(bytes)
    }

    /// Whether the doc may be laid out on one line at all: a struct
    /// literal wider than [`STRUCT_MAX_WIDTH`] always breaks, and so does
    /// every group around it. `None` when too close to tell.
    fn may_be_flat(&self) -> Option<bool> {
        let all = |items: &[Doc]| -> Option<bool> {
            let mut all = true;
            for item in items {
                all &= item.may_be_flat()?;
            }
            Some(all)
        };
        match self {
            Doc::Atom(_) | Doc::Deferred { .. } => Some(true),
            Doc::Struct(_, fields) => {
                if self.by_width(|w| Some(w <= STRUCT_MAX_WIDTH))? {
                    let mut all = true;
                    for (_, value) in fields {
                        all &= value.may_be_flat()?;
                    }
                    Some(all)
                } else {
                    Some(false)
                }
            }
            Doc::Slice(items) | Doc::Tuple(items) | Doc::Call(_, items) => all(items),
        }
    }

    /// Whether the doc is laid out on one line from `col` with `suffix`
    /// more columns after it (`None`: too close to tell).
    fn stays_flat(&self, col: usize, suffix: usize) -> Option<bool> {
        if !self.may_be_flat()? {
            return Some(false);
        }
        self.by_width(|w| fits(col, w, suffix))
    }

    /// The one-line layout.
    pub(super) fn flat(&self, out: &mut String) {
        fn list(items: &[Doc], out: &mut String) {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                item.flat(out);
            }
        }
        match self {
            Doc::Atom(s) | Doc::Deferred { text: s, .. } => out.push_str(s),
            Doc::Struct(path, fields) => {
                out.push_str(path);
                out.push_str(" { ");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(name);
                    out.push_str(": ");
                    value.flat(out);
                }
                out.push_str(" }");
            }
            Doc::Slice(items) => {
                out.push_str("&[");
                list(items, out);
                out.push(']');
            }
            Doc::Tuple(items) => {
                out.push('(');
                list(items, out);
                out.push(')');
            }
            Doc::Call(f, args) => {
                out.push_str(f);
                out.push('(');
                list(args, out);
                out.push(')');
            }
        }
    }

    /// Lays the doc out into `out`, which ends at column `col` of a line
    /// indented `indent`; `suffix` columns follow it on its last line.
    /// `None` when the layout is too close to a threshold to predict.
    pub fn render(&self, out: &mut String, indent: usize, col: usize, suffix: usize) -> Option<()> {
        let flat = match self {
            // Text never breaks, however long.
            Doc::Atom(_) | Doc::Deferred { .. } => true,
            _ => self.stays_flat(col, suffix)?,
        };
        if flat {
            self.flat(out);
            return Some(());
        }
        match self {
            Doc::Atom(_) | Doc::Deferred { .. } => Some(()),
            Doc::Struct(path, fields) => {
                out.push_str(path);
                out.push_str(" {\n");
                for (name, value) in fields {
                    field(out, indent + 4, name, value)?;
                }
                pad(out, indent);
                out.push('}');
                Some(())
            }
            Doc::Slice(items) | Doc::Tuple(items) => {
                let (open, close) = match self {
                    Doc::Slice(_) => ("&[\n", ']'),
                    _ => ("(\n", ')'),
                };
                out.push_str(open);
                for item in items {
                    element(out, indent + 4, item)?;
                }
                pad(out, indent);
                out.push(close);
                Some(())
            }
            Doc::Call(f, args) => {
                match args.as_slice() {
                    // A struct literal argument is block-like: the call
                    // stays open on the line (`Some(BodyDef {`).
                    [arg @ Doc::Struct(..)] => {
                        out.push_str(f);
                        out.push('(');
                        arg.render(out, indent, col + f.len() + 1, suffix + 1)?;
                        out.push(')');
                    }
                    // Any other arguments go one a line (`Text(\n "…",\n)`).
                    _ => {
                        out.push_str(f);
                        out.push_str("(\n");
                        for arg in args {
                            element(out, indent + 4, arg)?;
                        }
                        pad(out, indent);
                        out.push(')');
                    }
                }
                Some(())
            }
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// `name: value,` on its own line.
fn field(out: &mut String, indent: usize, name: &str, value: &Doc) -> Option<()> {
    pad(out, indent);
    out.push_str(name);
    out.push_str(": ");
    value.render(out, indent, indent + name.len() + 2, 1)?;
    out.push_str(",\n");
    Some(())
}

/// `item,` on its own line.
fn element(out: &mut String, indent: usize, item: &Doc) -> Option<()> {
    pad(out, indent);
    item.render(out, indent, indent, 1)?;
    out.push_str(",\n");
    Some(())
}

/// One tool's row of its module's `ROWS` table: `ToolDef { fields },` at
/// the indent of an array element. `None` when some part is too close to
/// a layout threshold.
pub fn tool_row(fields: &[(&'static str, Doc)]) -> Option<String> {
    let mut out = String::with_capacity(4096);
    out.push_str("    ToolDef {\n");
    for (name, value) in fields {
        field(&mut out, 8, name, value)?;
    }
    out.push_str("    },\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(doc: &Doc, indent: usize, col: usize) -> Option<String> {
        let mut out = String::new();
        doc.render(&mut out, indent, col, 1)?;
        Some(out)
    }

    #[test]
    fn groups_stay_flat_when_they_fit_and_break_when_they_do_not() {
        let short = Doc::Slice(vec![Doc::str("a"), Doc::str("b")]);
        assert_eq!(rendered(&short, 4, 17).unwrap(), r#"&["a", "b"]"#);
        let long = Doc::Slice(vec![Doc::str(&"x".repeat(60)), Doc::str(&"y".repeat(30))]);
        assert_eq!(
            rendered(&long, 4, 17).unwrap(),
            format!(
                "&[\n        \"{}\",\n        \"{}\",\n    ]",
                "x".repeat(60),
                "y".repeat(30)
            )
        );
        // Too close to the margin to predict.
        let edge = Doc::Slice(vec![Doc::str(&"z".repeat(67))]);
        assert!(rendered(&edge, 4, 17).is_none());
        // Non-ASCII text: decided when bytes and characters agree, else not.
        let long = Doc::Call("T", vec![Doc::str(&format!("é{}", "x".repeat(120)))]);
        assert_eq!(
            rendered(&long, 4, 20).unwrap(),
            format!("T(\n        \"é{}\",\n    )", "x".repeat(120))
        );
        let short = Doc::Call("T", vec![Doc::str("é…")]);
        assert_eq!(rendered(&short, 4, 20).unwrap(), "T(\"é…\")");
        // At the margin, and wider in bytes than in characters: unpredictable.
        let edge = Doc::Call("T", vec![Doc::str(&format!("{}ééé", "x".repeat(61)))]);
        assert!(rendered(&edge, 4, 20).is_none());
        let envelope = Doc::Struct("Envelope::Result", vec![("list", Doc::Atom("true".into()))]);
        assert_eq!(
            rendered(&envelope, 4, 14).unwrap(),
            "Envelope::Result { list: true }"
        );
        let route = Doc::Struct(
            "Route",
            vec![
                ("when", Doc::Atom("None".into())),
                ("template", Doc::str("/zones/{zone_id}")),
            ],
        );
        assert_eq!(
            rendered(&route, 8, 8).unwrap(),
            "Route {\n            when: None,\n            template: \"/zones/{zone_id}\",\n        }"
        );
    }
}
