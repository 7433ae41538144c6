//! The next-page hint of a direct tool's list result: the exact arguments
//! of the next call in `structuredContent.next` and in a text block, or
//! `next: null` and a sentence saying it was the last page.
//!
//! The profile's [`Pagination`] reads the answer; this module only writes
//! what it found into the result.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::catalogue::ToolDef;
use crate::pages::{Answer, PageNext};
use crate::profile::Profile;
use crate::request::Args;
use crate::upstream::UpstreamResponse;

/// The member of `structuredContent` holding the next call's arguments.
pub const NEXT: &str = "next";

/// What `resp` (a 2xx answer from `url`, without query, to `tool` called
/// with `args`) says about the next page, when the profile pages this
/// tool's lists. The body is only parsed for such tools.
pub fn next_page(
    profile: &Profile,
    tool: &ToolDef,
    args: &Args,
    url: &str,
    resp: &UpstreamResponse,
) -> Option<PageNext> {
    if !profile.pagination.applies(tool) {
        return None;
    }
    let body: Value = serde_json::from_slice(&resp.body).ok()?;
    let answer = Answer {
        body: &body,
        next_link: resp.next_link.as_deref(),
        url,
    };
    profile
        .pagination
        .next(&profile.envelope, tool, args, answer)
}

/// Adds `next` to a successful `result` of `tool`.
pub fn annotate(result: &mut CallToolResult, tool: &ToolDef, next: PageNext) {
    if result.is_error == Some(true) {
        return;
    }
    let (value, text) = match next {
        PageNext::Next(args) => {
            let shown = Value::Object(args.clone()).to_string();
            (
                Value::Object(args),
                format!(
                    "More results: call `{}` with {shown} for the next page.",
                    tool.name
                ),
            )
        }
        PageNext::Last => (Value::Null, "This is the last page.".to_owned()),
    };
    if let Some(Value::Object(structured)) = &mut result.structured_content
        && !closed_output(tool)
    {
        structured.insert(NEXT.to_owned(), value);
    }
    result.content.push(ContentBlock::text(text));
}

/// Whether the tool's output schema forbids members it does not name (a
/// client checking `structuredContent` would then refuse `next`; the text
/// block still carries it).
fn closed_output(tool: &ToolDef) -> bool {
    tool.output_schema.is_some_and(|schema| {
        serde_json::from_str::<Value>(&schema.text())
            .is_ok_and(|v| v.get("additionalProperties") == Some(&Value::Bool(false)))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalogue::SharedText;
    use crate::request::testing::{args, custom};

    fn listed(tool: &ToolDef, next: PageNext) -> CallToolResult {
        let mut result = CallToolResult::success(vec![ContentBlock::text("{}")]);
        result.structured_content = Some(json!({"data": []}));
        annotate(&mut result, tool, next);
        result
    }

    fn last_text(result: &CallToolResult) -> String {
        result
            .content
            .last()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default()
    }

    #[test]
    fn the_next_arguments_go_into_structured_content_and_text() {
        let tool = custom(|t| t.name = "customers_list");
        let r = listed(tool, PageNext::Next(args(json!({"starting_after": "c_2"}))));
        assert_eq!(
            r.structured_content,
            Some(json!({"data": [], "next": {"starting_after": "c_2"}}))
        );
        assert_eq!(
            last_text(&r),
            r#"More results: call `customers_list` with {"starting_after":"c_2"} for the next page."#
        );
        let r = listed(tool, PageNext::Last);
        assert_eq!(
            r.structured_content,
            Some(json!({"data": [], "next": null}))
        );
        assert_eq!(last_text(&r), "This is the last page.");
    }

    #[test]
    fn errors_and_closed_output_schemas_are_respected() {
        let closed = custom(|t| {
            t.output_schema = Some(SharedText::Text(
                r#"{"type":"object","additionalProperties":false}"#,
            ));
        });
        let r = listed(closed, PageNext::Last);
        assert_eq!(r.structured_content, Some(json!({"data": []})));
        assert_eq!(last_text(&r), "This is the last page.");
        let mut failed = CallToolResult::error(vec![ContentBlock::text("boom")]);
        annotate(&mut failed, closed, PageNext::Last);
        assert_eq!(failed.content.len(), 1);
    }
}
