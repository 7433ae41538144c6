//! A tool's human texts: its title when the spec gives no `summary`, and
//! descriptions written in HTML (Stripe's `<p>Returns a list…</p>`)
//! turned into Markdown, which MCP clients show and models read better.

/// HTML elements whose closing tag marks a text as HTML.
const ELEMENTS: &[&str] = &[
    "a",
    "b",
    "blockquote",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "i",
    "li",
    "ol",
    "p",
    "pre",
    "span",
    "strong",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// Whether `text` holds HTML: a closing tag of one of [`ELEMENTS`]
/// (`</p>`, `</code >`, any case). A lone `<br/>` or an angle-bracketed
/// placeholder (`/rooms/<uuid>`) is not enough: Markdown and prose use
/// angle brackets too, and such a text is left as written.
pub(crate) fn has_html(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.match_indices("</").any(|(at, _)| {
        let rest = &lower[at + 2..];
        let name_len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        let after = rest[name_len..].trim_start();
        after.starts_with('>') && ELEMENTS.contains(&&rest[..name_len])
    })
}

/// `text` as Markdown when it holds HTML ([`has_html`]), else unchanged;
/// `None` means it was unchanged.
pub(crate) fn markdown(text: &str) -> Option<String> {
    if !has_html(text) {
        return None;
    }
    // htmd never fails on malformed input (html5ever repairs it); an
    // error would be an I/O-like failure of its writer: keep the text.
    let converted = htmd::convert(text).ok()?;
    Some(converted.trim().to_string())
}

/// A readable title made of a tool name: words separated by spaces, the
/// first capitalised (`customers_sources_list` → `Customers sources list`).
pub(crate) fn title_of_name(name: &str) -> String {
    let words = name.replace('_', " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_recognised_by_a_closing_tag() {
        assert!(has_html("<p>Returns a list of your customers.</p>"));
        assert!(has_html("Use <code>limit</code >."));
        assert!(has_html("<P>Upper</P>"));
        // Placeholders, void tags, comparisons and Markdown stay as they are.
        for text in [
            "GET /rooms/<uuid>?force_queue=false",
            "First line<br/>second line",
            "a </ b and x</y>",
            "`a < b` and **bold**",
            "",
        ] {
            assert!(!has_html(text), "{text}");
            assert_eq!(markdown(text), None, "{text}");
        }
    }

    #[test]
    fn html_becomes_markdown() {
        assert_eq!(
            markdown("<p>Returns a list of your customers.</p>").as_deref(),
            Some("Returns a list of your customers.")
        );
        assert_eq!(
            markdown(r#"<p>See <a href="https://x.example/d">the docs</a> and <code>limit</code>.</p><ul><li>one</li><li>two</li></ul>"#)
                .as_deref(),
            Some("See [the docs](https://x.example/d) and `limit`.\n\n*   one\n*   two")
        );
        // Script and markup never survive as tags.
        let out = markdown("<p>x</p><script>alert(1)</script>").unwrap();
        assert!(!out.contains("<script"), "{out}");
    }

    #[test]
    fn titles_from_names() {
        assert_eq!(
            title_of_name("customers_sources_list"),
            "Customers sources list"
        );
        assert_eq!(title_of_name("x"), "X");
        assert_eq!(title_of_name(""), "");
    }
}
