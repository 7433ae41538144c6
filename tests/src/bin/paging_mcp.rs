//! An MCP server for the paging end-to-end tests
//! (`tests/tests/test_paging_clients.rs`) whose one list tool pages the way
//! an API with a URL convention does, without a generated crate per
//! convention: `PAGING_CONVENTION=next_url` serves a Graph-shaped
//! `users_list` (`$top`, `$skiptoken`; `{value, @odata.nextLink}`),
//! (the default), `link_header` a GitHub-shaped `issues_list` (`per_page`, `page`; a bare
//! array and `Link: <…>; rel="next"`). Everything else is the runtime's CLI
//! (`--upstream`, `--mode`, …) with the token in `PAGING_TOKEN`.

use std::process::ExitCode;

use toolforge_runtime::catalogue::{
    Annotations, Catalogue, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Product,
    ResponseDef, Route, SharedText, ToolDef,
};
use toolforge_runtime::profile::{BodyEnvelope, Pagination, Profile};
use toolforge_runtime::security::{SchemeKind, SecurityScheme};

const SCHEMES: &[SecurityScheme] = &[SecurityScheme {
    name: "bearerAuth",
    kind: SchemeKind::Bearer,
    env: &["PAGING_TOKEN"],
}];

const READ: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};

const fn query(name: &'static str) -> ParamDef {
    ParamDef {
        arg: name,
        name,
        location: ParamLocation::Query,
        style: ParamStyle::Form,
        explode: true,
        required: false,
        allow_reserved: false,
    }
}

const USERS_OUTPUT: &str = r#"{"type":"object","properties":{"value":{"type":"array","items":{"type":"object"}},"@odata.nextLink":{"type":"string"}}}"#;

static USERS_LIST: ToolDef = ToolDef {
    name: "users_list",
    operation_id: "users.ListUser",
    product: "users",
    title: "List users",
    description: "Lists users; `@odata.nextLink` names the next page.",
    input_schema: SharedText::Text(
        r#"{"type":"object","properties":{"$top":{"type":"integer","minimum":1,"maximum":999},"$skiptoken":{"type":"string"}},"additionalProperties":false}"#,
    ),
    output_schema: Some(SharedText::Text(USERS_OUTPUT)),
    annotations: READ,
    permissions: &[],
    method: Method::Get,
    routes: &[Route {
        when: None,
        template: "/users",
    }],
    params: &[query("$top"), query("$skiptoken")],
    body: None,
    responses: &[ResponseDef {
        status: "200",
        content_type: Some("application/json"),
        schema: Some(SharedText::Text(USERS_OUTPUT)),
    }],
    envelope: Envelope::None,
    deprecated: false,
    security: &[&[0]],
    ts_declaration: SharedText::Text(
        "/** Lists users. (GET /users) */\nusers_list(args: { $top?: number; $skiptoken?: string }): Promise<{ value: Array<{ id: string }>; \"@odata.nextLink\"?: string }>;",
    ),
};

const ISSUES_OUTPUT: &str =
    r#"{"type":"object","properties":{"result":{"type":"array","items":{"type":"object"}}}}"#;

static ISSUES_LIST: ToolDef = ToolDef {
    name: "issues_list",
    operation_id: "issues/list",
    product: "issues",
    title: "List issues",
    description: "Lists issues; the `Link` header names the next page.",
    input_schema: SharedText::Text(
        r#"{"type":"object","properties":{"per_page":{"type":"integer","minimum":1,"maximum":100},"page":{"type":"integer","minimum":1}},"additionalProperties":false}"#,
    ),
    output_schema: Some(SharedText::Text(ISSUES_OUTPUT)),
    annotations: READ,
    permissions: &[],
    method: Method::Get,
    routes: &[Route {
        when: None,
        template: "/issues",
    }],
    params: &[query("per_page"), query("page")],
    body: None,
    responses: &[ResponseDef {
        status: "200",
        content_type: Some("application/json"),
        schema: Some(SharedText::Text(
            r#"{"type":"array","items":{"type":"object"}}"#,
        )),
    }],
    envelope: Envelope::Result { list: true },
    deprecated: false,
    security: &[&[0]],
    ts_declaration: SharedText::Text(
        "/** Lists issues. (GET /issues) */\nissues_list(args: { per_page?: number; page?: number }): Promise<Array<{ id: string }>>;",
    ),
};

/// Code Mode's `search` corpus for the Graph-shaped server.
const GRAPH_SPEC: &str = r#"{"openapi":"3.0.3","info":{"title":"Graphish","version":"1"},"tags":[{"name":"users"}],
"paths":{"/users":{"get":{"operationId":"users.ListUser","tags":["users"],"summary":"List users",
"parameters":[{"name":"$top","in":"query","schema":{"type":"integer"}},{"name":"$skiptoken","in":"query","schema":{"type":"string"}}],
"responses":{"200":{"description":"ok"}}}}}}"#;

/// Code Mode's `search` corpus for the GitHub-shaped server.
const GITHUB_SPEC: &str = r#"{"openapi":"3.0.3","info":{"title":"Githubish","version":"1"},"tags":[{"name":"issues"}],
"paths":{"/issues":{"get":{"operationId":"issues/list","tags":["issues"],"summary":"List issues",
"parameters":[{"name":"per_page","in":"query","schema":{"type":"integer"}},{"name":"page","in":"query","schema":{"type":"integer"}}],
"responses":{"200":{"description":"ok"}}}}}}"#;

static GRAPH: Catalogue = Catalogue {
    api: "graphish",
    profile: Profile {
        envelope: BodyEnvelope {
            errors: "/error",
            items: Some("/value"),
            ..BodyEnvelope::BARE
        },
        pagination: Pagination::NextUrl {
            next: "/@odata.nextLink",
        },
        execute_example: r#"async () => { const r = await api.paginate({ method: "GET", path: "/users", query: { $top: 3 } }); return r.items.map(u => u.id); }"#,
        schemes: SCHEMES,
        security: &[&[0]],
        primary: Some(0),
        ..Profile::generic("PAGING_TOKEN")
    },
    products: &[Product {
        name: "users",
        tools: std::slice::from_ref(&USERS_LIST),
    }],
    source: "{}",
    spec: GRAPH_SPEC,
    skills: &[],
};

static GITHUB: Catalogue = Catalogue {
    api: "githubish",
    profile: Profile {
        pagination: Pagination::LinkHeader,
        execute_example: r#"async () => { const r = await api.paginate({ method: "GET", path: "/issues", query: { per_page: 3 } }); return r.items.map(i => i.id); }"#,
        schemes: SCHEMES,
        security: &[&[0]],
        primary: Some(0),
        ..Profile::generic("PAGING_TOKEN")
    },
    products: &[Product {
        name: "issues",
        tools: std::slice::from_ref(&ISSUES_LIST),
    }],
    source: "{}",
    spec: GITHUB_SPEC,
    skills: &[],
};

/// `PAGING_CONVENTION=link_header` serves the GitHub-shaped catalogue,
/// anything else the Graph-shaped one (the Code Mode sandbox worker
/// re-executes this binary with a cleared environment and needs none).
fn main() -> ExitCode {
    match std::env::var("PAGING_CONVENTION").as_deref() {
        Ok("link_header") => toolforge_runtime::cli::main(&GITHUB),
        _ => toolforge_runtime::cli::main(&GRAPH),
    }
}
