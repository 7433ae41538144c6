//! The next-page hint of a direct tool's list result: the exact arguments
//! of the next call in `structuredContent.next` and in a text block, or
//! `next: null` and a sentence saying it was the last page.
//!
//! The profile's [`Pagination`] reads the answer; this module only writes
//! what it found into the result.

use std::sync::OnceLock;

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
/// with `args`; `body` its JSON, see [`crate::outcome::parse_body`]) says
/// about the next page, when the profile pages this tool's lists.
pub fn next_page(
    profile: &Profile,
    tool: &ToolDef,
    args: &Args,
    url: &str,
    resp: &UpstreamResponse,
    body: Option<&Value>,
) -> Option<PageNext> {
    if !profile.pagination.applies(tool) {
        return None;
    }
    let answer = Answer {
        body: body?,
        next_link: resp.next_link.as_deref(),
        url,
    };
    profile
        .pagination
        .next(&profile.envelope, tool, args, answer)
}

/// Adds `next` to a successful `result` of `tool`; `closed` is
/// [`ClosedOutputs::of`] the tool.
pub fn annotate(result: &mut CallToolResult, tool: &ToolDef, next: PageNext, closed: bool) {
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
        && !closed
    {
        structured.insert(NEXT.to_owned(), value);
    }
    result.content.push(ContentBlock::text(text));
}

/// [`closed_output`] of each tool, worked out on its first paged answer:
/// the answer needs only the output schema's top level, but reading it
/// meant reassembling and parsing the whole schema (a third of a direct
/// call's instructions before this was kept).
#[derive(Debug)]
pub struct ClosedOutputs(Vec<OnceLock<bool>>);

impl ClosedOutputs {
    /// Empty slots for `count` tools.
    pub fn new(count: usize) -> Self {
        Self((0..count).map(|_| OnceLock::new()).collect())
    }

    /// [`closed_output`] of `tool`, which is tool `index` of the slots.
    pub fn of(&self, index: usize, tool: &ToolDef) -> bool {
        match self.0.get(index) {
            Some(slot) => *slot.get_or_init(|| closed_output(tool)),
            None => closed_output(tool),
        }
    }
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
        annotate(&mut result, tool, next, ClosedOutputs::new(1).of(0, tool));
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
        annotate(&mut failed, closed, PageNext::Last, true);
        assert_eq!(failed.content.len(), 1);
    }

    /// The answer is kept per slot: a slot holds its first answer, and an
    /// index past the slots is worked out each time.
    #[test]
    fn closed_outputs_are_worked_out_once_per_tool() {
        let closed = custom(|t| {
            t.output_schema = Some(SharedText::Text(
                r#"{"type":"object","additionalProperties":false}"#,
            ));
        });
        let open = custom(|t| {
            t.output_schema = Some(SharedText::Text(r#"{"type":"object"}"#));
        });
        let slots = ClosedOutputs::new(2);
        assert!(slots.of(0, closed));
        assert!(!slots.of(1, open));
        // the slots remember their tool's answer
        assert!(slots.of(0, open));
        assert!(!slots.of(1, closed));
        assert!(!slots.of(5, open));
        assert!(slots.of(5, closed));
        assert!(!ClosedOutputs::new(1).of(0, custom(|t| t.output_schema = None)));
    }
}
