//! The markdown summary of a diff: a pull-request body, bounded in size
//! (every list shows at most `limit` entries; the JSON report has them all).

use std::fmt::Write as _;

use super::model::{ChangedTool, DiffReport, SchemaDelta};

/// Hard bound of the rendered markdown, below GitHub's 65,536-character
/// limit on pull-request bodies. [`render_markdown`] lowers the per-list
/// limit until the text fits.
pub const MAX_MARKDOWN_BYTES: usize = 60_000;

/// Text as an inline code span (backticks and line breaks replaced).
fn code(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| match c {
            '`' => '\'',
            '\n' | '\r' | '\t' => ' ',
            c => c,
        })
        .collect();
    format!("`{clean}`")
}

fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

fn list(names: &[String], sign: &str) -> Vec<String> {
    names.iter().map(|n| format!("{sign}{}", code(n))).collect()
}

fn schema_words(d: &SchemaDelta) -> String {
    if let Some(p) = &d.presence {
        return p.clone();
    }
    let mut parts: Vec<String> = d
        .properties_added
        .iter()
        .map(|p| {
            if d.properties_added_required.contains(p) {
                format!("+{} (required)", code(p))
            } else {
                format!("+{}", code(p))
            }
        })
        .collect();
    parts.extend(list(&d.properties_removed, "-"));
    if !d.required_added.is_empty() {
        parts.push(format!(
            "now required: {}",
            list(&d.required_added, "").join(", ")
        ));
    }
    if !d.required_removed.is_empty() {
        parts.push(format!(
            "now optional: {}",
            list(&d.required_removed, "").join(", ")
        ));
    }
    if d.other {
        parts.push("types or constraints".to_string());
    }
    parts.join(", ")
}

fn changed_line(c: &ChangedTool) -> String {
    let mut parts = Vec::new();
    if let Some(d) = &c.input {
        parts.push(format!("input schema ({})", schema_words(d)));
    }
    if let Some(d) = &c.output {
        parts.push(format!("output schema ({})", schema_words(d)));
    }
    if !c.permissions_added.is_empty() || !c.permissions_removed.is_empty() {
        let mut p = list(&c.permissions_added, "+");
        p.extend(list(&c.permissions_removed, "-"));
        parts.push(format!("permissions ({})", p.join(", ")));
    }
    if !c.hints.is_empty() {
        let h: Vec<String> = c
            .hints
            .iter()
            .map(|h| format!("{} {} → {}", h.hint, h.old, h.new))
            .collect();
        parts.push(format!("hints ({})", h.join(", ")));
    }
    format!("- {}: {}", code(&c.name), parts.join("; "))
}

/// Writes a `### title (n)` section with at most `limit` lines.
fn section(out: &mut String, title: &str, lines: Vec<String>, limit: usize) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n### {title} ({})\n", lines.len());
    for line in lines.iter().take(limit) {
        let _ = writeln!(out, "{line}");
    }
    if lines.len() > limit {
        let _ = writeln!(
            out,
            "- … and {} more (all of them are in the JSON report)",
            lines.len() - limit
        );
    }
}

/// Counts per product as a table of at most `limit` rows, busiest first
/// (ties by name).
fn product_table(out: &mut String, r: &DiffReport, limit: usize) {
    if r.products.is_empty() {
        return;
    }
    let mut rows: Vec<_> = r.products.iter().collect();
    rows.sort_by_key(|c| {
        (
            std::cmp::Reverse(c.added + c.removed + c.renamed + c.changed),
            c.product.as_str(),
        )
    });
    let _ = writeln!(out, "\n### By product ({})\n", rows.len());
    let _ = writeln!(
        out,
        "| product | added | removed | renamed | changed |\n|---|---:|---:|---:|---:|"
    );
    for c in rows.iter().take(limit) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            code(&c.product),
            c.added,
            c.removed,
            c.renamed,
            c.changed
        );
    }
    if rows.len() > limit {
        let _ = writeln!(
            out,
            "\n… and {} more products (all of them are in the JSON report)",
            rows.len() - limit
        );
    }
}

fn perms_suffix(perms: &[String]) -> String {
    if perms.is_empty() {
        String::new()
    } else {
        format!(" — permissions: {}", list(perms, "").join(", "))
    }
}

fn render(r: &DiffReport, limit: usize) -> String {
    let mut out = String::new();
    let (o, n, s) = (&r.old, &r.new, &r.summary);
    let _ = writeln!(
        out,
        "## Tool changes: {} → {}\n",
        code(&o.label),
        code(&n.label)
    );
    for w in &r.warnings {
        let _ = writeln!(out, "> **Warning:** {}.\n", w.message);
    }
    let _ = writeln!(out, "| | old | new |\n|---|---:|---:|");
    let rows = [
        ("operations", o.operations, n.operations),
        ("tools", o.tools, n.tools),
        ("operations without a tool", o.skipped, n.skipped),
        (
            "tools with permissions",
            o.tools_with_permissions,
            n.tools_with_permissions,
        ),
        (
            "distinct permissions",
            o.distinct_permissions,
            n.distinct_permissions,
        ),
    ];
    for (label, a, b) in rows {
        let _ = writeln!(out, "| {label} | {a} | {b} |");
    }
    let _ = writeln!(
        out,
        "\n**Operations:** {} added, {} removed, {} in both.  ",
        s.operations_added, s.operations_removed, s.operations_common
    );
    let _ = writeln!(
        out,
        "**Tools:** {} added, {} removed, {} renamed, {} changed (input schema {}, output schema {}, permissions {}, hints {}); {} changed in descriptions only.  ",
        s.tools_added,
        s.tools_removed,
        s.tools_renamed,
        s.tools_changed,
        s.changed_input,
        s.changed_output,
        s.changed_permissions,
        s.changed_hints,
        s.docs_only
    );
    let st = &r.stability;
    let _ = writeln!(
        out,
        "**Name stability:** {} ({} of {} operations present in both releases keep their tool name).  ",
        percent(st.share),
        st.kept,
        st.common
    );
    let p = &r.permissions;
    let _ = writeln!(
        out,
        "**Permissions:** tools present in both releases lose {} and gain {} of their {} permission entries ({} lost); {} permission names dropped entirely, {} introduced.",
        p.common_pairs_lost,
        p.common_pairs_gained,
        p.common_pairs_before,
        percent(p.loss_share),
        p.dropped_entirely.len(),
        p.introduced.len()
    );
    section(
        &mut out,
        "Name lock entries added to forge.json",
        r.name_lock_added
            .iter()
            .map(|e| format!("- {} keeps {}", code(&e.key), code(&e.name)))
            .collect(),
        limit,
    );
    product_table(&mut out, r, limit);
    section(
        &mut out,
        "Added tools",
        r.added
            .iter()
            .map(|t| {
                let note = t
                    .note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                format!(
                    "- {}: {}{}{note}",
                    code(&t.name),
                    code(&format!("{} {}", t.method, t.path)),
                    perms_suffix(&t.permissions)
                )
            })
            .collect(),
        limit,
    );
    section(
        &mut out,
        "Removed tools",
        r.removed
            .iter()
            .map(|t| {
                let moved = t
                    .moved_to
                    .as_ref()
                    .map(|m| format!("; its operationId is now {}", code(m)))
                    .unwrap_or_default();
                format!(
                    "- {}: {} ({}{moved}){}",
                    code(&t.name),
                    code(&format!("{} {}", t.method, t.path)),
                    t.reason,
                    perms_suffix(&t.permissions)
                )
            })
            .collect(),
        limit,
    );
    section(
        &mut out,
        "Renamed tools",
        r.renamed
            .iter()
            .map(|t| {
                format!(
                    "- {} → {}: {}",
                    code(&t.old_name),
                    code(&t.new_name),
                    code(&format!("{} {}", t.method, t.new_path))
                )
            })
            .collect(),
        limit,
    );
    section(
        &mut out,
        "Changed tools",
        r.changed.iter().map(changed_line).collect(),
        limit,
    );
    section(
        &mut out,
        "Permissions no tool requires any more",
        list(&p.dropped_entirely, "- "),
        limit,
    );
    section(
        &mut out,
        "Permissions new in this release",
        list(&p.introduced, "- "),
        limit,
    );
    let _ = writeln!(
        out,
        "\n<sub>toolforge diff; operations are matched by {}.</sub>",
        r.identity
    );
    out
}

/// The pull-request body for `report`: at most `limit` entries per list,
/// lowered further if needed so the text stays within
/// [`MAX_MARKDOWN_BYTES`]. Deterministic.
pub fn render_markdown(report: &DiffReport, limit: usize) -> String {
    let mut limit = limit;
    loop {
        let text = render(report, limit);
        if text.len() <= MAX_MARKDOWN_BYTES || limit == 0 {
            return text;
        }
        limit /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_cannot_be_broken() {
        assert_eq!(code("a`b\nc"), "`a'b c`");
    }

    #[test]
    fn schema_words_name_what_changed() {
        let d = SchemaDelta {
            presence: None,
            properties_added: vec!["a".into(), "c".into()],
            properties_added_required: vec!["c".into()],
            properties_removed: vec!["b".into()],
            required_added: vec!["d".into()],
            required_removed: vec![],
            other: true,
        };
        assert_eq!(
            schema_words(&d),
            "+`a`, +`c` (required), -`b`, now required: `d`, types or constraints"
        );
    }
}
