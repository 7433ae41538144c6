//! Header (`simple` style) and cookie (`form` style) parameters.

use super::encode::cookie;
use super::{Args, BuildError, Shape, present};
use crate::catalogue::{ParamLocation, ToolDef};

/// Builds the parameter headers, then one `Cookie` header for all cookie
/// parameters present.
pub(crate) fn headers(tool: &ToolDef, args: &Args) -> Result<Vec<(String, String)>, BuildError> {
    let mut out = Vec::new();
    let mut cookies = Vec::new();
    for def in tool.params {
        let place = match def.location {
            ParamLocation::Header => "header",
            ParamLocation::Cookie => "cookie",
            ParamLocation::Path | ParamLocation::Query => continue,
        };
        let Some(value) = present(args, def.arg) else {
            if def.required {
                return Err(BuildError::Missing {
                    tool: tool.name,
                    arg: def.arg.to_owned(),
                    place: format!("{place} `{}`", def.name),
                });
            }
            continue;
        };
        let shape = Shape::of(value);
        if def.location == ParamLocation::Header {
            let text = simple(def.explode, &shape);
            check_header_value(tool, def.arg, def.name, &text)?;
            out.push((def.name.to_owned(), text));
        } else {
            cookie_pairs(def.name, def.explode, &shape, &mut cookies);
        }
    }
    if !cookies.is_empty() {
        out.push(("Cookie".to_owned(), cookies.join("; ")));
    }
    Ok(out)
}

/// `simple` style without percent-encoding (header values are not URLs).
fn simple(explode: bool, shape: &Shape) -> String {
    match shape {
        Shape::Scalar(s) => s.clone(),
        Shape::List(items) => items.join(","),
        Shape::Pairs(pairs) => pairs
            .iter()
            .map(|(k, v)| {
                if explode {
                    format!("{k}={v}")
                } else {
                    format!("{k},{v}")
                }
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// Refuses CR, LF and other control characters (tab is allowed), which
/// would split or corrupt the header block.
pub(crate) fn check_header_value(
    tool: &ToolDef,
    arg: &str,
    header: &str,
    text: &str,
) -> Result<(), BuildError> {
    // HTTP header values are ASCII (RFC 9110 obs-text is obsolete): sending
    // UTF-8 bytes lets each server decode them its own way.
    if !header_safe(text) {
        return Err(BuildError::InvalidHeaderValue {
            tool: tool.name,
            arg: arg.to_owned(),
            header: header.to_owned(),
        });
    }
    Ok(())
}

/// Whether `text` can be sent as an HTTP header value: visible ASCII,
/// spaces and tabs only.
pub fn header_safe(text: &str) -> bool {
    text.bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// `form` style cookie pairs; names and values are percent-encoded where
/// RFC 6265 forbids the character.
fn cookie_pairs(name: &str, explode: bool, shape: &Shape, out: &mut Vec<String>) {
    let name = cookie(name);
    match shape {
        Shape::Scalar(s) => out.push(format!("{name}={}", cookie(s))),
        Shape::List(items) if explode => {
            out.extend(items.iter().map(|v| format!("{name}={}", cookie(v))));
        }
        Shape::List(items) => {
            let joined: Vec<String> = items.iter().map(|v| cookie(v)).collect();
            out.push(format!("{name}={}", joined.join(",")));
        }
        Shape::Pairs(pairs) if explode => {
            out.extend(
                pairs
                    .iter()
                    .map(|(k, v)| format!("{}={}", cookie(k), cookie(v))),
            );
        }
        Shape::Pairs(pairs) => {
            let joined: Vec<String> = pairs
                .iter()
                .flat_map(|(k, v)| [cookie(k), cookie(v)])
                .collect();
            out.push(format!("{name}={}", joined.join(",")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::ParamStyle;
    use crate::request::testing::{args, param, tool_at};
    use serde_json::{Value, json};

    fn header(explode: bool, value: Value) -> Vec<(String, String)> {
        let t = tool_at(
            "/h",
            vec![param(
                "X-Color",
                ParamLocation::Header,
                ParamStyle::Simple,
                explode,
            )],
            None,
        );
        headers(t, &args(json!({ "X-Color": value }))).unwrap()
    }

    /// OpenAPI 3.0.3 "Style Examples" table, `simple` rows, as headers.
    #[test]
    fn openapi_simple_style_examples() {
        let values = [
            json!("blue"),
            json!(["blue", "black", "brown"]),
            json!({"R": 100, "G": 200, "B": 150}),
        ];
        let table = [
            (false, ["blue", "blue,black,brown", "R,100,G,200,B,150"]),
            (true, ["blue", "blue,black,brown", "R=100,G=200,B=150"]),
        ];
        for (explode, expected) in table {
            for (value, want) in values.iter().zip(expected) {
                assert_eq!(
                    header(explode, value.clone()),
                    [("X-Color".to_owned(), want.to_owned())]
                );
            }
        }
        assert_eq!(header(false, json!(12))[0].1, "12");
        assert_eq!(header(false, json!("ok\tfine, yes"))[0].1, "ok\tfine, yes");
    }

    #[test]
    fn crlf_injection_is_refused() {
        let t = tool_at(
            "/h",
            vec![param(
                "X-Trace",
                ParamLocation::Header,
                ParamStyle::Simple,
                false,
            )],
            None,
        );
        for value in [
            json!("é"),
            json!("caf\u{e9}"),
            json!(["ok", "\u{1F600}"]),
            json!("a\r\nX-Evil: 1"),
            json!("a\nb"),
            json!("a\rb"),
            json!("nul\u{0}"),
            json!(["ok", "bad\r\n"]),
            json!({"k\n": "v"}),
        ] {
            let err = headers(t, &args(json!({ "X-Trace": value }))).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, BuildError::InvalidHeaderValue { .. }),
                "{msg}"
            );
            assert!(
                msg.contains("`X-Trace`") && msg.contains("tool `t`"),
                "{msg}"
            );
        }
    }

    #[test]
    fn cookies_share_one_header() {
        let mut list = param("ids", ParamLocation::Cookie, ParamStyle::Form, false);
        list.name = "ids";
        let t = tool_at(
            "/c",
            vec![
                param("a", ParamLocation::Cookie, ParamStyle::Form, true),
                param("X-Id", ParamLocation::Header, ParamStyle::Simple, false),
                param("b", ParamLocation::Cookie, ParamStyle::Form, true),
                list,
                param("missing", ParamLocation::Cookie, ParamStyle::Form, true),
            ],
            None,
        );
        let out = headers(
            t,
            &args(
                json!({"a": 1, "b": "x; y=\r\n", "X-Id": "7", "ids": ["p", "q"], "missing": null}),
            ),
        )
        .unwrap();
        assert_eq!(
            out,
            [
                ("X-Id".to_owned(), "7".to_owned()),
                (
                    "Cookie".to_owned(),
                    "a=1; b=x%3B%20y=%0D%0A; ids=p,q".to_owned()
                ),
            ]
        );
        let exploded = tool_at(
            "/c",
            vec![param("c", ParamLocation::Cookie, ParamStyle::Form, true)],
            None,
        );
        let out = headers(exploded, &args(json!({"c": ["1", "2"]}))).unwrap();
        assert_eq!(out[0].1, "c=1; c=2");
        let out = headers(exploded, &args(json!({"c": {"k": "v", "k2": 2}}))).unwrap();
        assert_eq!(out[0].1, "k=v; k2=2");
    }

    #[test]
    fn required_header_missing() {
        let mut def = param("if_match", ParamLocation::Header, ParamStyle::Simple, false);
        def.name = "If-Match";
        def.required = true;
        let t = tool_at("/h", vec![def], None);
        let err = headers(t, &args(json!({}))).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("`if_match`") && msg.contains("header `If-Match`"),
            "{msg}"
        );
    }
}
