//! The examples of the Code Mode descriptions, taken from the API served:
//! a real tag, a real list path, real fields of its items, a real path
//! with one placeholder, and `api.paginate` when the API pages its lists.
//! An API never shows another API's examples.

use serde_json::Value;

use crate::catalogue::{Method, ToolDef};
use crate::profile::{Pagination, Profile};

/// What the descriptions quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examples {
    /// A word of a real tag (the list tool's product), for a regex.
    pub tag: String,
    /// A `GET` path without placeholders that lists something.
    pub list_path: String,
    /// A real path with its one placeholder filled (`/zones/abc/dns_records`).
    pub sample_path: String,
    /// The `execute` example: the profile's own, else one built from the
    /// list path and its items' fields.
    pub execute: String,
}

impl Examples {
    /// The examples for `tools` (the exposed ones) under `profile`.
    pub fn of(tools: &[&'static ToolDef], profile: &Profile) -> Self {
        let gets = || {
            tools
                .iter()
                .copied()
                .filter(|t| t.method == Method::Get)
                .filter_map(|t| Some((t, t.routes.first()?.template)))
        };
        let placeholders = |path: &str| path.matches('{').count();
        let lists = || gets().filter(|(_, path)| placeholders(path) == 0);
        let list = lists()
            .find(|(t, _)| profile.pagination.applies(t))
            .or_else(|| lists().find(|(t, _)| is_list(t)))
            .or_else(|| lists().next());
        let list_path = list.map_or("/", |(_, p)| p).to_owned();
        let tag = list
            .map(|(t, _)| t.product)
            .or_else(|| tools.first().map(|t| t.product))
            .unwrap_or("api")
            .split(['_', '-', ' '])
            .next()
            .unwrap_or("api")
            .to_owned();
        let sample_path = gets()
            .find(|(_, p)| placeholders(p) == 1)
            .map_or_else(|| list_path.clone(), |(_, p)| fill(p));
        let generic = Profile::generic("").execute_example;
        let execute = if profile.execute_example != generic {
            profile.execute_example.to_owned()
        } else {
            let fields = list.map(|(t, _)| item_fields(t)).unwrap_or_default();
            built_example(&list_path, &fields, profile.pagination != Pagination::None)
        };
        Self {
            tag,
            list_path,
            sample_path,
            execute,
        }
    }
}

/// Whether `tool`'s output documents an array.
fn is_list(tool: &ToolDef) -> bool {
    tool.output_schema
        .is_some_and(|s| s.text().contains(r#""type":"array""#))
}

/// `path` with its placeholder replaced by `abc`.
fn fill(path: &str) -> String {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => {
            format!("{}abc{}", &path[..open], &path[close + 1..])
        }
        _ => path.to_owned(),
    }
}

/// Up to two property names of the items the tool lists (`id` and `name`
/// first when there), from its output schema.
fn item_fields(tool: &ToolDef) -> Vec<String> {
    let Some(schema) = tool
        .output_schema
        .and_then(|s| serde_json::from_str::<Value>(&s.text()).ok())
    else {
        return Vec::new();
    };
    let Some(items) = first_items(&schema, &schema, 0) else {
        return Vec::new();
    };
    let Some(properties) = items.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut fields: Vec<String> = ["id", "name"]
        .into_iter()
        .filter(|f| properties.contains_key(*f))
        .map(str::to_owned)
        .collect();
    for key in properties.keys() {
        if fields.len() >= 2 {
            break;
        }
        if !fields.contains(key) && is_identifier(key) {
            fields.push(key.clone());
        }
    }
    fields
}

/// The first `items` schema (its `$ref` resolved) found in `schema`.
fn first_items<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Option<&'a Value> {
    if depth > 4 {
        return None;
    }
    let resolve = |v: &'a Value| {
        v.get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
            .unwrap_or(v)
    };
    if let Some(items) = schema.get("items") {
        return Some(resolve(items));
    }
    let properties = resolve(schema).get("properties")?.as_object()?;
    properties
        .values()
        .find_map(|p| first_items(root, resolve(p), depth + 1))
}

fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `execute` example listing `path`, with `api.paginate` when the API
/// pages its lists, mapping the items to `fields`.
fn built_example(path: &str, fields: &[String], paged: bool) -> String {
    let map = if fields.is_empty() {
        String::new()
    } else {
        let picked: Vec<String> = fields.iter().map(|f| format!("{f}: x.{f}")).collect();
        format!(".map(x => ({{ {} }}))", picked.join(", "))
    };
    if paged {
        format!(
            r#"async () => {{ const all = await api.paginate({{ method: "GET", path: "{path}" }}, {{ maxPages: 3 }}); return all.items{map}; }}"#
        )
    } else {
        format!(
            r#"async () => {{ const r = await api.request({{ method: "GET", path: "{path}" }}); return r.result; }}"#
        )
    }
}

#[cfg(test)]
mod tests;
