//! Helpers of the paging end-to-end tests (`test_paging_clients.rs`,
//! `test_paging_urls.rs`): building a server binary, the Python driver's
//! plans and the parts of its report those tests read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// `cargo build -p <package> --bin <bin>` (a no-op when up to date) and the
/// binary's path.
///
/// # Errors
///
/// When cargo cannot run or the build fails (with its output).
pub fn binary(package: &str, bin: &str) -> Result<PathBuf, String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("the tests crate has no parent directory")?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["build", "--quiet", "-p", package, "--bin", bin])
        .current_dir(workspace)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cargo build -p {package}: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(target.join("debug").join(bin))
}

/// The query parameter `name` of a request target, as sent (not decoded).
pub fn query<'a>(target: &'a str, name: &str) -> Option<&'a str> {
    let (_, query) = target.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// A stdio plan for the Python driver: `command` with `args` and `env`,
/// running `steps`.
pub fn stdio_plan(command: &Path, args: &[&str], env: Value, steps: Value) -> Value {
    json!({
        "client": "client",
        "transport": "stdio",
        "command": command.display().to_string(),
        "args": args,
        "env": env,
        "timeoutSeconds": 60,
        "steps": steps
    })
}

/// A `follow` step: `tool` from `arguments`, then each `next`.
pub fn follow_step(tool: &str, arguments: Value) -> Value {
    json!({"op": "follow", "name": tool, "arguments": arguments, "maxCalls": 10})
}

/// An `execute` step running `code`.
pub fn execute(code: &str) -> Value {
    json!({"op": "call", "name": "execute", "arguments": {"code": code}})
}

/// The value an `execute` step returned (its first text block, as JSON;
/// `Value::Null` when it is not JSON).
pub fn returned(step: &Value) -> Value {
    step["result"]["content"][0]["text"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null)
}

/// The calls of a report's first (`follow`) step, and its error if any.
pub fn follow_calls(report: &Value) -> (Vec<Value>, Option<Value>) {
    let step = &report["results"][0];
    let calls = step["calls"].as_array().cloned().unwrap_or_default();
    (calls, step.get("error").cloned())
}

/// The `id`s of the items at `pointer` in every call's `structuredContent`.
pub fn ids_at(calls: &[Value], pointer: &str) -> Vec<String> {
    calls
        .iter()
        .flat_map(|c| {
            c["result"]["structuredContent"]
                .pointer(pointer)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|i| i["id"].as_str().map(str::to_owned))
        .collect()
}

/// A call's text blocks, joined by newlines.
pub fn texts(call: &Value) -> String {
    call["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// `api.paginate` of `GET path` with `query` and options `opts` (JS
/// literals), returning the items' ids, pages, next, and the error parts.
pub fn paginate_code(path: &str, query: &str, opts: &str) -> String {
    format!(
        r#"async () => {{ const r = await api.paginate({{ method: "GET", path: "{path}", query: {query} }}, {opts}); return {{ ids: r.items.map(c => c.id), pages: r.pages, next: r.next, error: r.error, status: r.status, code: r.code }}; }}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_reads_one_parameter_as_sent() {
        assert_eq!(query("/x?a=1&b=%242", "b"), Some("%242"));
        assert_eq!(query("/x?a=1", "b"), None);
        assert_eq!(query("/x", "a"), None);
    }
}
