//! A next page's URL (a `Link` target, a body's next URL) read as the
//! next call's query: only when it names the list that was answered (same
//! origin, same path; a URL elsewhere is never followed, so an API cannot
//! steer the server's credential to another host or resource), with each
//! value typed as the tool's input schema declares it (a URL's `page=2`
//! is the integer 2 for a tool whose `page` is an integer, or the call
//! would fail its own schema check).

use serde_json::{Map, Value};

use crate::catalogue::ToolDef;

/// The query of `next`, resolved against `answered` (the URL the answer
/// came from, without query) when it points at the same scheme, host,
/// port and path and carries no user info; `None` for any other URL.
pub fn same_list_query(answered: &str, next: &str) -> Option<String> {
    let base = url::Url::parse(answered).ok()?;
    let target = base.join(next.trim()).ok()?;
    let same = target.scheme() == base.scheme()
        && target.host_str() == base.host_str()
        && target.port_or_known_default() == base.port_or_known_default()
        && target.path() == base.path()
        && target.username().is_empty()
        && target.password().is_none();
    same.then(|| target.query().unwrap_or("").to_owned())
}

/// The name/value pairs of a query string, decoded.
pub fn pairs(query: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The input schema of a tool, parsed once for typing several values.
pub struct InputTypes(Option<Value>);

impl InputTypes {
    /// Reads `tool`'s input schema (an unreadable one types nothing).
    pub fn of(tool: &ToolDef) -> Self {
        Self(serde_json::from_str(&tool.input_schema.text()).ok())
    }

    /// `raw` as argument `arg` takes it: a number where the schema allows
    /// `integer` or `number` and `raw` is one, a boolean where it allows
    /// `boolean`, else the string.
    pub fn typed(&self, arg: &str, raw: String) -> Value {
        let Some(root) = &self.0 else {
            return Value::String(raw);
        };
        let Some(schema) = root.pointer(&format!("/properties/{}", escape(arg))) else {
            return Value::String(raw);
        };
        let mut types = Vec::new();
        collect_types(root, schema, &mut types, 0);
        let allows = |t: &str| types.iter().any(|have| have == t);
        if allows("integer")
            && let Ok(n) = raw.parse::<i64>()
        {
            return Value::from(n);
        }
        if allows("number")
            && let Some(n) = raw
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
        {
            return Value::Number(n);
        }
        if allows("boolean") && (raw == "true" || raw == "false") {
            return Value::Bool(raw == "true");
        }
        Value::String(raw)
    }
}

/// How deep [`collect_types`] follows `$ref`s and alternatives.
const MAX_DEPTH: usize = 4;

/// The `type`s `schema` allows, through local `$ref`s and
/// `anyOf`/`oneOf`/`allOf`.
fn collect_types(root: &Value, schema: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t.clone()),
        Some(Value::Array(ts)) => {
            out.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        _ => {}
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| root.pointer(p))
    {
        collect_types(root, target, out, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for part in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_types(root, part, out, depth + 1);
        }
    }
}

/// A JSON pointer reference token for `name` (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The query `pairs` as arguments typed by `types`, keyed by `key` (the
/// tool argument or the parameter name a pair's name maps to; `None`
/// refuses the whole URL).
pub fn typed_args(
    types: &InputTypes,
    pairs: Vec<(String, String)>,
    mut key: impl FnMut(&str) -> Option<(String, String)>,
) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (name, value) in pairs {
        let (insert_as, arg) = key(&name)?;
        out.insert(insert_as, types.typed(&arg, value));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalogue::SharedText;
    use crate::request::testing::custom;

    #[test]
    fn only_the_same_origin_and_path_give_a_query() {
        let answered = "https://api.example.com/v1/users";
        let ok = |next: &str| same_list_query(answered, next);
        assert_eq!(
            ok("https://api.example.com/v1/users?page=2"),
            Some("page=2".into())
        );
        assert_eq!(ok("/v1/users?page=2"), Some("page=2".into()));
        assert_eq!(
            ok("https://api.example.com:443/v1/users"),
            Some(String::new())
        );
        // Another origin: host, scheme, port, user info.
        for elsewhere in [
            "https://evil.example/v1/users?page=2",
            "//evil.example/v1/users?page=2",
            "http://api.example.com/v1/users?page=2",
            "https://api.example.com:8443/v1/users?page=2",
            "https://user:pw@api.example.com/v1/users?page=2",
            "https://api.example.com.evil.example/v1/users?page=2",
        ] {
            assert_eq!(ok(elsewhere), None, "{elsewhere}");
        }
        // Another path on the same origin.
        for elsewhere in [
            "https://api.example.com/v1/admin/users?page=2",
            "/v1/users/../admin?page=2",
            "/v1/users/x?page=2",
            "../admin?page=2",
            "javascript:alert(1)",
        ] {
            assert_eq!(ok(elsewhere), None, "{elsewhere}");
        }
    }

    #[test]
    fn values_are_typed_by_the_input_schema() {
        let tool = custom(|t| {
            t.input_schema = SharedText::Text(
                r##"{"type":"object","$defs":{"N":{"type":"integer"}},"properties":{
                "$top":{"type":"integer"},"page":{"$ref":"#/$defs/N"},
                "ratio":{"type":["number","null"]},"flag":{"anyOf":[{"type":"boolean"}]},
                "q":{"type":"string"}}}"##,
            );
        });
        let types = InputTypes::of(tool);
        assert_eq!(types.typed("$top", "5".into()), json!(5));
        assert_eq!(types.typed("page", "2".into()), json!(2));
        assert_eq!(types.typed("ratio", "0.5".into()), json!(0.5));
        assert_eq!(types.typed("flag", "true".into()), json!(true));
        assert_eq!(types.typed("q", "5".into()), json!("5"));
        assert_eq!(types.typed("$top", "five".into()), json!("five"));
        assert_eq!(types.typed("unknown", "5".into()), json!("5"));
    }
}
