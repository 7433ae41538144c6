//! Unit tests of the paging conventions: each reads the next arguments
//! from its own kind of answer and says when the last page is reached.

use serde_json::{Value, json};

use super::{Answer, PageNext, Pagination};
use crate::catalogue::{Method, ParamDef, ParamLocation, ParamStyle, ToolDef};
use crate::profile::BodyEnvelope;
use crate::request::testing::{args, custom};

fn query(name: &'static str) -> ParamDef {
    ParamDef {
        arg: name,
        name,
        location: ParamLocation::Query,
        style: ParamStyle::Form,
        explode: true,
        required: false,
        allow_reserved: false,
    }
}

fn list_tool() -> &'static ToolDef {
    custom(|t| {
        t.method = Method::Get;
        t.params = Box::leak(Box::new([
            query("limit"),
            query("starting_after"),
            query("cursor"),
            query("page"),
            query("$skiptoken"),
        ]));
    })
}

const ITEMS_IN_DATA: BodyEnvelope = BodyEnvelope {
    items: Some("/data"),
    ..BodyEnvelope::BARE
};

/// Where the test lists are answered from.
const URL: &str = "https://api.example/v1/users";

fn next(p: Pagination, envelope: &BodyEnvelope, call: Value, body: Value) -> Option<PageNext> {
    let answer = Answer {
        body: &body,
        next_link: None,
        url: URL,
    };
    p.next(envelope, list_tool(), &args(call), answer)
}

fn next_args(value: Value) -> Option<PageNext> {
    Some(PageNext::Next(args(value)))
}

#[test]
fn the_last_items_id_is_the_next_cursor_while_more_is_true() {
    let p = Pagination::LastItemId {
        param: "starting_after",
        more: "/has_more",
        id: "/id",
    };
    let page =
        json!({"object": "list", "data": [{"id": "cus_1"}, {"id": "cus_2"}], "has_more": true});
    assert_eq!(
        next(p, &ITEMS_IN_DATA, json!({"limit": 2}), page),
        next_args(json!({"limit": 2, "starting_after": "cus_2"}))
    );
    let last = json!({"object": "list", "data": [{"id": "cus_3"}], "has_more": false});
    assert_eq!(
        next(
            p,
            &ITEMS_IN_DATA,
            json!({"limit": 2, "starting_after": "cus_2"}),
            last
        ),
        Some(PageNext::Last)
    );
    // Not a list: nothing to say.
    assert_eq!(
        next(p, &ITEMS_IN_DATA, json!({}), json!({"id": "cus_1"})),
        None
    );
    // A tool without the parameter is not paged.
    assert!(!p.applies(custom(|_| {})));
    assert!(p.applies(list_tool()));
}

#[test]
fn a_cursor_field_is_sent_back_until_it_is_empty() {
    let p = Pagination::CursorField {
        param: "cursor",
        cursor: "/response_metadata/next_cursor",
    };
    let more = json!({"members": [1], "response_metadata": {"next_cursor": "dXNlcjpVMEc5"}});
    assert_eq!(
        next(p, &BodyEnvelope::BARE, json!({"limit": 1}), more),
        next_args(json!({"limit": 1, "cursor": "dXNlcjpVMEc5"}))
    );
    let done = json!({"members": [2], "response_metadata": {"next_cursor": ""}});
    assert_eq!(
        next(p, &BodyEnvelope::BARE, json!({"cursor": "x"}), done),
        Some(PageNext::Last)
    );
}

#[test]
fn page_numbers_count_up_to_total_pages() {
    let p = Pagination::PageNumber {
        param: "page",
        page: "/result_info/page",
        total_pages: "/result_info/total_pages",
    };
    let first = json!({"result": [1], "result_info": {"page": 1, "total_pages": 3}});
    assert_eq!(
        next(p, &BodyEnvelope::BARE, json!({"per_page": 1}), first),
        next_args(json!({"per_page": 1, "page": 2}))
    );
    let last = json!({"result": [3], "result_info": {"page": 3, "total_pages": 3}});
    assert_eq!(
        next(p, &BodyEnvelope::BARE, json!({"page": 3}), last),
        Some(PageNext::Last)
    );
    // A nonsense page number ends the paging rather than looping.
    let odd = json!({"result_info": {"page": -4, "total_pages": 3}});
    assert_eq!(
        next(p, &BodyEnvelope::BARE, json!({}), odd),
        Some(PageNext::Last)
    );
    assert_eq!(
        next(p, &BodyEnvelope::BARE, json!({}), json!({"result": []})),
        None
    );
}

#[test]
fn a_next_url_becomes_the_arguments_of_its_query() {
    let p = Pagination::NextUrl {
        next: "/@odata.nextLink",
    };
    let envelope = BodyEnvelope {
        items: Some("/value"),
        ..BodyEnvelope::BARE
    };
    let more = json!({"value": [1], "@odata.nextLink": "https://api.example/v1/users?$skiptoken=X%2BY&limit=5"});
    assert_eq!(
        next(p, &envelope, json!({"limit": 5}), more),
        next_args(json!({"$skiptoken": "X+Y", "limit": "5"}))
    );
    assert_eq!(
        next(p, &envelope, json!({}), json!({"value": [2]})),
        Some(PageNext::Last)
    );
    // A next URL with a parameter the tool lacks cannot be followed as arguments.
    let unknown = json!({"value": [], "@odata.nextLink": "https://api.example/v1/users?$other=1"});
    assert_eq!(next(p, &envelope, json!({}), unknown), None);
}

#[test]
fn a_next_url_elsewhere_is_never_followed() {
    let p = Pagination::NextUrl {
        next: "/@odata.nextLink",
    };
    for elsewhere in [
        "https://evil.example/v1/users?limit=5",
        "https://api.example/v1/admin?limit=5",
        "http://api.example/v1/users?limit=5",
    ] {
        let body = json!({"value": [1], "@odata.nextLink": elsewhere});
        assert_eq!(
            next(p, &BodyEnvelope::BARE, json!({}), body),
            None,
            "{elsewhere}"
        );
    }
}

fn link_answer(
    p: Pagination,
    tool: &'static ToolDef,
    link: Option<&str>,
    body: Value,
) -> Option<PageNext> {
    let answer = Answer {
        body: &body,
        next_link: link,
        url: URL,
    };
    p.next(
        &BodyEnvelope::BARE,
        tool,
        &args(json!({"per_page": 2})),
        answer,
    )
}

fn typed_tool() -> &'static ToolDef {
    custom(|t| {
        t.method = Method::Get;
        t.params = Box::leak(Box::new([query("per_page"), query("page")]));
        t.input_schema = crate::catalogue::SharedText::Text(
            r#"{"type":"object","properties":{"per_page":{"type":"integer"},"page":{"type":"integer"}}}"#,
        );
    })
}

#[test]
fn a_link_header_names_the_next_page_with_typed_arguments() {
    let p = Pagination::LinkHeader;
    let tool = typed_tool();
    assert!(p.applies(tool));
    assert_eq!(
        link_answer(
            p,
            tool,
            Some("https://api.example/v1/users?per_page=2&page=3"),
            json!([1, 2])
        ),
        next_args(json!({"per_page": 2, "page": 3}))
    );
    // Relative to the answered URL.
    assert_eq!(
        link_answer(p, tool, Some("/v1/users?page=2"), json!([1, 2])),
        next_args(json!({"page": 2}))
    );
    // No next link on a list: the last page; on an object: nothing to say.
    assert_eq!(link_answer(p, tool, None, json!([1])), Some(PageNext::Last));
    assert_eq!(link_answer(p, tool, None, json!({"id": 1})), None);
    // Another origin or path, or a parameter the tool lacks: no next.
    for link in [
        "https://evil.example/v1/users?page=2",
        "https://api.example/v1/orgs?page=2",
        "https://api.example/v1/users?page=2&since=9",
    ] {
        assert_eq!(link_answer(p, tool, Some(link), json!([1])), None, "{link}");
    }
}

#[test]
fn code_mode_keeps_undeclared_parameters_of_a_next_url_and_types_declared_ones() {
    let p = Pagination::LinkHeader;
    let body = json!([1]);
    let answer = Answer {
        body: &body,
        next_link: Some("/v1/users?page=2&$skiptoken=abc"),
        url: URL,
    };
    assert_eq!(
        p.next_query(
            &BodyEnvelope::BARE,
            typed_tool(),
            &args(json!({"page": 1})),
            answer
        ),
        next_args(json!({"page": 2, "$skiptoken": "abc"}))
    );
    let elsewhere = Answer {
        next_link: Some("https://evil.example/v1/users?page=2"),
        ..answer
    };
    assert_eq!(
        p.next_query(
            &BodyEnvelope::BARE,
            typed_tool(),
            &args(json!({})),
            elsewhere
        ),
        None
    );
}
