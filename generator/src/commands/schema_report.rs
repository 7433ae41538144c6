//! `toolforge schema-report`: the response schema mismatches a server
//! logged (its `schema_mismatch={…}` events, see the runtime's
//! `schema_check` module), grouped by product → operation → violation as
//! a markdown table for the API's teams.
//!
//! Pure: log text in, markdown out. Lines without an event, or whose event
//! does not parse, are counted and skipped; the events carry no customer
//! data, so neither does the report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Deserialize;

/// The field that marks a mismatch event in a log line.
pub const EVENT_FIELD: &str = "schema_mismatch=";

/// One violation of an event.
#[derive(Debug, Clone, Deserialize)]
pub struct Violation {
    /// Keyword that failed.
    pub keyword: String,
    /// Schema location.
    pub schema: String,
    /// Instance path (`*` for indices and undeclared keys).
    pub instance: String,
}

/// One mismatch event as logged.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    /// Tool name.
    pub tool: String,
    /// HTTP method.
    pub method: String,
    /// Path template.
    pub path: String,
    /// Product.
    pub product: String,
    /// Response status.
    pub status: u16,
    /// Response key whose schema was used.
    pub response: String,
    /// Violations found.
    pub violations: usize,
    /// Whether the count is exact.
    pub exact: bool,
    /// The first violations.
    pub details: Vec<Violation>,
}

/// Events read from logs, and what was skipped.
#[derive(Debug, Default)]
pub struct Collected {
    /// The events, in order.
    pub events: Vec<Event>,
    /// Lines that named the field but held no readable event.
    pub unreadable: usize,
}

impl Collected {
    /// Adds the events of one log's text.
    pub fn add_log(&mut self, text: &str) {
        for line in text.lines() {
            let Some(at) = line.find(EVENT_FIELD) else {
                continue;
            };
            let rest = &line[at + EVENT_FIELD.len()..];
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Event>();
            match values.next() {
                Some(Ok(event)) => self.events.push(event),
                _ => self.unreadable += 1,
            }
        }
    }
}

#[derive(Debug, Default)]
struct Row {
    events: usize,
    statuses: BTreeSet<u16>,
}

/// The markdown report of `collected` (from `logs` log files).
pub fn render(collected: &Collected, logs: usize) -> String {
    // product → (path, method, tool) → (response key, keyword, instance, schema) → row
    type Op = (String, String, String);
    type Key = (String, String, String, String);
    type Ops = BTreeMap<Op, (usize, BTreeMap<Key, Row>)>;
    let mut products: BTreeMap<&str, Ops> = BTreeMap::new();
    for e in &collected.events {
        let op = products
            .entry(e.product.as_str())
            .or_default()
            .entry((e.path.clone(), e.method.clone(), e.tool.clone()))
            .or_default();
        op.0 += 1;
        for v in &e.details {
            let row =
                op.1.entry((
                    e.response.clone(),
                    v.keyword.clone(),
                    v.instance.clone(),
                    v.schema.clone(),
                ))
                .or_default();
            row.events += 1;
            row.statuses.insert(e.status);
        }
    }
    let mut out = String::from("# Response schema mismatches\n\n");
    let operations: usize = products.values().map(BTreeMap::len).sum();
    let _ = writeln!(
        out,
        "{} mismatched responses in {} operations of {} products, from {logs} log file{}{}.\n",
        collected.events.len(),
        operations,
        products.len(),
        if logs == 1 { "" } else { "s" },
        if collected.unreadable > 0 {
            format!(" ({} unreadable event lines skipped)", collected.unreadable)
        } else {
            String::new()
        }
    );
    if products.is_empty() {
        out.push_str("No mismatches.\n");
        return out;
    }
    out.push_str("| product | operation | tool | responses | response key | statuses | keyword | instance | schema location | events |\n");
    out.push_str("|---|---|---|---:|---|---|---|---|---|---:|\n");
    for (product, ops) in &products {
        for ((path, method, tool), (responses, rows)) in ops {
            let mut rows: Vec<(&Key, &Row)> = rows.iter().collect();
            rows.sort_by(|a, b| b.1.events.cmp(&a.1.events).then_with(|| a.0.cmp(b.0)));
            for ((key, keyword, instance, schema), row) in rows {
                let statuses: Vec<String> = row.statuses.iter().map(u16::to_string).collect();
                let _ = writeln!(
                    out,
                    "| {} | `{} {}` | `{}` | {} | {} | {} | `{}` | `{}` | `{}` | {} |",
                    cell(product),
                    cell(method),
                    cell(path),
                    cell(tool),
                    responses,
                    cell(key),
                    statuses.join(", "),
                    cell(keyword),
                    cell(if instance.is_empty() {
                        "(root)"
                    } else {
                        instance
                    }),
                    cell(schema),
                    row.events
                );
            }
        }
    }
    out
}

/// A table cell: `|` escaped, line breaks removed.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}
