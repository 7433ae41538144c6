use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::catalogue::{ResponseDef, SharedText, SharedTexts};
use crate::request::testing::custom;

const SCHEMA: &str = r#"{"type":"object","required":["success","result"],"properties":{"success":{"type":"boolean"},"result":{"type":"array","items":{"type":"object","required":["id"],"properties":{"id":{"type":"string","maxLength":8},"tags":{"type":"object","additionalProperties":{"type":"integer"}}}}}}}"#;

fn tool() -> &'static ToolDef {
    custom(|t| {
        t.name = "things_list";
        t.product = "things";
        t.responses = Box::leak(Box::new([
            ResponseDef {
                status: "200",
                content_type: Some("application/json"),
                schema: Some(SharedText::Text(SCHEMA)),
            },
            ResponseDef {
                status: "4XX",
                content_type: Some("application/json"),
                schema: Some(SharedText::Text(
                    r#"{"type":"object","required":["errors"]}"#,
                )),
            },
        ]));
    })
}

fn collecting(fault: Option<Fault>) -> (SchemaChecks, Receiver<Mismatch>) {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let sink = Arc::new(move |m: &Mismatch| {
        if let Ok(t) = tx.lock() {
            let _ = t.send(m.clone());
        }
    });
    (SchemaChecks::with_sink(1.0, sink, fault), rx)
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn a_violation_is_reported_without_values_or_ids() {
    let (checks, rx) = collecting(None);
    let secret = "SECRET-customer-value-7781";
    let body = json!({
        "success": "SECRET-not-a-bool",
        "result": [
            {"id": "ok"},
            {"id": "SECRET-much-too-long-id", "tags": {"SECRET-key-tag": "SECRET-not-int"}},
        ],
        "SECRET-undeclared": secret,
    });
    checks.submit(tool(), 200, body.to_string().as_bytes());
    let m = rx.recv_timeout(WAIT).unwrap();
    let text = serde_json::to_string(&m).unwrap();
    assert!(!text.contains("SECRET"), "{text}");
    assert_eq!(
        (
            m.tool.as_str(),
            m.product.as_str(),
            m.status,
            m.response.as_str()
        ),
        ("things_list", "things", 200, "200")
    );
    assert_eq!(m.violations, 3, "{text}");
    assert!(m.exact);
    let instances: Vec<&str> = m.details.iter().map(|d| d.instance.as_str()).collect();
    assert!(instances.contains(&"/success"), "{text}");
    assert!(instances.contains(&"/result/*/id"), "{text}");
    assert!(instances.contains(&"/result/*/tags/*"), "{text}");
    let keywords: Vec<&str> = m.details.iter().map(|d| d.keyword.as_str()).collect();
    assert!(
        keywords.contains(&"maxLength") && keywords.contains(&"type"),
        "{text}"
    );
}

#[test]
fn valid_bodies_and_unknown_statuses_report_nothing_and_classes_apply() {
    let (checks, rx) = collecting(None);
    checks.submit(tool(), 200, br#"{"success":true,"result":[{"id":"a"}]}"#);
    checks.submit(tool(), 500, br#"{"anything":1}"#);
    checks.submit(tool(), 200, b"not json");
    checks.submit(tool(), 404, br#"{"errors":[]}"#);
    checks.submit(tool(), 429, br#"{"nope":1}"#);
    let m = rx.recv_timeout(WAIT).unwrap();
    assert_eq!((m.status, m.response.as_str()), (429, "4XX"));
    assert_eq!(m.details[0].keyword, "required");
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
}

#[test]
fn long_arrays_are_trimmed_and_the_count_marked_inexact() {
    let (checks, rx) = collecting(None);
    let items: Vec<Value> = (0..100).map(|_| json!({"id": 5})).collect();
    checks.submit(
        tool(),
        200,
        json!({"success": true, "result": items})
            .to_string()
            .as_bytes(),
    );
    let m = rx.recv_timeout(WAIT).unwrap();
    assert_eq!(m.violations, MAX_ARRAY_ITEMS);
    assert!(!m.exact);
    assert_eq!(m.details.len(), MAX_REPORTED);
}

#[test]
fn a_panicking_or_hanging_check_never_blocks_submit() {
    for fault in [Fault::Panic, Fault::Hang] {
        let (checks, rx) = collecting(Some(fault));
        let started = Instant::now();
        // More than the queue holds: a hung checker makes the rest skip.
        for _ in 0..(QUEUE + 50) {
            checks.submit(tool(), 200, br#"{"success":"x"}"#);
        }
        assert!(started.elapsed() < WAIT, "{fault:?}: submit waited");
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
    }
}

#[test]
fn sampling_checks_the_given_share() {
    let (tx, _rx) = channel::<Mismatch>();
    drop(tx);
    let checks = SchemaChecks::with_sink(0.25, Arc::new(|_: &Mismatch| {}), None);
    let taken = (0..100).filter(|_| checks.sampled()).count();
    assert_eq!(taken, 25);
    let none = SchemaChecks::with_sink(0.0, Arc::new(|_: &Mismatch| {}), None);
    assert!(!(0..10).any(|_| none.sampled()));
}

#[test]
fn masking_keeps_declared_keys_only() {
    assert_eq!(mask_instance("", ""), "");
    assert_eq!(
        mask_instance(
            "/result/3/id",
            "/properties/result/items/properties/id/type"
        ),
        "/result/*/id"
    );
    assert_eq!(
        mask_instance(
            "/result/abc",
            "/properties/result/additionalProperties/type"
        ),
        "/result/*"
    );
}

static NODE_TEXTS: SharedTexts = SharedTexts::new(
    "x-toolforge-chunk",
    &[
        (
            "S_NODE",
            r##"{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}"##,
        ),
        (
            "S_ROOT",
            r##"{"$ref":"#/$defs/Node","$defs":{"Node":{"x-toolforge-chunk":"S_NODE"}}}"##,
        ),
    ],
    "",
);

/// A response schema the generator cut into shared parts (its root `$defs`
/// here, as for recursive schemas) is checked whole: the parts are joined
/// before the validator is built. Built from the first part alone, the
/// `$ref` would not resolve and the response would go unchecked.
#[test]
fn joined_schemas_are_put_together_before_checking() {
    let tool = custom(|t| {
        t.name = "nodes_get";
        t.product = "nodes";
        t.responses = Box::leak(Box::new([ResponseDef {
            status: "200",
            content_type: Some("application/json"),
            schema: Some(SharedText::Entry("S_ROOT", &NODE_TEXTS)),
        }]));
    });
    let (checks, rx) = collecting(None);
    checks.submit(tool, 200, br#"{"id": "a", "kids": [{"id": "b"}]}"#);
    checks.submit(tool, 200, br#"{"id": "a", "kids": [{"id": 7}]}"#);
    let m = rx.recv_timeout(WAIT).unwrap();
    assert_eq!((m.tool.as_str(), m.violations), ("nodes_get", 1));
    let instances: Vec<&str> = m.details.iter().map(|d| d.instance.as_str()).collect();
    assert_eq!(instances, ["/kids/*/id"]);
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
}
