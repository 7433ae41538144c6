//! API policies: the rules that differ between APIs (products, names,
//! permissions, merged paths, envelopes, and the runtime profile), applied
//! while building the IR. Emit code never looks at the policy.
//!
//! [`ApiPolicy`] carries the generic behaviour as its defaults
//! ([`generic`]); an API overrides what differs ([`cloudflare`]).

pub mod cloudflare;
pub mod generic;
pub mod pagination;
pub mod registry;
pub mod resource_names;
pub mod versions;

#[cfg(any(test, feature = "oracles"))]
pub use crate::naming::token_env_name;
pub use registry::{PolicyKind, REGISTRY};

use serde_json::Value;

use crate::ir::{Envelope, HttpMethod, MergedPaths, Profile, Requirement, Scheme, Server};
pub use crate::ir::{MergedPath, MergedRoute};
use crate::load::Document;

/// One operation as found in the spec, before it becomes a tool.
#[derive(Debug, Clone, Copy)]
pub struct OpRef<'a> {
    /// Path as written.
    pub path: &'a str,
    /// Method.
    pub method: HttpMethod,
    /// The operation object.
    pub op: &'a Value,
    /// The path item holding it (sibling operations inform naming).
    pub path_item: &'a Value,
}

impl OpRef<'_> {
    /// `operationId`, if present and a string.
    pub fn operation_id(&self) -> Option<&str> {
        self.op.get("operationId").and_then(Value::as_str)
    }

    /// Stable key `METHOD path` used for name locks and hashes.
    pub fn key(&self) -> String {
        format!("{} {}", self.method.as_str(), self.path)
    }
}

/// A converted success schema as a policy sees it: the root without its
/// root `$defs`. Those definitions (of recursive types; some are
/// placeholders the lowering fills in only after the policy, see
/// `lower::LowerCtx::output_placed`) are the lowering's business: it takes
/// them off before the policy and puts them back at the root of the output
/// the policy makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Success(Value);

impl Success {
    /// A success schema without root `$defs` (the lowering's
    /// `split_defs` makes one from a converted schema).
    pub fn new(root: Value) -> Self {
        Self(root)
    }

    /// The schema, for reading.
    pub fn root(&self) -> &Value {
        &self.0
    }

    /// The schema, to move into the output.
    pub fn into_root(self) -> Value {
        self.0
    }
}

/// The rules that differ between APIs. Every method's default is the
/// generic behaviour (products from tags, names from `operationId`, no
/// permissions, no merged paths, bare bodies, [`Profile::generic`]); an
/// API's policy overrides only what its spec does differently, as
/// prost-build's `ServiceGenerator` does for services. [`cloudflare`] is
/// the worked example: a new API gets a module like it and a
/// [`REGISTRY`] line.
pub trait ApiPolicy: Sync + std::fmt::Debug {
    /// The product an operation belongs to (`^[a-z0-9_]+$`).
    fn product(&self, op: &OpRef<'_>) -> String {
        generic::product(op)
    }

    /// Candidate tool names, best first.
    fn name_candidates(&self, op: &OpRef<'_>, product: &str) -> Vec<String> {
        generic::name_candidates(op, product)
    }

    /// Permissions the operation requires (data for refusal texts).
    fn permissions(&self, _op: &OpRef<'_>) -> Vec<String> {
        Vec::new()
    }

    /// Splits a merged path (one operation for several path prefixes).
    fn merged_path(&self, _path: &str) -> Option<MergedPath> {
        None
    }

    /// A path parameter the runtime can fill itself, so the tool schema
    /// marks it optional (it must then be in the profile's account
    /// arguments or be the merged id).
    fn path_param_optional(&self, _name: &str) -> bool {
        false
    }

    /// Detects the success envelope of a converted success schema and
    /// returns the envelope kind plus the tool's output schema. With
    /// [`Envelope::None`] the output schema is the success schema itself
    /// (the builder relies on it: see [`ApiPolicy::unwraps`]). The policy
    /// sees the schema through [`Success`]: its root, without the root
    /// `$defs`, which the lowering puts back at the root of the output.
    fn output(&self, success: Option<Success>) -> (Envelope, Option<Value>) {
        generic::output(success.map(Success::into_root))
    }

    /// Whether [`ApiPolicy::output`] gives `success` an envelope other than
    /// [`Envelope::None`] (the output is then a new schema; otherwise it is
    /// `success` itself, and its text serves as the response schema too).
    fn unwraps(&self, success: &Value) -> bool {
        !generic::is_object_schema(success)
    }

    /// What the runtime needs to know about API `api` beyond its tools,
    /// emitted into the generated catalogue.
    fn profile(&self, api: &str) -> Profile {
        Profile::generic(api)
    }

    /// Adjusts a resolved requirement (alternatives of indices into
    /// `schemes`, the scheme names in table order) of an operation or of
    /// the whole spec (`security`), for an API whose spec misstates what
    /// its credentials can do. The generic rule keeps the spec's.
    fn security(&self, _schemes: &[&str], requirement: Requirement) -> Requirement {
        requirement
    }

    /// The scheme a per-client token fills (`Profile::primary`), given the
    /// generic choice (see [`crate::security::primary`]); only an API-key
    /// or bearer scheme is taken.
    fn primary_scheme(&self, _schemes: &[Scheme], chosen: Option<u16>) -> Option<u16> {
        chosen
    }

    /// The default server (the profile's `base_url` and `server_vars`),
    /// given the spec's first server (`None`: the spec declares none).
    fn default_server(&self, spec: Option<Server>) -> Option<Server> {
        spec
    }
}

/// The policy in force for one generation: the [`ApiPolicy`] that
/// forge.json's `policy` names (its methods are reached through `Deref`).
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    rules: &'static dyn ApiPolicy,
}

impl Policy {
    /// Policy of the given kind (its [`REGISTRY`] entry's rules).
    pub fn new(kind: PolicyKind) -> Self {
        Self {
            rules: kind.registered().rules,
        }
    }

    /// The merged-path decision for every path of `doc` (its `paths`
    /// keys), made once, as data: the resolved-spec writer reads this
    /// table and never sees the policy.
    pub fn merged_paths(&self, doc: &Document) -> MergedPaths {
        let Some(Value::Object(paths)) = doc.root.get("paths") else {
            return MergedPaths::default();
        };
        paths
            .keys()
            .filter_map(|path| Some((path.clone(), self.merged_path(path)?)))
            .collect()
    }
}

impl std::ops::Deref for Policy {
    type Target = dyn ApiPolicy;

    fn deref(&self) -> &Self::Target {
        self.rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generic_policy_is_the_defaults() {
        let generic = Policy::new(PolicyKind::Generic);
        assert_eq!(
            generic.merged_path("/{account_or_zone}/{account_or_zone_id}/x"),
            None
        );
        assert!(!generic.path_param_optional("account_id"));
        assert_eq!(
            generic.profile("cloudflare"),
            Profile::generic("cloudflare")
        );
        let cf = Policy::new(PolicyKind::Cloudflare);
        assert!(cf.path_param_optional("account_id"));
        assert!(cf.profile("other").accounts.is_some());
    }

    #[test]
    fn merged_paths_are_decided_once_per_spec_path() {
        let merged = "/{account_or_zone}/{account_or_zone_id}/x";
        let spec = format!(
            r#"{{"openapi": "3.0.3", "info": {{"title": "t", "version": "1"}},
              "paths": {{"{merged}": {{}}, "/zones/{{zone_id}}/y": {{}}}}}}"#
        );
        let doc = crate::load::load(spec.as_bytes(), "t.json").expect("a spec");
        let table = Policy::new(PolicyKind::Cloudflare).merged_paths(&doc);
        assert_eq!(table.get(merged), cloudflare::merged_path(merged).as_ref());
        assert!(table.get(merged).is_some());
        assert_eq!(table.get("/zones/{zone_id}/y"), None);
        assert!(
            Policy::new(PolicyKind::Generic)
                .merged_paths(&doc)
                .is_empty()
        );
    }

    #[test]
    fn the_default_server_is_the_spec_s_except_for_cloudflare() {
        let spec = Server::fixed("https://{region}.example.com");
        let generic = Policy::new(PolicyKind::Generic);
        assert_eq!(
            generic.default_server(Some(spec.clone())),
            Some(spec.clone())
        );
        assert_eq!(generic.default_server(None), None);
        let cf = Policy::new(PolicyKind::Cloudflare);
        let fixed = Some(Server::fixed(cloudflare::BASE_URL));
        assert_eq!(cf.default_server(Some(spec)), fixed);
        assert_eq!(cf.default_server(None), fixed);
        assert_eq!(cf.default_server(fixed.clone()), fixed);
    }
}
