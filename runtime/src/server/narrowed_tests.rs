#![allow(clippy::unwrap_used)]
//! A narrowed session's `tools/list` over HTTP is made once per exposure
//! and kept: each session gets exactly the tools its own exposure lists
//! (never another's kept listing), with the same bytes the tool values
//! serialise to.

use std::sync::Arc;

use ::http::header;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use tower::ServiceExt as _;

use super::http::{ClientAuth, router};
use super::tests::{catalogue, upstream};
use super::*;
use crate::authz::Connection;
use crate::catalogue::Catalogue;
use crate::config::{Exposure, UpstreamConfig, validate_upstream};
use crate::profile::{Profile, ScopedPath};
use crate::server::http::tests::options;

const HOST: &str = "127.0.0.1:8787";

fn tokens() -> ClientAuth {
    use crate::server::auth::{TokenTable, digest_hex};
    let mut table = TokenTable::default();
    let spec = format!("{}=ONE", digest_hex("client-one"));
    table
        .load_env_spec(&spec, |name| (name == "ONE").then(|| "one".to_owned()))
        .unwrap();
    ClientAuth::Tokens(table)
}

/// The router tests' core, its profile binding sessions to accounts.
fn core(base: &str) -> Core {
    let c = catalogue();
    let scoped: &'static Catalogue = Box::leak(Box::new(Catalogue {
        api: c.api,
        profile: Profile {
            scoped_paths: &[ScopedPath {
                template: "/accounts/{account_id}",
                check: None,
            }],
            ..c.profile
        },
        products: c.products,
        source: c.source,
        spec: c.spec,
        skills: c.skills,
    }));
    let options = CoreOptions {
        exposure: Exposure::default(),
        upstream: UpstreamConfig {
            base: validate_upstream(base, true).unwrap(),
            timeout: std::time::Duration::from_secs(1),
            max_body_bytes: 100_000,
        },
        output_schemas: false,
        max_argument_bytes: 10_000,
        credential_hint: "set `TEST_TOKEN`".into(),
    };
    Core::new(scoped, options).unwrap()
}

async fn list(router: &Router, path: &str, query: &str) -> Vec<u8> {
    let req = Request::post(format!("{path}{query}"))
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header(header::AUTHORIZATION, "Bearer client-one")
        .body(Body::from(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
        ))
        .unwrap();
    let resp = router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    axum::body::to_bytes(resp.into_body(), 1 << 22)
        .await
        .unwrap()
        .to_vec()
}

/// The tools array `core` lists for a static token at `path`, as the
/// tool values serialise.
fn expected(core: &Core, path: &str, variant: Variant) -> Vec<u8> {
    let suffix = path.trim_start_matches("/mcp");
    let scope = crate::authz::parse_scope(core.catalogue.profile.scoped_paths, suffix).unwrap();
    let connection = Connection::ScopedClientToken(Arc::new(scope));
    serde_json::to_vec(&core.listed_for(&connection, variant)).unwrap()
}

#[tokio::test]
async fn each_scoped_url_gets_its_own_listing_made_once() {
    let (base, _) = upstream().await;
    let core = Arc::new(core(&base));
    let (router, _) = router(core.clone(), &options(tokens()), HOST.parse().unwrap());

    let strict = Variant::new(SchemaProfile::Strict, false);
    let cases = [
        ("/mcp/accounts/acc1", "", Variant::DEFAULT),
        ("/mcp/accounts/acc2", "", Variant::DEFAULT),
        ("/mcp/accounts/acc1", "?schema_profile=strict", strict),
    ];
    for round in 0..2 {
        for (path, query, variant) in cases {
            let body = list(&router, path, query).await;
            let want = expected(&core, path, variant);
            // The array is in the answer byte for byte, and nothing else
            // stands where it was put.
            assert!(
                memchr::memmem::find(&body, &want).is_some(),
                "round {round}, {path}{query}: {}",
                String::from_utf8_lossy(&body)
            );
            assert!(!String::from_utf8_lossy(&body).contains("toolforge_listing_"));
            let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(parsed["id"], 7);
            assert_eq!(
                parsed["result"]["tools"],
                serde_json::from_slice::<serde_json::Value>(&want).unwrap()
            );
        }
        // Made once per exposure, whatever the round: both accounts' default
        // listings are one.
        assert_eq!(core.listing().narrowed().len(), 2, "round {round}");
    }
    // The kept listings are keyed by which arguments a scoped URL fixes,
    // not by their values: that holds only while no listing shows a value.
    for variant in [Variant::DEFAULT, strict, Variant::FULL_WITH_OUTPUT] {
        assert_eq!(
            expected(&core, "/mcp/accounts/acc1", variant),
            expected(&core, "/mcp/accounts/acc2", variant),
            "a listing names a scoped value: key narrowed listings by values"
        );
    }
    // A scoped listing is not the whole one: the fixed argument is gone.
    let scoped = expected(&core, "/mcp/accounts/acc1", Variant::DEFAULT);
    assert_ne!(scoped, core.listing().bytes(Variant::DEFAULT).to_vec());
    assert!(!String::from_utf8_lossy(&scoped).contains("account_id"));
}

#[tokio::test]
async fn the_unscoped_listing_is_the_shared_one() {
    let (base, _) = upstream().await;
    let core = Arc::new(core(&base));
    let (router, _) = router(core.clone(), &options(tokens()), HOST.parse().unwrap());
    let body = list(&router, "/mcp", "").await;
    let whole = core.listing().bytes(Variant::DEFAULT);
    assert!(memchr::memmem::find(&body, &whole).is_some());
    assert!(core.listing().narrowed().is_empty());
}

/// In direct mode a narrowed listing is written from the tools'
/// definitions (only a tool whose arguments a scoped URL fixes goes
/// through its value): the bytes must be those the tool values serialise
/// to, for grants that hide by product or by writes, hide every tool or
/// none, with and without a scoped path, in every variant.
#[tokio::test]
async fn a_narrowed_listing_is_the_bytes_of_its_tool_values() {
    use crate::authz::GrantAccess;
    let (base, _) = upstream().await;
    let core = core(&base);
    let scope = Arc::new(
        crate::authz::parse_scope(core.catalogue.profile.scoped_paths, "/accounts/acc1").unwrap(),
    );
    let products: Vec<String> = (core.catalogue.products.iter())
        .map(|p| p.name.to_owned())
        .collect();
    let grant = |read_only, products: Option<Vec<String>>, path: Option<Arc<PathScope>>| {
        Connection::OAuth(Arc::new(GrantAccess {
            read_only,
            products,
            path,
            ..GrantAccess::default()
        }))
    };
    let connections = [
        grant(true, None, None),
        grant(false, Some(vec![products[0].clone()]), None),
        grant(true, Some(products[1..].to_vec()), Some(scope.clone())),
        grant(false, Some(Vec::new()), None),
        grant(false, None, Some(scope.clone())),
        Connection::ScopedClientToken(scope),
    ];
    let whole = core.listed.len();
    let (mut some_hidden, mut some_narrowed) = (false, false);
    for connection in &connections {
        for variant in Variant::ALL {
            let encoded = core.encode_narrowed(connection, variant).unwrap();
            let tools = core.listed_for(connection, variant);
            let values = serde_json::to_vec(&tools).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&encoded),
                String::from_utf8_lossy(&values),
                "{connection:?} {variant:?}"
            );
            some_hidden |= tools.len() < whole;
            some_narrowed |= !tools.is_empty() && values != core.listing().bytes(variant).to_vec();
        }
    }
    assert!(some_hidden && some_narrowed);
}
