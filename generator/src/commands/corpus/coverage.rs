//! Whether every operation that became a tool kept its inputs: each
//! parameter the spec declares (path item and operation level; the
//! `Accept`, `Content-Type` and `Authorization` headers excepted, which
//! OpenAPI says to ignore) and each top-level body property that is not
//! `readOnly`, for a flattened object body. The corpus run reports the
//! count (target 0).

use serde_json::{Map, Value};

use crate::ir::{BodyArgs, Catalogue, Location, Tool};
use crate::load::Document;
use crate::refs::deref;

/// Header parameters OpenAPI 3 says are ignored.
const IGNORED_HEADERS: &[&str] = &["accept", "content-type", "authorization"];

/// The value at `node`, its `$ref`s followed (`None` when they dangle).
fn resolved<'a>(doc: &'a Document, node: &'a Value) -> Option<&'a Value> {
    deref(doc, node, "").ok().map(|(v, _)| v)
}

fn location(l: Location) -> &'static str {
    match l {
        Location::Path => "path",
        Location::Query => "query",
        Location::Header => "header",
        Location::Cookie => "cookie",
    }
}

/// `name (in)` of each declared parameter the tool does not take.
fn lost_params(doc: &Document, item: &Value, op: &Value, tool: &Tool, out: &mut Vec<String>) {
    let declared = [item, op]
        .into_iter()
        .filter_map(|v| v.get("parameters")?.as_array())
        .flatten()
        .filter_map(|p| resolved(doc, p));
    for p in declared {
        let (Some(name), Some(place)) = (
            p.get("name").and_then(Value::as_str),
            p.get("in").and_then(Value::as_str),
        ) else {
            continue;
        };
        if place == "header" && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        let kept = tool
            .params
            .iter()
            .any(|q| q.name == name && location(q.location) == place);
        if !kept {
            out.push(format!("parameter `{name}` ({place})"));
        }
    }
}

/// Top-level properties of an object schema, `allOf` members included.
fn properties<'a>(
    doc: &'a Document,
    schema: &'a Value,
    depth: usize,
    out: &mut Vec<(&'a str, &'a Value)>,
) {
    let Some(schema) = resolved(doc, schema) else {
        return;
    };
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        out.extend(props.iter().map(|(k, v)| (k.as_str(), v)));
    }
    if depth < 8 {
        for member in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            properties(doc, member, depth + 1, out);
        }
    }
}

/// `body property `x`` for each non-readOnly body property not flattened.
fn lost_body(doc: &Document, op: &Value, tool: &Tool, out: &mut Vec<String>) {
    let Some(body) = &tool.body else { return };
    let BodyArgs::Fields(fields) = &body.args else {
        return;
    };
    let Some(content) = op
        .get("requestBody")
        .and_then(|rb| resolved(doc, rb))
        .and_then(|rb| rb.get("content"))
        .and_then(Value::as_object)
    else {
        return;
    };
    let media = content.get(&body.content_type).or_else(|| {
        content
            .iter()
            .find(|(m, _)| m.contains('*'))
            .map(|(_, v)| v)
    });
    let Some(schema) = media.and_then(|m| m.get("schema")) else {
        return;
    };
    let mut props = Vec::new();
    properties(doc, schema, 0, &mut props);
    for (name, prop) in props {
        // `readOnly` next to a `$ref` counts too (the converter honours it).
        let flag = |v: &Value| v.get("readOnly").and_then(Value::as_bool) == Some(true);
        let read_only = flag(prop) || resolved(doc, prop).is_some_and(flag);
        let kept =
            fields.iter().any(|(_, p)| p == name) || body.file_fields.iter().any(|f| f == name);
        if !read_only && !kept {
            out.push(format!("body property `{name}`"));
        }
    }
}

/// One line per tool that lost an input: `METHOD path: what, …`.
pub fn lost_inputs(doc: &Document, cat: &Catalogue) -> Vec<String> {
    let empty = Map::new();
    let paths = doc
        .root
        .get("paths")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut lines = Vec::new();
    for tool in cat.tools() {
        let Some(item) = paths.get(&tool.path).and_then(|i| resolved(doc, i)) else {
            continue;
        };
        let Some(op) = item.get(tool.method.key()) else {
            continue;
        };
        let mut lost = Vec::new();
        lost_params(doc, item, op, tool, &mut lost);
        lost_body(doc, op, tool, &mut lost);
        if !lost.is_empty() {
            lines.push(format!(
                "{} {}: {}",
                tool.method.as_str(),
                tool.path,
                lost.join(", ")
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ForgeConfig;

    #[test]
    fn reports_inputs_a_tool_does_not_take() {
        let spec = br##"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
            "/pets/{id}": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
              "put": {"operationId": "putPet",
                "parameters": [{"name": "dry", "in": "query", "schema": {"type": "boolean"}},
                               {"name": "Accept", "in": "header", "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                  "name": {"type": "string"}, "id": {"type": "string", "readOnly": true},
                  "info": {"$ref": "#/components/schemas/Info", "readOnly": true}}}}}},
                "responses": {"204": {"description": "ok"}}}}},
            "components": {"schemas": {"Info": {"type": "object"}}}}"##;
        let doc = crate::load::load(spec, "spec.json").unwrap();
        let config = ForgeConfig::generic("t", std::path::Path::new("spec.json"), "0");
        let mut cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        assert_eq!(lost_inputs(&doc, &cat), Vec::<String>::new());
        let tool = &mut cat.products[0].tools[0];
        tool.params.retain(|p| p.name != "dry");
        if let Some(body) = &mut tool.body
            && let BodyArgs::Fields(fields) = &mut body.args
        {
            fields.retain(|(_, p)| p != "name");
        }
        assert_eq!(
            lost_inputs(&doc, &cat),
            ["PUT /pets/{id}: parameter `dry` (query), body property `name`"]
        );
    }
}
