//! Unit tests of response mapping.

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use super::*;
use crate::catalogue::Envelope;
use crate::profile::testing::{ENVELOPED, GENERIC, TOKENS_URL};
use crate::request::testing::custom;
use crate::upstream::UpstreamResponse;

fn resp(status: u16, body: &str) -> UpstreamResponse {
    UpstreamResponse {
        status: StatusCode::from_u16(status).unwrap(),
        content_type: Some("application/json".into()),
        retry_after: None,
        location_host: None,
        next_link: None,
        body: body.as_bytes().to_vec(),
        elapsed: Duration::ZERO,
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn call(tool: &'static ToolDef) -> Call<'static> {
    Call {
        tool,
        path: "/zones/z1/dns_records",
        credential: None,
        profile: &ENVELOPED,
        connection: &SERVER,
    }
}

static SERVER: crate::authz::Connection = crate::authz::Connection::ServerCredential;

fn listing_tool() -> &'static ToolDef {
    custom(|t| {
        t.name = "dns_records_list";
        t.output_schema = Some(crate::catalogue::SharedText::Text(r#"{"type":"object"}"#));
        t.envelope = Envelope::Result { list: true };
        t.permissions = &["DNS Read"];
    })
}

#[test]
fn envelope_mapping() {
    let body = json!({"success": true, "errors": [], "messages": [], "result": [1], "result_info": {"page": 1}});
    assert_eq!(
        structured(
            Envelope::Result { list: true },
            ENVELOPED.envelope,
            body.clone()
        ),
        json!({"result": [1], "result_info": {"page": 1}})
    );
    assert_eq!(
        structured(Envelope::Result { list: false }, ENVELOPED.envelope, body),
        json!({"result": [1]})
    );
    assert_eq!(
        structured(Envelope::Wrapped, ENVELOPED.envelope, json!([1, 2])),
        json!({"result": [1, 2]})
    );
    assert_eq!(
        structured(Envelope::None, ENVELOPED.envelope, json!({"a": 1})),
        json!({"a": 1})
    );
    assert_eq!(
        structured(Envelope::None, ENVELOPED.envelope, json!("x")),
        json!({"result": "x"})
    );
    // an envelope without `result` still gives an object
    assert_eq!(
        structured(
            Envelope::Result { list: false },
            ENVELOPED.envelope,
            json!({"x": 1})
        ),
        json!({"result": {"x": 1}})
    );
}

#[test]
fn success_carries_text_and_structured_content() {
    let body = r#"{"success":true,"errors":[],"messages":[],"result":[{"id":"r1"}],"result_info":{"count":1}}"#;
    let r = map_response(call(listing_tool()), resp(200, body));
    assert_eq!(r.is_error, Some(false));
    assert_eq!(text(&r), body);
    assert_eq!(
        r.structured_content,
        Some(json!({"result": [{"id": "r1"}], "result_info": {"count": 1}}))
    );
}

#[test]
fn empty_list_is_flagged_with_the_permission() {
    let body =
        r#"{"success":true,"errors":[],"messages":[],"result":[],"result_info":{"count":0}}"#;
    let r = map_response(call(listing_tool()), resp(200, body));
    assert_eq!(r.is_error, Some(false));
    let t = text(&r);
    assert!(t.contains("the list is empty"), "{t}");
    assert!(t.contains("`DNS Read`"), "{t}");
    // no permissions documented: no note
    let plain = custom(|t| t.envelope = Envelope::Result { list: true });
    let r = map_response(call(plain), resp(200, body));
    assert!(!text(&r).contains("empty"));
}

#[test]
fn refusals_are_explained_from_permissions() {
    let body = r#"{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}"#;
    let r = map_response(call(listing_tool()), resp(403, body));
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    for want in [
        "GET /zones/z1/dns_records",
        "403 Forbidden",
        "code 10000: Authentication error",
        "needs the token permission(s) `DNS Read`",
        TOKENS_URL,
        "role that includes them",
    ] {
        assert!(t.contains(want), "missing {want:?} in {t}");
    }
    let t = text(&map_response(call(listing_tool()), resp(401, body)));
    assert!(t.contains("did not accept the credential"), "{t}");
    assert!(t.contains("`DNS Read`"), "{t}");
    let generic = Call {
        profile: &GENERIC,
        ..call(listing_tool())
    };
    let t = text(&map_response(generic, resp(403, r#"{"message":"nope"}"#)));
    assert!(t.contains("- nope"), "{t}");
    assert!(!t.contains(TOKENS_URL), "{t}");
}

#[test]
fn rate_limit_redirect_and_server_errors() {
    let mut limited = resp(429, "");
    limited.retry_after = Some("7".into());
    let t = text(&map_response(call(listing_tool()), limited));
    assert!(t.contains("429") && t.contains("retry after 7"), "{t}");
    let t = text(&map_response(call(listing_tool()), resp(429, "")));
    assert!(t.contains("no Retry-After"), "{t}");

    let mut moved = resp(302, "");
    moved.location_host = Some("elsewhere.example:8443".into());
    let t = text(&map_response(call(listing_tool()), moved));
    assert!(
        t.contains("302") && t.contains("elsewhere.example:8443") && t.contains("not followed"),
        "{t}"
    );

    let r = map_response(call(listing_tool()), resp(500, "upstream exploded"));
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("500 Internal Server Error") && t.contains("upstream exploded"),
        "{t}"
    );
}

#[test]
fn success_false_and_non_json_bodies_are_errors() {
    let r = map_response(
        call(listing_tool()),
        resp(
            200,
            r#"{"success":false,"errors":[{"code":7003,"message":"bad route"}]}"#,
        ),
    );
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("code 7003: bad route"));
    let r = map_response(call(listing_tool()), resp(200, "<html>oops</html>"));
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("not the JSON"));
    // a tool without an output schema takes any text
    let plain = custom(|_| {});
    let r = map_response(call(plain), resp(200, "plain text"));
    assert_eq!(r.is_error, Some(false));
    assert_eq!(r.structured_content, None);
}

#[test]
fn binary_and_empty_bodies() {
    let plain = custom(|_| {});
    let mut bin = resp(200, "");
    bin.body = vec![0xff, 0x00, 0xfe];
    bin.content_type = Some("application/octet-stream".into());
    let t = text(&map_response(call(plain), bin));
    assert!(
        t.contains("3 bytes") && t.contains("base64") && t.contains("/wD+"),
        "{t}"
    );
    let r = map_response(call(listing_tool()), resp(204, ""));
    assert_eq!(r.is_error, Some(false));
    assert!(text(&r).contains("empty body"));
    assert_eq!(
        r.structured_content,
        Some(Value::Object(Default::default()))
    );
}

/// Bodies and header values arrive scrubbed (`Upstream::send`); the texts
/// composed here are scrubbed once more.
#[test]
fn composed_error_texts_are_scrubbed() {
    let cred = crate::credential::Credential::new("sekrit-token-1", "test").unwrap();
    let c = Call {
        credential: Some(&cred),
        ..call(listing_tool())
    };
    let r = map_response(
        c,
        resp(
            400,
            r#"{"errors":[{"code":1,"message":"token sekrit-token-1 bad"}]}"#,
        ),
    );
    assert!(!text(&r).contains("sekrit"));
}
