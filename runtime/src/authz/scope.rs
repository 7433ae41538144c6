//! Path-scoped sessions: a session connected at `/mcp/accounts/A` (one of
//! the profile's [`ScopedPath`]s) is bound to account `A`.
//!
//! The scope is the grant's RFC 8707 resource (OAuth) or the URL alone (a
//! static client token). Its constrained arguments leave the tool schemas
//! and are filled by the server; a call or `execute` request naming another
//! value is refused before any upstream request, judged on the built
//! request path so every surface gets the same answer.

use serde_json::Value;

use crate::catalogue::{ParamLocation, Route, ToolDef};
use crate::profile::{MergedSelector, ScopedPath};
use crate::request::Args;

/// Longest accepted value of one scoped segment.
const MAX_VALUE: usize = 128;

/// The values a scoped URL fixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathScope {
    /// The path after `/mcp` (`/accounts/A`).
    pub suffix: String,
    /// Each constrained spec path parameter and its value, in template order.
    pub values: Vec<(&'static str, String)>,
    /// The profile's entry it matched.
    pub path: ScopedPath,
}

/// Whether `value` may stand in a scoped URL: plain ASCII letters, digits,
/// `-`, `_` and `.`, never only dots, so it needs no encoding and cannot be
/// a dot segment.
fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_VALUE
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !value.bytes().all(|b| b == b'.')
}

/// The placeholder name of a template segment (`{account_id}`).
fn placeholder(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

/// The scope of the path `suffix` after `/mcp` (`/accounts/A`), when it
/// spells one of `paths` exactly: the same literal segments (case
/// included), plain values, no trailing slash, no query or fragment.
pub fn parse(paths: &[ScopedPath], suffix: &str) -> Option<PathScope> {
    let rest = suffix.strip_prefix('/')?;
    let given: Vec<&str> = rest.split('/').collect();
    paths.iter().find_map(|path| {
        let template: Vec<&'static str> =
            path.template.trim_start_matches('/').split('/').collect();
        if template.len() != given.len() {
            return None;
        }
        let mut values = Vec::new();
        for (t, g) in template.iter().zip(&given) {
            match placeholder(t) {
                Some(name) if valid_value(g) => values.push((name, (*g).to_owned())),
                Some(_) => return None,
                None if t == g => {}
                None => return None,
            }
        }
        (!values.is_empty()).then(|| PathScope {
            suffix: suffix.to_owned(),
            values,
            path: *path,
        })
    })
}

impl PathScope {
    /// The value fixed for the spec path parameter `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `path` (the check template, or any template with the same
    /// placeholders) with this scope's values filled in.
    pub fn fill_template(&self, template: &str) -> String {
        let mut out = template.to_owned();
        for (name, value) in &self.values {
            out = out.replace(&format!("{{{name}}}"), value);
        }
        out
    }

    /// Whether the check's 2xx answer `payload` (the envelope's payload)
    /// ties the values the check path does not name to the checked
    /// resource: at `/accounts/A/zones/Z`, checked with `GET /zones/Z`,
    /// the zone must belong to account A. Each such `x_id` must equal the
    /// payload's `x.id` (or `x_id`); an answer that names none fails
    /// closed. A check naming every value has nothing more to confirm.
    pub fn confirmed_by(&self, check: &str, payload: Option<&Value>) -> bool {
        self.values
            .iter()
            .filter(|(name, _)| !check.contains(&format!("{{{name}}}")))
            .all(|(name, value)| {
                let Some(payload) = payload else {
                    return false;
                };
                let nested = name
                    .strip_suffix("_id")
                    .and_then(|stem| payload.get(stem)?.get("id"));
                nested
                    .or_else(|| payload.get(*name))
                    .and_then(Value::as_str)
                    == Some(value)
            })
    }

    /// The arguments of `tool` this scope fixes whatever the other
    /// arguments are: path parameters named as a constrained one.
    pub fn fixed_args(&self, tool: &ToolDef) -> Vec<(&'static str, &str)> {
        tool.params
            .iter()
            .filter(|p| p.location == ParamLocation::Path)
            .filter_map(|p| Some((p.arg, self.value(p.name)?)))
            .collect()
    }

    /// The names of [`PathScope::fixed_args`] (what a listing leaves out).
    pub fn fixed_arg_names(&self, tool: &ToolDef) -> Vec<&'static str> {
        self.fixed_args(tool)
            .into_iter()
            .map(|(arg, _)| arg)
            .collect()
    }

    /// Fills the constrained arguments of `tool` the caller left out, and
    /// refuses one that names another value. A merged route's ID argument
    /// counts when its selector picks a constrained parameter.
    ///
    /// # Errors
    ///
    /// The refusal text when an argument names another value.
    pub fn fill(
        &self,
        tool: &ToolDef,
        args: &mut Args,
        merged: Option<&MergedSelector>,
    ) -> Result<(), String> {
        let mut fixed = self.fixed_args(tool);
        if let Some(m) = merged
            && tool.params.iter().any(|p| p.arg == m.id_arg)
            && let Some(Value::String(selector)) = args.get(m.arg)
            && let Some(variant) = m.variant(selector)
            && let Some(value) = self.value(variant.id)
        {
            fixed.push((m.id_arg, value));
        }
        for (arg, value) in fixed {
            match args.get(arg) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => {}
                Some(Value::String(s)) if s == value => continue,
                Some(other) => return Err(self.refusal(tool, arg, &shown(other))),
            }
            args.insert(arg.to_owned(), Value::String(value.to_owned()));
        }
        Ok(())
    }

    /// Refuses a built request of `tool` to `path` (no query) whose path
    /// names another value of a constrained parameter.
    ///
    /// # Errors
    ///
    /// The refusal text.
    pub fn check_path(
        &self,
        tool: &ToolDef,
        path: &str,
        merged: Option<&MergedSelector>,
    ) -> Result<(), String> {
        let given: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let Some(route) = tool.routes.iter().find(|r| route_matches(r, &given)) else {
            return Err(format!(
                "`{}`: the request path cannot be checked against this session's scope ({}), so it is refused",
                tool.name, self.suffix
            ));
        };
        for (t, g) in route
            .template
            .trim_start_matches('/')
            .split('/')
            .zip(&given)
        {
            let Some(name) = placeholder(t) else {
                continue;
            };
            // Placeholders are argument names: the wire name is the spec's.
            let name = merged_name(route, name, merged)
                .or_else(|| {
                    tool.params
                        .iter()
                        .find(|p| p.location == ParamLocation::Path && p.arg == name)
                        .map(|p| p.name)
                })
                .unwrap_or(name);
            if let Some(value) = self.value(name)
                && value != *g
            {
                return Err(self.refusal(tool, name, g));
            }
        }
        Ok(())
    }

    fn refusal(&self, tool: &ToolDef, name: &str, given: &str) -> String {
        let fixed: Vec<String> = self
            .values
            .iter()
            .map(|(n, v)| format!("`{n}` = `{v}`"))
            .collect();
        format!(
            "`{}` is refused before reaching the API: this session is scoped to {} (it was connected at /mcp{}), and the call names `{name}` = `{given}`. Connect the server at the URL of that resource (and authorize it) to use it.",
            tool.name,
            fixed.join(", "),
            self.suffix
        )
    }

    /// `schema` (a tool's input schema) without the arguments this scope
    /// fixes: the server fills them.
    pub fn narrow_schema(&self, tool: &ToolDef, schema: &mut serde_json::Map<String, Value>) {
        crate::listing::drop_args::remove_args(schema, &self.fixed_arg_names(tool));
    }
}

/// Whether the concrete path segments `given` are served by `route`.
fn route_matches(route: &Route, given: &[&str]) -> bool {
    let template: Vec<&str> = route.template.trim_start_matches('/').split('/').collect();
    template.len() == given.len()
        && template
            .iter()
            .zip(given)
            .all(|(t, g)| placeholder(t).is_some() || t == g)
}

/// The spec name of a merged route's ID placeholder (`account_id` for the
/// `accounts` variant of `{account_or_zone_id}`).
fn merged_name(
    route: &Route,
    placeholder: &str,
    merged: Option<&MergedSelector>,
) -> Option<&'static str> {
    let m = merged?;
    let (arg, value) = route.when?;
    (arg == m.arg && placeholder == m.id_arg)
        .then(|| m.variant(value).map(|v| v.id))
        .flatten()
}

fn shown(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    text.chars().take(MAX_VALUE).collect()
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
