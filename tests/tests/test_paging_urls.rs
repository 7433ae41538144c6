#![allow(clippy::unwrap_used, clippy::panic)]
//! Paging by URL, and every convention's limits, through a real MCP client
//! (the official Python SDK over stdio).
//!
//! - Graph's `@odata.nextLink` and GitHub's `Link: <…>; rel="next"`
//!   (`paging_mcp`, a server whose one list tool pages that way, against
//!   a loopback fake): an agent following `structuredContent.next` reads
//!   every item exactly once; the next arguments are typed by the tool's
//!   schema (`$top` and `page` are integers, or the next call would fail
//!   its own input check); a next URL to another origin or path is never
//!   requested and gives no `next`.
//! - On all five conventions (`till-mcp`, `larder-mcp`, `cloudflare-mcp`,
//!   `paging_mcp` twice) Code Mode's `api.paginate` returns every item,
//!   stops at `maxPages` with the next query and at `maxItems`, and a
//!   failing page stops the walk with the items so far and the error;
//!   direct tools stop at the failing page the same way.

use std::time::Duration;

use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::paging::{
    binary, execute, follow_calls, follow_step, ids_at, paginate_code, returned, stdio_plan, texts,
};
use toolforge_tests::paging_fakes::{Convention, ITEMS};
use toolforge_tests::upstream::{Reply, Upstream};

const KEY: &str = "sk_test_paging_url_Hq27Zs";
const LIMIT: Duration = Duration::from_secs(180);

/// Runs `steps` on `convention`'s server against `upstream` in `mode`.
fn run(convention: Convention, upstream: &Upstream, mode: &str, steps: Value) -> Value {
    let (package, bin, env) = convention.server(KEY);
    let command = binary(package, bin).unwrap();
    let args = [
        "--transport",
        "stdio",
        "--mode",
        mode,
        "--upstream",
        &upstream.url(),
        "--allow-loopback-upstream",
        "--output-schemas",
    ];
    let report = clients::run_python(&stdio_plan(&command, &args, env, steps), LIMIT).unwrap();
    assert!(!report.to_string().contains(KEY), "{report}");
    report
}

/// The calls of following `convention`'s list tool, three per page.
fn follow(convention: Convention, upstream: &Upstream, first: Value) -> (Vec<Value>, Value) {
    let report = run(
        convention,
        upstream,
        "direct",
        json!([follow_step(convention.tool(), first)]),
    );
    let (calls, error) = follow_calls(&report);
    assert_eq!(error, None, "{report}");
    (calls, report)
}

fn python(test: &str) -> bool {
    clients::require_python(test).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn an_agent_follows_graph_next_links_and_reads_every_item_once() {
    if !python("an_agent_follows_graph_next_links_and_reads_every_item_once") {
        return;
    }
    let c = Convention::NextUrl;
    let upstream = c.fake(None).unwrap();
    let (calls, report) = follow(c, &upstream, json!({"$top": 3}));
    assert_eq!(calls.len(), 3, "{report}");
    assert_eq!(ids_at(&calls, "/value"), c.ids(), "{report}");
    // `$top` comes back from the URL as the integer the schema declares.
    assert_eq!(
        calls[1]["arguments"],
        json!({"$top": 3, "$skiptoken": "s3"}),
        "{report}"
    );
    let last = calls.last().unwrap();
    assert_eq!(last["result"]["structuredContent"]["next"], Value::Null);
    assert!(texts(last).contains("This is the last page."), "{report}");
}

#[test]
fn an_agent_follows_github_link_headers_and_reads_every_item_once() {
    if !python("an_agent_follows_github_link_headers_and_reads_every_item_once") {
        return;
    }
    let c = Convention::LinkHeader;
    let upstream = c.fake(None).unwrap();
    let (calls, report) = follow(c, &upstream, json!({"per_page": 3}));
    assert_eq!(calls.len(), 3, "{report}");
    assert_eq!(ids_at(&calls, "/result"), c.ids(), "{report}");
    assert_eq!(
        calls[2]["arguments"],
        json!({"per_page": 3, "page": 3}),
        "{report}"
    );
    assert!(
        texts(&calls[0]).contains(r#"call `issues_list` with {"per_page":3,"page":2}"#),
        "{report}"
    );
    let last = calls.last().unwrap();
    assert_eq!(last["result"]["structuredContent"]["next"], Value::Null);
}

#[test]
fn a_next_url_to_another_origin_or_path_is_never_followed() {
    if !python("a_next_url_to_another_origin_or_path_is_never_followed") {
        return;
    }
    let elsewhere =
        Upstream::start(|_| Reply::json(200, &json!({"value": [{"id": "stolen"}]}))).unwrap();
    let other = elsewhere.url();
    let graph = Upstream::start(move |req| {
        let next = if req.target.contains("hop=path") {
            "/admin/users?%24top=3".to_owned()
        } else {
            format!("{other}/users?%24top=3&%24skiptoken=s3")
        };
        Reply::json(
            200,
            &json!({"value": [{"id": "it_1"}], "@odata.nextLink": next}),
        )
    })
    .unwrap();
    let other = elsewhere.url();
    let github = Upstream::start(move |_| {
        Reply::json(200, &json!([{"id": "it_1"}]))
            .with_header("link", &format!("<{other}/issues?page=2>; rel=\"next\""))
    })
    .unwrap();
    let paginate = |path: &str| execute(&paginate_code(path, "{}", "{ maxPages: 5 }"));
    for (c, upstream) in [
        (Convention::NextUrl, &graph),
        (Convention::LinkHeader, &github),
    ] {
        let (calls, report) = follow(c, upstream, json!({}));
        assert_eq!(calls.len(), 1, "{report}");
        let structured = &calls[0]["result"]["structuredContent"];
        assert_eq!(structured.get("next"), None, "{report}");
        let report = run(c, upstream, "codemode", json!([paginate(c.path())]));
        let got = returned(&report["results"][0]);
        assert_eq!(
            (got["pages"].clone(), got["next"].clone()),
            (json!(1), Value::Null),
            "{report}"
        );
        assert_eq!(upstream.requests().len(), 2, "{report}");
    }
    // Another path on the same origin.
    graph.clear();
    let query = r#"{ hop: "path" }"#;
    let report = run(
        Convention::NextUrl,
        &graph,
        "codemode",
        json!([execute(&paginate_code("/users", query, "{ maxPages: 5 }"))]),
    );
    assert_eq!(returned(&report["results"][0])["pages"], 1, "{report}");
    let paths: Vec<String> = graph
        .requests()
        .iter()
        .map(|r| r.path().to_owned())
        .collect();
    assert_eq!(paths, ["/users"], "{report}");
    assert!(
        elsewhere.requests().is_empty(),
        "the other origin was contacted"
    );
}

/// The first page's query asking `size` items per page (Larder's list
/// needs its pantry).
fn first_query(c: Convention, size: usize) -> String {
    format!(r#"{{ "{}": {size} }}"#, c.size_param())
}

#[test]
fn paginate_honours_max_pages_and_max_items_on_every_convention() {
    if !python("paginate_honours_max_pages_and_max_items_on_every_convention") {
        return;
    }
    for c in Convention::ALL {
        let upstream = c.fake(None).unwrap();
        let q = first_query(c, 3);
        let steps = json!([
            execute(&paginate_code(c.path(), &q, "{ maxPages: 10 }")),
            execute(&paginate_code(c.path(), &q, "{ maxPages: 2 }")),
            execute(&paginate_code(c.path(), &q, "{ maxItems: 4 }")),
        ]);
        let report = run(c, &upstream, "codemode", steps);
        let results = report["results"].as_array().unwrap();
        let all = c.ids();
        let all_of = returned(&results[0]);
        assert_eq!(all_of["ids"], json!(all), "{c:?}: {report}");
        assert_eq!(
            (all_of["pages"].clone(), all_of["next"].clone()),
            (json!(ITEMS.div_ceil(3)), Value::Null),
            "{c:?}: {report}"
        );
        let two = returned(&results[1]);
        assert_eq!(two["ids"], json!(all[..6]), "{c:?}: {report}");
        assert_eq!(two["pages"], 2, "{c:?}: {report}");
        assert!(two["next"].is_object(), "{c:?}: {report}");
        let four = returned(&results[2]);
        assert_eq!(four["ids"], json!(all[..4]), "{c:?}: {report}");
        assert_eq!(four["pages"], 2, "{c:?}: {report}");
        // Exactly the pages read were requested.
        assert_eq!(upstream.requests().len(), 3 + 2 + 2, "{c:?}: {report}");
    }
}

#[test]
fn a_failing_page_stops_with_the_items_so_far_and_the_error_on_every_convention() {
    if !python("a_failing_page_stops_with_the_items_so_far_and_the_error_on_every_convention") {
        return;
    }
    for c in Convention::ALL {
        let upstream = c.fake(Some(2)).unwrap();
        let q = first_query(c, 3);
        let steps = json!([execute(&paginate_code(c.path(), &q, "{ maxPages: 10 }"))]);
        let report = run(c, &upstream, "codemode", steps);
        let got = returned(&report["results"][0]);
        assert_eq!(got["ids"], json!(c.ids()[..3]), "{c:?}: {report}");
        assert_eq!(
            (got["pages"].clone(), got["status"].clone()),
            (json!(1), json!(500)),
            "{c:?}: {report}"
        );
        assert!(got["next"].is_object(), "{c:?}: {report}");
        assert!(
            got["error"]
                .as_str()
                .unwrap_or("")
                .contains("Try again later"),
            "{c:?}: {report}"
        );

        // A direct agent stops at the same page with the API's error.
        let mut first = serde_json::Map::new();
        // Cloudflare's `per_page` starts at 5; the failing page is the second either way.
        let size = if c == Convention::PageNumber { 5 } else { 3 };
        first.insert(c.size_param().to_owned(), json!(size));
        if c == Convention::CursorField {
            first.insert("pantryId".into(), json!("pan_00000001"));
        }
        let report = run(
            c,
            &upstream,
            "direct",
            json!([follow_step(c.tool(), Value::Object(first))]),
        );
        let (calls, _) = follow_calls(&report);
        assert_eq!(calls.len(), 2, "{c:?}: {report}");
        assert_eq!(calls[1]["result"]["isError"], true, "{c:?}: {report}");
        assert!(
            texts(&calls[1]).contains("Try again later"),
            "{c:?}: {report}"
        );
    }
}
