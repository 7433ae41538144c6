//! The spec's default server: the top-level `servers[0]`, its URL kept as a
//! template (`https://{region}.api.example.com/{basePath}`) with the
//! variables it uses (`default`, `enum`), for the runtime to fill.
//!
//! A relative URL (`/v1`, `v2`, `//host`, empty) is resolved against
//! forge.json's `spec.url` when the pin names one; otherwise it is kept as
//! it is, and the server needs `--upstream` (the generated README says so).
//! Problems are typed errors with the JSON pointer, as for the rest of the
//! document: a variable used but not declared, a `default` missing or
//! outside its `enum`, a scheme other than http(s). A plain-http server is
//! accepted here; the runtime refuses it unless told otherwise.

use serde_json::Value;

use crate::error::{GenerateError, Result, push_pointer};
use crate::ir::{Server, ServerVar};
use crate::load::Document;

/// The first entry of the document's `servers`, or `None` when there is
/// none (absent, `null` or empty). `spec_url` is where the spec was
/// published (forge.json `spec.url`), to resolve a relative URL against.
///
/// # Errors
///
/// [`GenerateError::Invalid`] for a malformed `servers`, an undeclared
/// variable, a missing default, a default outside its `enum`, or a scheme
/// other than http and https.
pub fn default_server(doc: &Document, spec_url: Option<&str>) -> Result<Option<Server>> {
    let invalid = |pointer: &str, message: String| GenerateError::Invalid {
        file: doc.file.clone(),
        pointer: pointer.to_owned(),
        message,
    };
    let first = match doc.root.get("servers") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(servers)) => match servers.first() {
            None => return Ok(None),
            Some(first) => first,
        },
        Some(_) => return Err(invalid("/servers", "`servers` must be an array".into())),
    };
    let url = match first.get("url") {
        Some(Value::String(url)) => url.trim(),
        _ => {
            return Err(invalid(
                "/servers/0/url",
                "the server's `url` must be a string".into(),
            ));
        }
    };
    let declared = match first.get("variables") {
        None | Some(Value::Null) => None,
        Some(Value::Object(vars)) => Some(vars),
        Some(_) => {
            return Err(invalid(
                "/servers/0/variables",
                "`variables` must be an object".into(),
            ));
        }
    };
    let used = placeholders(url).map_err(|m| invalid("/servers/0/url", m))?;
    let mut variables = Vec::new();
    for name in &used {
        if declared.is_none_or(|d| !d.contains_key(name.as_str())) {
            return Err(invalid(
                "/servers/0/url",
                format!(
                    "the URL uses the variable `{{{name}}}`, which /servers/0/variables does not declare"
                ),
            ));
        }
    }
    for (name, var) in declared.into_iter().flatten() {
        if !used.contains(name) {
            // Declared but unused: nothing to fill.
            continue;
        }
        let pointer = push_pointer("/servers/0/variables", name);
        let default = match var.get("default") {
            Some(Value::String(d)) => d.clone(),
            _ => {
                return Err(invalid(
                    &push_pointer(&pointer, "default"),
                    format!("the server variable `{name}` needs a string `default`"),
                ));
            }
        };
        let allowed = match var.get("enum") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(values)) => values
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    invalid(
                        &push_pointer(&pointer, "enum"),
                        format!("the `enum` of server variable `{name}` must list strings"),
                    )
                })?,
            Some(_) => {
                return Err(invalid(
                    &push_pointer(&pointer, "enum"),
                    format!("the `enum` of server variable `{name}` must be an array"),
                ));
            }
        };
        if !allowed.is_empty() && !allowed.contains(&default) {
            return Err(invalid(
                &push_pointer(&pointer, "enum"),
                format!(
                    "the server variable `{name}` has the default `{default}`, which its `enum` excludes"
                ),
            ));
        }
        variables.push(ServerVar {
            name: name.clone(),
            default,
            allowed,
        });
    }
    let mut server = Server {
        url: url.to_owned(),
        variables,
    };
    if server.is_relative()
        && let Some(base) = spec_url.filter(|b| b.contains("://"))
    {
        server.url = resolve(base, &server.url);
    }
    if let Some((scheme, _)) = server.url.split_once("://") {
        let scheme = fill_defaults(scheme, &server.variables);
        if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
            return Err(invalid(
                "/servers/0/url",
                format!(
                    "the server `{}` uses the scheme `{scheme}`; only https (and plain http, refused by the server unless loopback) can be an upstream",
                    server.url
                ),
            ));
        }
    }
    Ok(Some(server))
}

/// The `{name}` placeholders of `url`, each once, in order.
fn placeholders(url: &str) -> std::result::Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = url;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err(format!("unbalanced `}}` in the server URL `{url}`"));
        }
        let after = &rest[open + 1..];
        let close = after
            .find(['{', '}'])
            .filter(|&c| after[c..].starts_with('}'))
            .ok_or_else(|| format!("unbalanced `{{` in the server URL `{url}`"))?;
        let name = &after[..close];
        if name.is_empty() {
            return Err(format!("empty `{{}}` in the server URL `{url}`"));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
        rest = &after[close + 1..];
    }
    Ok(out)
}

/// `text` with each variable's default in its `{name}`.
fn fill_defaults(text: &str, vars: &[ServerVar]) -> String {
    vars.iter().fold(text.to_owned(), |t, v| {
        t.replace(&format!("{{{}}}", v.name), &v.default)
    })
}

/// `relative` resolved against the absolute URL `base` (RFC 3986 §5.2,
/// without dot-segment removal): `//host…` takes the scheme, `/path` the
/// origin, anything else the base's directory.
fn resolve(base: &str, relative: &str) -> String {
    let (scheme, after) = base.split_once("://").unwrap_or(("https", base));
    if relative.starts_with("//") {
        return format!("{scheme}:{relative}");
    }
    let after = after.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = after
        .find('/')
        .map_or((after, ""), |i| (&after[..i], &after[i..]));
    if relative.starts_with('/') {
        return format!("{scheme}://{authority}{relative}");
    }
    let dir = path.rfind('/').map_or("", |i| &path[..i]);
    format!("{scheme}://{authority}{dir}/{relative}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(root: Value) -> Document {
        Document {
            root,
            file: "spec.yaml".into(),
            openapi_version: "3.0.3".into(),
        }
    }

    fn server(servers: Value) -> Result<Option<Server>> {
        default_server(
            &doc(json!({ "openapi": "3.0.3", "servers": servers })),
            None,
        )
    }

    fn error(servers: Value) -> (String, String) {
        let err = server(servers).unwrap_err();
        let pointer = err.pointer().unwrap_or_default().to_owned();
        (pointer, err.to_string())
    }

    #[test]
    fn the_first_server_is_the_default() {
        let s = server(json!([
            {"url": "https://api.example.com/v1"},
            {"url": "https://sandbox.example.com/v1"}
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(s, Server::fixed("https://api.example.com/v1"));
    }

    #[test]
    fn missing_servers_give_no_default() {
        assert_eq!(
            default_server(&doc(json!({"openapi": "3.0.3"})), None).unwrap(),
            None
        );
        assert_eq!(server(json!([])).unwrap(), None);
        assert_eq!(server(Value::Null).unwrap(), None);
        assert_eq!(error(json!({"url": "x"})).0, "/servers");
        assert_eq!(
            error(json!([{"description": "no url"}])).0,
            "/servers/0/url"
        );
    }

    #[test]
    fn variables_with_defaults_and_enums_are_kept_in_order() {
        let s = server(json!([{
            "url": "https://{region}.api.example.com/{basePath}",
            "variables": {
                "region": {"default": "eu", "enum": ["eu", "us"], "description": "Where."},
                "unused": {"default": "x"},
                "basePath": {"default": "v1"}
            }
        }]))
        .unwrap()
        .unwrap();
        assert_eq!(s.url, "https://{region}.api.example.com/{basePath}");
        assert_eq!(
            s.variables,
            [
                ServerVar {
                    name: "region".into(),
                    default: "eu".into(),
                    allowed: vec!["eu".into(), "us".into()],
                },
                ServerVar {
                    name: "basePath".into(),
                    default: "v1".into(),
                    allowed: vec![],
                },
            ]
        );
    }

    #[test]
    fn variable_problems_are_errors_at_their_pointer() {
        let (pointer, msg) = error(json!([{"url": "https://{region}.example.com"}]));
        assert_eq!(pointer, "/servers/0/url");
        assert!(
            msg.contains("`{region}`") && msg.contains("does not declare"),
            "{msg}"
        );
        let (pointer, msg) = error(json!([{
            "url": "https://{region}.example.com",
            "variables": {"region": {"default": "ap", "enum": ["eu", "us"]}}
        }]));
        assert_eq!(pointer, "/servers/0/variables/region/enum");
        assert!(msg.contains("`ap`") && msg.contains("excludes"), "{msg}");
        let (pointer, _) = error(json!([{
            "url": "https://{region}.example.com",
            "variables": {"region": {"enum": ["eu"]}}
        }]));
        assert_eq!(pointer, "/servers/0/variables/region/default");
        let (pointer, _) = error(json!([{"url": "https://{region.example.com"}]));
        assert_eq!(pointer, "/servers/0/url");
        let (pointer, _) = error(json!([{"url": "https://x/v1", "variables": []}]));
        assert_eq!(pointer, "/servers/0/variables");
    }

    #[test]
    fn only_http_schemes_are_accepted() {
        let (pointer, msg) = error(json!([{"url": "ftp://files.example.com/"}]));
        assert_eq!(pointer, "/servers/0/url");
        assert!(msg.contains("`ftp`"), "{msg}");
        let (_, msg) = error(json!([{
            "url": "{scheme}://api.example.com",
            "variables": {"scheme": {"default": "wss", "enum": ["wss", "https"]}}
        }]));
        assert!(msg.contains("`wss`"), "{msg}");
        // Plain http is the runtime's to refuse (it names the flag).
        let s = server(json!([{"url": "http://api.example.com"}]))
            .unwrap()
            .unwrap();
        assert_eq!(s.url, "http://api.example.com");
    }

    #[test]
    fn relative_urls_are_kept_or_resolved_against_the_spec_url() {
        for url in ["/v1", "v2", "", "//api.example.com/v3"] {
            let s = server(json!([{ "url": url }])).unwrap().unwrap();
            assert_eq!(s.url, url);
            assert!(s.is_relative(), "{url}");
        }
        let at = |url: &str| {
            let d = doc(json!({"servers": [{ "url": url }]}));
            default_server(&d, Some("https://example.com/specs/openapi.json?x=1"))
                .unwrap()
                .unwrap()
                .url
        };
        assert_eq!(at("/v1"), "https://example.com/v1");
        assert_eq!(at("v2"), "https://example.com/specs/v2");
        assert_eq!(at(""), "https://example.com/specs/");
        assert_eq!(at("//api.example.com/v3"), "https://api.example.com/v3");
        assert_eq!(at("https://abs.example.com"), "https://abs.example.com");
    }
}
