//! Helpers for building `'static` catalogue values in unit tests.

use serde_json::Value;

use super::Args;
use crate::catalogue::{
    Annotations, BodyDef, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Route, SharedText,
    ToolDef,
};

/// Leaks a tool definition so it is `'static` like generated ones.
pub(crate) fn tool(
    name: &'static str,
    method: Method,
    routes: &'static [Route],
    params: &'static [ParamDef],
    body: Option<BodyDef>,
) -> &'static ToolDef {
    Box::leak(Box::new(ToolDef {
        name,
        operation_id: name,
        product: "test",
        title: name,
        description: "",
        input_schema: SharedText::Text("{\"type\":\"object\"}"),
        output_schema: None,
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: true,
        },
        permissions: &[],
        method,
        routes,
        params,
        body,
        responses: &[],
        envelope: Envelope::None,
        deprecated: false,
        security: &[],
        ts_declaration: crate::catalogue::SharedText::Text(""),
    }))
}

/// A tool with one unconditional route and the given params.
pub(crate) fn tool_at(
    template: &'static str,
    params: Vec<ParamDef>,
    body: Option<BodyDef>,
) -> &'static ToolDef {
    let routes: &'static [Route] = Box::leak(Box::new([Route {
        when: None,
        template,
    }]));
    tool("t", Method::Post, routes, params.leak(), body)
}

/// A parameter descriptor whose wire name equals its argument name.
pub(crate) fn param(
    name: &'static str,
    location: ParamLocation,
    style: ParamStyle,
    explode: bool,
) -> ParamDef {
    ParamDef {
        arg: name,
        name,
        location,
        style,
        explode,
        required: false,
        allow_reserved: false,
    }
}

/// The arguments object of a JSON literal (anything else gives no arguments).
pub(crate) fn args(value: Value) -> Args {
    match value {
        Value::Object(map) => map,
        _ => Args::new(),
    }
}

/// A `GET /t` tool with the given input schema.
pub(crate) fn tool_with_schema(schema: &'static str) -> &'static ToolDef {
    custom(|t| t.input_schema = SharedText::Text(schema))
}

/// A `GET /t` tool named `t`, changed by `edit` before it is leaked.
pub(crate) fn custom(edit: impl FnOnce(&mut ToolDef)) -> &'static ToolDef {
    static ROUTE: [Route; 1] = [Route {
        when: None,
        template: "/t",
    }];
    let base = tool("t", Method::Get, &ROUTE, &[], None);
    let mut def = ToolDef { ..*base };
    edit(&mut def);
    Box::leak(Box::new(def))
}
