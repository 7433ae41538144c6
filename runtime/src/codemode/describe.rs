//! The tools the sandboxed modes list: `search` and `execute` (codemode) or
//! `code`, with compact TypeScript declarations and one example each.
//!
//! They are catalogue-shaped [`ToolDef`]s built once at start and kept in
//! the slots of a `static` table (see [`super::statics`]), so the listing
//! machinery that pre-encodes `tools/list` serves them like
//! generated tools. The codemode pair stays within 600 cl100k tokens with
//! its schemas and annotations (700 with `whoami`), every fact a model
//! needs kept: both are tests in `tests/test_codemode.rs`. TypeScript uses
//! single quotes where it can, as JSON escapes double ones.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use super::examples::Examples;
use super::statics::intern;
use crate::catalogue::{Annotations, Envelope, Method, SharedText, ToolDef};
use crate::profile::{AccountFill, Pagination, Profile};

/// Name of the spec query tool.
pub const SEARCH: &str = "search";
/// Name of the `api.request` tool.
pub const EXECUTE: &str = "execute";
/// Name of the typed-tools tool.
pub const CODE: &str = "code";

/// What the descriptions need to know.
#[derive(Debug, Clone)]
pub struct Facts {
    /// API name, e.g. `petstore`.
    pub api: &'static str,
    /// Release name from `source.json`.
    pub release: String,
    /// The catalogue's profile (envelope, account filling, merged paths,
    /// the `execute` example).
    pub profile: &'static Profile,
    /// Cap on API calls per run.
    pub max_requests: u32,
    /// Truncation budget in bytes.
    pub truncate_bytes: usize,
    /// Every exposed tool is read-only (`--read-only`).
    pub read_only: bool,
    /// The examples, from the exposed tools.
    pub examples: Examples,
}

const CODE_SCHEMA: &str = r#"{"type":"object","properties":{"code":{"type":"string"}},"required":["code"],"additionalProperties":false}"#;

const CODE_TRUNCATE_SCHEMA: &str = r#"{"type":"object","properties":{"code":{"type":"string"},"truncate":{"type":"boolean","default":true}},"required":["code"],"additionalProperties":false}"#;

/// Room for distinct Code Mode tool definitions (and descriptions) in one
/// process: a server uses two slots; a test binary building engines over
/// many catalogues uses a few dozen.
const SLOTS: usize = 256;

static DESCRIPTIONS: [OnceLock<String>; SLOTS] = [const { OnceLock::new() }; SLOTS];
static TOOLS: [OnceLock<ToolDef>; SLOTS] = [const { OnceLock::new() }; SLOTS];

/// Every slot of the Code Mode tool table holds another definition.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("this process already built {SLOTS} different Code Mode tool definitions")]
pub struct TableFull;

fn def(
    name: &'static str,
    title: &'static str,
    description: String,
    input_schema: &'static str,
    annotations: Annotations,
) -> Result<&'static ToolDef, TableFull> {
    let description = intern(
        &DESCRIPTIONS,
        |held| *held == description,
        || description.clone(),
    )
    .ok_or(TableFull)?
    .as_str();
    let same = |held: &ToolDef| {
        held.name == name
            && held.title == title
            && std::ptr::eq(held.description, description)
            && matches!(held.input_schema, SharedText::Text(s) if s == input_schema)
            && held.annotations == annotations
    };
    intern(&TOOLS, same, || ToolDef {
        name,
        operation_id: name,
        product: "codemode",
        title,
        description,
        input_schema: SharedText::Text(input_schema),
        output_schema: None,
        annotations,
        permissions: &[],
        method: Method::Post,
        routes: &[],
        params: &[],
        body: None,
        responses: &[],
        envelope: Envelope::None,
        deprecated: false,
        security: &[],
        ts_declaration: SharedText::Text(""),
    })
    .ok_or(TableFull)
}

fn kb(bytes: usize) -> usize {
    bytes.div_ceil(1024)
}

/// The `search` tool.
pub fn search_tool(facts: &Facts) -> Result<&'static ToolDef, TableFull> {
    let api = facts.api;
    let release = &facts.release;
    let scopes = facts
        .profile
        .merged
        .map(|m| format!(" {}", m.search_note()))
        .unwrap_or_default();
    let description = format!(
        r#"Search the {api} API's OpenAPI spec (release {release}), offline, before execute. `code`: an async JavaScript arrow function; result: its JSON return value and console.log output.
spec: the OpenAPI document (spec.paths[path][method]: operations with operationId, summary, tags, parameters, requestBody, responses) with $refs inlined (a cycle: {{$circular: ref}}) and x-* extensions (e.g. permissions).{scopes}
Example: async () => Object.keys(spec.paths).filter(p => Object.values(spec.paths[p]).some(o => o.tags?.some(t => /{tag}/i.test(t))))"#,
        tag = facts.examples.tag
    );
    def(
        SEARCH,
        "Search the API spec",
        description,
        CODE_SCHEMA,
        Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
    )
}

/// The `execute` tool.
pub fn execute_tool(facts: &Facts) -> Result<&'static ToolDef, TableFull> {
    let api = facts.api;
    let max = facts.max_requests;
    let size = kb(facts.truncate_bytes);
    let profile = facts.profile;
    let mut result_type = profile.envelope.request_result_type();
    if profile.pagination != Pagination::None
        && let Some(open) = result_type.strip_suffix(" }")
    {
        result_type = format!("{open}; paging?: {{ next: any; items: string }} }}");
    }
    let account = match &profile.accounts {
        AccountFill::FromList(list) => list.args.first().map_or_else(String::new, |arg| {
            format!(" (a literal {{{arg}}} is the token's only account)")
        }),
        AccountFill::Never => String::new(),
    };
    let example = &facts.examples.execute;
    let sample = &facts.examples.sample_path;
    let paginate = if profile.pagination == Pagination::None {
        ""
    } else {
        "; paginate(req: Req, opts?: { maxPages?: number; maxItems?: number }): Promise<{ items: any[]; pages: number; next: object | null; error?; status?; code? }>"
    };
    let description = format!(
        r#"Call the {api} API. `code`: an async JavaScript arrow function using
type Req = {{ method: 'GET'|'POST'|'PUT'|'PATCH'|'DELETE'; path: string; query?: object; body?: any; contentType?: string }};
declare const api: {{ request(req: Req): Promise<{result_type}>{paginate} }};
`path`: relative to the API base, e.g. {sample}{account}. The server adds the credential; other hosts are unreachable. Failures (4xx/5xx, unknown path) throw an Error with `status` and the API's `code`. At most {max} requests (pages) a run. Result: the JSON return value (cut to ~{size} KB unless truncate: false) and console.log output.
Example: {example}"#
    );
    def(
        EXECUTE,
        "Call the API",
        description,
        CODE_TRUNCATE_SCHEMA,
        Annotations {
            read_only: facts.read_only,
            destructive: !facts.read_only,
            idempotent: false,
            open_world: true,
        },
    )
}

/// The `declare const codemode: {…}` block of `tools`: type aliases first
/// (each once), then one method per tool.
pub fn declarations(tools: &[&'static ToolDef]) -> String {
    let mut aliases: BTreeSet<String> = BTreeSet::new();
    let mut methods = String::new();
    for tool in tools {
        let declaration = tool.ts_declaration.text();
        if declaration.trim().is_empty() {
            methods.push_str(&format!(
                "  /** {} */\n  {}(args: Record<string, any>): Promise<any>;\n",
                tool.title.replace("*/", "* /"),
                tool.name
            ));
            continue;
        }
        for line in declaration.lines() {
            if line.starts_with("type ") {
                aliases.insert(line.to_string());
            } else if !line.trim().is_empty() {
                methods.push_str("  ");
                methods.push_str(line);
                methods.push('\n');
            }
        }
    }
    let mut out = String::new();
    for alias in aliases {
        out.push_str(&alias);
        out.push('\n');
    }
    out.push_str("declare const codemode: {\n");
    out.push_str(&methods);
    out.push_str("};");
    out
}

/// The `code` tool over `tools` (the exposed ones).
pub fn code_tool(facts: &Facts, tools: &[&'static ToolDef]) -> Result<&'static ToolDef, TableFull> {
    def(
        CODE,
        "Run code against the API's tools",
        code_description(facts, tools),
        CODE_TRUNCATE_SCHEMA,
        Annotations {
            read_only: facts.read_only,
            destructive: !facts.read_only,
            idempotent: false,
            open_world: true,
        },
    )
}

/// The `code` tool's description: how to call, and the declarations of
/// `tools` (a grant's narrowed set gets its own, built per listing).
pub fn code_description(facts: &Facts, tools: &[&'static ToolDef]) -> String {
    let api = facts.api;
    let max = facts.max_requests;
    let size = kb(facts.truncate_bytes);
    let example_tool = tools
        .iter()
        .find(|t| t.annotations.read_only && !t.input_schema_text().contains("\"required\""))
        .or_else(|| tools.iter().find(|t| t.annotations.read_only))
        .or(tools.first());
    let example = example_tool.map_or_else(String::new, |t| {
        format!(
            "\nExample: async () => {{ const out = await codemode.{}({{}}); return out; }}",
            t.name
        )
    });
    format!(
        r#"Run JavaScript against the {api} API: `code` is an async arrow function that calls the typed functions below (one per API operation; the server adds the credential), combines and filters the results, and returns only what is needed. A failed call throws an Error you can catch. At most {max} calls per run. The return value (JSON) is the result, cut to about {size} KB unless truncate is false; console.log output is returned too.
{}{example}"#,
        declarations(tools)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::testing::GENERIC;

    fn facts(api: &'static str) -> Facts {
        Facts {
            api,
            release: "r1".to_owned(),
            profile: &GENERIC,
            max_requests: 10,
            truncate_bytes: 4096,
            read_only: true,
            examples: Examples::of(&[], &GENERIC),
        }
    }

    /// A second engine over the same catalogue (tests, a restart of the
    /// sandbox) gets the definitions the first stored, not new copies.
    #[test]
    fn the_same_definition_is_kept_once() {
        let first = search_tool(&facts("pets")).unwrap();
        assert!(std::ptr::eq(first, search_tool(&facts("pets")).unwrap()));
        let execute = execute_tool(&facts("pets")).unwrap();
        assert!(std::ptr::eq(execute, execute_tool(&facts("pets")).unwrap()));
        let other = search_tool(&facts("shop")).unwrap();
        assert!(!std::ptr::eq(first, other));
        assert!(other.description.contains("the shop API"));
        assert!(first.description.contains("the pets API"));
    }
}
