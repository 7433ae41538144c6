//! Static catalogue types that generated tool crates instantiate.
//!
//! Everything here is `&'static` data so a generated crate is a set of
//! constant tables: cheap to compile, zero work at start-up.

use std::borrow::Cow;

use crate::profile::Profile;
pub use crate::shared_text::{SharedText, SharedTexts, Written};
/// The enums a tool's static names, shared with the generator (generated
/// crates reach them through this module).
pub use toolforge_model::{BodyKind, Method, ParamLocation, ParamStyle};

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
        self.products.iter().flat_map(|p| p.tools.iter())
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
    /// Tools in name order (a generated module's rows: a table of
    /// references to them cost the compiler more than the rest of the
    /// crate's tables: docs/benchmarks.md, "`TOOLS` by value").
    pub tools: &'static [ToolDef],
}

/// One operation turned into an MCP tool.
#[derive(Debug, Clone)]
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
    /// JSON text of the input schema (`type: object`;
    /// [`ToolDef::input_schema_text`] puts it together).
    pub input_schema: SharedText,
    /// JSON text of the output schema, when the success response is JSON
    /// ([`ToolDef::output_schema_text`] puts it together).
    pub output_schema: Option<SharedText>,
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
    pub ts_declaration: SharedText,
}

impl ToolDef {
    /// The whole input schema text (see [`SharedText::text`]).
    pub fn input_schema_text(&self) -> Cow<'static, str> {
        self.input_schema.text()
    }

    /// The whole output schema text (see [`SharedText::text`]).
    pub fn output_schema_text(&self) -> Option<Cow<'static, str>> {
        self.output_schema.map(SharedText::text)
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
    /// JSON text of the (resolved) response schema, if any.
    pub schema: Option<SharedText>,
}

impl ResponseDef {
    /// The whole response schema text (see [`SharedText::text`]).
    pub fn schema_text(&self) -> Option<Cow<'static, str>> {
        self.schema.map(SharedText::text)
    }
}

/// How a successful upstream body maps to a tool's structured output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// The body is the result as is.
    None,
    /// The body is not an object; the output is `{result: body}`.
    Wrapped,
    /// The body is the API's wrapper ([`crate::profile::BodyEnvelope`]):
    /// the output is `{result: payload}` plus the page metadata (under the
    /// envelope's page key) when `list` is true.
    Result {
        /// The endpoint is paginated and returns page metadata.
        list: bool,
    },
}
