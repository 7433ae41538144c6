//! API policies: the rules that differ between APIs (products, names,
//! permissions, merged paths, envelopes), applied while building the IR.
//! Emit code never looks at the policy.

pub mod cloudflare;
pub mod generic;

use serde_json::Value;

use crate::config::PolicyKind;
use crate::ir::{Envelope, HttpMethod};

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
        format!("{} {}", self.method.upper(), self.path)
    }
}

/// A merged path split into concrete routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPath {
    /// Wire name of the selector path parameter (`account_or_zone`).
    pub selector: String,
    /// Wire name of the id path parameter (`account_or_zone_id`).
    pub id_param: String,
    /// `(selector value, concrete path with real parameter names, real id name)`.
    pub variants: Vec<(String, String, String)>,
}

/// The policy in force for one generation.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    kind: PolicyKind,
}

impl Policy {
    /// Policy of the given kind.
    pub fn new(kind: PolicyKind) -> Self {
        Self { kind }
    }

    /// Which kind.
    pub fn kind(&self) -> PolicyKind {
        self.kind
    }

    /// The product an operation belongs to (`^[a-z0-9_]+$`).
    pub fn product(&self, op: &OpRef<'_>) -> String {
        match self.kind {
            PolicyKind::Cloudflare => cloudflare::product(op.path),
            PolicyKind::Generic => generic::product(op),
        }
    }

    /// Candidate tool names, best first.
    pub fn name_candidates(&self, op: &OpRef<'_>, product: &str) -> Vec<String> {
        match self.kind {
            PolicyKind::Cloudflare => cloudflare::name_candidates(op),
            PolicyKind::Generic => generic::name_candidates(op, product),
        }
    }

    /// Permissions the operation requires.
    pub fn permissions(&self, op: &OpRef<'_>) -> Vec<String> {
        match self.kind {
            PolicyKind::Cloudflare => cloudflare::permissions(op.op),
            PolicyKind::Generic => generic::permissions(op.op),
        }
    }

    /// Splits a merged path (Cloudflare `/{account_or_zone}/{account_or_zone_id}/…`).
    pub fn merged_path(&self, path: &str) -> Option<MergedPath> {
        match self.kind {
            PolicyKind::Cloudflare => cloudflare::merged_path(path),
            PolicyKind::Generic => None,
        }
    }

    /// A path parameter the runtime can fill itself, so the tool schema
    /// marks it optional.
    pub fn path_param_optional(&self, name: &str) -> bool {
        match self.kind {
            PolicyKind::Cloudflare => {
                cloudflare::is_account_param(name) || name == "account_or_zone_id"
            }
            PolicyKind::Generic => false,
        }
    }

    /// Detects the success envelope of a converted success schema and
    /// returns the envelope kind plus the tool's output schema.
    pub fn output(&self, success: Option<&Value>) -> (Envelope, Option<Value>) {
        match self.kind {
            PolicyKind::Cloudflare => cloudflare::output(success),
            PolicyKind::Generic => generic::output(success),
        }
    }
}
