#![allow(clippy::unwrap_used, clippy::panic)]
//! The request builders follow the spec: for every tool of the generated
//! `cloudflare-tools` catalogue, schema-valid sample arguments are turned
//! into a request by `toolforge_runtime::request::build_request` and sent to
//! a Prism mock server running on `specs/cloudflare-sample.yaml`. Prism
//! validates method, path, path/query/header parameters, security and body
//! against the spec and answers 4xx with the violations when anything is
//! off, so an accepted request is one the real API would understand.
//! The shared machinery is `toolforge_tests::prism_tools`.
//!
//! Needs `npm ci --prefix tests` (Prism); `TOOLFORGE_SKIP_NODE=1` skips.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use cloudflare_tools::CATALOGUE;
use serde_json::Value;
use toolforge_runtime::catalogue::ToolDef;
use toolforge_runtime::request::build_request;
use toolforge_tests::http;
use toolforge_tests::mock::{self, clip, describe_request};
use toolforge_tests::prism_tools::{
    bearer_wire, check_every_tool, path_args, schema_errors, schema_of, selectors, send,
};
use toolforge_tests::sample::{self, Optional, SampleOptions};

fn spec() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/cloudflare-sample.yaml")
}

fn run_with_prism<F>(test: &str, body: F)
where
    F: FnOnce(SocketAddr) -> Vec<String> + Send + 'static,
{
    toolforge_tests::prism_tools::run_with_prism(&spec(), test, body);
}

#[test]
fn every_tool_request_is_accepted_by_prism() {
    run_with_prism("every_tool_request_is_accepted_by_prism", |addr| {
        check_every_tool(addr, "cloudflare", CATALOGUE.tools(), &bearer_wire)
    });
}

/// Decodes `%XX` escapes (for checking what a path segment carries).
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A GET tool with at least two path parameters, without route selector,
/// and the path arguments whose schema is a free string (no pattern,
/// format or enum), so any text is a valid value. `dns_records_get` first.
fn segment_tool() -> Option<(&'static ToolDef, Vec<String>)> {
    let mut candidates: Vec<&'static ToolDef> = CATALOGUE
        .tools()
        .filter(|t| {
            t.method.as_str() == "GET" && selectors(t).is_empty() && path_args(t).len() >= 2
        })
        .collect();
    candidates.sort_by_key(|t| t.name != "dns_records_get");
    candidates.into_iter().find_map(|tool| {
        let schema = schema_of(tool);
        let free: Vec<String> = path_args(tool)
            .into_iter()
            .filter(|arg| {
                let prop = &schema["properties"][arg.as_str()];
                prop["type"] == "string"
                    && [
                        "pattern", "format", "enum", "const", "$ref", "anyOf", "oneOf", "allOf",
                    ]
                    .iter()
                    .all(|k| prop.get(*k).is_none())
                    && prop["maxLength"].as_u64().is_none_or(|m| m >= 8)
            })
            .collect();
        (!free.is_empty()).then_some((tool, free))
    })
}

fn check_path_segments(addr: SocketAddr) -> Vec<String> {
    let Some((tool, free)) = segment_tool() else {
        return vec!["no GET tool with two path parameters and a free-text one".to_owned()];
    };
    let schema = schema_of(tool);
    let opts = SampleOptions {
        optional: Optional::None,
        force: path_args(tool),
        ..SampleOptions::default()
    };
    let base_args = sample::sample_args(&schema, &opts).unwrap();
    let mut failures = Vec::new();
    for arg in &free {
        // Baseline: a plain marker value, to find the segment and the answer.
        let mut args = base_args.clone();
        args.insert(arg.clone(), Value::String("zzmarker".to_owned()));
        let built = build_request(tool, &args).unwrap();
        let path = built
            .path_and_query
            .split('?')
            .next()
            .unwrap_or_default()
            .to_owned();
        let segments: Vec<&str> = path.split('/').collect();
        let index = segments.iter().position(|s| *s == "zzmarker").unwrap();
        let wire = mock::wire_request(&built);
        let baseline = send(addr, &wire).unwrap();
        if let Err(verdict) = mock::prism_verdict(&baseline) {
            failures.push(format!(
                "`{}` baseline {}: {verdict}",
                tool.name,
                describe_request(&wire)
            ));
            continue;
        }
        for value in ["../x", "a/b", "a?b#c", "%2F"] {
            let mut args = base_args.clone();
            args.insert(arg.clone(), Value::String(value.to_owned()));
            let context = format!("`{}` with {arg} = {value:?}", tool.name);
            let errors = schema_errors(&schema, &args);
            if !errors.is_empty() {
                failures.push(format!(
                    "{context}: arguments invalid: {}",
                    errors.join("; ")
                ));
                continue;
            }
            let built = match build_request(tool, &args) {
                Ok(built) => built,
                Err(e) => {
                    failures.push(format!("{context}: build_request failed: {e}"));
                    continue;
                }
            };
            let path = built.path_and_query.split('?').next().unwrap_or_default();
            let got: Vec<&str> = path.split('/').collect();
            if got.len() != segments.len() {
                failures.push(format!(
                    "{context}: path {path} has {} segments, expected {}",
                    got.len(),
                    segments.len()
                ));
                continue;
            }
            let segment = got[index];
            if segment.contains(['/', '?', '#'])
                || percent_decode(segment).as_deref() != Some(value)
            {
                failures.push(format!("{context}: segment {index} of {path} is {segment:?}, which does not decode to {value:?}"));
                continue;
            }
            let wire = mock::wire_request(&built);
            let response = match send(addr, &wire) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{context}: {e}"));
                    continue;
                }
            };
            if let Err(verdict) = mock::prism_verdict(&response) {
                failures.push(format!(
                    "{context}: {}\n  {verdict}",
                    describe_request(&wire)
                ));
            } else if response.status != baseline.status || response.body != baseline.body {
                failures.push(format!(
                    "{context}: {} answered {} {:?}, not the operation's answer {} {:?}",
                    describe_request(&wire),
                    response.status,
                    clip(&response.text(), 300),
                    baseline.status,
                    clip(&baseline.text(), 300)
                ));
            }
        }
    }
    println!(
        "path segments: checked `{}` ({} {}) with path args {free:?}",
        tool.name,
        tool.method.as_str(),
        tool.primary_path()
    );
    failures
}

#[test]
fn path_values_stay_one_segment_and_route_to_the_same_operation() {
    run_with_prism(
        "path_values_stay_one_segment_and_route_to_the_same_operation",
        check_path_segments,
    );
}

/// The oracle is discriminating: Prism really rejects requests that break
/// the spec (so "accepted" above means something).
fn check_prism_rejects(addr: SocketAddr) -> Vec<String> {
    let auth = (
        "Authorization".to_owned(),
        format!("Bearer {}", mock::TEST_TOKEN),
    );
    let request = |method: &str,
                   target: &str,
                   headers: Vec<(String, String)>,
                   body: Option<&str>| http::Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body: body.map(|b| b.as_bytes().to_vec()),
    };
    let json = ("Content-Type".to_owned(), "application/json".to_owned());
    let cases = [
        (
            "a valid request",
            request(
                "GET",
                "/accounts/abc/d1/database?per_page=10",
                vec![auth.clone()],
                None,
            ),
            Some(200),
        ),
        (
            "a bad query type",
            request(
                "GET",
                "/accounts/abc/d1/database?per_page=abc",
                vec![auth.clone()],
                None,
            ),
            None,
        ),
        (
            "a bad path pattern",
            request(
                "GET",
                "/accounts/abc/rulesets/not-hex",
                vec![auth.clone()],
                None,
            ),
            None,
        ),
        (
            "a bad body",
            request(
                "POST",
                "/accounts/abc/d1/database",
                vec![auth.clone(), json.clone()],
                Some(r#"{"name":5}"#),
            ),
            None,
        ),
        (
            "an unknown path",
            request("GET", "/no/such/path", vec![auth.clone()], None),
            None,
        ),
        (
            "no credentials",
            request("GET", "/accounts/abc/d1/database", vec![], None),
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (what, req, want) in cases {
        let response = match send(addr, &req) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{what}: {e}"));
                continue;
            }
        };
        let verdict = mock::prism_verdict(&response);
        match (want, verdict) {
            (Some(status), Ok(())) if response.status == status => {}
            (None, Err(_)) => {}
            (_, verdict) => failures.push(format!(
                "{what}: {} got HTTP {} (verdict {verdict:?})",
                describe_request(&req),
                response.status
            )),
        }
    }
    failures
}

#[test]
fn prism_rejects_requests_that_break_the_spec() {
    run_with_prism(
        "prism_rejects_requests_that_break_the_spec",
        check_prism_rejects,
    );
}
