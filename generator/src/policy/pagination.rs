//! Infers an API's paging convention from its tools: the query parameters
//! its `GET` operations take and the members their answers document. The
//! convention most list tools follow wins; forge.json `pagination`
//! replaces the guess.

use serde_json::Value;

use crate::ir::{HttpMethod, Location, Pagination, Tool};

/// The convention `tools` follow, and how many `GET` tools follow it.
pub fn infer<'a>(tools: impl IntoIterator<Item = &'a Tool>) -> (Pagination, usize) {
    most_common(tools.into_iter().map(convention_of))
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
    convention(tool.method, &query, output)
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
}
