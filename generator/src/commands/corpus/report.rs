//! The corpus summary: counts by outcome and error kind, time and memory
//! distributions, schema-compatibility counts; rendered as markdown.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::{Outcome, SpecReport};
use crate::ir::DeclaredKind;
use crate::schema::compat::FeatureCounts;

/// Aggregates over all spec records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Specs run.
    pub specs: usize,
    /// Count per outcome (`generated`, `refused`, …).
    pub outcomes: BTreeMap<String, usize>,
    /// Refusals per `GenerateError` kind.
    pub refused_by_kind: BTreeMap<String, usize>,
    /// Refusals whose error names no JSON pointer.
    pub refused_without_pointer: usize,
    /// Tools generated.
    pub tools: usize,
    /// Operations listed without a tool.
    pub skipped: usize,
    /// Names that needed the hash fallback.
    pub hashed_names: usize,
    /// Names breaking the MCP rule (must be 0).
    pub bad_names: usize,
    /// Tools named `resource_action` (operationId missing or a path mashup).
    #[serde(default)]
    pub resource_names: usize,
    /// Specs with such tools.
    #[serde(default)]
    pub specs_with_resource_names: usize,
    /// Tool names given to more than one tool (must be 0).
    #[serde(default)]
    pub name_collisions: usize,
    /// Tool descriptions converted from HTML to Markdown.
    #[serde(default)]
    pub html_descriptions: usize,
    /// Specs with such descriptions.
    #[serde(default)]
    pub specs_with_html_descriptions: usize,
    /// Input schema features, as generated.
    pub input: FeatureCounts,
    /// Input schema features under the `strict` profile.
    pub strict: FeatureCounts,
    /// Sum of generation times (ms).
    pub total_millis: f64,
    /// Median / 90th / 99th percentile / max generation time (ms).
    pub millis: [f64; 4],
    /// Median / 90th / 99th percentile / max peak RSS (kB) of the workers.
    pub peak_rss_kb: [u64; 4],
    /// Median / 90th / 99th percentile / max products of a generated spec.
    #[serde(default)]
    pub products_per_spec: [usize; 4],
    /// Generated specs with a product name carrying a version or date word.
    #[serde(default)]
    pub specs_with_versioned_products: usize,
    /// Generated specs with a product name carrying `api` / `apis` / `rest`.
    #[serde(default)]
    pub specs_with_api_products: usize,
    /// `GET` list operations per paging convention (`none`: no known one).
    #[serde(default)]
    pub paging: BTreeMap<String, usize>,
    /// Specs with at least one list operation per convention.
    #[serde(default)]
    pub paging_specs: BTreeMap<String, usize>,
    /// Security schemes declared, per kind, over all specs.
    #[serde(default)]
    pub scheme_kinds: BTreeMap<DeclaredKind, usize>,
    /// Specs declaring at least one scheme of each kind.
    #[serde(default)]
    pub scheme_kind_specs: BTreeMap<DeclaredKind, usize>,
    /// Specs declaring any security scheme.
    #[serde(default)]
    pub specs_with_schemes: usize,
    /// Specs declaring schemes, all of kinds toolforge can send.
    #[serde(default)]
    pub specs_schemes_supported: usize,
    /// Tools that lost a declared parameter or a non-readOnly body property.
    #[serde(default)]
    pub lost_inputs: usize,
    /// Specs with such a tool.
    #[serde(default)]
    pub specs_losing_inputs: usize,
    /// The five slowest specs: name, generation time (ms), peak RSS (kB).
    #[serde(default)]
    pub slowest: Vec<(String, f64, u64)>,
}

fn percentiles<T: Copy + PartialOrd + Default>(mut v: Vec<T>) -> [T; 4] {
    if v.is_empty() {
        return [T::default(); 4];
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let at = |q: f64| {
        let i = ((v.len() - 1) as f64 * q).round() as usize;
        v[i.min(v.len() - 1)]
    };
    [at(0.5), at(0.9), at(0.99), v[v.len() - 1]]
}

impl Summary {
    /// Summarises `reports`.
    pub fn of(reports: &[SpecReport]) -> Self {
        let mut s = Summary {
            specs: reports.len(),
            ..Summary::default()
        };
        for r in reports {
            *s.outcomes
                .entry(r.outcome.as_str().to_string())
                .or_default() += 1;
            if r.outcome == Outcome::Refused {
                let kind = r.error_kind.clone().unwrap_or_else(|| "?".into());
                *s.refused_by_kind.entry(kind).or_default() += 1;
                if r.error_pointer.is_none() {
                    s.refused_without_pointer += 1;
                }
            }
            s.tools += r.tools;
            s.skipped += r.skipped;
            s.hashed_names += r.hashed_names;
            s.bad_names += r.bad_names;
            s.resource_names += r.resource_names;
            s.specs_with_resource_names += usize::from(r.resource_names > 0);
            s.name_collisions += r.name_collisions;
            s.html_descriptions += r.html_descriptions;
            s.specs_with_html_descriptions += usize::from(r.html_descriptions > 0);
            s.input.merge(&r.input);
            s.strict.merge(&r.strict);
            s.total_millis += r.millis;
            s.lost_inputs += r.lost_inputs;
            s.specs_losing_inputs += usize::from(r.lost_inputs > 0);
            s.specs_with_versioned_products += usize::from(r.versioned_products > 0);
            s.specs_with_api_products += usize::from(r.api_products > 0);
            for (convention, &n) in &r.paging {
                *s.paging.entry(convention.clone()).or_default() += n;
                *s.paging_specs.entry(convention.clone()).or_default() += 1;
            }
            for (&kind, &n) in &r.schemes {
                *s.scheme_kinds.entry(kind).or_default() += n;
                *s.scheme_kind_specs.entry(kind).or_default() += 1;
            }
            if !r.schemes.is_empty() {
                s.specs_with_schemes += 1;
                if r.schemes.keys().all(|k| k.supported()) {
                    s.specs_schemes_supported += 1;
                }
            }
        }
        s.products_per_spec = percentiles(
            reports
                .iter()
                .filter(|r| r.outcome == Outcome::Generated)
                .map(|r| r.products)
                .collect(),
        );
        s.millis = percentiles(reports.iter().map(|r| r.millis).collect());
        let mut by_time: Vec<&SpecReport> = reports.iter().collect();
        by_time.sort_by(|a, b| {
            b.millis
                .partial_cmp(&a.millis)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
        s.slowest = by_time
            .iter()
            .take(5)
            .map(|r| (r.name.clone(), r.millis, r.peak_rss_kb.unwrap_or(0)))
            .collect();
        s.peak_rss_kb = percentiles(reports.iter().filter_map(|r| r.peak_rss_kb).collect());
        s
    }

    /// Count of one outcome.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.outcomes.get(outcome.as_str()).copied().unwrap_or(0)
    }

    /// Share of specs generated, in percent.
    pub fn generated_percent(&self) -> f64 {
        if self.specs == 0 {
            return 0.0;
        }
        self.count(Outcome::Generated) as f64 * 100.0 / self.specs as f64
    }
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "0".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = flat.chars().take(max).collect();
    let cut = if cut.len() < flat.len() {
        format!("{cut}…")
    } else {
        cut
    };
    cut.replace('|', "\\|")
}

/// Markdown summary. `title` heads it; `details` adds per-spec tables
/// (refusals, failures, slowest and largest specs), which name specs and
/// quote error messages, so only the counts-only form is committed (it
/// names just the five slowest specs, with time and peak RSS, so a
/// slowdown shows in review).
pub fn render_markdown(
    title: &str,
    command: &str,
    summary: &Summary,
    reports: &[SpecReport],
    details: bool,
) -> String {
    let s = summary;
    let mut o = String::new();
    let _ = writeln!(o, "# {title}\n");
    let _ = writeln!(o, "Reproduce with `{command}`.\n");
    let _ = writeln!(
        o,
        "## Outcomes\n\n| outcome | specs | share |\n|---|---:|---:|"
    );
    for outcome in [
        Outcome::Generated,
        Outcome::Refused,
        Outcome::Panicked,
        Outcome::Crashed,
        Outcome::Timeout,
    ] {
        let n = s.count(outcome);
        let _ = writeln!(o, "| {} | {n} | {} |", outcome.as_str(), pct(n, s.specs));
    }
    let _ = writeln!(o, "| **total** | **{}** | |\n", s.specs);
    let _ = writeln!(
        o,
        "Tools: {} generated, {} operations listed without a tool. Tool names needing the hash fallback: {}; names breaking `^[a-z0-9_]{{1,64}}$`: {}.\n",
        s.tools, s.skipped, s.hashed_names, s.bad_names
    );
    let _ = writeln!(
        o,
        "Tools named `resource_action` because their operationId is missing or a path mashup: {} (in {} specs); tool names shared by two tools: {} (target 0); descriptions converted from HTML to Markdown: {} (in {} specs).\n",
        s.resource_names,
        s.specs_with_resource_names,
        s.name_collisions,
        s.html_descriptions,
        s.specs_with_html_descriptions
    );
    let _ = writeln!(
        o,
        "Tools that lost a declared parameter or a non-readOnly body property: {} (in {} specs; target 0).\n",
        s.lost_inputs, s.specs_losing_inputs
    );
    let _ = writeln!(o, "## Refusals by error kind\n");
    if s.refused_by_kind.is_empty() {
        let _ = writeln!(o, "None.\n");
    } else {
        let _ = writeln!(o, "| error kind | specs |\n|---|---:|");
        for (kind, n) in &s.refused_by_kind {
            let _ = writeln!(o, "| `{kind}` | {n} |");
        }
        let _ = writeln!(
            o,
            "\nRefusals whose message names no JSON pointer: {}.\n",
            s.refused_without_pointer
        );
    }
    let _ = writeln!(
        o,
        "## Time and memory per spec\n\n| | median | p90 | p99 | max |\n|---|---:|---:|---:|---:|"
    );
    let m = s.millis;
    let _ = writeln!(
        o,
        "| generation time (ms) | {:.1} | {:.1} | {:.1} | {:.1} |",
        m[0], m[1], m[2], m[3]
    );
    let r = s.peak_rss_kb;
    let _ = writeln!(
        o,
        "| worker peak RSS (MB) | {:.1} | {:.1} | {:.1} | {:.1} |",
        r[0] as f64 / 1024.0,
        r[1] as f64 / 1024.0,
        r[2] as f64 / 1024.0,
        r[3] as f64 / 1024.0
    );
    let _ = writeln!(
        o,
        "\nSum of generation times: {:.1} s.\n",
        s.total_millis / 1000.0
    );
    if !s.slowest.is_empty() {
        let slowest: Vec<String> = s
            .slowest
            .iter()
            .map(|(name, ms, kb)| format!("`{name}` ({ms:.0} ms, {:.0} MB)", *kb as f64 / 1024.0))
            .collect();
        let _ = writeln!(o, "Slowest five: {}.\n", slowest.join(", "));
    }
    let _ = writeln!(
        o,
        "## Input schemas and strict clients\n\nTool input schemas (one per tool) carrying each feature, as generated (`full` profile) and under `schema_profile: \"strict\"`:\n"
    );
    let _ = writeln!(o, "| feature | full | strict |\n|---|---:|---:|");
    let rows: [(&str, usize, usize); 8] = [
        ("`$ref` / `$defs`", s.input.refs, s.strict.refs),
        ("`oneOf`", s.input.one_of, s.strict.one_of),
        ("`anyOf`", s.input.any_of, s.strict.any_of),
        ("`allOf`", s.input.all_of, s.strict.all_of),
        ("`format`", s.input.format, s.strict.format),
        ("type arrays", s.input.type_array, s.strict.type_array),
        (
            "`not` / `if` / `patternProperties` / `dependentSchemas`",
            s.input.exotic,
            s.strict.exotic,
        ),
        (
            "root not `type: object` or top-level combinator",
            s.input.bad_root,
            s.strict.bad_root,
        ),
    ];
    for (name, full, strict) in rows {
        let _ = writeln!(o, "| {name} | {full} | {strict} |");
    }
    let _ = writeln!(
        o,
        "| schemas | {} | {} |\n\n`format` under strict counts only the formats Gemini accepts (`date-time`, `int32`/`int64`, `float`/`double`); `anyOf` remains (both clients accept it below the root).",
        s.input.schemas, s.strict.schemas
    );
    render_products(&mut o, s);
    render_paging(&mut o, s);
    render_security(&mut o, s);
    if details {
        render_details(&mut o, reports);
    }
    o
}

/// The "Products" section: products per generated spec and how many
/// specs still name a product after a version.
fn render_products(o: &mut String, s: &Summary) {
    let generated = s.count(Outcome::Generated);
    let p = s.products_per_spec;
    let _ = writeln!(
        o,
        "\n## Products\n\nProducts (modules) per generated spec: median {}, p90 {}, p99 {}, max {}. Specs with a product name carrying a version or date word (`v1`, `v2beta1`, `2010_04_01`, `api20100401`): {} ({}); carrying an `api` / `apis` / `rest` word: {} ({}).",
        p[0],
        p[1],
        p[2],
        p[3],
        s.specs_with_versioned_products,
        pct(s.specs_with_versioned_products, generated),
        s.specs_with_api_products,
        pct(s.specs_with_api_products, generated),
    );
}

/// The "Pagination" section: list operations per paging convention.
fn render_paging(o: &mut String, s: &Summary) {
    let total: usize = s.paging.values().sum();
    let _ = writeln!(
        o,
        "\n## Pagination\n\n`GET` list operations (a paging parameter with the member that says \"more\", or an array in the output) per convention the generator infers (`policy/pagination.rs`); `none` are lists it cannot page yet (single-page lists, `Link` headers, conventions it does not know).\n\n| convention | list operations | share | specs |\n|---|---:|---:|---:|"
    );
    for (convention, &n) in &s.paging {
        let specs = s.paging_specs.get(convention).copied().unwrap_or(0);
        let _ = writeln!(o, "| `{convention}` | {n} | {} | {specs} |", pct(n, total));
    }
    let _ = writeln!(o, "| **total** | **{total}** | | |");
}

/// The "Security schemes" section: which kinds of scheme the specs
/// declare and how many specs toolforge can send every scheme of.
fn render_security(o: &mut String, s: &Summary) {
    let with = s.specs_with_schemes;
    let _ = writeln!(
        o,
        "
## Security schemes

Specs declaring security schemes: {with} of {} ({}); all of their schemes supported (anything but `http` schemes other than bearer/basic, `mutualTLS` and unknown types): {} ({} of those declaring any). Specs declaring none get one synthesised bearer token, sent when set: {}.
",
        s.specs,
        pct(with, s.specs),
        s.specs_schemes_supported,
        pct(s.specs_schemes_supported, with),
        s.specs.saturating_sub(with)
    );
    let _ = writeln!(
        o,
        "| declared kind | sent as | schemes | specs |\n|---|---|---:|---:|"
    );
    for kind in DeclaredKind::ALL {
        let sent = match kind {
            DeclaredKind::ApiKeyHeader | DeclaredKind::ApiKeyQuery | DeclaredKind::ApiKeyCookie => {
                "API key"
            }
            DeclaredKind::HttpBearer | DeclaredKind::Oauth2Other | DeclaredKind::OpenIdConnect => {
                "bearer token"
            }
            DeclaredKind::HttpBasic => "HTTP basic",
            DeclaredKind::Oauth2ClientCredentials => "client credentials",
            DeclaredKind::HttpOther | DeclaredKind::Other => "unsupported",
        };
        let _ = writeln!(
            o,
            "| {} | {sent} | {} | {} |",
            kind.label(),
            s.scheme_kinds.get(&kind).copied().unwrap_or(0),
            s.scheme_kind_specs.get(&kind).copied().unwrap_or(0)
        );
    }
    let total: usize = s.scheme_kinds.values().sum();
    let _ = writeln!(o, "| **total** | | **{total}** | |");
}

fn render_details(o: &mut String, reports: &[SpecReport]) {
    let failed: Vec<&SpecReport> = reports
        .iter()
        .filter(|r| r.outcome != Outcome::Generated)
        .collect();
    let _ = writeln!(
        o,
        "\n## Specs not generated\n\n| spec | outcome | kind | pointer | message |\n|---|---|---|---|---|"
    );
    for r in failed {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | `{}` | {} |",
            r.name,
            r.outcome.as_str(),
            r.error_kind.as_deref().unwrap_or(""),
            one_line(r.error_pointer.as_deref().unwrap_or(""), 120),
            one_line(r.message.as_deref().unwrap_or(""), 300)
        );
    }
    let mut by_time: Vec<&SpecReport> = reports.iter().collect();
    by_time.sort_by(|a, b| {
        b.millis
            .partial_cmp(&a.millis)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let _ = writeln!(
        o,
        "\n## Slowest specs\n\n| spec | MB | tools | ms | peak RSS MB |\n|---|---:|---:|---:|---:|"
    );
    for r in by_time.iter().take(15) {
        let _ = writeln!(
            o,
            "| `{}` | {:.1} | {} | {:.0} | {:.0} |",
            r.name,
            r.bytes as f64 / 1e6,
            r.tools,
            r.millis,
            r.peak_rss_kb.unwrap_or(0) as f64 / 1024.0
        );
    }
    let mut renamed: Vec<&SpecReport> = reports
        .iter()
        .filter(|r| r.resource_names > 0 || r.html_descriptions > 0)
        .collect();
    renamed.sort_by(|a, b| {
        (b.resource_names + b.html_descriptions)
            .cmp(&(a.resource_names + a.html_descriptions))
            .then_with(|| a.name.cmp(&b.name))
    });
    let _ = writeln!(
        o,
        "\n## Specs most changed by the naming and text rules ({} in all)\n\n| spec | tools | `resource_action` names | HTML descriptions | name collisions |\n|---|---:|---:|---:|---:|",
        renamed.len()
    );
    for r in renamed.iter().take(15) {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} |",
            r.name, r.tools, r.resource_names, r.html_descriptions, r.name_collisions
        );
    }
    let hashed: Vec<&SpecReport> = reports.iter().filter(|r| r.hashed_names > 0).collect();
    let _ = writeln!(
        o,
        "\n## Specs with hashed tool names\n\n| spec | tools | hashed |\n|---|---:|---:|"
    );
    for r in hashed {
        let _ = writeln!(o, "| `{}` | {} | {} |", r.name, r.tools, r.hashed_names);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_and_renders() {
        let mut a = SpecReport::new("a.json", 10, Outcome::Generated);
        a.tools = 3;
        a.millis = 5.0;
        a.peak_rss_kb = Some(2048);
        a.products = 2;
        a.versioned_products = 1;
        a.resource_names = 2;
        a.html_descriptions = 1;
        a.paging = [("last_item_id".to_owned(), 3), ("none".to_owned(), 1)].into();
        let mut b = SpecReport::new("b.json", 10, Outcome::Refused);
        b.error_kind = Some("DanglingRef".into());
        b.error_pointer = Some("/paths/~1x".into());
        b.message = Some("b.json: /paths/~1x: dangling | ref".into());
        b.millis = 1.0;
        a.schemes = [
            (DeclaredKind::HttpBearer, 2),
            (DeclaredKind::ApiKeyQuery, 1),
        ]
        .into();
        b.schemes = [(DeclaredKind::HttpBearer, 1), (DeclaredKind::Other, 1)].into();
        let reports = vec![a, b];
        let s = Summary::of(&reports);
        assert_eq!(s.scheme_kinds[&DeclaredKind::HttpBearer], 3);
        assert_eq!(s.scheme_kind_specs[&DeclaredKind::HttpBearer], 2);
        assert_eq!((s.specs_with_schemes, s.specs_schemes_supported), (2, 1));
        assert_eq!(s.count(Outcome::Generated), 1);
        assert_eq!(s.refused_by_kind["DanglingRef"], 1);
        assert_eq!(s.refused_without_pointer, 0);
        assert!((s.generated_percent() - 50.0).abs() < 1e-9);
        let short = render_markdown("Corpus", "toolforge corpus x", &s, &reports, false);
        assert!(short.contains("| generated | 1 | 50.0% |"), "{short}");
        // The short form names specs only in the slowest-five line.
        assert!(!short.contains("dangling"), "{short}");
        assert!(short.contains("Slowest five: `a.json` (5 ms"), "{short}");
        assert!(short.contains("lost a declared parameter"), "{short}");
        assert_eq!(s.products_per_spec, [2, 2, 2, 2]);
        assert!(
            short.contains(
                "version or date word (`v1`, `v2beta1`, `2010_04_01`, `api20100401`): 1 (100.0%)"
            ),
            "{short}"
        );
        assert!(short.contains("## Security schemes"), "{short}");
        assert_eq!((s.resource_names, s.specs_with_resource_names), (2, 1));
        assert!(
            short.contains("operationId is missing or a path mashup: 2 (in 1 specs); tool names shared by two tools: 0 (target 0); descriptions converted from HTML to Markdown: 1 (in 1 specs)"),
            "{short}"
        );
        assert!(
            short.contains("| `last_item_id` | 3 | 75.0% | 1 |"),
            "{short}"
        );
        assert!(short.contains("| **total** | **4** | | |"), "{short}");
        let long = render_markdown("Corpus", "toolforge corpus x", &s, &reports, true);
        assert!(long.contains("dangling \\| ref"), "{long}");
    }
}
