//! Code Mode artifacts: the resolved spec (merged paths split), products
//! and the tool catalogue as JSON.

use serde_json::{Map, Value, json};

use crate::error::{GenerateError, Result};
use crate::ir::Catalogue;
use crate::policy::Policy;

/// Pretty JSON with a trailing newline.
pub fn to_json(v: &impl serde::Serialize, file: &str) -> Result<String> {
    serde_json::to_string_pretty(v)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| GenerateError::Emit {
            file: file.into(),
            message: e.to_string(),
        })
}

fn rewrite_params(params: &mut Value, selector: &str, id_param: &str, real_id: &str, scope: &str) {
    let Value::Array(list) = params else { return };
    list.retain(|p| {
        !(p.get("in").and_then(Value::as_str) == Some("path")
            && p.get("name").and_then(Value::as_str) == Some(selector))
    });
    for p in list.iter_mut() {
        if p.get("in").and_then(Value::as_str) == Some("path")
            && p.get("name").and_then(Value::as_str) == Some(id_param)
        {
            p["name"] = Value::String(real_id.to_string());
            p["description"] = Value::String(format!("The {scope} identifier."));
        }
    }
}

/// Replaces each merged path item by its concrete variants, in place order.
pub fn split_merged_paths(spec: &mut Value, policy: &Policy) {
    let Some(Value::Object(paths)) = spec.get_mut("paths") else {
        return;
    };
    let old = std::mem::take(paths);
    let mut new = Map::with_capacity(old.len());
    for (path, item) in old {
        let Some(m) = policy.merged_path(&path) else {
            new.insert(path, item);
            continue;
        };
        for (value, concrete, real_id) in &m.variants {
            let scope = if value == "accounts" {
                "account"
            } else {
                "zone"
            };
            let mut item = item.clone();
            if let Value::Object(obj) = &mut item {
                for (key, entry) in obj.iter_mut() {
                    if key == "parameters" {
                        rewrite_params(entry, &m.selector, &m.id_param, real_id, scope);
                    } else if let Some(params) = entry.get_mut("parameters") {
                        rewrite_params(params, &m.selector, &m.id_param, real_id, scope);
                    }
                }
            }
            new.insert(concrete.clone(), item);
        }
    }
    *paths = new;
}

/// `products.json`.
pub fn products(cat: &Catalogue, generated: &str) -> Value {
    json!({
        "@generated": generated,
        "products": cat.products.iter().map(|p| json!({
            "name": p.name,
            "tool_count": p.tools.len(),
            "tools": p.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `tools.json`: the IR catalogue.
pub fn tools(cat: &Catalogue, generated: &str) -> Value {
    json!({
        "@generated": generated,
        "api": cat.api,
        "tools": cat.tools().collect::<Vec<_>>(),
        "skipped": cat.skipped,
    })
}
