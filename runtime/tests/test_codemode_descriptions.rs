//! The Code Mode listing's token budget (cl100k, as clients receive it)
//! and the facts its `search` and `execute` descriptions must keep: split
//! from `test_codemode.rs`, over the same fixture catalogue.
#![allow(clippy::unwrap_used, clippy::panic)]

mod test_codemode_fixture;

use serde_json::{Value, json};
use test_codemode_fixture::{core, core_of, limits, upstream};
use toolforge_runtime::catalogue::Catalogue;
use toolforge_runtime::codemode::Mode;
use toolforge_runtime::config::Exposure;
use toolforge_runtime::profile::{Identity, IdentityProbe, Profile};

/// Token budget of the Code Mode listing (cl100k, the listing as clients
/// receive it: names, titles, descriptions, input schemas, annotations).
const SEARCH_EXECUTE_TOKENS: usize = 600;
/// The same with `whoami`, as listed when the profile declares an identity.
const WHOLE_LISTING_TOKENS: usize = 700;

/// The fixture catalogue with an identity, so `whoami` is listed too.
fn catalogue_with_whoami() -> &'static Catalogue {
    static PROBES: &[IdentityProbe] = &[IdentityProbe {
        path: "/user",
        only: None,
        id: "/id",
        name: Some("/email"),
        prefix: "user",
    }];
    let fixture = &test_codemode_fixture::CATALOGUE;
    Box::leak(Box::new(Catalogue {
        profile: Profile {
            identity: Some(Identity { probes: PROBES }),
            ..fixture.profile
        },
        ..*fixture
    }))
}

fn listed_tools(core: &toolforge_runtime::server::Core) -> Vec<Value> {
    let listing: Value = serde_json::from_slice(
        &core
            .listing()
            .bytes(toolforge_runtime::listing::Variant::DEFAULT),
    )
    .unwrap();
    listing.as_array().unwrap().clone()
}

#[tokio::test]
async fn codemode_listing_fits_the_token_budget() {
    let up = upstream().await;
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    // The tokenizer is real: a known count.
    assert_eq!(bpe.encode_with_special_tokens("hello world").len(), 2);
    // The listing as clients receive it (the pre-encoded bytes).
    let count = |core: &toolforge_runtime::server::Core| {
        let text = String::from_utf8(
            core.listing()
                .bytes(toolforge_runtime::listing::Variant::DEFAULT)
                .to_vec(),
        )
        .unwrap();
        println!("{text}");
        bpe.encode_with_special_tokens(&text).len()
    };
    let pair_core = core(Mode::CodeMode, &up, Exposure::default());
    let whole_core = core_of(
        catalogue_with_whoami(),
        Mode::CodeMode,
        &up,
        Exposure::default(),
        limits(),
        None,
    );
    let (pair, whole) = (listed_tools(&pair_core), listed_tools(&whole_core));
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&pair), ["search", "execute"]);
    assert_eq!(names(&whole), ["search", "execute", "whoami"]);
    let (pair_tokens, whole_tokens) = (count(&pair_core), count(&whole_core));
    println!(
        "codemode tools/list: search + execute {pair_tokens} cl100k tokens, with whoami {whole_tokens}"
    );
    assert!(
        pair_tokens <= SEARCH_EXECUTE_TOKENS,
        "{pair_tokens} tokens: {pair:#?}"
    );
    assert!(
        whole_tokens <= WHOLE_LISTING_TOKENS,
        "{whole_tokens} tokens: {whole:#?}"
    );
}

/// Every fact a model needs from the two descriptions, so shortening them
/// cannot drop one unnoticed.
#[tokio::test]
async fn codemode_descriptions_keep_every_fact() {
    let up = upstream().await;
    let tools = listed_tools(&core(Mode::CodeMode, &up, Exposure::default()));
    let description = |i: usize| tools[i]["description"].as_str().unwrap().to_owned();
    let (search, execute) = (description(0), description(1));
    let facts: &[(&str, &str, &str)] = &[
        // search: what it reads, and how.
        (
            "search",
            "the API and release",
            "cloudflare API's OpenAPI spec (release fixture-1)",
        ),
        ("search", "no network", "offline"),
        ("search", "before execute", "before execute"),
        (
            "search",
            "code is an async arrow function",
            "`code`: an async JavaScript arrow function",
        ),
        (
            "search",
            "the result is the JSON return value",
            "result: its JSON return value",
        ),
        (
            "search",
            "console.log output comes back",
            "and console.log output",
        ),
        (
            "search",
            "the spec global is the OpenAPI document",
            "spec: the OpenAPI document",
        ),
        (
            "search",
            "operations by path and method",
            "spec.paths[path][method]: operations",
        ),
        (
            "search",
            "what an operation holds",
            "operationId, summary, tags, parameters, requestBody, responses",
        ),
        (
            "search",
            "$refs inlined, cycles marked",
            "$refs inlined (a cycle: {$circular: ref})",
        ),
        (
            "search",
            "x-* extensions kept",
            "x-* extensions (e.g. permissions)",
        ),
        (
            "search",
            "merged paths are split",
            "Account and zone variants are separate paths",
        ),
        (
            "search",
            "an example from the served spec's tags",
            "Example: async () => Object.keys(spec.paths)",
        ),
        ("search", "the served spec's tag", "/test/i.test(t)"),
        // execute: the request function, its arguments and result.
        (
            "execute",
            "code is an async arrow function",
            "`code`: an async JavaScript arrow function",
        ),
        (
            "execute",
            "the request's arguments",
            "type Req = { method: 'GET'|'POST'|'PUT'|'PATCH'|'DELETE'; path: string; query?: object; body?: any; contentType?: string }",
        ),
        (
            "execute",
            "api.request and the result shape with the page block",
            "request(req: Req): Promise<{ status: number; result: any; result_info?: any; paging?: { next: any; items: string } }>",
        ),
        (
            "execute",
            "api.paginate and its options",
            "paginate(req: Req, opts?: { maxPages?: number; maxItems?: number })",
        ),
        (
            "execute",
            "api.paginate's result",
            "Promise<{ items: any[]; pages: number; next: object | null; error?; status?; code? }>",
        ),
        (
            "execute",
            "paths are relative, with a real sample",
            "`path`: relative to the API base, e.g. /zones/",
        ),
        (
            "execute",
            "the account placeholder",
            "(a literal {account_id} is the token's only account)",
        ),
        (
            "execute",
            "the credential is added",
            "The server adds the credential",
        ),
        ("execute", "no other host", "other hosts are unreachable"),
        (
            "execute",
            "errors throw with status and code",
            "Failures (4xx/5xx, unknown path) throw an Error with `status` and the API's `code`",
        ),
        (
            "execute",
            "the request limit, pages included",
            "At most 5 requests (pages) a run",
        ),
        (
            "execute",
            "the result is the JSON return value",
            "Result: the JSON return value",
        ),
        (
            "execute",
            "truncation and its opt-out",
            "cut to ~24 KB unless truncate: false",
        ),
        (
            "execute",
            "console.log output comes back",
            "and console.log output",
        ),
        (
            "execute",
            "the profile's example",
            "Example: async () => { const r = await api.request({ method: \"GET\", path: \"/zones\"",
        ),
    ];
    for (tool, fact, text) in facts {
        let description = if *tool == "search" { &search } else { &execute };
        assert!(
            description.contains(text),
            "{tool} lost a fact ({fact}): `{text}` not in\n{description}"
        );
    }
    // The input schemas: `code` required, `truncate` (default on) on execute only.
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["code"]));
    assert!(
        tools[0]["inputSchema"]["properties"]
            .get("truncate")
            .is_none()
    );
    let truncate = &tools[1]["inputSchema"]["properties"]["truncate"];
    assert_eq!(truncate["type"], "boolean");
    assert_eq!(truncate["default"], true);
}
