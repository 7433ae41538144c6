//! Every tool of a generated catalogue against a Prism mock of its spec:
//! schema-valid sample arguments ([`crate::sample`]) are turned into a
//! request by `toolforge_runtime::request::build_request`, sent to Prism,
//! and judged by its verdict ([`crate::mock::prism_verdict`]). Shared by the
//! Cloudflare (`test_prism_requests.rs`) and Larder (`test_prism_larder.rs`)
//! tests; each passes its catalogue and how a built request goes on the wire
//! (which credentials it carries).

// Test-assertion helpers: failing the calling test is their job.
#![allow(clippy::panic)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};
use toolforge_runtime::catalogue::{BodyArgs, ParamLocation, ToolDef};
use toolforge_runtime::request::{HttpRequest, build_request};

use crate::http::{self, Response};
use crate::mock::{self, clip, describe_request};
use crate::prism::Prism;
use crate::sample::{self, Optional, SampleOptions};
use crate::with_deadline;

/// Bound on one request to Prism.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// Marker of transport failures in reports.
pub const SEND_FAILED: &str = "sending the request failed";
/// Bound on a whole test body (Prism start-up is bounded separately).
pub const TEST_LIMIT: Duration = Duration::from_secs(300);

/// Starts Prism, or returns `None` after a loud SKIPPED line when it is not
/// installed and `TOOLFORGE_SKIP_NODE=1`; fails with the `npm ci` hint otherwise.
fn start_prism(spec: &Path, test: &str) -> Option<Prism> {
    match Prism::start_or_skip(spec, test) {
        Ok(prism) => prism,
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Runs `body` against a Prism mock of `spec` with a deadline; Prism is
/// killed when this returns or fails (the guard stays on this thread).
/// `body` returns the failures; any fails the test, with Prism's log when a
/// transport failure suggests it did not answer properly.
///
/// # Panics
///
/// On failures, and when Prism cannot start (unless skipping is allowed).
pub fn run_with_prism<F>(spec: &Path, test: &str, body: F)
where
    F: FnOnce(SocketAddr) -> Vec<String> + Send + 'static,
{
    let Some(prism) = start_prism(spec, test) else {
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

/// The last `max` characters of `text`, with a note of what was cut.
pub fn clip_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("[… {} earlier chars]\n{tail}", count - max)
}

/// A tool's input schema as JSON.
///
/// # Panics
///
/// The schema is not JSON.
pub fn schema_of(tool: &ToolDef) -> Value {
    serde_json::from_str(&tool.input_schema_text())
        .unwrap_or_else(|e| panic!("tool `{}`: input_schema is not JSON: {e}", tool.name))
}

/// Distinct `(selector argument, value)` pairs of a merged tool's routes.
pub fn selectors(tool: &ToolDef) -> Vec<(&'static str, &'static str)> {
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
pub fn path_args(tool: &ToolDef) -> BTreeSet<String> {
    tool.params
        .iter()
        .filter(|p| p.location == ParamLocation::Path)
        .map(|p| p.arg.to_owned())
        .collect()
}

/// One argument set to try for a tool.
pub struct Case {
    /// What the set holds, for reports.
    pub label: String,
    /// The arguments.
    pub args: Map<String, Value>,
    /// The route selector argument and value it sets, if any.
    pub selector: Option<(&'static str, &'static str)>,
}

/// The argument sets for a tool: all optional arguments and only the
/// required ones, for each `account_or_zone`-style route selector value.
///
/// # Errors
///
/// The schema cannot be sampled.
pub fn cases(tool: &ToolDef, schema: &Value) -> Result<Vec<Case>, String> {
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
pub fn schema_errors(schema: &Value, args: &Map<String, Value>) -> Vec<String> {
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

/// Sends `request` to `addr` within [`CLIENT_TIMEOUT`].
///
/// # Errors
///
/// A transport failure, marked with [`SEND_FAILED`].
pub fn send(addr: SocketAddr, request: &http::Request) -> Result<Response, String> {
    http::send(addr, request, CLIENT_TIMEOUT).map_err(|e| format!("{SEND_FAILED}: {e}"))
}

/// Builds, sends and judges one case. `Ok(Some(note))` is an acceptance
/// that needed a documented allowance for a Prism limitation.
///
/// # Errors
///
/// Why the case failed: invalid sample arguments, a builder error, a wire
/// error, a transport failure or Prism's rejection.
pub fn check_case(
    addr: SocketAddr,
    tool: &ToolDef,
    schema: &Value,
    case: &Case,
    wire: &Wire,
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
    let wire = wire(tool, &built)?;
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
    built: &HttpRequest,
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

/// How a built request of a tool goes on the wire (headers, credentials).
pub type Wire = dyn Fn(&ToolDef, &HttpRequest) -> Result<http::Request, String> + Sync;

/// [`mock::wire_request`] (the bearer test token), for [`check_every_tool`].
///
/// # Errors
///
/// Never.
pub fn bearer_wire(_tool: &ToolDef, built: &HttpRequest) -> Result<http::Request, String> {
    Ok(mock::wire_request(built))
}

/// Sends every case of every tool of `tools` and returns the failures
/// (printing one line per case and a summary line labelled `what`).
pub fn check_every_tool<'a>(
    addr: SocketAddr,
    what: &str,
    catalogue: impl Iterator<Item = &'a ToolDef>,
    wire: &Wire,
) -> Vec<String> {
    let mut failures = Vec::new();
    let (mut tools, mut passed, mut failed) = (0usize, 0usize, 0usize);
    let mut lines = Vec::new();
    for tool in catalogue {
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
            match check_case(addr, tool, &schema, case, wire) {
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
    println!("prism requests ({what}): {tools} tools, {passed} cases accepted, {failed} failed");
    if tools == 0 {
        failures.push("the catalogue has no tools".to_owned());
    }
    failures
}
