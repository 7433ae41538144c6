//! The resolved spec narrowed to the operations this server exposes.
//!
//! With `--products` or `--read-only`, `execute` refuses the hidden
//! operations; `search` must not show them either, or the model plans with
//! tools it cannot call. The server prunes them from the spec it hands to
//! the sandbox workers.

use serde_json::Value;

use crate::authz::Connection;
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

/// What `search` of one run may see, when its connection narrows the
/// server-wide view: run before the model's code, in the same script, it
/// replaces the global `spec` by a copy holding only the operations of the
/// visible tools (an OAuth grant's exposure) and, at a scoped URL, with the
/// constrained values written into the paths and their parameters gone.
/// The original object is then reachable from nothing the model's code
/// can name (the lazy index's accessors load only their own node).
/// `None`: the session sees the server-wide spec, unchanged.
pub fn search_prelude(connection: &Connection, served: &[&ToolDef]) -> Option<String> {
    let grant_hides = match connection {
        Connection::OAuth(grant) => grant.read_only || grant.products.is_some(),
        _ => false,
    };
    let scope = connection.path_scope();
    if !grant_hides && scope.is_none() {
        return None;
    }
    let visible: Option<Vec<(String, Vec<&str>)>> = grant_hides.then(|| {
        served
            .iter()
            .filter(|t| crate::authz::hidden(connection, t).is_none())
            .map(|t| {
                let method = t.method.as_str().to_ascii_lowercase();
                (method, t.routes.iter().map(|r| r.template).collect())
            })
            .collect()
    });
    let fixed: Vec<(&str, &str)> = scope
        .map(|s| s.values.iter().map(|(n, v)| (*n, v.as_str())).collect())
        .unwrap_or_default();
    let args = serde_json::json!({"visible": visible, "fixed": fixed});
    Some(format!("({PRELUDE_JS})({args});\n"))
}

/// The view `search_prelude` installs; `visible` is `[method, templates]`
/// per visible tool (`null`: every operation), `fixed` the scoped URL's
/// `[name, value]` pairs.
const PRELUDE_JS: &str = r#"((args) => {
  "use strict";
  const { visible, fixed } = args;
  const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
  const original = globalThis.spec;
  const segments = (p) => p.replace(/^\/+|\/+$/g, "").split("/");
  const matches = (path, template) => {
    const a = segments(path), b = segments(template);
    return a.length === b.length && a.every((s, i) => s === b[i] || s.includes("{") || b[i].includes("{"));
  };
  const served = (method, path) => visible === null ||
    visible.some(([m, templates]) => m === method && templates.some((t) => matches(path, t)));
  const constrained = (p) => p !== null && typeof p === "object" && p.in === "path" &&
    fixed.some(([name]) => name === p.name);
  const keep = (list) => Array.isArray(list) && fixed.length ? list.filter((p) => !constrained(p)) : list;
  const place = (path) => fixed.reduce((p, [name, value]) => p.split("{" + name + "}").join(value), path);
  const view = {};
  for (const key of Object.keys(original)) {
    if (key !== "paths") view[key] = original[key];
  }
  const paths = {};
  const all = original.paths || {};
  for (const path of Object.keys(all)) {
    const methods = Object.keys(all[path]).filter((k) => METHODS.includes(k) && served(k, path));
    if (!methods.length) continue;
    const item = all[path];
    const copy = {};
    for (const key of Object.keys(item)) {
      if (METHODS.includes(key)) {
        if (!methods.includes(key)) continue;
        const op = item[key];
        copy[key] = op !== null && typeof op === "object" && Array.isArray(op.parameters) && fixed.length
          ? { ...op, parameters: keep(op.parameters) } : op;
      } else {
        copy[key] = key === "parameters" ? keep(item[key]) : item[key];
      }
    }
    paths[place(path)] = copy;
  }
  view.paths = paths;
  globalThis.spec = view;
})"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Method, Route};
    use crate::request::testing::tool;

    #[test]
    fn only_narrowed_sessions_get_a_search_prelude() {
        use std::sync::Arc;

        use crate::authz::GrantAccess;
        let list = tool("zones_list", Method::Get, &[], &[], None);
        for open in [
            Connection::ServerCredential,
            Connection::ClientToken,
            Connection::OAuth(Arc::new(GrantAccess::default())),
        ] {
            assert!(search_prelude(&open, &[list]).is_none(), "{open:?}");
        }
        let read_only = Connection::OAuth(Arc::new(GrantAccess {
            read_only: true,
            ..GrantAccess::default()
        }));
        let prelude = search_prelude(&read_only, &[list]).unwrap();
        assert!(prelude.ends_with(";\n"), "{prelude}");
        assert!(prelude.contains(r#""visible":[]"#), "{prelude}");
    }

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
