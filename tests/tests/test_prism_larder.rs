#![allow(clippy::unwrap_used, clippy::panic)]
//! The generic sample follows its spec too: every tool of the generated
//! `larder-tools` catalogue, with schema-valid sample arguments, built by
//! `toolforge_runtime::request::build_request`, is accepted by a Prism mock
//! of `specs/larder.yaml` (the machinery of `test_prism_requests.rs`, shared
//! in `toolforge_tests::prism_tools`).
//!
//! Credentials: Prism checks each operation's `security` (an API key in the
//! `X-Larder-Key` header, the `api_key` query parameter or the
//! `larder_session` cookie; `Authorization: Basic …`; `Authorization: Bearer
//! …` for bearer, OAuth 2 and OpenID Connect) and answers 401 without them.
//! The credentials here are the RUNTIME's: every variable the catalogue's
//! schemes name is set in a test environment, `Credential::authorize` picks
//! what each tool's requirement (`ToolDef::security`) sends — fetching the
//! OAuth client-credentials token from the mock's own `POST /oauth/token` —
//! and `Authorization::apply` renders the request exactly as the upstream
//! client sends it. The second test leaves credentials unset: the server
//! answers a tool error naming the variables before anything is sent, and
//! Prism answers 401 to the same request without them; the spec is read
//! independently of the generator to check that the catalogue's
//! requirements match it.
//!
//! Server variables: the spec's server is
//! `https://{region}.larder.example/{basePath}`; Prism 5 mocks every path
//! without the server's base path (`/status`, not `/v1/status`, which it
//! answers 404), and `build_request` yields exactly those paths.
//!
//! Needs `npm ci --prefix tests` (Prism); `TOOLFORGE_SKIP_NODE=1` skips.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use larder_tools::CATALOGUE;
use serde_json::Value;
use toolforge_runtime::catalogue::ToolDef;
use toolforge_runtime::credential::{AuthorizeError, Credential, ServerSecrets};
use toolforge_runtime::request::{HttpRequest, build_request};
use toolforge_tests::http;
use toolforge_tests::mock::{self, describe_request};
use toolforge_tests::prism_tools::{self, cases, check_every_tool, schema_of, send};

fn spec_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/larder.yaml")
}

/// The spec document as JSON (read once).
fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let bytes = std::fs::read(spec_path()).unwrap();
        toolforge_generator::load::load(&bytes, "larder.yaml")
            .unwrap()
            .root
    })
}

/// The security requirement alternatives of a tool's operation (its own
/// `security`, else the document's), each a list of scheme names.
fn alternatives(tool: &ToolDef) -> Vec<Vec<String>> {
    let doc = spec();
    let op = &doc["paths"][tool.primary_path()][tool.method.as_str().to_ascii_lowercase()];
    assert!(
        op.is_object(),
        "`{}`: no operation {} {} in the spec",
        tool.name,
        tool.method.as_str(),
        tool.primary_path()
    );
    let security = op.get("security").unwrap_or(&doc["security"]);
    security
        .as_array()
        .map(|alts| {
            alts.iter()
                .map(|alt| {
                    alt.as_object()
                        .map(|o| o.keys().cloned().collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The wire request without any credential: the built headers, then
/// `Content-Type` and the body.
fn bare_wire(built: &HttpRequest) -> http::Request {
    let mut request = mock::wire_request(built);
    request
        .headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
    request
}

/// A test value for every variable the catalogue's schemes name (the mock
/// checks presence and form, not values).
fn full_env() -> HashMap<String, String> {
    CATALOGUE
        .profile
        .schemes
        .iter()
        .flat_map(|s| s.env.iter())
        .map(|var| {
            (
                var.to_string(),
                format!("test-{}", var.to_ascii_lowercase()),
            )
        })
        .collect()
}

/// The server's credential with the variables of `env`, as over stdio.
fn server_credential(env: &HashMap<String, String>) -> Credential {
    let secrets = ServerSecrets::from_env(&CATALOGUE.profile, CATALOGUE.profile.token_env, |n| {
        env.get(n).cloned()
    })
    .unwrap();
    Credential::with_secrets(None, "test environment", Arc::new(secrets)).unwrap()
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

fn http_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .unwrap()
    })
}

/// The request as the upstream client sends it with `credential` (the
/// runtime's choice of alternative, OAuth token fetched from the mock).
fn runtime_wire(
    addr: SocketAddr,
    credential: &Credential,
    built: &HttpRequest,
) -> Result<http::Request, AuthorizeError> {
    let base = format!("http://{addr}");
    let auth = runtime().block_on(credential.authorize(
        built.security,
        built.operation,
        http_client(),
        &base,
    ))?;
    let (target, headers) = auth.apply(&built.path_and_query, &built.headers).unwrap();
    let mut request = bare_wire(built);
    request.target = target;
    let mut sent: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    sent.extend(
        request
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .cloned(),
    );
    request.headers = sent;
    Ok(request)
}

/// The catalogue's requirement of `tool` as scheme names, to compare with
/// the spec's.
fn catalogue_alternatives(tool: &ToolDef) -> Vec<Vec<String>> {
    let mut alts: Vec<Vec<String>> = tool
        .security
        .iter()
        .map(|alt| {
            let mut names: Vec<String> = alt
                .iter()
                .map(|&i| CATALOGUE.profile.schemes[usize::from(i)].name.to_owned())
                .collect();
            names.sort();
            names
        })
        .collect();
    alts.sort();
    alts
}

#[test]
fn every_larder_tool_request_is_accepted_by_prism() {
    prism_tools::run_with_prism(
        &spec_path(),
        "every_larder_tool_request_is_accepted_by_prism",
        |addr| {
            let credential = server_credential(&full_env());
            let wire = move |_: &ToolDef, built: &HttpRequest| {
                runtime_wire(addr, &credential, built).map_err(|e| e.to_string())
            };
            check_every_tool(addr, "larder", CATALOGUE.tools(), &wire)
        },
    );
}

/// The variables of scheme `index`.
fn vars_of(index: u16) -> &'static [&'static str] {
    CATALOGUE.profile.schemes[usize::from(index)].env
}

/// The variables a missing-credential error asks for: all of a scheme's,
/// except HTTP basic's password, which may stay empty (RFC 7617; the user
/// name alone is a valid credential, as Stripe's key is).
fn asked_vars_of(index: u16) -> Vec<&'static str> {
    vars_of(index)
        .iter()
        .copied()
        .filter(|v| !v.ends_with("_PASSWORD"))
        .collect()
}

/// `env` with only the variables of schemes `keep`.
fn env_with(keep: &[u16]) -> HashMap<String, String> {
    let full = full_env();
    keep.iter()
        .flat_map(|&i| vars_of(i).iter())
        .map(|v| (v.to_string(), full[*v].clone()))
        .collect()
}

/// The credentials matter, and the server says what is missing before the
/// API does. For every tool: its requirement matches the spec's (read
/// independently); with no credential configured, a tool that needs one
/// gets a tool error naming the variables to set while Prism answers the
/// same request 401; one needing two at once gets an error naming the
/// unset half while Prism refuses either credential alone; and the tools
/// that need none are accepted without any.
fn check_credentials_are_required(addr: SocketAddr) -> Vec<String> {
    let mut failures = Vec::new();
    let (mut secured, mut open, mut pairs) = (0usize, 0usize, 0usize);
    let nothing = server_credential(&HashMap::new());
    for tool in CATALOGUE.tools() {
        let mut spec_alts: Vec<Vec<String>> = alternatives(tool)
            .into_iter()
            .map(|mut a| {
                a.sort();
                a
            })
            .collect();
        spec_alts.sort();
        if spec_alts != catalogue_alternatives(tool) {
            failures.push(format!(
                "`{}`: the catalogue requires {:?}, the spec {spec_alts:?}",
                tool.name,
                catalogue_alternatives(tool)
            ));
        }
        let schema = schema_of(tool);
        let args = cases(tool, &schema).unwrap().swap_remove(0).args;
        let built = build_request(tool, &args).unwrap();
        let needs_none = tool.security.is_empty() || tool.security.iter().any(|a| a.is_empty());
        if needs_none {
            // Open (`security: []`) or optional (`{}`): sent, and accepted, bare.
            open += 1;
            let outcome = runtime_wire(addr, &nothing, &built)
                .map_err(|e| e.to_string())
                .and_then(|request| {
                    send(addr, &request)
                        .and_then(|r| mock::prism_verdict(&r))
                        .map_err(|v| format!("{}: {v}", describe_request(&request)))
                });
            if let Err(e) = outcome {
                failures.push(format!("`{}` needs no credential, but: {e}", tool.name));
            }
            continue;
        }
        secured += 1;
        // Nothing configured: the server's error names every variable of
        // every alternative, and Prism refuses the bare request.
        match runtime_wire(addr, &nothing, &built) {
            Err(AuthorizeError::Missing(text)) => {
                for &i in tool.security.iter().flat_map(|a| a.iter()) {
                    for var in asked_vars_of(i) {
                        if !text.contains(&format!("`{var}`")) {
                            failures.push(format!(
                                "`{}`: the error does not name `{var}`: {text}",
                                tool.name
                            ));
                        }
                    }
                }
            }
            Err(e) => failures.push(format!("`{}`: unexpected error {e}", tool.name)),
            Ok(request) => failures.push(format!(
                "`{}`: sent without its credential: {}",
                tool.name,
                describe_request(&request)
            )),
        }
        let bare = bare_wire(&built);
        match send(addr, &bare) {
            Ok(r) if r.status == 401 => {}
            Ok(r) => failures.push(format!("`{}` bare: HTTP {}, not 401", tool.name, r.status)),
            Err(e) => failures.push(format!("`{}` bare: {e}", tool.name)),
        }
        // Two at once: one alone is neither sent by the server nor accepted by Prism.
        for alt in tool.security.iter().filter(|a| a.len() > 1) {
            pairs += 1;
            for &only in *alt {
                let others: Vec<u16> = alt.iter().copied().filter(|&i| i != only).collect();
                let half = server_credential(&env_with(&[only]));
                match runtime_wire(addr, &half, &built) {
                    Err(AuthorizeError::Missing(text)) => {
                        let named = others
                            .iter()
                            .flat_map(|&i| asked_vars_of(i))
                            .all(|v| text.contains(v));
                        let quiet = vars_of(only).iter().all(|v| !text.contains(v));
                        if !named || !quiet {
                            failures.push(format!("`{}` with only scheme {only}: {text}", tool.name));
                        }
                    }
                    other => failures.push(format!(
                        "`{}` with only scheme {only}: expected a missing-credential error, got {:?}",
                        tool.name,
                        other.map(|r| describe_request(&r))
                    )),
                }
                // The same credential alone, forced onto the wire.
                let single: &'static [&'static [u16]] =
                    Box::leak(vec![&*Box::leak(vec![only].into_boxed_slice())].into_boxed_slice());
                let mut alone = built.clone();
                alone.security = Some(single);
                match runtime_wire(addr, &half, &alone).map(|r| send(addr, &r)) {
                    Ok(Ok(r)) if r.status == 401 => {}
                    Ok(Ok(r)) => failures.push(format!(
                        "`{}` with only scheme {only}: HTTP {}, not 401",
                        tool.name, r.status
                    )),
                    Ok(Err(e)) => failures.push(format!("`{}`: {e}", tool.name)),
                    Err(e) => failures.push(format!("`{}`: {e}", tool.name)),
                }
            }
        }
    }
    println!(
        "larder credentials: {secured} tools refused without credentials (server error first, Prism 401), {open} open, {pairs} two-credential requirement(s)"
    );
    if open == 0 || secured == 0 || pairs == 0 {
        failures.push(format!(
            "expected secured, open and two-credential operations ({secured} secured, {open} open, {pairs} pairs)"
        ));
    }
    failures
}

#[test]
fn larder_tools_are_refused_without_their_credentials() {
    prism_tools::run_with_prism(
        &spec_path(),
        "larder_tools_are_refused_without_their_credentials",
        check_credentials_are_required,
    );
}
