//! forge.json `scoped_paths`: checked against the built tools.

use crate::error::{GenerateError, Result};
use crate::ir::{HttpMethod, Location, Product, ScopedPath};

/// The placeholder name of a template segment (`{org}`).
fn placeholder(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

fn literal(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// Why `template` cannot be a scoped path of `products`, if it cannot.
fn problem(template: &str, products: &[Product]) -> Option<String> {
    let Some(rest) = template.strip_prefix('/') else {
        return Some("must start with `/`".into());
    };
    let mut names = Vec::new();
    for segment in rest.split('/') {
        match placeholder(segment) {
            Some(name) if literal(name) => names.push(name),
            Some(_) => return Some(format!("`{segment}` is not a `{{name}}` placeholder")),
            None if literal(segment) => {}
            None => {
                return Some(format!(
                    "`{segment}` must be a literal of [A-Za-z0-9_-] or a `{{name}}` placeholder"
                ));
            }
        }
    }
    if names.is_empty() {
        return Some("names no path parameter (`{name}`)".into());
    }
    let tools = || products.iter().flat_map(|p| p.tools.iter());
    names
        .iter()
        .find(|name| {
            !tools().any(|t| {
                t.params
                    .iter()
                    .any(|p| p.location == Location::Path && p.name == **name)
            })
        })
        .map(|name| format!("no operation has the path parameter `{name}`"))
}

/// The scoped paths forge.json names, checked: segments are literals or
/// placeholders naming a path parameter some operation has. The check of
/// each is its own `GET` when the spec has one at that path.
///
/// # Errors
///
/// A template that is not a scoped path, with its index.
pub fn scoped_paths(templates: &[String], products: &[Product]) -> Result<Vec<ScopedPath>> {
    templates
        .iter()
        .enumerate()
        .map(|(i, template)| {
            if let Some(problem) = problem(template, products) {
                return Err(GenerateError::Config {
                    file: "forge.json".into(),
                    message: format!("/scoped_paths/{i}: `{template}` {problem}"),
                });
            }
            let readable = products
                .iter()
                .flat_map(|p| p.tools.iter())
                .any(|t| t.method == HttpMethod::Get && t.path == *template);
            Ok(ScopedPath {
                template: template.clone(),
                check: readable.then(|| template.clone()),
            })
        })
        .collect()
}
