#![allow(clippy::unwrap_used, clippy::panic)]
//! Skills over MCP (the Skills extension, SEP-2640) and the `api://products`
//! resource, seen by real clients of the real `cloudflare-mcp` binary:
//!
//! - the TypeScript SDK client over Streamable HTTP (2025-11-25);
//! - the Python `mcp.Client` over HTTP (2026-07-28 via `server/discover`);
//! - the Python `ClientSession` over stdio (2025-11-25), in direct mode and
//!   in the `code` and `codemode` modes.
//!
//! Each lists the resources, calls `skills/list` and `skills/get` (raw
//! requests through the SDK session: neither SDK has skills methods),
//! reads every file of every manifest and `api://products` through
//! `resources/read`, and asks for an unknown skill, an unknown file and a
//! cursor. The test checks that the skills are the repository's `skills/`
//! directory, that every read's bytes have the manifest's sha256 digest
//! and size, and that the product index matches the catalogue. No upstream
//! call is made.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use cloudflare_tools::CATALOGUE;
use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::server::{self, Server, ServerConfig};
use toolforge_tests::sha256::hex_digest;
use toolforge_tests::with_deadline;

const CLIENT_TOKEN: &str = "skills-client-token-3b7e";
const UPSTREAM_TOKEN: &str = "cf-upstream-secret-skills-91";
const CLIENT_LIMIT: Duration = Duration::from_secs(120);
const TEST_LIMIT: Duration = Duration::from_secs(240);

/// No call reaches the upstream: a loopback port nobody listens on.
const UPSTREAM_ARGS: [&str; 3] = [
    "--upstream",
    "http://127.0.0.1:9",
    "--allow-loopback-upstream",
];

fn steps() -> Value {
    json!([
        {"op": "skills"},
        {"op": "request", "method": "skills/get", "params": {"uri": "skill://no-such-skill/SKILL.md"}},
        {"op": "request", "method": "resources/read", "params": {"uri": "skill://dns-record-changes/nope.md"}},
        {"op": "request", "method": "skills/list", "params": {"cursor": "2"}},
    ])
}

/// Every file of the repository's skills: skill → path → bytes.
fn skills_on_disk() -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../skills");
    let mut skills = BTreeMap::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if dir.is_dir() {
            let mut files = BTreeMap::new();
            walk(&dir, &dir, &mut files);
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            skills.insert(name, files);
        }
    }
    skills
}

/// The bytes of one `resources/read` content.
fn content_bytes(content: &Value) -> Result<Vec<u8>, String> {
    if let Some(text) = content["text"].as_str() {
        return Ok(text.as_bytes().to_vec());
    }
    let blob = content["blob"]
        .as_str()
        .ok_or_else(|| format!("content without text or blob: {content}"))?;
    base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| format!("bad base64: {e}"))
}

/// Checks a report; returns every problem found.
fn check(report: &Value, expect_cache_hints: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(fatal) = report.get("fatal") {
        return vec![format!("driver failed: {fatal}")];
    }
    let results = report["results"].as_array().cloned().unwrap_or_default();
    let Some(walk) = results.first() else {
        return vec![format!("no results: {report}")];
    };
    if let Some(e) = walk.get("error") {
        return vec![format!("the skills walk failed: {e}")];
    }
    let disk = skills_on_disk();
    if disk.len() < 3 {
        problems.push(format!(
            "expected at least 3 skills on disk, found {}",
            disk.len()
        ));
    }

    // resources/list: api://products and each SKILL.md.
    let listed: Vec<&str> = walk["resources"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["uri"].as_str()).collect())
        .unwrap_or_default();
    let mut expected = vec!["api://products".to_owned()];
    expected.extend(disk.keys().map(|n| format!("skill://{n}/SKILL.md")));
    if listed != expected {
        problems.push(format!("resources/list: {listed:?}, expected {expected:?}"));
    }

    // skills/list: one entry per skill, complete manifests matching the disk.
    let list = &walk["list"];
    let skills = list["skills"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = skills
        .iter()
        .filter_map(|s| s["frontmatter"]["name"].as_str())
        .collect();
    let disk_names: Vec<&str> = disk.keys().map(String::as_str).collect();
    if names != disk_names {
        problems.push(format!(
            "skills/list names {names:?}, expected {disk_names:?}"
        ));
    }
    if expect_cache_hints && (list["ttlMs"] != json!(3_600_000) || list["cacheScope"] != "public") {
        problems.push(format!(
            "skills/list cache hints: ttlMs {} cacheScope {}",
            list["ttlMs"], list["cacheScope"]
        ));
    }
    let mut manifest: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for skill in &skills {
        let name = skill["frontmatter"]["name"].as_str().unwrap_or("?");
        if skill["uri"] != format!("skill://{name}/SKILL.md") {
            problems.push(format!("skill {name}: uri {}", skill["uri"]));
        }
        if !skill["frontmatter"]["description"].is_string() {
            problems.push(format!("skill {name}: no description"));
        }
        let files = skill["resources"].as_array().cloned().unwrap_or_default();
        let on_disk = disk.get(name).cloned().unwrap_or_default();
        if files.len() != on_disk.len() {
            problems.push(format!(
                "skill {name}: {} manifest entries, {} files on disk",
                files.len(),
                on_disk.len()
            ));
        }
        for file in &files {
            let uri = file["uri"].as_str().unwrap_or_default().to_owned();
            let digest = file["digest"].as_str().unwrap_or_default().to_owned();
            let size = file["size"].as_u64().unwrap_or(u64::MAX);
            let path = uri
                .strip_prefix(&format!("skill://{name}/"))
                .unwrap_or_default();
            match on_disk.get(path) {
                Some(bytes) => {
                    if digest != format!("sha256:{}", hex_digest(bytes))
                        || size != bytes.len() as u64
                    {
                        problems.push(format!(
                            "{uri}: manifest {digest} / {size} differs from the file on disk"
                        ));
                    }
                }
                None => problems.push(format!("{uri}: not a file of skills/{name}")),
            }
            manifest.insert(uri, (digest, size));
        }
    }

    // skills/get: the same entry as the listing, with cache hints.
    let gets = walk["gets"].as_array().cloned().unwrap_or_default();
    if gets.len() != skills.len() {
        problems.push(format!(
            "{} skills/get results for {} skills",
            gets.len(),
            skills.len()
        ));
    }
    for (get, listed) in gets.iter().zip(&skills) {
        if &get["skill"] != listed {
            problems.push(format!(
                "skills/get {} differs from its listing entry",
                listed["uri"]
            ));
        }
        if expect_cache_hints && (get["ttlMs"] != json!(3_600_000) || get["cacheScope"] != "public")
        {
            problems.push(format!(
                "skills/get {} lacks the cache hints",
                listed["uri"]
            ));
        }
    }

    // resources/read: every manifest file verifies; one binary file at least.
    let reads = walk["reads"].as_array().cloned().unwrap_or_default();
    let mut blobs = 0;
    let mut products = None;
    for read in &reads {
        let uri = read["uri"].as_str().unwrap_or_default();
        let Some(content) = read["contents"].get(0) else {
            problems.push(format!("{uri}: no contents"));
            continue;
        };
        if content["uri"] != uri {
            problems.push(format!("{uri}: content uri {}", content["uri"]));
        }
        let bytes = match content_bytes(content) {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{uri}: {e}"));
                continue;
            }
        };
        if uri == "api://products" {
            products = Some(bytes);
            continue;
        }
        blobs += usize::from(content.get("blob").is_some());
        match manifest.get(uri) {
            Some((digest, size)) => {
                let actual = format!("sha256:{}", hex_digest(&bytes));
                if &actual != digest || bytes.len() as u64 != *size {
                    problems.push(format!(
                        "{uri}: read {actual} / {} bytes, manifest says {digest} / {size}",
                        bytes.len()
                    ));
                }
            }
            None => problems.push(format!("{uri}: read but not in any manifest")),
        }
    }
    if reads.len() != manifest.len() + 1 {
        problems.push(format!(
            "{} reads for {} manifest files",
            reads.len(),
            manifest.len()
        ));
    }
    if blobs == 0 {
        problems.push("no file came back as a blob (the PNG should)".into());
    }

    // api://products: the catalogue's products and tools.
    match products.map(|b| serde_json::from_slice::<Value>(&b)) {
        Some(Ok(index)) => {
            let got: Vec<(String, usize)> = index["products"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            let n = p["tools"].as_array().map_or(0, Vec::len);
                            (p["name"].as_str().unwrap_or("?").to_owned(), n)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let want: Vec<(String, usize)> = CATALOGUE
                .products
                .iter()
                .map(|p| (p.name.to_owned(), p.tools.len()))
                .collect();
            if got != want {
                problems.push(format!("api://products: {got:?}, expected {want:?}"));
            }
            let first = &index["products"][0]["tools"][0];
            for key in ["name", "title", "method", "path"] {
                if !first[key].is_string() {
                    problems.push(format!("api://products tool without `{key}`: {first}"));
                }
            }
        }
        Some(Err(e)) => problems.push(format!("api://products is not JSON: {e}")),
        None => problems.push("api://products was not read".into()),
    }

    // Unknown skill, unknown file, any cursor: -32602.
    for result in results.iter().skip(1) {
        if result["error"]["code"] != json!(-32602) {
            problems.push(format!("expected a -32602 error: {result}"));
        }
    }
    problems
}

fn finish(
    test: &str,
    report: Result<Result<Value, String>, String>,
    expect_cache_hints: bool,
    log: &str,
) {
    let problems = match report {
        Ok(Ok(report)) => check(&report, expect_cache_hints),
        Ok(Err(e)) | Err(e) => vec![e],
    };
    if !problems.is_empty() {
        panic!(
            "{test}: {} problem(s):\n{}\n--- server log (tail) ---\n{}",
            problems.len(),
            problems.join("\n"),
            toolforge_tests::process::tail(log, 3000)
        );
    }
}

fn http_server(test: &str) -> Server {
    let config = ServerConfig::new(UPSTREAM_ARGS).token(CLIENT_TOKEN, UPSTREAM_TOKEN);
    Server::http(&config).unwrap_or_else(|e| panic!("{test}: {e}"))
}

#[test]
fn typescript_sdk_reads_skills_over_http() {
    let test = "typescript_sdk_reads_skills_over_http";
    if !clients::require_node(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let server = http_server(test);
    let plan =
        json!({"url": server.url(), "token": CLIENT_TOKEN, "steps": steps(), "timeoutMs": 60_000});
    let report = with_deadline(TEST_LIMIT, move || clients::run_ts(&plan, CLIENT_LIMIT));
    if let Ok(Ok(r)) = &report {
        let extension = &r["capabilities"]["extensions"]["io.modelcontextprotocol/skills"];
        assert!(
            extension.is_object(),
            "{test}: the extension is not declared: {}",
            r["capabilities"]
        );
        assert!(
            r["capabilities"]["resources"].is_object(),
            "{test}: no resources capability"
        );
    }
    // rmcp keeps the cache hints for 2025-11-25 peers, and the raw skills
    // results pass through the SDK unchanged.
    finish(test, report, true, &server.log());
}

#[test]
fn python_client_reads_skills_over_http() {
    let test = "python_client_reads_skills_over_http";
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let server = http_server(test);
    let plan = json!({"client": "client", "transport": "http", "url": server.url(),
        "token": CLIENT_TOKEN, "steps": steps(), "timeoutSeconds": 60});
    let report = with_deadline(TEST_LIMIT, move || clients::run_python(&plan, CLIENT_LIMIT));
    if let Ok(Ok(r)) = &report {
        assert_eq!(r["protocolVersion"], "2026-07-28", "{test}: {r}");
    }
    finish(test, report, true, &server.log());
}

/// The Python `ClientSession` over stdio against `cloudflare-mcp ARGS`.
fn python_session_over_stdio(test: &str, extra: &[&str]) {
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let bin = server::binary().unwrap_or_else(|e| panic!("{test}: {e}"));
    let mut args = vec!["--transport".to_owned(), "stdio".to_owned()];
    args.extend(UPSTREAM_ARGS.iter().chain(extra).map(|s| (*s).to_owned()));
    let plan = json!({"client": "session", "transport": "stdio",
        "command": bin.display().to_string(), "args": args,
        "env": {server::TOKEN_ENV: UPSTREAM_TOKEN},
        "steps": steps(), "timeoutSeconds": 60});
    let report = with_deadline(TEST_LIMIT, move || clients::run_python(&plan, CLIENT_LIMIT));
    // The SDK's ClientSession drops fields of later revisions (the cache
    // hints) from results on a 2025-11-25 session.
    finish(test, report, false, "");
}

#[test]
fn python_session_reads_skills_over_stdio() {
    python_session_over_stdio("python_session_reads_skills_over_stdio", &[]);
}

/// The Code Mode modes list other tools but serve the same resources and
/// skills (`api://products` still describes the API's tools).
#[test]
fn python_session_reads_skills_in_the_code_modes() {
    python_session_over_stdio(
        "python_session_reads_skills_in_code_mode",
        &["--mode", "code"],
    );
    python_session_over_stdio(
        "python_session_reads_skills_in_codemode_mode",
        &["--mode", "codemode"],
    );
}
