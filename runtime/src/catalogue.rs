//! Static catalogue types that generated tool crates instantiate.
//!
//! Everything here is `&'static` data so a generated crate is a set of
//! constant tables: cheap to compile, zero work at start-up.

use std::borrow::Cow;

use crate::profile::Profile;

/// A whole generated catalogue: every product and tool of one API release.
#[derive(Debug)]
pub struct Catalogue {
    /// API name, e.g. `petstore`: shown in the server's name, instructions
    /// and tool descriptions, never compared (behaviour comes from `profile`).
    pub api: &'static str,
    /// What the runtime needs to know about the API beyond its tools
    /// (base URL, token variable, envelope, refusals, account filling),
    /// decided by the generator's policy.
    pub profile: Profile,
    /// Products in name order.
    pub products: &'static [Product],
    /// JSON text of `source.json` (release URL, sha256, generator version).
    pub source: &'static str,
    /// JSON text of the resolved spec for Code Mode `search` (empty when the
    /// generator was told not to emit it).
    pub spec: &'static str,
    /// Skills served over MCP (the Skills extension), sorted by name; empty
    /// when `forge.json` pins none.
    pub skills: &'static [crate::skills::Skill],
}

impl Catalogue {
    /// Iterates over every tool of every product, in product then tool order.
    pub fn tools(&self) -> impl Iterator<Item = &'static ToolDef> + '_ {
        self.products.iter().flat_map(|p| p.tools.iter().copied())
    }

    /// Finds a tool by its MCP name.
    pub fn tool(&self, name: &str) -> Option<&'static ToolDef> {
        self.tools().find(|t| t.name == name)
    }
}

/// A group of tools (one generated module).
#[derive(Debug)]
pub struct Product {
    /// Product name, `^[a-z0-9_]+$`, also the module name.
    pub name: &'static str,
    /// Tools in name order.
    pub tools: &'static [&'static ToolDef],
}

/// One operation turned into an MCP tool.
#[derive(Debug)]
pub struct ToolDef {
    /// MCP tool name, `^[a-z0-9_]{1,64}$`.
    pub name: &'static str,
    /// The OpenAPI `operationId` (or a synthesised `METHOD path` when absent).
    pub operation_id: &'static str,
    /// Product this tool belongs to.
    pub product: &'static str,
    /// Human title (the operation summary).
    pub title: &'static str,
    /// Description shown to the model.
    pub description: &'static str,
    /// JSON text of the input schema (`type: object`).
    pub input_schema: &'static str,
    /// JSON text of the output schema, when the success response is JSON
    /// (without its root `$defs` when [`ToolDef::output_defs`] lists them;
    /// [`ToolDef::output_schema_text`] gives the whole schema).
    pub output_schema: Option<&'static str>,
    /// Root `$defs` entries of the output schema as `(name, JSON text)`,
    /// shared with other tools' schemas; see [`assemble_schema`].
    pub output_defs: &'static [(&'static str, &'static str)],
    /// MCP annotations.
    pub annotations: Annotations,
    /// Permissions the upstream requires (data for refusal explanations).
    pub permissions: &'static [&'static str],
    /// HTTP method.
    pub method: Method,
    /// Path templates; the first whose selector matches the arguments wins.
    pub routes: &'static [Route],
    /// Parameters (path, query, header, cookie) and where their values come from.
    pub params: &'static [ParamDef],
    /// Request body, if the operation takes one.
    pub body: Option<BodyDef>,
    /// Documented responses.
    pub responses: &'static [ResponseDef],
    /// How a success body is unwrapped for `structuredContent`.
    pub envelope: Envelope,
    /// The operation is marked deprecated.
    pub deprecated: bool,
    /// The credentials the operation needs (indices into the profile's
    /// schemes; ignored when the profile declares none).
    pub security: crate::security::Requirement,
    /// TypeScript declaration of the tool as a `codemode` method (with the
    /// type aliases it uses), for the `code` mode's tool description.
    pub ts_declaration: &'static str,
}

impl ToolDef {
    /// The whole output schema text: [`ToolDef::output_schema`] with
    /// [`ToolDef::output_defs`] put back as its root `$defs`.
    pub fn output_schema_text(&self) -> Option<Cow<'static, str>> {
        self.output_schema
            .map(|root| assemble_schema(root, self.output_defs))
    }

    /// The first route (the canonical path template).
    pub fn primary_path(&self) -> &'static str {
        self.routes.first().map_or("", |r| r.template)
    }
}

/// MCP tool annotations; all four hints are always set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may perform destructive updates.
    pub destructive: bool,
    /// Calling the tool repeatedly with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool interacts with an open world of external entities.
    pub open_world: bool,
}

/// HTTP methods OpenAPI can describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// GET
    Get,
    /// PUT
    Put,
    /// POST
    Post,
    /// DELETE
    Delete,
    /// OPTIONS
    Options,
    /// HEAD
    Head,
    /// PATCH
    Patch,
    /// TRACE
    Trace,
}

impl Method {
    /// Upper-case method name as sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Head => "HEAD",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
        }
    }
}

/// One concrete path template of a tool.
///
/// Placeholders in `template` name *argument* names (the keys of the input
/// schema), not the wire names of the spec.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// When set, this route applies only if argument `.0` equals `.1`.
    pub when: Option<(&'static str, &'static str)>,
    /// Path template such as `/accounts/{account_or_zone_id}/rules`.
    pub template: &'static str,
}

/// Where a parameter goes in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamLocation {
    /// A `{placeholder}` in the path.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
    /// A cookie.
    Cookie,
}

/// OpenAPI serialisation styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamStyle {
    /// `simple` (path and header default).
    Simple,
    /// `label` (`.a.b`).
    Label,
    /// `matrix` (`;x=a`).
    Matrix,
    /// `form` (query and cookie default).
    Form,
    /// `spaceDelimited`.
    SpaceDelimited,
    /// `pipeDelimited`.
    PipeDelimited,
    /// `deepObject`.
    DeepObject,
}

/// A path, query, header or cookie parameter.
#[derive(Debug, Clone, Copy)]
pub struct ParamDef {
    /// Key in the tool's input arguments.
    pub arg: &'static str,
    /// Name on the wire.
    pub name: &'static str,
    /// Location.
    pub location: ParamLocation,
    /// Serialisation style.
    pub style: ParamStyle,
    /// `explode` flag.
    pub explode: bool,
    /// The parameter must be present.
    pub required: bool,
    /// Query values may keep reserved characters unencoded.
    pub allow_reserved: bool,
}

/// How the body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// `application/json` and `+json` types.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `multipart/form-data`.
    Multipart,
    /// Any other type: the argument is sent as text (or base64-decoded bytes).
    Raw,
}

/// Where the body's value comes from in the arguments.
#[derive(Debug, Clone, Copy)]
pub enum BodyArgs {
    /// The body is an object whose properties were flattened into the
    /// arguments: `(arg name, property name)` pairs.
    Fields(&'static [(&'static str, &'static str)]),
    /// The whole body is the value of one argument.
    Whole(&'static str),
}

/// A request body.
#[derive(Debug, Clone, Copy)]
pub struct BodyDef {
    /// Media type sent as `Content-Type`.
    pub content_type: &'static str,
    /// Encoding.
    pub kind: BodyKind,
    /// The body must be sent.
    pub required: bool,
    /// Where its value comes from.
    pub args: BodyArgs,
    /// Multipart/form fields whose values are files (binary content).
    pub file_fields: &'static [&'static str],
    /// At least this many flattened fields must be given (the body's
    /// `minProperties`, which a flattened input schema cannot express).
    pub min_fields: u32,
}

/// One documented response.
#[derive(Debug, Clone, Copy)]
pub struct ResponseDef {
    /// Status code or pattern (`200`, `4XX`, `default`).
    pub status: &'static str,
    /// Media type of the documented body, if any.
    pub content_type: Option<&'static str>,
    /// JSON text of the (resolved) response schema, if any (without its
    /// root `$defs` when [`ResponseDef::schema_defs`] lists them).
    pub schema: Option<&'static str>,
    /// Root `$defs` entries of the schema, as in [`ToolDef::output_defs`].
    pub schema_defs: &'static [(&'static str, &'static str)],
}

impl ResponseDef {
    /// The whole response schema text (see [`assemble_schema`]).
    pub fn schema_text(&self) -> Option<Cow<'static, str>> {
        self.schema
            .map(|root| assemble_schema(root, self.schema_defs))
    }
}

/// A schema text put back together from its root object text (without
/// `$defs`) and its root `$defs` entries, which the generator emits once
/// for every tool that shares them: the `$defs` member is appended last,
/// giving back the exact text the generator split. Without entries (or
/// for a root that is not an object) the root is returned as is.
pub fn assemble_schema(root: &'static str, defs: &[(&str, &str)]) -> Cow<'static, str> {
    let Some(body) = root.strip_suffix('}').filter(|_| !defs.is_empty()) else {
        return Cow::Borrowed(root);
    };
    let size: usize = defs.iter().map(|(n, d)| n.len() + d.len() + 4).sum();
    let mut out = String::with_capacity(root.len() + size + 12);
    out.push_str(body);
    if body != "{" {
        out.push(',');
    }
    out.push_str("\"$defs\":{");
    for (i, (name, def)) in defs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String((*name).to_string()).to_string());
        out.push(':');
        out.push_str(def);
    }
    out.push_str("}}");
    Cow::Owned(out)
}

/// How a successful upstream body maps to a tool's structured output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// The body is the result as is.
    None,
    /// The body is not an object; the output is `{result: body}`.
    Wrapped,
    /// The `{success, errors, messages, result, result_info?}` envelope
    /// (see [`crate::profile::EnvelopeKind::SuccessResult`]): the output is
    /// `{result}` plus `result_info` when `list` is true.
    Result {
        /// The endpoint is paginated and returns `result_info`.
        list: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::assemble_schema;

    #[test]
    fn assembles_root_defs_last() {
        let defs = [
            ("n", r##"{"items":{"$ref":"#/$defs/n"}}"##),
            ("q\"x", "true"),
        ];
        assert_eq!(
            assemble_schema(r#"{"type":"object"}"#, &defs),
            r##"{"type":"object","$defs":{"n":{"items":{"$ref":"#/$defs/n"}},"q\"x":true}}"##
        );
        assert_eq!(
            assemble_schema("{}", &defs[1..]),
            r#"{"$defs":{"q\"x":true}}"#
        );
        assert!(matches!(
            assemble_schema(r#"{"a":1}"#, &[]),
            std::borrow::Cow::Borrowed(r#"{"a":1}"#)
        ));
        assert_eq!(assemble_schema("true", &defs), "true");
    }
}
