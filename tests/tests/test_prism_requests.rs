#![allow(clippy::unwrap_used, clippy::panic)]
//! The request builders follow the spec: for every tool of the generated
//! `cloudflare-tools` catalogue, schema-valid sample arguments are turned
//! into a request by `toolforge_runtime::request::build_request` and sent to
//! a Prism mock server running on `specs/cloudflare-sample.yaml`. Prism
//! validates method, path, path/query/header parameters, security and body
//! against the spec and answers 4xx with the violations when anything is
//! off, so an accepted request is one the real API would understand.
//!
//! Needs `npm ci --prefix tests` (Prism); `TOOLFORGE_SKIP_NODE=1` skips.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cloudflare_tools::CATALOGUE;
use serde_json::{Map, Value};
use toolforge_runtime::catalogue::{BodyArgs, ParamLocation, ToolDef};
use toolforge_runtime::request::build_request;
use toolforge_tests::http::{self, Response};
use toolforge_tests::mock::{self, clip, describe_request};
use toolforge_tests::prism::Prism;
use toolforge_tests::sample::{self, Optional, SampleOptions};
use toolforge_tests::with_deadline;

/// Bound on one request to Prism.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// Marker of transport failures in reports.
const SEND_FAILED: &str = "sending the request failed";
/// Bound on a whole test body (Prism start-up is bounded separately).
const TEST_LIMIT: Duration = Duration::from_secs(300);

fn spec() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/cloudflare-sample.yaml")
}

/// Starts Prism, or returns `None` after a loud SKIPPED line when it is not
/// installed and `TOOLFORGE_SKIP_NODE=1`; fails with the `npm ci` hint otherwise.
fn start_prism(test: &str) -> Option<Prism> {
    match Prism::start_or_skip(&spec(), test) {
        Ok(prism) => prism,
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Runs `body` against Prism with a deadline; Prism is killed when this
/// returns or fails (the guard stays on this thread).
fn run_with_prism<F>(test: &str, body: F)
where
    F: FnOnce(SocketAddr) -> Vec<String> + Send + 'static,
{
    let Some(prism) = start_prism(test) else {
        return;
    };
    let addr = prism.addr();
    let pid = prism.pid();
    let failures = match with_deadline(TEST_LIMIT, move || body(addr)) {
        Ok(failures) => failures,
        Err(e) => vec![e],
    };
    if !failures.is_empty() {
        // Prism's own log helps only when it did not answer properly.
        let transport = failures.iter().any(|f| {
            f.contains(SEND_FAILED) || f.contains("did not finish") || f.contains("panicked")
        });
        let log = if transport {
            format!(
                "\n\n--- Prism output (tail) ---\n{}",
                clip_tail(&prism.log(), 4000)
            )
        } else {
            String::new()
        };
        drop(prism);
        panic!(
            "{test}: {} failure(s):\n\n{}{log}",
            failures.len(),
            failures.join("\n\n"),
        );
    }
    drop(prism);
    // The guard killed and reaped exactly its child.
    #[cfg(target_os = "linux")]
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "{test}: Prism (pid {pid}) still runs after its guard dropped"
    );
}

fn clip_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("[… {} earlier chars]\n{tail}", count - max)
}

fn schema_of(tool: &ToolDef) -> Value {
    serde_json::from_str(tool.input_schema)
        .unwrap_or_else(|e| panic!("tool `{}`: input_schema is not JSON: {e}", tool.name))
}

/// Distinct `(selector argument, value)` pairs of a merged tool's routes.
fn selectors(tool: &ToolDef) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for route in tool.routes {
        if let Some(when) = route.when
            && !out.contains(&when)
        {
            out.push(when);
        }
    }
    out
}

/// Path parameter argument names of a tool.
fn path_args(tool: &ToolDef) -> BTreeSet<String> {
    tool.params
        .iter()
        .filter(|p| p.location == ParamLocation::Path)
        .map(|p| p.arg.to_owned())
        .collect()
}

/// One argument set to try for a tool.
struct Case {
    label: String,
    args: Map<String, Value>,
    selector: Option<(&'static str, &'static str)>,
}

/// The argument sets for a tool: all optional arguments and only the
/// required ones, for each `account_or_zone`-style route selector value.
fn cases(tool: &ToolDef, schema: &Value) -> Result<Vec<Case>, String> {
    let mut selector_values: Vec<Option<(&'static str, &'static str)>> =
        selectors(tool).into_iter().map(Some).collect();
    if selector_values.is_empty() {
        selector_values.push(None);
    }
    let mut out: Vec<Case> = Vec::new();
    for selector in selector_values {
        for optional in [Optional::All, Optional::None] {
            let mut opts = SampleOptions {
                optional,
                force: path_args(tool),
                ..SampleOptions::default()
            };
            // A body with `minProperties` needs that many fields even when
            // the schema marks none required (the builder refuses otherwise).
            if let Some(body) = &tool.body
                && let BodyArgs::Fields(pairs) = body.args
            {
                for (arg, _) in pairs.iter().take(body.min_fields as usize) {
                    opts.force.insert((*arg).to_owned());
                }
            }
            if let Some((arg, value)) = selector {
                opts.force.insert(arg.to_owned());
                opts.overrides
                    .insert(arg.to_owned(), Value::String(value.to_owned()));
            }
            let args = sample::sample_args(schema, &opts)
                .map_err(|e| format!("sampling arguments ({optional:?}): {e}"))?;
            if out.iter().any(|c| c.args == args) {
                continue;
            }
            let mut label = match optional {
                Optional::All => "all optional args".to_owned(),
                Optional::None => "required args only".to_owned(),
            };
            if let Some((arg, value)) = selector {
                label = format!("{arg}={value}, {label}");
            }
            out.push(Case {
                label,
                args,
                selector,
            });
        }
    }
    Ok(out)
}

/// Validation errors of `args` against the tool schema: structure with
/// `jsonschema::validator_for` (draft 2020-12), formats on top.
fn schema_errors(schema: &Value, args: &Map<String, Value>) -> Vec<String> {
    let instance = Value::Object(args.clone());
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return vec![format!("input schema does not compile: {e}")],
    };
    let mut errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if errors.is_empty()
        && let Err(format_errors) = sample::validate(schema, &instance)
    {
        errors = format_errors;
    }
    errors
}

fn send(addr: SocketAddr, request: &http::Request) -> Result<Response, String> {
    http::send(addr, request, CLIENT_TIMEOUT).map_err(|e| format!("{SEND_FAILED}: {e}"))
}

/// Builds, sends and judges one case. `Ok(Some(note))` is an acceptance
/// that needed a documented allowance for a Prism limitation.
fn check_case(
    addr: SocketAddr,
    tool: &ToolDef,
    schema: &Value,
    case: &Case,
) -> Result<Option<String>, String> {
    let args_text = serde_json::to_string(&case.args).unwrap_or_default();
    let errors = schema_errors(schema, &case.args);
    if !errors.is_empty() {
        return Err(format!(
            "sample arguments do not validate against the input schema:\n  {}\n  args: {}",
            errors.join("\n  "),
            clip(&args_text, 800)
        ));
    }
    let built = build_request(tool, &case.args).map_err(|e| {
        format!(
            "build_request failed: {e}\n  args: {}",
            clip(&args_text, 800)
        )
    })?;
    if let Some((_, value)) = case.selector {
        let prefix = format!("/{value}/");
        if !built.path_and_query.starts_with(&prefix) {
            return Err(format!(
                "selector {value:?} did not route to a `{prefix}…` path: {}",
                built.path_and_query
            ));
        }
    }
    let wire = mock::wire_request(&built);
    let response = send(addr, &wire)?;
    match mock::prism_verdict(&response) {
        Ok(()) => Ok(None),
        Err(verdict) => match multipart_limitation(tool, &case.args, &built, &response) {
            Some(Ok(note)) => Ok(Some(note)),
            other => Err(format!(
                "Prism rejected the request.\n  args: {}\n  request: {}\n  verdict: {}{}",
                clip(&args_text, 800),
                describe_request(&wire),
                verdict.replace('\n', "\n  "),
                match other {
                    Some(Err(own)) => format!("\n  own multipart check: {own}"),
                    _ => String::new(),
                }
            )),
        },
    }
}

/// Prism 5.14 reads every `multipart/form-data` part as a plain string and
/// keeps only the last part of a repeated name, so a JSON object part
/// (`encoding.contentType: application/json`) or an array of file parts is
/// always reported as "must be object" / "must be array". When those are
/// the only violations, this checks the parts itself: an object field is one
/// part holding a JSON object; an array field is one part per item (the
/// OpenAPI way of sending several files or values under one name).
/// `None`: not this situation; `Some(Ok(note))`: allowed; `Some(Err)`: our
/// own check failed too.
fn multipart_limitation(
    tool: &ToolDef,
    args: &Map<String, Value>,
    built: &toolforge_runtime::request::HttpRequest,
    response: &Response,
) -> Option<Result<String, String>> {
    let body = built.body.as_ref()?;
    if !body.content_type.starts_with("multipart/form-data") || response.status != 422 {
        return None;
    }
    let violations = mock::violations(response);
    let mut fields = Vec::new();
    for v in &violations {
        let expected = v.message.rsplit(" must be ").next().unwrap_or_default();
        match (v.location.as_slice(), v.code.as_str(), expected) {
            ([request, body, field], "type", "object" | "array")
                if request == "request" && body == "body" =>
            {
                fields.push((field.clone(), expected.to_owned()));
            }
            _ => return None,
        }
    }
    if fields.is_empty() {
        return None;
    }
    let parts = match mock::multipart_parts(&body.content_type, &body.bytes) {
        Ok(parts) => parts,
        Err(e) => return Some(Err(e)),
    };
    let mut checked = Vec::new();
    for (field, expected) in fields {
        let named: Vec<&mock::Part> = parts.iter().filter(|p| p.name == field).collect();
        let problem = match expected.as_str() {
            "object" => (named.len() != 1
                || !serde_json::from_slice::<Value>(&named[0].data).is_ok_and(|v| v.is_object()))
            .then(|| {
                format!(
                    "one part holding a JSON object, but the body has {}",
                    parts_text(&named)
                )
            }),
            _ => {
                let items: Vec<&Value> = body_value(tool, args, &field)
                    .and_then(Value::as_array)
                    .map(|items| items.iter().filter(|v| !v.is_null()).collect())
                    .unwrap_or_default();
                // Text items must arrive as the part content, byte for byte.
                let same = named.len() == items.len()
                    && named.iter().zip(&items).all(|(part, item)| {
                        item.as_str()
                            .is_none_or(|text| part.data == text.as_bytes())
                    });
                (!same).then(|| {
                    format!(
                        "one part per item ({} item(s) in the arguments), but the body has {}",
                        items.len(),
                        parts_text(&named)
                    )
                })
            }
        };
        if let Some(problem) = problem {
            return Some(Err(format!(
                "multipart field `{field}` ({expected}) should be sent as {problem}"
            )));
        }
        checked.push(format!("`{field}` ({expected}, {} part(s))", named.len()));
    }
    Some(Ok(format!(
        "Prism cannot read non-string multipart fields; checked {} ourselves",
        checked.join(", ")
    )))
}

/// The argument value that fills body property `prop`.
fn body_value<'a>(tool: &ToolDef, args: &'a Map<String, Value>, prop: &str) -> Option<&'a Value> {
    match tool.body?.args {
        BodyArgs::Fields(pairs) => pairs
            .iter()
            .find(|(_, p)| *p == prop)
            .and_then(|(arg, _)| args.get(*arg)),
        BodyArgs::Whole(arg) => args.get(arg)?.get(prop),
    }
}

/// "N part(s) named so: <content> (<type>), …" for a report.
fn parts_text(parts: &[&mock::Part]) -> String {
    let each: Vec<String> = parts
        .iter()
        .map(|p| {
            format!(
                "{} ({})",
                clip(&String::from_utf8_lossy(&p.data), 120),
                p.content_type.as_deref().unwrap_or("no Content-Type")
            )
        })
        .collect();
    format!(
        "{} part(s) with that name: [{}]",
        parts.len(),
        each.join(", ")
    )
}

fn check_every_tool(addr: SocketAddr) -> Vec<String> {
    let mut failures = Vec::new();
    let (mut tools, mut passed, mut failed) = (0usize, 0usize, 0usize);
    let mut lines = Vec::new();
    for tool in CATALOGUE.tools() {
        tools += 1;
        let schema = schema_of(tool);
        let cases = match cases(tool, &schema) {
            Ok(cases) => cases,
            Err(e) => {
                failed += 1;
                lines.push(format!("FAIL {:<48} (no arguments)", tool.name));
                failures.push(format!(
                    "`{}` ({} {}): {e}",
                    tool.name,
                    tool.method.as_str(),
                    tool.primary_path()
                ));
                continue;
            }
        };
        for case in &cases {
            match check_case(addr, tool, &schema, case) {
                Ok(None) => {
                    passed += 1;
                    lines.push(format!("ok   {:<48} [{}]", tool.name, case.label));
                }
                Ok(Some(note)) => {
                    passed += 1;
                    lines.push(format!("ok*  {:<48} [{}] {note}", tool.name, case.label));
                }
                Err(e) => {
                    failed += 1;
                    lines.push(format!("FAIL {:<48} [{}]", tool.name, case.label));
                    failures.push(format!(
                        "`{}` ({} {}) [{}]: {e}",
                        tool.name,
                        tool.method.as_str(),
                        tool.primary_path(),
                        case.label
                    ));
                }
            }
        }
    }
    println!("{}", lines.join("\n"));
    println!("prism requests: {tools} tools, {passed} cases accepted, {failed} failed");
    if tools == 0 {
        failures.push("the catalogue has no tools".to_owned());
    }
    failures
}

#[test]
fn every_tool_request_is_accepted_by_prism() {
    run_with_prism("every_tool_request_is_accepted_by_prism", check_every_tool);
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
