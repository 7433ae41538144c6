//! The command line of a generated binary. For now it inspects the
//! catalogue and dry-runs request building; serving MCP comes with the
//! server.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{Map, Value, json};

use crate::catalogue::{Catalogue, ToolDef};
use crate::request::build_request;

const USAGE: &str = "usage:
  BIN list                      tool names and titles, one per line
  BIN describe TOOL             the tool as MCP would list it (JSON)
  BIN request TOOL ARGS_JSON    dry run: the upstream request the arguments build (JSON)
  BIN source                    the release this binary was generated from";

/// The MCP listing entry of a tool, as JSON.
pub fn tool_listing(tool: &ToolDef) -> Value {
    let input: Value =
        serde_json::from_str(tool.input_schema).unwrap_or_else(|_| json!({"type": "object"}));
    let mut v = json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": input,
        "annotations": {
            "readOnlyHint": tool.annotations.read_only,
            "destructiveHint": tool.annotations.destructive,
            "idempotentHint": tool.annotations.idempotent,
            "openWorldHint": tool.annotations.open_world,
        },
    });
    if let Some(out) = tool
        .output_schema
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    {
        v["outputSchema"] = out;
    }
    v
}

fn print(out: &mut impl Write, text: &str) -> ExitCode {
    match writeln!(out, "{text}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

/// Runs the binary's command line over `catalogue`.
pub fn main(catalogue: &Catalogue) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bin = std::env::args().next().unwrap_or_else(|| "server".into());
    let usage = USAGE.replace("BIN", &bin);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let fail = |msg: &str| {
        eprintln!("error: {msg}\n{usage}");
        ExitCode::from(2)
    };
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["list"] => {
            let lines: Vec<String> = catalogue
                .tools()
                .map(|t| format!("{}\t{}", t.name, t.title))
                .collect();
            print(&mut out, &lines.join("\n"))
        }
        ["describe", name] => match catalogue.tool(name) {
            Some(t) => print(&mut out, &tool_listing(t).to_string()),
            None => fail(&format!("unknown tool `{name}`")),
        },
        ["request", name, raw] => {
            let Some(tool) = catalogue.tool(name) else {
                return fail(&format!("unknown tool `{name}`"));
            };
            let parsed: Map<String, Value> = match serde_json::from_str(raw) {
                Ok(m) => m,
                Err(e) => return fail(&format!("ARGS_JSON is not a JSON object: {e}")),
            };
            match build_request(tool, &parsed) {
                Ok(req) => {
                    let body = req.body.as_ref().map(|b| {
                        json!({"content_type": b.content_type, "text": String::from_utf8_lossy(&b.bytes)})
                    });
                    let v = json!({
                        "method": req.method.as_str(),
                        "path": req.path_and_query,
                        "headers": req.headers,
                        "body": body,
                    });
                    print(&mut out, &v.to_string())
                }
                Err(e) => fail(&e.to_string()),
            }
        }
        ["source"] => print(&mut out, catalogue.source),
        ["--help" | "-h" | "help"] => print(&mut out, &usage),
        _ => fail("unknown command"),
    }
}
