//! Runtime support for toolforge-generated MCP tool crates.
//!
//! A generated crate is a set of constant tables built from the types in
//! [`catalogue`], including the API's [`profile`] (base URL, token variable,
//! envelope, refusal texts, account filling): the runtime reads API
//! behaviour from it and never compares API names. At call time, [`build_request`] turns a tool's arguments
//! into an upstream [`HttpRequest`]: the route is chosen, path parameters are
//! encoded so each stays inside its own segment, query, header and cookie
//! parameters follow the OpenAPI 3 `style` / `explode` rules, and the body is
//! encoded as JSON, form, multipart or raw bytes. Bad arguments give a
//! [`BuildError`] whose message names the tool and the argument.
//!
//! Cargo features (all on by default): `http` (the Streamable HTTP
//! transport with client-token authentication: axum and hyper),
//! `codemode` (the QuickJS sandbox behind `--mode codemode` and
//! `--mode code`) and `oauth` (`--auth oauth`: the OAuth authorization
//! server and its grant store, SQLite or PostgreSQL through sqlx; implies
//! `http`). With neither, a server speaks MCP over stdio with one
//! tool per operation, and the command line refuses `--transport http` or a
//! sandboxed `--mode` with a message naming the missing feature.
//!
//! ```
//! use serde_json::json;
//! use toolforge_runtime::catalogue::{
//!     Annotations, Envelope, Method, ParamDef, ParamLocation, ParamStyle, Route, SharedText,
//!     ToolDef,
//! };
//!
//! static TOOL: ToolDef = ToolDef {
//!     name: "zones_list_dns_records",
//!     operation_id: "dns-records-for-a-zone-list-dns-records",
//!     product: "dns",
//!     title: "List DNS records",
//!     description: "Lists the DNS records of a zone.",
//!     input_schema: SharedText::Text(r#"{"type":"object"}"#),
//!     output_schema: None,
//!     annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: true },
//!     permissions: &[],
//!     method: Method::Get,
//!     routes: &[Route { when: None, template: "/zones/{zone_id}/dns_records" }],
//!     params: &[ParamDef {
//!         arg: "per_page", name: "per_page", location: ParamLocation::Query,
//!         style: ParamStyle::Form, explode: true, required: false, allow_reserved: false,
//!     }],
//!     body: None,
//!     responses: &[],
//!     envelope: Envelope::None,
//!     deprecated: false,
//!     security: &[],
//!     ts_declaration: SharedText::Text(""),
//! };
//!
//! let args = json!({"zone_id": "a/b", "per_page": 50});
//! let request = toolforge_runtime::build_request(&TOOL, args.as_object().unwrap_or(&Default::default()))?;
//! assert_eq!(request.url("https://api.example.com/v4"), "https://api.example.com/v4/zones/a%2Fb/dns_records?per_page=50");
//! # Ok::<(), toolforge_runtime::BuildError>(())
//! ```

pub mod authz;
pub mod catalogue;
pub mod cli;
#[cfg(feature = "codemode")]
pub mod codemode;
#[cfg(not(feature = "codemode"))]
#[path = "codemode_off.rs"]
pub mod codemode;
pub mod config;
pub mod credential;
pub mod direct;
pub mod listing;
#[cfg(test)]
mod log_capture_tests;
pub mod metrics;
mod mode;
/// The OAuth 2.1 authorization server (`toolforge-oauth`), re-exported so
/// generated crates keep one dependency.
#[cfg(feature = "oauth")]
pub use toolforge_oauth as oauth;
pub mod outcome;
pub mod pages;
pub mod profile;
pub mod progress;
pub mod redact;
pub mod request;
#[cfg(feature = "codemode")]
pub mod sandbox;
pub mod schema_check;
pub mod schema_profile;
pub mod security;
pub mod server;
mod shared_text;
pub mod skills;
pub mod truncate;
pub mod upstream;
pub mod validate;

pub use request::{Args, BuildError, HttpRequest, RequestBody, build_request};
