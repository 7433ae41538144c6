//! Infers an API's paging convention from its tools: the query parameters
//! its `GET` operations take, the members their answers document and the
//! `Link` header their success responses declare. The convention most list
//! tools follow wins; forge.json `pagination` replaces the guess.

use rayon::prelude::*;
use serde_json::Value;

use crate::ir::{HttpMethod, Location, Pagination, Tool};
use crate::load::Document;

/// The convention `tools` follow, and how many `GET` tools follow it.
pub fn infer<'a>(tools: impl IntoIterator<Item = &'a Tool>) -> (Pagination, usize) {
    // Each tool's guess parses its output text: made in parallel, read in
    // the tools' order (ties go to the first seen).
    let tools: Vec<&Tool> = tools.into_iter().collect();
    let conventions: Vec<Option<Pagination>> =
        tools.par_iter().map(|tool| convention_of(tool)).collect();
    most_common(conventions)
}

/// Where the items of a list answer are when its body is an object (`/data`
/// of Stripe's `{data, has_more}`, `/value` of Graph's): the one array
/// member of the output schema most tools following `convention` share;
/// `None` when most of their lists are bare arrays (GitHub's, beside a few
/// `{total_count, items}` searches).
pub fn infer_items<'a>(
    tools: impl IntoIterator<Item = &'a Tool>,
    convention: &Pagination,
) -> Option<String> {
    // Each tool's member parses its output text: found in parallel, counted
    // in the tools' order (ties go to the first seen).
    let tools: Vec<&Tool> = tools.into_iter().collect();
    let members: Vec<Option<String>> = tools
        .par_iter()
        .map(|tool| {
            if convention_of(tool).as_ref() != Some(convention) {
                return None;
            }
            // An output wrapped as `{result}` is a body that is no object.
            if tool.envelope == crate::ir::Envelope::None {
                tool.output_value().and_then(|schema| array_member(&schema))
            } else {
                Some(String::new())
            }
        })
        .collect();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for member in members.into_iter().flatten() {
        match counts.iter_mut().find(|(m, _)| *m == member) {
            Some((_, n)) => *n += 1,
            None => counts.push((member, 1)),
        }
    }
    let mut best: Option<(String, usize)> = None;
    for (member, n) in counts {
        if best.as_ref().is_none_or(|(_, m)| n > *m) {
            best = Some((member, n));
        }
    }
    best.map(|(member, _)| member)
        .filter(|member| !member.is_empty())
}

/// The pointer to the only top-level member of an object `schema` that is
/// an array (through a root `$ref`), if there is exactly one; `""` when
/// `schema` itself is an array.
fn array_member<'a>(schema: &'a Value) -> Option<String> {
    let root = schema;
    let schema = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| root.pointer(p))
        .unwrap_or(schema);
    fn local<'v>(root: &'v Value, s: &'v Value) -> &'v Value {
        s.get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
            .unwrap_or(s)
    }
    let resolve = |s: &'a Value| local(root, s);
    let is_array = |s: &'a Value| match resolve(s).get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => false,
    };
    if is_array(schema) {
        return Some(String::new());
    }
    // The object's own properties and those of its `allOf` parts (Graph's
    // collections are `allOf: [BaseCollection…, {properties: {value}}]`).
    let mut parts: Vec<&Value> = vec![schema];
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        parts.extend(all.iter().map(resolve));
    }
    let mut arrays: Vec<&String> = Vec::new();
    for part in &parts {
        let Some(properties) = part.get("properties").and_then(Value::as_object) else {
            continue;
        };
        arrays.extend(
            properties
                .iter()
                .filter(|(_, s)| is_array(s))
                .map(|(name, _)| name),
        );
    }
    arrays.dedup();
    match arrays.as_slice() {
        [one] => Some(format!("/{}", escape(one))),
        _ => None,
    }
}

/// The most frequent convention and its count (ties: the first seen).
fn most_common(conventions: impl IntoIterator<Item = Option<Pagination>>) -> (Pagination, usize) {
    let mut counts: Vec<(Pagination, usize)> = Vec::new();
    for convention in conventions.into_iter().flatten() {
        match counts.iter_mut().find(|(c, _)| *c == convention) {
            Some((_, n)) => *n += 1,
            None => counts.push((convention, 1)),
        }
    }
    let mut best: Option<(Pagination, usize)> = None;
    for (convention, n) in counts {
        if best.as_ref().is_none_or(|(_, m)| n > *m) {
            best = Some((convention, n));
        }
    }
    best.unwrap_or((Pagination::None, 0))
}

/// The convention one tool follows, if it is a paged `GET` list.
pub fn convention_of(tool: &Tool) -> Option<Pagination> {
    let query: Vec<&str> = tool
        .params
        .iter()
        .filter(|p| p.location == Location::Query)
        .map(|p| p.name.as_str())
        .collect();
    let output = tool.output_schema.as_ref().map_or("", |o| o.text.as_str());
    convention(tool.method, &query, output).or_else(|| {
        (tool.method == HttpMethod::Get && tool.declares_link).then_some(Pagination::LinkHeader)
    })
}

/// Whether the operation `op` (at `op_ptr` in `doc`) declares a `Link`
/// header on its lowest 2xx response (a body member says more about
/// paging than a header, so [`convention_of`] tries those first).
pub fn declares_link(doc: &Document, op: &Value, op_ptr: &str) -> bool {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return false;
    };
    let Some((status, response)) = responses
        .iter()
        .filter(|(status, _)| status.starts_with('2'))
        .min_by(|a, b| a.0.cmp(b.0))
    else {
        return false;
    };
    let at = crate::error::push_pointer(&crate::error::push_pointer(op_ptr, "responses"), status);
    crate::refs::deref(doc, response, &at)
        .ok()
        .and_then(|(response, _)| response.get("headers")?.as_object())
        .is_some_and(|headers| headers.keys().any(|h| h.eq_ignore_ascii_case("link")))
}

/// The convention of an operation with `method`, query parameters `query`
/// and output schema text `output` (the body as the runtime reads it:
/// the policy's output keeps page metadata where the body has it).
fn convention(method: HttpMethod, query: &[&str], output: &str) -> Option<Pagination> {
    if method != HttpMethod::Get || output.is_empty() {
        return None;
    }
    let has_query = |name: &str| query.contains(&name);
    let schema: Value = serde_json::from_str(output).ok()?;
    let find = |member: &str| member_pointer(&schema, &schema, member, 0);
    if has_query("starting_after")
        && let Some(more) = find("has_more")
    {
        return Some(Pagination::LastItemId {
            param: "starting_after".into(),
            more,
            id: "/id".into(),
        });
    }
    if has_query("cursor")
        && let Some(cursor) = find("next_cursor")
    {
        return Some(Pagination::CursorField {
            param: "cursor".into(),
            cursor,
        });
    }
    for member in ["@odata.nextLink", "next_page_uri"] {
        if let Some(next) = find(member) {
            return Some(Pagination::NextUrl { next });
        }
    }
    if has_query("page")
        && let Some(total_pages) = find("total_pages")
    {
        let parent = total_pages.strip_suffix("/total_pages").unwrap_or("");
        return Some(Pagination::PageNumber {
            param: "page".into(),
            page: format!("{parent}/page"),
            total_pages,
        });
    }
    None
}

/// How deep [`member_pointer`] looks (page metadata sits near the top).
const MAX_DEPTH: usize = 3;

/// The JSON pointer, in instances of `schema`, to the first property named
/// `member` (breadth before depth is not needed: APIs put one such member
/// per answer), following `properties`, `allOf` and local `$ref`s.
fn member_pointer(root: &Value, schema: &Value, member: &str, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| root.pointer(p))
    {
        return member_pointer(root, target, member, depth + 1);
    }
    if let Some(parts) = schema.get("allOf").and_then(Value::as_array)
        && let Some(found) = parts
            .iter()
            .find_map(|part| member_pointer(root, part, member, depth + 1))
    {
        return Some(found);
    }
    let properties = schema.get("properties")?.as_object()?;
    if properties.contains_key(member) {
        return Some(format!("/{}", escape(member)));
    }
    properties.iter().find_map(|(name, sub)| {
        member_pointer(root, sub, member, depth + 1).map(|rest| format!("/{}{rest}", escape(name)))
    })
}

/// A JSON pointer reference token for `name` (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: HttpMethod, query: &[&str], output: &str) -> Option<Pagination> {
        convention(method, query, output)
    }

    #[test]
    fn each_convention_is_recognised_from_parameters_and_documented_members() {
        let stripe = of(
            HttpMethod::Get,
            &["limit", "starting_after"],
            r#"{"properties":{"data":{},"has_more":{}}}"#,
        );
        assert_eq!(
            stripe,
            Some(Pagination::LastItemId {
                param: "starting_after".into(),
                more: "/has_more".into(),
                id: "/id".into()
            })
        );
        let slack = of(
            HttpMethod::Get,
            &["cursor"],
            r#"{"properties":{"response_metadata":{"properties":{"next_cursor":{}}}}}"#,
        );
        assert_eq!(
            slack,
            Some(Pagination::CursorField {
                param: "cursor".into(),
                cursor: "/response_metadata/next_cursor".into()
            })
        );
        let graph = of(
            HttpMethod::Get,
            &["$top"],
            r#"{"properties":{"value":{},"@odata.nextLink":{}}}"#,
        );
        assert_eq!(
            graph,
            Some(Pagination::NextUrl {
                next: "/@odata.nextLink".into()
            })
        );
        let numbered = of(
            HttpMethod::Get,
            &["page", "per_page"],
            r##"{"properties":{"result_info":{"$ref":"#/$defs/info"}},"$defs":{"info":{"properties":{"total_pages":{}}}}}"##,
        );
        assert_eq!(
            numbered,
            Some(Pagination::PageNumber {
                param: "page".into(),
                page: "/result_info/page".into(),
                total_pages: "/result_info/total_pages".into()
            })
        );
        // The parameter alone, or a POST, is no paged list.
        let param_only = of(HttpMethod::Get, &["starting_after"], "{}");
        assert_eq!(param_only, None);
        let stripe_list = r#"{"properties":{"has_more":{}}}"#;
        let post = of(HttpMethod::Post, &["starting_after"], stripe_list);
        assert_eq!(post, None);
    }

    #[test]
    fn the_convention_of_most_tools_wins() {
        let last_id = || {
            Some(Pagination::LastItemId {
                param: "starting_after".into(),
                more: "/has_more".into(),
                id: "/id".into(),
            })
        };
        let cursor = Some(Pagination::CursorField {
            param: "cursor".into(),
            cursor: "/next_cursor".into(),
        });
        let (convention, n) = most_common([cursor, None, last_id(), last_id()]);
        assert_eq!(Some(convention), last_id());
        assert_eq!(n, 2);
        assert_eq!(most_common([None]), (Pagination::None, 0));
    }

    /// A GitHub-shaped spec: two lists declare `Link` (one through a
    /// `$ref`ed response), a single object and a POST do not page.
    const GITHUB_SHAPED: &str = r##"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
      "servers": [{"url": "https://api.example"}],
      "components": {
        "headers": {"link": {"schema": {"type": "string"}}},
        "responses": {"listed": {"description": "ok", "headers": {"Link": {"$ref": "#/components/headers/link"}},
          "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object"}}}}}}},
      "paths": {
        "/repos": {"get": {"operationId": "repos/list", "parameters": [{"name": "page", "in": "query", "schema": {"type": "integer"}}],
          "responses": {"200": {"$ref": "#/components/responses/listed"}}},
          "post": {"operationId": "repos/create", "responses": {"201": {"description": "ok", "headers": {"Link": {"schema": {"type": "string"}}}}}}},
        "/issues": {"get": {"operationId": "issues/list", "responses": {"200": {"description": "ok", "headers": {"link": {"schema": {"type": "string"}}},
          "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object"}}}}}}}},
        "/user": {"get": {"operationId": "user/get", "responses": {"200": {"description": "ok",
          "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}"##;

    #[test]
    fn lists_declaring_a_link_header_page_by_it() {
        let doc = crate::load::load(GITHUB_SHAPED.as_bytes(), "spec.json").unwrap();
        let config =
            crate::config::ForgeConfig::generic("t", std::path::Path::new("spec.json"), "0");
        let cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        let tools: Vec<&Tool> = cat.products.iter().flat_map(|p| &p.tools).collect();
        let of = |id: &str| {
            let tool = tools.iter().find(|t| t.operation_id == id).unwrap();
            convention_of(tool)
        };
        assert_eq!(of("repos/list"), Some(Pagination::LinkHeader));
        assert_eq!(of("issues/list"), Some(Pagination::LinkHeader));
        assert_eq!(of("repos/create"), None);
        assert_eq!(of("user/get"), None);
        assert_eq!(cat.profile.pagination, Pagination::LinkHeader);
        // Bare-array lists: no items pointer.
        assert_eq!(cat.profile.envelope.items, None);
    }

    #[test]
    fn the_one_array_member_of_list_outputs_holds_the_items() {
        let stripe = serde_json::json!({"type": "object", "properties": {
            "object": {"const": "list"}, "data": {"type": "array"}, "has_more": {"type": "boolean"}}});
        assert_eq!(array_member(&stripe), Some("/data".into()));
        let referenced = serde_json::json!({"$ref": "#/$defs/L", "$defs": {"L": {"properties": {
            "value": {"$ref": "#/$defs/A"}}}, "A": {"type": ["array", "null"]}}});
        assert_eq!(array_member(&referenced), Some("/value".into()));
        let two =
            serde_json::json!({"properties": {"a": {"type": "array"}, "b": {"type": "array"}}});
        assert_eq!(array_member(&two), None);
        let graph = serde_json::json!({"allOf": [
            {"$ref": "#/$defs/Base"}, {"type": "object", "properties": {"value": {"type": "array"}}}],
            "$defs": {"Base": {"properties": {"@odata.nextLink": {"type": ["string", "null"]}}}}});
        assert_eq!(array_member(&graph), Some("/value".into()));
        assert_eq!(
            array_member(&serde_json::json!({"type": "array"})),
            Some(String::new())
        );
    }
}
