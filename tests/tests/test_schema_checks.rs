#![allow(clippy::unwrap_used, clippy::panic)]
//! Response schema checks in the real server: a `zones_get` answer that
//! violates its documented response schema (wrong types, a bad enum value,
//! an over-long id, an undeclared key, ids in an array), with every value
//! a recognisable string, gives one `schema_mismatch` event with `*` in
//! place of indices and undeclared keys and none of the values, while the
//! tool result is exactly the upstream's answer; a valid answer gives no
//! event; `schema-report` turns the captured log into a table row.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_generator::commands::schema_report::{Collected, render};
use toolforge_tests::mcp::{RawClient, result_text};
use toolforge_tests::server::{Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "schema-client-token-8e7f";
const UPSTREAM_TOKEN: &str = "schema-upstream-secret-6d5c";
const GOOD_ZONE: &str = "00000000000000000000000000000001";
const BAD_ZONE: &str = "00000000000000000000000000000002";
const LIMIT: Duration = Duration::from_secs(90);

fn bad_result() -> Value {
    json!({
        "id": "SECRETID-0123456789abcdef0123456789abcdef-far-too-long",
        "name": 4242,
        "status": "SECRET-status-value",
        "name_servers": ["SECRET-ns1.example", 17, 18],
        "SECRET-undeclared-key": {"SECRET-inner": "SECRET-inner-value"},
        "plan": {"id": "SECRET-plan", "price": "SECRET-price"},
    })
}

#[test]
fn mismatch_events_carry_no_values_and_results_are_untouched() {
    with_deadline(LIMIT, || {
        let upstream = Upstream::start(|req| {
            if req.path().ends_with(BAD_ZONE) {
                Reply::envelope(bad_result())
            } else {
                Reply::envelope(
                    json!({"id": GOOD_ZONE, "name": "good.example.com", "status": "active"}),
                )
            }
        })
        .unwrap();
        let config = ServerConfig::new([
            "--upstream".to_owned(),
            upstream.url(),
            "--allow-loopback-upstream".to_owned(),
        ])
        .token(CLIENT_TOKEN, UPSTREAM_TOKEN);
        let server = Server::http(&config).unwrap();
        let client = RawClient::new(server.addr(), CLIENT_TOKEN);
        let good = client
            .call_tool("zones_get", json!({"zone_id": GOOD_ZONE}))
            .unwrap();
        assert_ne!(good["isError"], true, "{good}");
        let bad = client
            .call_tool("zones_get", json!({"zone_id": BAD_ZONE}))
            .unwrap();
        // The result is the upstream's answer, unchanged by the check.
        assert_ne!(bad["isError"], true, "{bad}");
        assert_eq!(bad["structuredContent"]["result"], bad_result(), "{bad}");
        assert!(result_text(&bad).contains("SECRET-status-value"));

        let deadline = Instant::now() + Duration::from_secs(30);
        while !server.log().contains("schema_mismatch=") {
            assert!(
                Instant::now() < deadline,
                "no mismatch event:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let log = server.log();
        // The checker works in order: the good answer was checked first and
        // gave nothing, so there is exactly one event.
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("schema_mismatch="))
            .collect();
        assert_eq!(lines.len(), 1, "{log}");
        assert!(!log.contains("SECRET"), "a value reached the log:\n{log}");
        let event: Value =
            serde_json::from_str(lines[0].split("schema_mismatch=").nth(1).unwrap()).unwrap();
        assert_eq!(event["tool"], "zones_get");
        assert_eq!(event["method"], "GET");
        assert_eq!(event["path"], "/zones/{zone_id}");
        assert_eq!(event["product"], "zones");
        assert_eq!(event["status"], 200);
        assert_eq!(event["response"], "200");
        assert_eq!(event["exact"], true);
        let details = event["details"].as_array().unwrap();
        assert!(!details.is_empty() && details.len() <= 5, "{event}");
        assert!(event["violations"].as_u64().unwrap() >= 5, "{event}");
        let instances: Vec<&str> = details
            .iter()
            .map(|d| d["instance"].as_str().unwrap())
            .collect();
        for d in details {
            assert_eq!(
                d.as_object().unwrap().len(),
                3,
                "only keyword, schema, instance: {d}"
            );
        }
        assert!(instances.contains(&"/result/name"), "{event}");
        assert!(instances.contains(&"/result/status"), "{event}");
        assert!(instances.contains(&"/result/id"), "{event}");

        let mut collected = Collected::default();
        collected.add_log(&log);
        let report = render(&collected, 1);
        assert!(
            report.contains("| zones | `GET /zones/{zone_id}` | `zones_get` | 1 | 200 |"),
            "{report}"
        );
        assert!(!report.contains("SECRET"));
    })
    .unwrap();
}
