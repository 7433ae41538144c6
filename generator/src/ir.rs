//! The generator's own intermediate representation, between OpenAPI and
//! emitted code. Serialisable: `artifacts/tools.json` is this, as JSON.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

mod access;
mod body;
mod merged;
pub use access::{AccountList, Identity, IdentityProbe, ScopedPath};
pub use body::{BodyEnvelope, Pagination};
pub use merged::{MergedPath, MergedPaths, MergedRoute};

/// Everything generated from one spec.
#[derive(Debug, Clone, Serialize)]
pub struct Catalogue {
    /// API name.
    pub api: String,
    /// What the runtime needs to know about the API beyond its tools,
    /// decided by the policy.
    pub profile: Profile,
    /// Products in name order, each with tools in name order.
    pub products: Vec<Product>,
    /// Operations that got no tool, with the reason, in `path, method` order.
    pub skipped: Vec<Skipped>,
}

impl Catalogue {
    /// All tools in product then name order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.products.iter().flat_map(|p| p.tools.iter())
    }
}

/// One product (a generated module).
#[derive(Debug, Clone, Serialize)]
pub struct Product {
    /// `^[a-z0-9_]+$`.
    pub name: String,
    /// Tools in name order.
    pub tools: Vec<Tool>,
}

/// An operation that became a tool.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// MCP tool name.
    pub name: String,
    /// `operationId`, or `METHOD path` when the spec has none.
    pub operation_id: String,
    /// Product name.
    pub product: String,
    /// HTTP method (upper case).
    pub method: HttpMethod,
    /// The path as written in the spec (merged form for Cloudflare).
    pub path: String,
    /// Concrete path templates (placeholders are argument names).
    pub routes: Vec<Route>,
    /// Summary.
    pub title: String,
    /// Description for the model.
    pub description: String,
    /// Parameters in location then spec order.
    pub params: Vec<Param>,
    /// Request body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
    /// Input schema (`type: object`).
    pub input_schema: Value,
    /// Output schema (what `structuredContent` holds); shared by the tools
    /// whose success responses have the same source schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<OutputSchema>>,
    /// Documented responses.
    pub responses: Vec<Response>,
    /// MCP annotations.
    pub annotations: Annotations,
    /// Permissions (token groups) the upstream requires.
    pub permissions: Vec<String>,
    /// Success body envelope.
    pub envelope: Envelope,
    /// Marked deprecated in the spec.
    pub deprecated: bool,
    /// The credentials the operation needs: alternatives of combinations
    /// of indices into [`Profile::schemes`] (see [`Requirement`]).
    pub security: Requirement,
    /// Its success response declares a `Link` header (how GitHub pages
    /// lists); read by the paging inference only.
    #[serde(skip)]
    pub declares_link: bool,
}

impl Tool {
    /// The output schema as a value (parsed from its text; `None` when the
    /// tool has none).
    pub fn output_value(&self) -> Option<Value> {
        self.output_schema.as_ref().and_then(|o| o.to_value().ok())
    }
}

/// HTTP methods: the shared model's [`toolforge_model::Method`] (the
/// generator's historical name).
pub use toolforge_model::Method as HttpMethod;

/// A concrete path template, optionally chosen by an argument's value.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Route {
    /// `(argument, value)` that selects this route.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<(String, String)>,
    /// Template whose placeholders are argument names.
    pub template: String,
}

/// Parameter location ([`toolforge_model::ParamLocation`]).
pub use toolforge_model::ParamLocation as Location;

/// Serialisation style ([`toolforge_model::ParamStyle`]).
pub use toolforge_model::ParamStyle as Style;

/// A parameter of the operation.
#[derive(Debug, Clone, Serialize)]
pub struct Param {
    /// Argument name in the input schema.
    pub arg: String,
    /// Wire name.
    pub name: String,
    /// Location.
    pub location: Location,
    /// Style.
    pub style: Style,
    /// Explode.
    pub explode: bool,
    /// Required on the wire.
    pub required: bool,
    /// Query `allowReserved`.
    pub allow_reserved: bool,
}

/// Body encodings ([`toolforge_model::BodyKind`]).
pub use toolforge_model::BodyKind;

/// Where the body comes from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyArgs {
    /// Object properties flattened into arguments: `(arg, property)`.
    Fields(Vec<(String, String)>),
    /// One argument holds the whole body.
    Whole(String),
}

/// A request body.
#[derive(Debug, Clone, Serialize)]
pub struct Body {
    /// Media type.
    pub content_type: String,
    /// Encoding.
    pub kind: BodyKind,
    /// Required.
    pub required: bool,
    /// Argument mapping.
    pub args: BodyArgs,
    /// Multipart/form properties that carry files.
    pub file_fields: Vec<String>,
    /// Minimum number of flattened fields (`minProperties`).
    pub min_fields: u32,
}

/// A documented response.
#[derive(Debug, Clone, Serialize)]
pub struct Response {
    /// Status code or pattern.
    pub status: String,
    /// Media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Converted schema, as compact JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaText>,
}

/// A tool's output schema as the emitters need it, made once per distinct
/// schema while the catalogue is built (the value tree itself is not kept:
/// Stripe's outputs took five times their text's size as trees).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSchema {
    /// The schema's compact JSON text (also the success response's text
    /// when the policy gives the tool no envelope).
    pub text: SchemaText,
    /// The root `$defs` entries its TypeScript declaration names as types,
    /// in order, each with whether a `$ref` alone still reads it in place:
    /// what the schema kept before sharing (`schema::kept_defs`), so the
    /// declaration pass reads the shared text as the unshared schema read.
    pub declared_defs: Vec<(String, bool)>,
}

impl OutputSchema {
    /// The schema as a value.
    ///
    /// # Errors
    /// Only if the text is not JSON (it always is when built by the generator).
    pub fn to_value(&self) -> serde_json::Result<Value> {
        self.text.to_value()
    }
}

impl Serialize for OutputSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(serializer)
    }
}

/// A converted schema kept as compact JSON text. Response schemas are
/// many, large and only ever written out, so the IR holds them as text
/// (equal texts share one allocation) rather than as value trees.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaText(pub Arc<str>);

impl SchemaText {
    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The schema as a value.
    ///
    /// # Errors
    /// Only if the text is not JSON (it always is when built by the generator).
    pub fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::from_str(&self.0)
    }
}

impl Serialize for SchemaText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

/// MCP annotations.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// readOnlyHint.
    pub read_only_hint: bool,
    /// destructiveHint.
    pub destructive_hint: bool,
    /// idempotentHint.
    pub idempotent_hint: bool,
    /// openWorldHint.
    pub open_world_hint: bool,
}

/// How a tool's success body maps to its output
/// (`toolforge_runtime::catalogue::Envelope`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Envelope {
    /// Body as is.
    None,
    /// Body wrapped as `{result: body}` (it is not an object).
    Wrapped,
    /// The body is the API's wrapper (the profile's [`BodyEnvelope`]): the
    /// output is its payload as `result`, plus its page metadata. Written
    /// `"kind": "cloudflare"` in `artifacts/tools.json`, the name the
    /// committed artifacts already use (renaming it would change every
    /// generated crate's artifact for no reader's benefit).
    #[serde(rename = "cloudflare")]
    Result {
        /// The wrapper carries page metadata.
        list: bool,
    },
}

/// The API profile the policy decides, emitted into the generated
/// catalogue as `toolforge_runtime::profile::Profile` (see that type for
/// what the runtime does with each field). Unset fields keep the runtime's
/// generic defaults (`Profile::generic`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Profile {
    /// Environment variable holding the upstream token.
    pub token_env: String,
    /// Base URL used when the server is given none: the spec's first
    /// server, a template whose `{name}` placeholders are `server_vars`
    /// (relative when the spec names no host and forge.json no `spec.url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The variables `base_url` uses, in the spec's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_vars: Vec<ServerVar>,
    /// Where payload, failure flag, errors and page metadata are in the
    /// API's response bodies.
    pub envelope: BodyEnvelope,
    /// How the API pages its lists.
    pub pagination: Pagination,
    /// Refusal texts, when not the generic ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusals: Option<Refusals>,
    /// How an omitted account argument is filled, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accounts: Option<AccountList>,
    /// The merged-path selector, when the API has merged paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedSelector>,
    /// Code Mode: the example of the `execute` description, when not the
    /// generic one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execute_example: Option<String>,
    /// The credential schemes, sorted by name (empty only before the
    /// build fills them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schemes: Vec<Scheme>,
    /// The spec's global requirement (requests that match no tool).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security: Requirement,
    /// The one-secret scheme a per-client token fills; its first variable
    /// is `token_env`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<u16>,
    /// The scopes operations list for client-credentials schemes, sorted
    /// by operation and scheme (a token for a call asks only for those).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<OperationScopes>,
    /// Problems found in the spec's security data (undeclared schemes,
    /// unreadable entries), sorted; listed in the README.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security_warnings: Vec<String>,
    /// How the credential's identity is found (the `whoami` tool), when it
    /// is: the policy's, or forge.json `identity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// The scoped URLs under `/mcp` (the policy's, or forge.json
    /// `scoped_paths`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scoped_paths: Vec<ScopedPath>,
    /// The consent page's skills (forge.json `skill_groups`), by name;
    /// empty for one per product.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skill_groups: Vec<SkillGroup>,
}

/// A named group of tools (`toolforge_runtime::profile::SkillGroup`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SkillGroup {
    /// The name (`dns`).
    pub name: String,
    /// Its tools' names, sorted.
    pub tools: Vec<String>,
}

impl Profile {
    /// The profile of an API without special rules.
    pub fn generic(api: &str) -> Self {
        Self {
            token_env: crate::naming::token_env_name(api),
            base_url: None,
            server_vars: Vec::new(),
            envelope: BodyEnvelope::bare(),
            pagination: Pagination::None,
            refusals: None,
            accounts: None,
            merged: None,
            execute_example: None,
            schemes: Vec::new(),
            security: Vec::new(),
            primary: None,
            scopes: Vec::new(),
            security_warnings: Vec::new(),
            identity: None,
            scoped_paths: Vec::new(),
            skill_groups: Vec::new(),
        }
    }
}

/// A requirement as OpenAPI states it: alternatives (any one will do) of
/// combinations (all sent together) of scheme indices. Empty: no
/// credential; an empty alternative: the credential is optional
/// (`toolforge_runtime::security::Requirement`).
pub type Requirement = Vec<Vec<u16>>;

/// The OAuth scopes one operation lists for one client-credentials
/// scheme (the union over the alternatives of its requirement).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperationScopes {
    /// The tool's operation ID.
    pub operation: String,
    /// The scheme's index in [`Profile::schemes`].
    pub scheme: u16,
    /// The scopes, sorted (empty: the operation asks for none).
    pub scopes: Vec<String>,
}

/// One credential scheme (`toolforge_runtime::security::SecurityScheme`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Scheme {
    /// Key in `components.securitySchemes` (`api_token` when synthesised).
    pub name: String,
    /// How the credential is sent.
    pub kind: SchemeKind,
    /// Environment variables holding the credential, in the order
    /// [`SchemeKind::env_parts`] names them.
    pub env: Vec<String>,
    /// What the spec declares; `None` for the scheme synthesised for a
    /// spec that declares none.
    pub declared: Option<DeclaredKind>,
}

/// How a scheme's credential is sent: the shared
/// [`toolforge_model::SchemeKind`] over owned data (the runtime's
/// `security::SchemeKind` is the same enum over `&'static` data).
pub type SchemeKind = toolforge_model::SchemeKind<String, Vec<String>>;

/// Where an API key goes ([`toolforge_model::KeyLocation`]).
pub use toolforge_model::KeyLocation;

/// The kind of scheme a spec declares, as the corpus report counts them.
#[derive(
    Debug, Clone, Copy, Serialize, serde::Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash,
)]
#[serde(rename_all = "snake_case")]
pub enum DeclaredKind {
    /// `apiKey` in a header.
    ApiKeyHeader,
    /// `apiKey` in the query.
    ApiKeyQuery,
    /// `apiKey` in a cookie.
    ApiKeyCookie,
    /// `http` bearer.
    HttpBearer,
    /// `http` basic.
    HttpBasic,
    /// Any other `http` scheme (digest, …).
    HttpOther,
    /// `oauth2` with a client-credentials flow.
    Oauth2ClientCredentials,
    /// `oauth2` with other flows only.
    Oauth2Other,
    /// `openIdConnect`.
    OpenIdConnect,
    /// `mutualTLS`, an unknown type, or an `apiKey` without a usable location.
    Other,
}

impl DeclaredKind {
    /// Every kind, in report order.
    pub const ALL: [DeclaredKind; 10] = [
        Self::ApiKeyHeader,
        Self::ApiKeyQuery,
        Self::ApiKeyCookie,
        Self::HttpBearer,
        Self::HttpBasic,
        Self::HttpOther,
        Self::Oauth2ClientCredentials,
        Self::Oauth2Other,
        Self::OpenIdConnect,
        Self::Other,
    ];

    /// How the spec writes it (`apiKey (header)`, `http bearer`, …).
    pub fn label(self) -> &'static str {
        match self {
            Self::ApiKeyHeader => "apiKey (header)",
            Self::ApiKeyQuery => "apiKey (query)",
            Self::ApiKeyCookie => "apiKey (cookie)",
            Self::HttpBearer => "http bearer",
            Self::HttpBasic => "http basic",
            Self::HttpOther => "http (other schemes)",
            Self::Oauth2ClientCredentials => "oauth2 client credentials",
            Self::Oauth2Other => "oauth2 (other flows)",
            Self::OpenIdConnect => "openIdConnect",
            Self::Other => "mutualTLS / other",
        }
    }

    /// Whether toolforge can send it.
    pub fn supported(self) -> bool {
        !matches!(self, Self::HttpOther | Self::Other)
    }
}

/// The default server: the spec's first `servers` entry, or what the
/// policy puts in its place.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Server {
    /// URL template (`https://{region}.api.example.com/v1`).
    pub url: String,
    /// The variables the template uses, in the spec's order.
    pub variables: Vec<ServerVar>,
}

impl Server {
    /// A server without variables.
    pub fn fixed(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            variables: Vec::new(),
        }
    }

    /// Whether the URL names no scheme and host (`/v1`, `v2`, empty).
    pub fn is_relative(&self) -> bool {
        !self.url.contains("://")
    }
}

/// One variable of a [`Server`] URL (`toolforge_runtime::profile::ServerVar`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ServerVar {
    /// Placeholder name (`region` for `{region}`).
    pub name: String,
    /// The value used unless the server is told another.
    pub default: String,
    /// The allowed values (the spec's `enum`); empty: any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
}

/// How refused calls are explained (`{permissions}` becomes the tool's
/// permissions).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Refusals {
    /// 401/403 advice when the tool documents permissions.
    pub grant: String,
    /// 401/403 advice when it documents none.
    pub unknown: String,
    /// The note on an empty list from a tool that documents permissions,
    /// when the API filters lists by permission.
    pub empty_list: Option<String>,
}

/// The selector argument of merged-path tools.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MergedSelector {
    /// The selector argument.
    pub arg: String,
    /// The id argument after it.
    pub id_arg: String,
    /// The values the selector takes.
    pub variants: Vec<MergedVariant>,
}

/// One value of a [`MergedSelector`].
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MergedVariant {
    /// The selector value, also the first path segment.
    pub value: String,
    /// The id's name in the real path.
    pub id: String,
    /// What the id names, in the singular.
    pub noun: String,
}

/// An operation that got no tool.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Skipped {
    /// Path.
    pub path: String,
    /// Method.
    pub method: HttpMethod,
    /// operationId if any.
    pub operation_id: String,
    /// Why.
    pub reason: String,
}
