//! The resolved spec narrowed to the operations this server exposes.
//!
//! With `--products` or `--read-only`, `execute` refuses the hidden
//! operations; `search` must not show them either, or the model plans with
//! tools it cannot call. The server prunes them from the spec it hands to
//! the sandbox workers.

use serde_json::Value;

use crate::catalogue::ToolDef;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Whether the spec path `path` is served by the route `template`: the same
/// segments, where a placeholder on either side matches any segment (a
/// merged spec path such as `/{accounts_or_zones}/{id}` has one template
/// per concrete prefix).
fn matches(path: &str, template: &str) -> bool {
    let (p, t) = (path.trim_matches('/'), template.trim_matches('/'));
    p.split('/').count() == t.split('/').count()
        && p.split('/')
            .zip(t.split('/'))
            .all(|(a, b)| a == b || a.contains('{') || b.contains('{'))
}

/// `spec` (the resolved spec's JSON text) with every operation that no
/// tool of `exposed` serves removed, and path items left without
/// operations dropped. Components stay: they hold no operations.
///
/// # Errors
/// When `spec` is not JSON.
pub fn narrow_spec(spec: &str, exposed: &[&ToolDef]) -> Result<String, serde_json::Error> {
    let mut doc: Value = serde_json::from_str(spec)?;
    let served = |method: &str, path: &str| {
        exposed.iter().any(|t| {
            t.method.as_str().eq_ignore_ascii_case(method)
                && t.routes.iter().any(|r| matches(path, r.template))
        })
    };
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        paths.retain(|path, item| {
            let Some(item) = item.as_object_mut() else {
                return false;
            };
            item.retain(|key, _| !METHODS.contains(&key.as_str()) || served(key, path));
            item.keys().any(|k| METHODS.contains(&k.as_str()))
        });
    }
    serde_json::to_string(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Method, Route};
    use crate::request::testing::tool;

    #[test]
    fn placeholders_match_any_segment() {
        assert!(matches(
            "/zones/{zone_id}/dns_records",
            "/zones/{id}/dns_records"
        ));
        assert!(matches(
            "/{accounts_or_zones}/{id}/rules",
            "/accounts/{account_id}/rules"
        ));
        assert!(!matches("/zones/{zone_id}", "/zones/{zone_id}/dns_records"));
        assert!(!matches(
            "/zones/{zone_id}/settings",
            "/zones/{zone_id}/dns_records"
        ));
    }

    #[test]
    fn hidden_operations_and_empty_path_items_are_removed() {
        let spec = serde_json::json!({
            "openapi": "3.0.3",
            "paths": {
                "/zones": {"get": {"operationId": "list"}, "post": {"operationId": "create"}},
                "/zones/{zone_id}": {"parameters": [], "delete": {"operationId": "delete"}},
                "/accounts": {"get": {"operationId": "accounts"}}
            },
            "components": {"schemas": {"Zone": {"type": "object"}}}
        });
        let routes = &[Route {
            when: None,
            template: "/zones",
        }];
        let list = tool("zones_list", Method::Get, routes, &[], None);
        let out = narrow_spec(&spec.to_string(), &[list]).unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            out["paths"],
            serde_json::json!({"/zones": {"get": {"operationId": "list"}}})
        );
        assert_eq!(out["components"], spec["components"]);
        assert!(narrow_spec("not json", &[list]).is_err());
    }
}
