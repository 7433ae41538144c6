//! Parameters: collection (path item + operation level), argument naming
//! with location suffixes on clashes, schemas, and route templates.

use serde_json::{Map, Value, json};

use super::{LowerCtx, Skip, single_route};
use crate::error::{Result, push_pointer};
use crate::ir::{Location, Param, Route, Style};
use crate::policy::{MergedPath, OpRef};
use crate::refs::deref;
use crate::schema::SchemaConverter;

/// The tool's input schema under construction.
#[derive(Debug, Default)]
pub(crate) struct Args {
    pub properties: Map<String, Value>,
    pub required: Vec<String>,
}

impl Args {
    /// `name` if free, else `name_<suffix>`, else `name_<suffix>_<n>`.
    pub fn claim(&self, name: &str, suffix: &str) -> String {
        if !self.properties.contains_key(name) {
            return name.to_string();
        }
        let with_suffix = format!("{name}_{suffix}");
        if !self.properties.contains_key(&with_suffix) {
            return with_suffix;
        }
        (2..)
            .map(|n| format!("{with_suffix}_{n}"))
            .find(|c| !self.properties.contains_key(c))
            .unwrap_or(with_suffix)
    }

    /// Adds an argument.
    pub fn add(&mut self, arg: &str, schema: Value, required: bool) {
        self.properties.insert(arg.to_string(), schema);
        if required && !self.required.iter().any(|r| r == arg) {
            self.required.push(arg.to_string());
        }
    }
}

/// A parameter as read from the spec, before argument naming.
struct RawParam<'a> {
    name: String,
    location: Location,
    node: &'a Value,
    pointer: String,
}

/// Placeholders of a path template, in order.
pub(crate) fn placeholders(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        out.push(&after[..end]);
        rest = &after[end + 1..];
    }
    out
}

fn location(text: &str) -> Option<Location> {
    match text {
        "path" => Some(Location::Path),
        "query" => Some(Location::Query),
        "header" => Some(Location::Header),
        "cookie" => Some(Location::Cookie),
        _ => None,
    }
}

fn style(text: Option<&str>, loc: Location) -> Style {
    match text {
        Some("simple") => Style::Simple,
        Some("label") => Style::Label,
        Some("matrix") => Style::Matrix,
        Some("form") => Style::Form,
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        _ => match loc {
            Location::Path | Location::Header => Style::Simple,
            Location::Query | Location::Cookie => Style::Form,
        },
    }
}

fn read_params<'a>(
    ctx: &LowerCtx<'a>,
    list: Option<&'a Value>,
    base: &str,
    out: &mut Vec<RawParam<'a>>,
) -> Result<()> {
    let Some(list) = list else { return Ok(()) };
    let Some(items) = list.as_array() else {
        return Err(ctx.invalid(base, "`parameters` must be an array"));
    };
    for (i, item) in items.iter().enumerate() {
        let ptr = push_pointer(base, &i.to_string());
        let (node, ptr) = deref(ctx.doc, item, &ptr)?;
        let name = node
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ctx.invalid(&ptr, "parameter has no string `name`"))?;
        let loc_text = node.get("in").and_then(Value::as_str).unwrap_or_default();
        let loc = location(loc_text).ok_or_else(|| {
            ctx.invalid(
                &ptr,
                format!("parameter `{name}` has unknown location `in: {loc_text}`"),
            )
        })?;
        // OpenAPI: these header parameters are ignored; the transport owns them.
        if loc == Location::Header
            && ["accept", "content-type", "authorization"]
                .contains(&name.to_ascii_lowercase().as_str())
        {
            continue;
        }
        out.retain(|p| !(p.name == name && p.location == loc));
        out.push(RawParam {
            name: name.to_string(),
            location: loc,
            node,
            pointer: ptr,
        });
    }
    Ok(())
}

fn param_schema(input: &mut SchemaConverter<'_>, p: &RawParam<'_>) -> Result<Value> {
    let (schema, ptr) = if let Some(s) = p.node.get("schema") {
        (s, push_pointer(&p.pointer, "schema"))
    } else if let Some((media, m)) = p
        .node
        .get("content")
        .and_then(Value::as_object)
        .and_then(|c| c.iter().next())
    {
        let ptr = push_pointer(
            &push_pointer(&push_pointer(&p.pointer, "content"), media),
            "schema",
        );
        (m.get("schema").unwrap_or(&Value::Null), ptr)
    } else {
        (&Value::Null, p.pointer.clone())
    };
    let mut converted = if schema.is_null() {
        json!({"type": "string"})
    } else {
        input.convert(schema, &ptr)?
    };
    if let Some(desc) = p
        .node
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
    {
        if let Value::Object(m) = &mut converted {
            m.insert("description".into(), Value::String(desc.trim().to_string()));
        } else {
            let mut m = Map::new();
            m.insert("allOf".into(), Value::Array(vec![converted]));
            m.insert("description".into(), Value::String(desc.trim().to_string()));
            converted = Value::Object(m);
        }
    }
    if p.node.get("deprecated").and_then(Value::as_bool) == Some(true)
        && let Value::Object(m) = &mut converted
    {
        m.insert("deprecated".into(), Value::Bool(true));
    }
    Ok(converted)
}

/// Collects the operation's parameters into `args`; `Err(Skip)` when the
/// operation cannot become a tool.
pub(crate) fn collect(
    ctx: &LowerCtx<'_>,
    input: &mut SchemaConverter<'_>,
    args: &mut Args,
    op: OpRef<'_>,
    path_item: &Value,
    op_ptr: &str,
    merged: Option<&MergedPath>,
) -> Result<std::result::Result<Vec<Param>, Skip>> {
    let item_ptr = op_ptr.rsplit_once('/').map_or("", |(base, _)| base);
    let mut raw = Vec::new();
    read_params(
        ctx,
        path_item.get("parameters"),
        &push_pointer(item_ptr, "parameters"),
        &mut raw,
    )?;
    read_params(
        ctx,
        op.op.get("parameters"),
        &push_pointer(op_ptr, "parameters"),
        &mut raw,
    )?;
    let holes = placeholders(op.path);
    for hole in &holes {
        if !raw
            .iter()
            .any(|p| p.location == Location::Path && p.name == *hole)
        {
            return Ok(Err(Skip(format!(
                "path placeholder `{{{hole}}}` is not declared as a path parameter, so no request can be built"
            ))));
        }
    }
    // Path parameters in template order, then the rest in spec order by location.
    let mut ordered: Vec<&RawParam<'_>> = Vec::new();
    for hole in &holes {
        if let Some(p) = raw
            .iter()
            .find(|p| p.location == Location::Path && p.name == *hole)
            && !ordered.iter().any(|o| std::ptr::eq(*o, p))
        {
            ordered.push(p);
        }
    }
    for loc in [Location::Query, Location::Header, Location::Cookie] {
        ordered.extend(raw.iter().filter(|p| p.location == loc));
    }
    let mut out = Vec::with_capacity(ordered.len());
    for p in ordered {
        let arg = args.claim(&p.name, p.location.as_str());
        let is_selector =
            merged.is_some_and(|m| m.selector == p.name && p.location == Location::Path);
        let is_merged_id =
            merged.is_some_and(|m| m.id_param == p.name && p.location == Location::Path);
        let schema = if let Some(m) = merged.filter(|_| is_selector) {
            let values: Vec<&str> = m.variants.iter().map(|v| v.value.as_str()).collect();
            json!({"type": "string", "enum": values, "description": m.selector_description})
        } else if let Some(m) = merged.filter(|_| is_merged_id) {
            merged_id_schema(m)
        } else {
            param_schema(input, p)?
        };
        let wire_required = p
            .node
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let required = match p.location {
            Location::Path => !ctx.policy.path_param_optional(&p.name),
            _ => wire_required,
        };
        let st = style(p.node.get("style").and_then(Value::as_str), p.location);
        let explode = p
            .node
            .get("explode")
            .and_then(Value::as_bool)
            .unwrap_or(st == Style::Form);
        args.add(&arg, schema, required);
        out.push(Param {
            arg,
            name: p.name.clone(),
            location: p.location,
            style: st,
            explode,
            required: p.location == Location::Path || wire_required,
            allow_reserved: p
                .node
                .get("allowReserved")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
    }
    Ok(Ok(out))
}

/// Rewrites `{wire}` placeholders to `{arg}` placeholders.
fn to_arg_template(path: &str, params: &[Param]) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let wire = &after[..end];
        let arg = params
            .iter()
            .find(|p| p.location == Location::Path && p.name == wire)
            .map_or(wire, |p| p.arg.as_str());
        out.push('{');
        out.push_str(arg);
        out.push('}');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The tool's routes: one, or one per merged-path variant.
pub(crate) fn routes(path: &str, params: &[Param], merged: Option<&MergedPath>) -> Vec<Route> {
    let template = to_arg_template(path, params);
    let Some(m) = merged else {
        return single_route(template);
    };
    let arg_of = |wire: &str| {
        params
            .iter()
            .find(|p| p.location == Location::Path && p.name == wire)
            .map_or_else(|| wire.to_string(), |p| p.arg.clone())
    };
    let selector_arg = arg_of(&m.selector);
    let id_arg = arg_of(&m.id_param);
    let prefix = format!("/{{{selector_arg}}}/{{{id_arg}}}");
    let rest = template.strip_prefix(&prefix).unwrap_or("");
    m.variants
        .iter()
        .map(|v| Route {
            when: Some((selector_arg.clone(), v.value.clone())),
            template: format!("/{}/{{{id_arg}}}{rest}", v.value),
        })
        .collect()
}

/// The schema of a merged path's id argument: a string, with the
/// `maxLength` the policy gives its ids (if any), and its description.
fn merged_id_schema(m: &MergedPath) -> Value {
    let mut schema = serde_json::Map::new();
    schema.insert("type".into(), json!("string"));
    if let Some(max) = m.id_max_length {
        schema.insert("maxLength".into(), json!(max));
    }
    schema.insert("description".into(), json!(m.id_description));
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(id_max_length: Option<u64>) -> MergedPath {
        MergedPath {
            selector: "scope".into(),
            id_param: "scope_id".into(),
            selector_description: "s".into(),
            id_description: "The id.".into(),
            id_max_length,
            variants: Vec::new(),
        }
    }

    #[test]
    fn a_merged_id_is_bounded_only_as_the_policy_says() {
        assert_eq!(
            serde_json::to_string(&merged_id_schema(&merged(Some(32)))).ok(),
            Some(r#"{"type":"string","maxLength":32,"description":"The id."}"#.to_owned())
        );
        assert_eq!(
            merged_id_schema(&merged(None)),
            json!({"type": "string", "description": "The id."})
        );
    }
}
