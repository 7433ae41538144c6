//! Path template expansion (`simple`, `label` and `matrix` styles).
//!
//! Every value is percent-encoded down to RFC 3986 unreserved characters, so
//! it can never leave its path segment (`/`, `?`, `#` and `%` are encoded).
//! A value that would still form a `.` or `..` segment is refused: URL
//! parsers resolve those segments even when written as `%2E` / `%2E%2E`
//! (the WHATWG URL standard, and so the `url` crate behind `reqwest`, treats
//! `%2e` as a dot), which would send the request to a different resource.

use super::encode::{component, path_literal};
use super::{Args, BuildError, Shape, present};
use crate::catalogue::{ParamLocation, ParamStyle, ToolDef};

/// Expands a route template with the arguments; the result starts with `/`.
pub(crate) fn expand(
    tool: &ToolDef,
    template: &'static str,
    args: &Args,
) -> Result<String, BuildError> {
    let mut out = String::with_capacity(template.len() + 16);
    if !template.starts_with('/') {
        out.push('/');
    }
    // Byte ranges of `out` filled from arguments, for the dot-segment check.
    let mut spans: Vec<(usize, usize, &str)> = Vec::new();
    let mut rest = template;
    while let Some((literal, after)) = rest.split_once('{') {
        out.push_str(&path_literal(literal));
        let Some((arg, tail)) = after.split_once('}') else {
            return Err(invalid(tool, after, template));
        };
        if arg.is_empty() || arg.contains('{') {
            return Err(invalid(tool, arg, template));
        }
        let start = out.len();
        out.push_str(&segment_value(tool, arg, args)?);
        spans.push((start, out.len(), arg));
        rest = tail;
    }
    out.push_str(&path_literal(rest));
    check_dot_segments(tool, &out, &spans)?;
    Ok(out)
}

fn invalid(tool: &ToolDef, arg: &str, template: &'static str) -> BuildError {
    BuildError::InvalidTemplate {
        tool: tool.name,
        arg: arg.to_owned(),
        template,
    }
}

/// Serialises the value of one placeholder.
fn segment_value(tool: &ToolDef, arg: &str, args: &Args) -> Result<String, BuildError> {
    let def = tool
        .params
        .iter()
        .find(|p| p.location == ParamLocation::Path && p.arg == arg);
    let (style, explode, name) = def.map_or((ParamStyle::Simple, false, arg), |p| {
        (p.style, p.explode, p.name)
    });
    let Some(value) = present(args, arg) else {
        return Err(BuildError::Missing {
            tool: tool.name,
            arg: arg.to_owned(),
            place: "URL path segment".to_owned(),
        });
    };
    let shape = Shape::of(value);
    if shape.is_empty() {
        return Err(BuildError::EmptyPathValue {
            tool: tool.name,
            arg: arg.to_owned(),
        });
    }
    Ok(render(style, explode, name, &shape))
}

/// Renders a value in a path style; other styles fall back to `simple`.
fn render(style: ParamStyle, explode: bool, name: &str, shape: &Shape) -> String {
    match style {
        ParamStyle::Label => {
            let body = match shape {
                Shape::Scalar(s) => component(s),
                Shape::List(items) => join(items.iter().map(|v| component(v)), "."),
                Shape::Pairs(pairs) => pairs_text(pairs, explode, "."),
            };
            format!(".{body}")
        }
        ParamStyle::Matrix => {
            let name = component(name);
            match shape {
                Shape::Scalar(s) => format!(";{name}={}", component(s)),
                Shape::List(items) if explode => items
                    .iter()
                    .map(|v| format!(";{name}={}", component(v)))
                    .collect(),
                Shape::List(items) => {
                    format!(";{name}={}", join(items.iter().map(|v| component(v)), ","))
                }
                Shape::Pairs(pairs) if explode => pairs
                    .iter()
                    .map(|(k, v)| format!(";{}={}", component(k), component(v)))
                    .collect(),
                Shape::Pairs(pairs) => format!(";{name}={}", pairs_text(pairs, false, ",")),
            }
        }
        _ => match shape {
            Shape::Scalar(s) => component(s),
            Shape::List(items) => join(items.iter().map(|v| component(v)), ","),
            Shape::Pairs(pairs) => pairs_text(pairs, explode, ","),
        },
    }
}

/// Object properties as `k=v` (explode) or `k,v` items joined by `sep`.
fn pairs_text(pairs: &[(String, String)], explode: bool, sep: &str) -> String {
    let items = pairs.iter().map(|(k, v)| {
        if explode {
            format!("{}={}", component(k), component(v))
        } else {
            format!("{}{sep}{}", component(k), component(v))
        }
    });
    join(items, sep)
}

fn join(items: impl Iterator<Item = String>, sep: &str) -> String {
    items.collect::<Vec<_>>().join(sep)
}

/// Refuses a segment containing argument text that is a dot segment.
fn check_dot_segments(
    tool: &ToolDef,
    path: &str,
    spans: &[(usize, usize, &str)],
) -> Result<(), BuildError> {
    let mut start = 0;
    for segment in path.split('/') {
        let end = start + segment.len();
        if is_dot_segment(segment)
            && let Some((_, _, arg)) = spans.iter().find(|(a, b, _)| *a < end && start < *b)
        {
            return Err(BuildError::DotSegment {
                tool: tool.name,
                arg: (*arg).to_owned(),
                segment: segment.to_owned(),
            });
        }
        start = end + 1;
    }
    Ok(())
}

/// `.` or `..`, also in the percent-encoded spellings URL parsers accept.
fn is_dot_segment(segment: &str) -> bool {
    let lower = segment.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "." | ".." | "%2e" | "%2e%2e" | ".%2e" | "%2e."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::testing::{args, param, tool_at};
    use serde_json::{Value, json};

    fn expand_one(style: ParamStyle, explode: bool, value: Value) -> String {
        let t = tool_at(
            "/p/{color}",
            vec![param("color", ParamLocation::Path, style, explode)],
            None,
        );
        let path = expand(t, "/p/{color}", &args(json!({ "color": value }))).unwrap();
        path.strip_prefix("/p/").unwrap().to_owned()
    }

    fn color_values() -> [Value; 3] {
        [
            json!("blue"),
            json!(["blue", "black", "brown"]),
            json!({"R": 100, "G": 200, "B": 150}),
        ]
    }

    /// OpenAPI 3.0.3 "Style Examples" table, path styles.
    #[test]
    fn openapi_style_examples() {
        use ParamStyle::{Label, Matrix, Simple};
        let table: [(ParamStyle, bool, [&str; 3]); 6] = [
            (
                Matrix,
                false,
                [
                    ";color=blue",
                    ";color=blue,black,brown",
                    ";color=R,100,G,200,B,150",
                ],
            ),
            (
                Matrix,
                true,
                [
                    ";color=blue",
                    ";color=blue;color=black;color=brown",
                    ";R=100;G=200;B=150",
                ],
            ),
            (
                Label,
                false,
                [".blue", ".blue.black.brown", ".R.100.G.200.B.150"],
            ),
            (
                Label,
                true,
                [".blue", ".blue.black.brown", ".R=100.G=200.B=150"],
            ),
            (
                Simple,
                false,
                ["blue", "blue,black,brown", "R,100,G,200,B,150"],
            ),
            (
                Simple,
                true,
                ["blue", "blue,black,brown", "R=100,G=200,B=150"],
            ),
        ];
        for (style, explode, expected) in table {
            for (value, want) in color_values().into_iter().zip(expected) {
                assert_eq!(
                    expand_one(style, explode, value.clone()),
                    want,
                    "{style:?} {explode} {value}"
                );
            }
        }
    }

    #[test]
    fn values_stay_in_one_segment() {
        let t = tool_at("/files/{name}/meta", vec![], None);
        for (value, encoded) in [
            ("../x", "..%2Fx"),
            ("a/b", "a%2Fb"),
            ("a?b#c", "a%3Fb%23c"),
            ("%2F", "%252F"),
            ("ü", "%C3%BC"),
            ("...", "..."),
            (".x", ".x"),
            ("a b", "a%20b"),
            ("%2e%2e", "%252e%252e"),
        ] {
            let path = expand(t, "/files/{name}/meta", &args(json!({ "name": value }))).unwrap();
            let segments: Vec<&str> = path.split('/').collect();
            assert_eq!(segments, ["", "files", encoded, "meta"], "{value}");
        }
    }

    #[test]
    fn dot_segments_are_refused() {
        let t = tool_at("/files/{name}", vec![], None);
        for value in [".", ".."] {
            let err = expand(t, "/files/{name}", &args(json!({ "name": value }))).unwrap_err();
            assert!(matches!(err, BuildError::DotSegment { .. }), "{err}");
            let msg = err.to_string();
            assert!(msg.contains("`name`") && msg.contains("tool `t`"), "{msg}");
        }
        // A label prefix plus "." would also make "..".
        let label = tool_at(
            "/files/{name}",
            vec![param("name", ParamLocation::Path, ParamStyle::Label, false)],
            None,
        );
        let err = expand(label, "/files/{name}", &args(json!({"name": "."}))).unwrap_err();
        assert!(matches!(err, BuildError::DotSegment { ref segment, .. } if segment == ".."));
        // Dots inside a larger segment are fine.
        let ok = expand(t, "/files/{name}.json", &args(json!({"name": "."}))).unwrap();
        assert_eq!(ok, "/files/..json");
    }

    #[test]
    fn missing_null_or_empty_values_are_refused() {
        let t = tool_at("/zones/{zone_id}", vec![], None);
        for input in [json!({}), json!({"zone_id": null})] {
            let err = expand(t, "/zones/{zone_id}", &args(input)).unwrap_err();
            assert!(matches!(err, BuildError::Missing { .. }), "{err}");
            assert!(err.to_string().contains("`zone_id`"));
        }
        for input in [
            json!({"zone_id": ""}),
            json!({"zone_id": []}),
            json!({"zone_id": {}}),
        ] {
            let err = expand(t, "/zones/{zone_id}", &args(input)).unwrap_err();
            assert!(matches!(err, BuildError::EmptyPathValue { .. }), "{err}");
        }
    }

    #[test]
    fn primitives_and_defaults() {
        let t = tool_at("/items/{id}/{flag}", vec![], None);
        let path = expand(
            t,
            "/items/{id}/{flag}",
            &args(json!({"id": 42, "flag": false})),
        )
        .unwrap();
        assert_eq!(path, "/items/42/false");
        // A template without a leading slash still yields an absolute path.
        let path = expand(t, "items/{id}", &args(json!({"id": 1.5}))).unwrap();
        assert_eq!(path, "/items/1.5");
    }

    #[test]
    fn matrix_uses_wire_name_and_encodes_it() {
        let mut def = param("item_ids", ParamLocation::Path, ParamStyle::Matrix, false);
        def.name = "item ids";
        let t = tool_at("/x/{item_ids}", vec![def], None);
        let path = expand(t, "/x/{item_ids}", &args(json!({"item_ids": ["a,b", "c"]}))).unwrap();
        assert_eq!(path, "/x/;item%20ids=a%2Cb,c");
    }

    #[test]
    fn malformed_templates_are_errors_not_panics() {
        let t = tool_at("/x", vec![], None);
        for template in ["/x/{open", "/x/{}", "/x/{a{b}"] {
            let err = expand(t, template, &args(json!({"open": "1"}))).unwrap_err();
            assert!(
                matches!(err, BuildError::InvalidTemplate { .. }),
                "{template}: {err}"
            );
        }
    }
}
