//! Driving the real MCP client SDKs: `tests/js/driver.mjs` (the TypeScript
//! SDK, `@modelcontextprotocol/sdk`) and `tests/py/driver.py` (the Python
//! `mcp` package). Each reads a plan (JSON) on stdin, runs its steps
//! against a server and prints one JSON report as its last stdout line.
//!
//! Plan: `{"transport": "http"|"stdio", "url", "token", "command", "args",
//! "env", "client": "client"|"session" (Python), "timeoutMs",
//! "steps": [{"op": "list"} | {"op": "call", "name", "arguments"}]}`.
//! Report: `{"protocolVersion", "serverInfo", "results": [{"op": "list",
//! "tools": [...]} | {"op": "call", "name", "result": CallToolResult} |
//! {"op": …, "error": {"code"?, "message"}}]}`, or `{"fatal": "..."}`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::process::{self, Finished};

/// Environment variable that turns missing Node tooling into a skip.
pub const SKIP_NODE_ENV: &str = "TOOLFORGE_SKIP_NODE";
/// Environment variable that turns missing Python tooling into a skip.
pub const SKIP_PYTHON_ENV: &str = "TOOLFORGE_SKIP_PYTHON";
/// The command that installs the Node test tools.
pub const NODE_SETUP: &str = "npm ci --prefix tests && node tests/js/patch-conformance.mjs";
/// The commands that install the Python test clients.
pub const PYTHON_SETUP: &str =
    "python3 -m venv tests/py/.venv && tests/py/.venv/bin/pip install -r tests/py/requirements.txt";

fn tests_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Whether Node tests are to be skipped when their tools are missing.
pub fn skip_node() -> bool {
    flag(SKIP_NODE_ENV)
}

/// Whether Python tests are to be skipped when their tools are missing.
pub fn skip_python() -> bool {
    flag(SKIP_PYTHON_ENV)
}

/// Prints the loud SKIPPED line.
pub fn announce_skip(test: &str, why: &str) {
    // Straight to stderr: libtest captures `eprintln!` of passing tests.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {why} ***\n");
}

/// The shared data directory (`../shared`). Without `TOOLFORGE_SHARED` the
/// test fails, unless `TOOLFORGE_REQUIRE_SHARED=0` says explicitly that a
/// skip is wanted (`tests/run.sh` sets it on a machine without `../shared`):
/// then None, with a loud notice.
///
/// # Errors
///
/// `TOOLFORGE_SHARED` is missing and no skip was asked for.
pub fn shared_dir(test: &str, holds: &str) -> Result<Option<std::path::PathBuf>, String> {
    let why = match std::env::var_os("TOOLFORGE_SHARED") {
        Some(p) if std::path::Path::new(&p).is_dir() => {
            return Ok(Some(std::path::PathBuf::from(p)));
        }
        Some(p) => format!("TOOLFORGE_SHARED={} is not a directory", p.display()),
        None => format!("TOOLFORGE_SHARED is not set (it names the folder holding {holds})"),
    };
    if std::env::var("TOOLFORGE_REQUIRE_SHARED").as_deref() == Ok("0") {
        announce_skip(test, &format!("{why}; TOOLFORGE_REQUIRE_SHARED=0"));
        return Ok(None);
    }
    Err(format!(
        "{test}: {why}; point it at the shared data directory (../shared), or set \
         TOOLFORGE_REQUIRE_SHARED=0 to skip the tests that need it"
    ))
}

/// What is missing for the Node clients, if anything.
pub fn node_missing() -> Option<String> {
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok {
        return Some("`node` is not on PATH (Node 20+ is needed)".to_owned());
    }
    for package in [
        "@modelcontextprotocol/sdk",
        "@modelcontextprotocol/conformance",
    ] {
        let manifest = tests_dir()
            .join("node_modules")
            .join(package)
            .join("package.json");
        if !manifest.is_file() {
            return Some(format!("{} is missing", manifest.display()));
        }
    }
    None
}

/// The Python interpreter of `tests/py/.venv`.
pub fn python() -> PathBuf {
    tests_dir().join("py/.venv/bin/python")
}

/// What is missing for the Python clients, if anything.
pub fn python_missing() -> Option<String> {
    let python = python();
    if !python.is_file() {
        return Some(format!("{} is missing", python.display()));
    }
    let ok = Command::new(&python)
        .args(["-c", "import mcp, httpx2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return Some(format!(
            "{} cannot import `mcp` and `httpx2`",
            python.display()
        ));
    }
    None
}

/// `Ok(true)` when Node tools are present, `Ok(false)` (after a loud
/// SKIPPED line) when they are missing and `TOOLFORGE_SKIP_NODE=1`.
///
/// # Errors
///
/// Missing tools without the skip flag: the message names the setup command.
pub fn require_node(test: &str) -> Result<bool, String> {
    match node_missing() {
        None => Ok(true),
        Some(why) if skip_node() => {
            announce_skip(test, &format!("{why} and {SKIP_NODE_ENV}=1 is set"));
            Ok(false)
        }
        Some(why) => Err(format!(
            "{test}: the Node MCP test tools are not installed ({why}): run `{NODE_SETUP}` \
             from the repository root (tests/run.sh does), or set {SKIP_NODE_ENV}=1 to skip"
        )),
    }
}

/// As [`require_node`], and also the OpenID provider the OAuth tests run
/// (`tests/node_modules/oidc-provider`).
///
/// # Errors
///
/// Missing tools without the skip flag: the message names the setup command.
pub fn require_oidc_provider(test: &str) -> Result<bool, String> {
    if !require_node(test)? {
        return Ok(false);
    }
    let provider = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/oidc-provider/package.json");
    if provider.is_file() {
        return Ok(true);
    }
    if skip_node() {
        announce_skip(
            test,
            "tests/node_modules/oidc-provider is missing and TOOLFORGE_SKIP_NODE=1 is set",
        );
        return Ok(false);
    }
    Err(format!(
        "{test}: {} is missing: run `{NODE_SETUP}`",
        provider.display()
    ))
}

/// As [`require_node`], for the Python clients (`TOOLFORGE_SKIP_PYTHON=1`).
///
/// # Errors
///
/// Missing tools without the skip flag: the message names the setup commands.
pub fn require_python(test: &str) -> Result<bool, String> {
    match python_missing() {
        None => Ok(true),
        Some(why) if skip_python() => {
            announce_skip(test, &format!("{why} and {SKIP_PYTHON_ENV}=1 is set"));
            Ok(false)
        }
        Some(why) => Err(format!(
            "{test}: the Python MCP client is not installed ({why}): run `{PYTHON_SETUP}` \
             from the repository root (tests/run.sh does), or set {SKIP_PYTHON_ENV}=1 to skip"
        )),
    }
}

/// Runs `node tests/js/driver.mjs` on `plan`.
///
/// # Errors
///
/// The script cannot run, is killed at `limit`, or prints no report.
pub fn run_ts(plan: &Value, limit: Duration) -> Result<Value, String> {
    let mut command = Command::new("node");
    command
        .arg(tests_dir().join("js/driver.mjs"))
        .current_dir(tests_dir());
    run_driver(command, plan, limit)
}

/// Runs `tests/py/.venv/bin/python tests/py/driver.py` on `plan`.
///
/// # Errors
///
/// The script cannot run, is killed at `limit`, or prints no report.
pub fn run_python(plan: &Value, limit: Duration) -> Result<Value, String> {
    run_driver(python_command(), plan, limit)
}

/// Runs a driver and returns its report together with what it printed
/// (stderr carries a stdio server's log).
///
/// # Errors
///
/// As [`run_ts`].
pub fn run_driver_full(
    command: Command,
    plan: &Value,
    limit: Duration,
) -> Result<(Value, Finished), String> {
    let done = process::run(command, plan.to_string().as_bytes(), limit)?;
    let report = done
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .and_then(|l| serde_json::from_str::<Value>(l).ok());
    match report {
        Some(report) if report.get("fatal").is_none() && done.success() => Ok((report, done)),
        Some(report) => Err(format!(
            "the client failed: {}\n{}",
            report["fatal"],
            done.describe()
        )),
        None => Err(format!("the client printed no report\n{}", done.describe())),
    }
}

fn run_driver(command: Command, plan: &Value, limit: Duration) -> Result<Value, String> {
    run_driver_full(command, plan, limit).map(|(report, _)| report)
}

/// Runs the MCP Inspector CLI (`@modelcontextprotocol/inspector-cli`, from
/// its own `build/` folder as it requires) with `args`, and parses the JSON
/// it prints.
///
/// # Errors
///
/// It cannot run, fails, is killed at `limit`, or prints no JSON.
pub fn run_inspector(args: &[String], limit: Duration) -> Result<Value, String> {
    let build = tests_dir().join("node_modules/@modelcontextprotocol/inspector-cli/build");
    let mut command = Command::new("node");
    command.arg("index.js").args(args).current_dir(&build);
    let done = process::run(command, b"", limit)?;
    if !done.success() {
        return Err(format!("the inspector CLI failed\n{}", done.describe()));
    }
    let start = done
        .stdout
        .find('{')
        .ok_or_else(|| format!("the inspector CLI printed no JSON\n{}", done.describe()))?;
    serde_json::from_str(&done.stdout[start..]).map_err(|e| {
        format!(
            "the inspector CLI output is not JSON ({e})\n{}",
            done.describe()
        )
    })
}

/// A Python driver command (for [`run_driver_full`]).
pub fn python_command() -> Command {
    let mut command = Command::new(python());
    command
        .arg(tests_dir().join("py/driver.py"))
        .current_dir(tests_dir())
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_hints_name_the_commands() {
        assert!(NODE_SETUP.contains("npm ci --prefix tests"));
        assert!(PYTHON_SETUP.contains("requirements.txt"));
    }

    #[test]
    fn reports_are_the_last_json_line() {
        let mut command = Command::new("sh");
        command.args(["-c", "cat >/dev/null; echo noise; echo '{\"results\":[]}'"]);
        let report = run_driver(command, &serde_json::json!({}), Duration::from_secs(20)).unwrap();
        assert_eq!(report["results"], serde_json::json!([]));
        let mut command = Command::new("sh");
        command.args(["-c", "cat >/dev/null; echo '{\"fatal\":\"boom\"}'; exit 3"]);
        let err = run_driver(command, &serde_json::json!({}), Duration::from_secs(20)).unwrap_err();
        assert!(err.contains("boom"), "{err}");
    }
}
