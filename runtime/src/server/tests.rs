//! Tests of the server core against a fake upstream on 127.0.0.1.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::*;
use crate::catalogue::{Envelope, Method, ParamDef, ParamLocation, ParamStyle, Product, Route};
use crate::config::validate_upstream;
use crate::profile::testing::ENVELOPED;
use crate::request::testing::custom;

#[derive(Default)]
pub(super) struct Hits {
    accounts: AtomicUsize,
}

fn auth(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

async fn accounts(State(hits): State<Arc<Hits>>, headers: HeaderMap) -> Response {
    hits.accounts.fetch_add(1, Ordering::SeqCst);
    let list = match auth(&headers).as_str() {
        "Bearer one" => json!([{"id": "acc1", "name": "Main"}]),
        "Bearer two" => json!([{"id": "acc1", "name": "Main"}, {"id": "acc2", "name": "Side"}]),
        "Bearer zero" => json!([]),
        _ => {
            return (
                StatusCode::FORBIDDEN,
                axum::Json(json!({"success": false, "errors": [{"code": 9109, "message": "Unauthorized to access requested resource"}]})),
            )
                .into_response();
        }
    };
    axum::Json(json!({"success": true, "errors": [], "messages": [], "result": list}))
        .into_response()
}

async fn account(Path(id): Path<String>, headers: HeaderMap) -> Response {
    // Echoes the credential back, as a misbehaving upstream might.
    axum::Json(json!({"success": true, "errors": [], "messages": [], "result": {"id": id, "seen": auth(&headers)}}))
        .into_response()
}

async fn things(Path(id): Path<String>) -> Response {
    if id == "empty" {
        return axum::Json(json!({"success": true, "errors": [], "messages": [], "result": [], "result_info": {"count": 0}})).into_response();
    }
    (
        StatusCode::FORBIDDEN,
        axum::Json(json!({"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]})),
    )
        .into_response()
}

pub(super) async fn upstream() -> (String, Arc<Hits>) {
    let hits = Arc::new(Hits::default());
    let app = Router::new()
        .route("/v4/accounts", get(accounts))
        .route("/v4/accounts/{id}", get(account))
        .route("/v4/accounts/{id}/things", get(things))
        .route(
            "/v4/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route("/v4/big", get(|| async { "x".repeat(300_000) }))
        .route(
            "/v4/moved",
            get(|| async {
                (
                    StatusCode::FOUND,
                    [("location", "https://elsewhere.example/x")],
                )
            }),
        )
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum_serve(listener, app).await;
    });
    (format!("http://{addr}/v4"), hits)
}

/// A tiny accept loop (axum's `serve` needs a feature the runtime does not use).
async fn axum_serve(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let svc = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
    }
}

fn leak<T>(v: Vec<T>) -> &'static [T] {
    v.leak()
}

fn account_param(arg: &'static str) -> ParamDef {
    ParamDef {
        arg,
        name: arg,
        location: ParamLocation::Path,
        style: ParamStyle::Simple,
        explode: false,
        required: false,
        allow_reserved: false,
    }
}

pub(super) fn catalogue() -> &'static Catalogue {
    let acct = custom(|t| {
        t.name = "acct_get";
        t.input_schema = crate::catalogue::SharedText::Text(
            r#"{"type":"object","properties":{"account_id":{"type":"string","maxLength":32}},"additionalProperties":false}"#,
        );
        t.output_schema = Some(crate::catalogue::SharedText::Text(r#"{"type":"object"}"#));
        t.annotations.read_only = true;
        t.envelope = Envelope::Result { list: false };
        t.permissions = &["Account Settings Read"];
        t.routes = leak(vec![Route {
            when: None,
            template: "/accounts/{account_id}",
        }]);
        t.params = leak(vec![account_param("account_id")]);
    });
    let things = custom(|t| {
        t.name = "things_list";
        t.input_schema = crate::catalogue::SharedText::Text(
            r#"{"type":"object","properties":{"account_or_zone":{"type":"string","enum":["accounts","zones"]},"account_or_zone_id":{"type":"string"}},"required":["account_or_zone"]}"#,
        );
        t.output_schema = Some(crate::catalogue::SharedText::Text(r#"{"type":"object"}"#));
        t.annotations.read_only = true;
        t.envelope = Envelope::Result { list: true };
        t.permissions = &["Things Read"];
        t.routes = leak(vec![
            Route {
                when: Some(("account_or_zone", "accounts")),
                template: "/accounts/{account_or_zone_id}/things",
            },
            Route {
                when: Some(("account_or_zone", "zones")),
                template: "/zones/{account_or_zone_id}/things",
            },
        ]);
        t.params = leak(vec![account_param("account_or_zone_id")]);
    });
    let fixed = |name: &'static str, path: &'static str| {
        custom(move |t| {
            t.name = name;
            t.annotations.read_only = true;
            t.routes = leak(vec![Route {
                when: None,
                template: path,
            }]);
        })
    };
    let writer = custom(|t| {
        t.name = "thing_delete";
        t.product = "other";
        t.method = Method::Delete;
    });
    let rows = |tools: Vec<&'static ToolDef>| leak(tools.into_iter().cloned().collect());
    let tools = rows(vec![
        acct,
        things,
        fixed("slow_get", "/slow"),
        fixed("big_get", "/big"),
        fixed("moved_get", "/moved"),
    ]);
    let others = rows(vec![writer]);
    let products = leak(vec![
        Product {
            name: "test",
            tools,
        },
        Product {
            name: "other",
            tools: others,
        },
    ]);
    Box::leak(Box::new(Catalogue {
        api: "enveloped",
        profile: ENVELOPED,
        products,
        source: r#"{"release":"t-1"}"#,
        spec: "",
        skills: &[],
    }))
}

pub(super) fn core(base: &str, exposure: Exposure) -> Core {
    Core::new(
        catalogue(),
        CoreOptions {
            exposure,
            upstream: UpstreamConfig {
                base: validate_upstream(base, true).unwrap(),
                timeout: Duration::from_secs(1),
                max_body_bytes: 100_000,
            },
            output_schemas: false,
            max_argument_bytes: 10_000,
            credential_hint: "set `TEST_TOKEN`".into(),
        },
    )
    .unwrap()
}

fn cred(token: &str) -> Credential {
    Credential::new(token, "test").unwrap()
}

fn args(v: Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn default_account_is_filled_once_per_credential() {
    let (base, hits) = upstream().await;
    let core = core(&base, Exposure::default());
    let one = cred("one");
    for _ in 0..3 {
        let r = core
            .call("acct_get", args(json!({})), Some(&one))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        assert_eq!(
            r.structured_content.as_ref().unwrap()["result"]["id"],
            "acc1"
        );
    }
    assert_eq!(
        hits.accounts.load(Ordering::SeqCst),
        1,
        "GET /accounts is cached"
    );
    // explicit account: no lookup needed
    let r = core
        .call(
            "acct_get",
            args(json!({"account_id": "given"})),
            Some(&cred("two")),
        )
        .await
        .unwrap();
    assert_eq!(r.structured_content.unwrap()["result"]["id"], "given");
    assert_eq!(hits.accounts.load(Ordering::SeqCst), 1);
    // merged tool, accounts side
    let r = core
        .call(
            "things_list",
            args(json!({"account_or_zone": "accounts"})),
            Some(&one),
        )
        .await
        .unwrap();
    assert!(
        text(&r).contains("GET /accounts/acc1/things"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn several_none_or_refused_accounts_are_explained() {
    let (base, _) = upstream().await;
    let core = core(&base, Exposure::default());
    let r = core
        .call("acct_get", args(json!({})), Some(&cred("two")))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("acc1 (Main)") && t.contains("acc2 (Side)") && t.contains("`account_id`"),
        "{t}"
    );
    let t = text(
        &core
            .call("acct_get", args(json!({})), Some(&cred("zero")))
            .await
            .unwrap(),
    );
    assert!(t.contains("no account"), "{t}");
    let t = text(
        &core
            .call("acct_get", args(json!({})), Some(&cred("nobody")))
            .await
            .unwrap(),
    );
    assert!(
        t.contains("403") && t.contains("Account Settings Read"),
        "{t}"
    );
    assert!(!t.contains("nobody"), "{t}");
}

#[tokio::test]
async fn results_never_contain_the_credential() {
    let (base, _) = upstream().await;
    let core = core(&base, Exposure::default());
    let r = core
        .call(
            "acct_get",
            args(json!({"account_id": "a"})),
            Some(&cred("one")),
        )
        .await
        .unwrap();
    let all = format!("{} {}", text(&r), r.structured_content.unwrap());
    assert!(all.contains("Bearer [REDACTED]"), "{all}");
    assert!(!all.contains("Bearer one"), "{all}");
}

#[tokio::test]
async fn refusals_and_empty_lists() {
    let (base, _) = upstream().await;
    let core = core(&base, Exposure::default());
    let t = text(
        &core
            .call(
                "things_list",
                args(json!({"account_or_zone": "accounts", "account_or_zone_id": "x"})),
                Some(&cred("one")),
            )
            .await
            .unwrap(),
    );
    assert!(
        t.contains("403") && t.contains("`Things Read`") && t.contains("code 10000"),
        "{t}"
    );
    let r = core
        .call(
            "things_list",
            args(json!({"account_or_zone": "accounts", "account_or_zone_id": "empty"})),
            Some(&cred("one")),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    assert!(text(&r).contains("the list is empty"), "{}", text(&r));
    assert_eq!(
        r.structured_content.unwrap(),
        json!({"result": [], "result_info": {"count": 0}})
    );
}

#[tokio::test]
async fn upstream_faults_are_tool_errors() {
    let (base, _) = upstream().await;
    let core = core(&base, Exposure::default());
    let c = cred("one");
    let t = text(&core.call("slow_get", None, Some(&c)).await.unwrap());
    assert!(
        t.contains("GET /slow") && t.contains("did not answer within 1 s"),
        "{t}"
    );
    let t = text(&core.call("big_get", None, Some(&c)).await.unwrap());
    assert!(t.contains("larger than 100000 bytes"), "{t}");
    let t = text(&core.call("moved_get", None, Some(&c)).await.unwrap());
    assert!(
        t.contains("302") && t.contains("elsewhere.example") && t.contains("not followed"),
        "{t}"
    );
    // nothing listens on port 9
    let dead = core_dead();
    let r = dead.call("big_get", None, Some(&c)).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("could not reach the API"), "{}", text(&r));
}

fn core_dead() -> Core {
    core("http://127.0.0.1:9/v4", Exposure::default())
}

#[tokio::test]
async fn exposure_policy_unknown_tools_and_bad_arguments() {
    let read_only = Exposure::new(catalogue(), None, true).unwrap();
    let core = core("http://127.0.0.1:9", read_only);
    assert_eq!(core.tool_count(), 5);
    let err = core.call("thing_delete", None, None).await.unwrap_err();
    assert!(
        err.message
            .contains("not exposed by this server (--read-only / --products)"),
        "{}",
        err.message
    );
    assert!(err.message.contains("--read-only"), "{}", err.message);
    let by_product = Exposure::new(catalogue(), Some(vec!["other".into()]), false).unwrap();
    let core2 = core_with(by_product);
    let err = core2.call("acct_get", None, None).await.unwrap_err();
    assert!(err.message.contains("--products"), "{}", err.message);
    let err = core.call("nope", None, None).await.unwrap_err();
    assert!(err.message.contains("unknown tool `nope`"));
    // schema violations are tool errors naming the field
    let r = core
        .call(
            "acct_get",
            args(json!({"account_id": 5, "extra": true})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(t.contains("/account_id") && t.contains("extra"), "{t}");
    // valid arguments but no credential configured
    let t = text(
        &core
            .call("acct_get", args(json!({"account_id": "a"})), None)
            .await
            .unwrap(),
    );
    assert!(
        t.contains("no upstream credential") && t.contains("TEST_TOKEN"),
        "{t}"
    );
    // huge arguments: JSON-RPC error
    let err = core
        .call(
            "acct_get",
            args(json!({"account_id": "a".repeat(20_000)})),
            None,
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("too large"), "{}", err.message);
    // the limit is the arguments' exact compact JSON size (here 10,000
    // bytes: `{"account_id":"` + value + `"}`), one byte over is refused
    let at_limit = args(json!({"account_id": "a".repeat(10_000 - 17)}));
    assert_eq!(crate::truncate::json_len(&at_limit), 10_000);
    // (past the size check: a tool result, here the validation's refusal)
    let t = text(&core.call("acct_get", at_limit, None).await.unwrap());
    assert!(!t.contains("too large"), "{t}");
    let over = args(json!({"account_id": "a".repeat(10_000 - 16)}));
    let err = core.call("acct_get", over, None).await.unwrap_err();
    assert!(
        err.message.contains("too large: 10001 bytes"),
        "{}",
        err.message
    );
    // unknown products are refused at start
    assert!(Exposure::new(catalogue(), Some(vec!["nope".into()]), false).is_err());
    assert!(Exposure::new(catalogue(), Some(vec!["other".into()]), true).is_err());
}

fn core_with(exposure: Exposure) -> Core {
    core("http://127.0.0.1:9", exposure)
}

#[test]
fn rmcp_tools_are_built_on_demand() {
    let core = core("http://127.0.0.1:9", Exposure::default());
    let tool = core.tool("acct_get").unwrap();
    assert_eq!(tool.title.as_deref(), Some("t"));
    assert!(tool.output_schema.is_some());
    assert_eq!(tool.annotations.unwrap().read_only_hint, Some(true));
    assert!(core.tool("nope").is_none());
}

/// `api://products` lists the exposed tools only; without skills the
/// extension is not declared, resources always are.
#[tokio::test]
async fn products_resource_follows_the_exposure_policy() {
    let products = |core: &Core| -> Value {
        let read = core.resources().read(resources::PRODUCTS_URI).unwrap();
        let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0]
        else {
            panic!("text expected")
        };
        serde_json::from_str(text).unwrap()
    };
    let names = |v: &Value| -> Vec<String> {
        v["products"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["tools"].as_array().unwrap().iter())
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = core("http://127.0.0.1:9", Exposure::default());
    assert_eq!(names(&products(&all)).len(), all.tool_count());
    let read_only = core(
        "http://127.0.0.1:9",
        Exposure::new(catalogue(), None, true).unwrap(),
    );
    let listed = names(&products(&read_only));
    assert_eq!(listed.len(), 5);
    assert!(!listed.iter().any(|n| n == "thing_delete"), "{listed:?}");
    let by_product =
        core_with(Exposure::new(catalogue(), Some(vec!["other".into()]), false).unwrap());
    let v = products(&by_product);
    assert_eq!(v["products"].as_array().unwrap().len(), 1);
    assert_eq!(v["products"][0]["name"], "other");

    let caps = serde_json::to_value(&all.info().capabilities).unwrap();
    assert!(caps["resources"].is_object(), "{caps}");
    assert!(caps.get("extensions").is_none(), "{caps}");
}

#[test]
fn an_mcp_session_error_keeps_its_source() {
    let inner = std::io::Error::other("transport closed");
    let error = super::ServeError::Mcp {
        context: "initializing the session",
        source: Box::new(inner),
    };
    let source = std::error::Error::source(&error).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("transport closed"));
    assert!(
        error.to_string().contains("initializing the session"),
        "{error}"
    );
}
