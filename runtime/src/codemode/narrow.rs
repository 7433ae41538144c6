//! The resolved spec narrowed to the operations this server exposes.
//!
//! With `--products` or `--read-only`, `execute` refuses the hidden
//! operations; `search` must not show them either, or the model plans with
//! tools it cannot call. The server prunes them from the spec it hands to
//! the sandbox workers.

use serde_json::Value;

use crate::authz::{Connection, PathScope};
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

/// `description` (the `code` tool's) with the arguments a scoped URL fixes
/// taken out of each of `tools`' declared `args` (the server fills them).
pub fn scoped_code_description(description: &str, scope: &PathScope, tools: &[&ToolDef]) -> String {
    let mut out = String::with_capacity(description.len());
    for line in description.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let narrowed = tools.iter().find_map(|t| {
            let rest = trimmed.strip_prefix(t.name)?.strip_prefix("(args: {")?;
            let fixed: Vec<&str> = scope.fixed_args(t).into_iter().map(|(a, _)| a).collect();
            (!fixed.is_empty()).then(|| without_fields(rest, &fixed))
        });
        match narrowed.flatten() {
            Some(fields_and_tail) => {
                let indent = &line[..line.len() - trimmed.len()];
                let name = tools
                    .iter()
                    .find(|t| trimmed.starts_with(t.name))
                    .map_or("", |t| t.name);
                out.push_str(&format!("{indent}{name}(args: {{{fields_and_tail}"));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `rest` (after `args: {`) without the top-level fields named in `fixed`:
/// the kept fields, then the rest of the line from the closing brace.
fn without_fields(rest: &str, fixed: &[&str]) -> Option<String> {
    let mut depth = 0usize;
    let mut end = None;
    for (i, c) in rest.char_indices() {
        match c {
            '{' | '(' | '[' | '<' => depth += 1,
            '}' if depth == 0 => {
                end = Some(i);
                break;
            }
            '}' | ')' | ']' | '>' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let end = end?;
    let (inside, tail) = rest.split_at(end);
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inside.char_indices() {
        match c {
            '{' | '(' | '[' | '<' => depth += 1,
            '}' | ')' | ']' | '>' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                fields.push(&inside[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(&inside[start..]);
    let kept: Vec<&str> = fields
        .into_iter()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .filter(|f| {
            let name = f.split([':', '?']).next().unwrap_or("").trim();
            !fixed.contains(&name)
        })
        .collect();
    Some(if kept.is_empty() {
        tail.to_owned()
    } else {
        format!(" {} {tail}", kept.join("; "))
    })
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
    fn a_scoped_code_description_declares_no_fixed_argument() {
        use crate::catalogue::{ParamLocation, ParamStyle};
        use crate::profile::ScopedPath;
        use crate::request::testing::param;
        let params = vec![param(
            "account_id",
            ParamLocation::Path,
            ParamStyle::Simple,
            false,
        )];
        let t = tool("workers_get", Method::Get, &[], params.leak(), None);
        let only = tool(
            "workers_list",
            Method::Get,
            &[],
            vec![param(
                "account_id",
                ParamLocation::Path,
                ParamStyle::Simple,
                false,
            )]
            .leak(),
            None,
        );
        let paths = [ScopedPath {
            template: "/accounts/{account_id}",
            check: None,
        }];
        let scope = crate::authz::parse_scope(&paths, "/accounts/a1").unwrap();
        let description = "Run it.\n  /** Gets. */\n  workers_get(args: { account_id?: string; script: { a: string; b?: number }; x: string }): Promise<unknown>;\n  workers_list(args: { account_id: string }): Promise<unknown>;\n  other(args: { account_id: string }): Promise<unknown>;\n";
        let narrowed = scoped_code_description(description, &scope, &[t, only]);
        assert_eq!(
            narrowed,
            "Run it.\n  /** Gets. */\n  workers_get(args: { script: { a: string; b?: number }; x: string }): Promise<unknown>;\n  workers_list(args: {}): Promise<unknown>;\n  other(args: { account_id: string }): Promise<unknown>;\n"
        );
    }

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
