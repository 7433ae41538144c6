//! Naming and text figures of one generated spec for the corpus report:
//! tools named by the `resource_action` rule, duplicate names, and
//! descriptions converted from HTML.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::ir::Catalogue;
use crate::load::Document;
use crate::lower::text::has_html;
use crate::policy::resource_names::is_path_mashup;

/// Tools whose operationId is missing (the IR then holds the
/// `METHOD path` key) or a path mashup: the generic rule names them
/// `resource_action`, where the old rule used the id or the path words.
pub fn resource_names(cat: &Catalogue) -> usize {
    cat.tools()
        .filter(|t| {
            let key = format!("{} {}", t.method.as_str(), t.path);
            t.operation_id == key || is_path_mashup(&t.operation_id, t.method, &t.path)
        })
        .count()
}

/// Tools sharing their name with another tool (0 unless naming is broken).
pub fn collisions(cat: &Catalogue) -> usize {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in cat.tools() {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    counts.values().filter(|&&n| n > 1).sum()
}

/// Tools whose operation's `description` holds HTML (and so was converted
/// to Markdown).
pub fn html_descriptions(doc: &Document, cat: &Catalogue) -> usize {
    let paths = doc.root.get("paths");
    cat.tools()
        .filter(|t| {
            paths
                .and_then(|p| p.get(&t.path))
                .and_then(|item| item.get(t.method.key()))
                .and_then(|op| op.get("description"))
                .and_then(Value::as_str)
                .is_some_and(has_html)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::corpus::{RunOptions, run_spec};

    #[test]
    fn figures_of_a_stripe_shaped_spec() {
        let spec = br#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
            "/v1/customers": {
                "get": {"operationId": "GetCustomers", "description": "<p>List.</p>",
                    "responses": {"200": {"description": "ok"}}},
                "post": {"description": "Create <uuid>.",
                    "responses": {"200": {"description": "ok"}}}},
            "/v1/balance": {"get": {"operationId": "retrieveBalance",
                "description": "<ul><li>a</li></ul>",
                "responses": {"200": {"description": "ok"}}}}}}"#;
        let (r, _) = run_spec(spec, "s.json", &RunOptions::default());
        assert_eq!(r.tools, 3, "{r:?}");
        // GetCustomers is a mashup, the POST has no id; retrieveBalance is kept.
        assert_eq!(r.resource_names, 2);
        assert_eq!(r.html_descriptions, 2);
        assert_eq!(r.name_collisions, 0);
    }

    #[test]
    fn duplicate_names_are_counted() {
        let spec = br#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
            "/a": {"get": {"operationId": "x", "responses": {"200": {"description": "ok"}}}}}}"#;
        let (_, generated) = run_spec(spec, "d.json", &RunOptions::default());
        let mut cat = generated.unwrap().catalogue;
        let tool = cat.products[0].tools[0].clone();
        cat.products[0].tools.push(tool);
        assert_eq!(collisions(&cat), 2);
    }
}
