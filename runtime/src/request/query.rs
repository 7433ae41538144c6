//! Query string serialisation (`form`, `spaceDelimited`, `pipeDelimited`,
//! `deepObject`).

use serde_json::{Map, Value};

use super::encode::{component, query_value};
use super::{Args, BuildError, Shape, item_text, present};
use crate::catalogue::{ParamDef, ParamLocation, ParamStyle, ToolDef};

/// Serialises every query parameter present in `args`, in parameter order,
/// without the leading `?` (empty when there is none).
pub(crate) fn serialise(tool: &ToolDef, args: &Args) -> Result<String, BuildError> {
    let mut pairs = Vec::new();
    for def in tool
        .params
        .iter()
        .filter(|p| p.location == ParamLocation::Query)
    {
        match present(args, def.arg) {
            Some(value) => serialise_one(def, value, &mut pairs),
            None if def.required => {
                return Err(BuildError::Missing {
                    tool: tool.name,
                    arg: def.arg.to_owned(),
                    place: format!("query parameter `{}`", def.name),
                });
            }
            None => {}
        }
    }
    Ok(pairs.join("&"))
}

/// Appends the `name=value` pairs of one parameter.
///
/// Empty arrays and objects produce nothing when exploded and `name=` when
/// not. `deepObject` writes `name[key]=v`, nested objects as
/// `name[key][key2]=v` and arrays as repeated `name[key][]=v` (the form
/// Rails, PHP, `qs` and Stripe read); a primitive under `deepObject` is
/// written as `name=v`.
fn serialise_one(def: &ParamDef, value: &Value, out: &mut Vec<String>) {
    let name = component(def.name);
    let enc = |text: &str| query_value(text, def.allow_reserved);
    let (delimiter, explode) = match def.style {
        ParamStyle::DeepObject => {
            deep_object(&name, value, &enc, out);
            return;
        }
        ParamStyle::SpaceDelimited => ("%20", def.explode),
        ParamStyle::PipeDelimited => ("|", def.explode),
        _ => (",", def.explode),
    };
    match Shape::of(value) {
        Shape::Scalar(text) => out.push(format!("{name}={}", enc(&text))),
        Shape::List(items) if explode => {
            out.extend(items.iter().map(|v| format!("{name}={}", enc(v))));
        }
        Shape::List(items) => {
            let joined: Vec<String> = items.iter().map(|v| enc(v)).collect();
            out.push(format!("{name}={}", joined.join(delimiter)));
        }
        Shape::Pairs(pairs) if explode => {
            out.extend(
                pairs
                    .iter()
                    .map(|(k, v)| format!("{}={}", component(k), enc(v))),
            );
        }
        Shape::Pairs(pairs) => {
            let joined: Vec<String> = pairs.iter().flat_map(|(k, v)| [enc(k), enc(v)]).collect();
            out.push(format!("{name}={}", joined.join(delimiter)));
        }
    }
}

/// `deepObject` serialisation of `value` under the already-encoded `key`.
fn deep_object(key: &str, value: &Value, enc: &dyn Fn(&str) -> String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => deep_map(key, map, enc, out),
        Value::Array(items) => {
            for item in items.iter().filter(|v| !v.is_null()) {
                out.push(format!("{key}[]={}", enc(&item_text(item))));
            }
        }
        Value::Null => {}
        scalar => out.push(format!("{key}={}", enc(&item_text(scalar)))),
    }
}

fn deep_map(
    key: &str,
    map: &Map<String, Value>,
    enc: &dyn Fn(&str) -> String,
    out: &mut Vec<String>,
) {
    for (k, v) in map {
        deep_object(&format!("{key}[{}]", component(k)), v, enc, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::testing::{args, param, tool_at};
    use serde_json::json;

    fn query(style: ParamStyle, explode: bool, value: Value) -> String {
        let t = tool_at(
            "/q",
            vec![param("color", ParamLocation::Query, style, explode)],
            None,
        );
        serialise(t, &args(json!({ "color": value }))).unwrap()
    }

    fn color_values() -> [Value; 3] {
        [
            json!("blue"),
            json!(["blue", "black", "brown"]),
            json!({"R": 100, "G": 200, "B": 150}),
        ]
    }

    /// OpenAPI 3.0.3 "Style Examples" table, query styles. The table gives
    /// the delimited styles without the name; in a query it is `color=`.
    #[test]
    fn openapi_style_examples() {
        use ParamStyle::{Form, PipeDelimited, SpaceDelimited};
        let table: [(ParamStyle, bool, [&str; 3]); 4] = [
            (
                Form,
                false,
                [
                    "color=blue",
                    "color=blue,black,brown",
                    "color=R,100,G,200,B,150",
                ],
            ),
            (
                Form,
                true,
                [
                    "color=blue",
                    "color=blue&color=black&color=brown",
                    "R=100&G=200&B=150",
                ],
            ),
            (
                SpaceDelimited,
                false,
                [
                    "color=blue",
                    "color=blue%20black%20brown",
                    "color=R%20100%20G%20200%20B%20150",
                ],
            ),
            (
                PipeDelimited,
                false,
                [
                    "color=blue",
                    "color=blue|black|brown",
                    "color=R|100|G|200|B|150",
                ],
            ),
        ];
        for (style, explode, expected) in table {
            for (value, want) in color_values().into_iter().zip(expected) {
                assert_eq!(
                    query(style, explode, value.clone()),
                    want,
                    "{style:?} {explode} {value}"
                );
            }
        }
        assert_eq!(
            query(
                ParamStyle::DeepObject,
                true,
                json!({"R": 100, "G": 200, "B": 150})
            ),
            "color[R]=100&color[G]=200&color[B]=150"
        );
    }

    #[test]
    fn delimited_styles_explode_like_form() {
        for style in [ParamStyle::SpaceDelimited, ParamStyle::PipeDelimited] {
            assert_eq!(query(style, true, json!([1, 2])), "color=1&color=2");
        }
    }

    #[test]
    fn deep_object_nesting_and_arrays() {
        let value =
            json!({"created": {"gte": 5, "lt": 9}, "tags": ["a b", "c"], "skip": null, "k": "v"});
        assert_eq!(
            query(ParamStyle::DeepObject, true, value),
            "color[created][gte]=5&color[created][lt]=9&color[tags][]=a%20b&color[tags][]=c&color[k]=v"
        );
        assert_eq!(
            query(ParamStyle::DeepObject, true, json!(["x", "y"])),
            "color[]=x&color[]=y"
        );
        assert_eq!(query(ParamStyle::DeepObject, true, json!(7)), "color=7");
        assert_eq!(
            query(ParamStyle::DeepObject, true, json!({"a[b]": 1})),
            "color[a%5Bb%5D]=1"
        );
    }

    #[test]
    fn primitives_and_encoding() {
        assert_eq!(query(ParamStyle::Form, true, json!(true)), "color=true");
        assert_eq!(query(ParamStyle::Form, true, json!(-1.25)), "color=-1.25");
        assert_eq!(query(ParamStyle::Form, true, json!("")), "color=");
        assert_eq!(
            query(ParamStyle::Form, true, json!("a&b=c d/é")),
            "color=a%26b%3Dc%20d%2F%C3%A9"
        );
        assert_eq!(
            query(ParamStyle::Form, false, json!(["a,b", "c"])),
            "color=a%2Cb,c"
        );
        assert_eq!(query(ParamStyle::Form, true, json!([])), "");
        assert_eq!(query(ParamStyle::Form, false, json!([])), "color=");
        assert_eq!(
            query(ParamStyle::Form, true, json!([{"x": 1}])),
            "color=%7B%22x%22%3A1%7D"
        );
    }

    #[test]
    fn allow_reserved_keeps_reserved_characters() {
        let mut def = param("filter", ParamLocation::Query, ParamStyle::Form, true);
        def.allow_reserved = true;
        let t = tool_at("/q", vec![def], None);
        let q = serialise(t, &args(json!({"filter": "a:b/c?d=[e]@f,g#h i%"}))).unwrap();
        assert_eq!(q, "filter=a:b/c?d=[e]@f,g%23h%20i%25");
    }

    #[test]
    fn absent_and_null_are_omitted_required_is_enforced() {
        let mut page = param("page", ParamLocation::Query, ParamStyle::Form, true);
        page.name = "page[number]";
        let mut per = param("per_page", ParamLocation::Query, ParamStyle::Form, true);
        per.required = true;
        let t = tool_at("/q", vec![page, per], None);
        assert_eq!(
            serialise(t, &args(json!({"page": null, "per_page": 5}))).unwrap(),
            "per_page=5"
        );
        assert_eq!(
            serialise(t, &args(json!({"page": 2, "per_page": 5}))).unwrap(),
            "page%5Bnumber%5D=2&per_page=5"
        );
        let err = serialise(t, &args(json!({"page": 1, "per_page": null}))).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, BuildError::Missing { .. }));
        assert!(
            msg.contains("`per_page`") && msg.contains("tool `t`"),
            "{msg}"
        );
    }
}
