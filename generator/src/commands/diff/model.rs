//! Data of a diff: the two releases as compared, and the report.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ir;

/// What an input file turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// An OpenAPI document, generated in memory.
    Spec,
    /// A generated `artifacts/tools.json`.
    Catalogue,
}

/// One release as the diff sees it: the parts of each tool that a client
/// or a reviewer can observe.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// API name.
    pub api: String,
    /// Human label (release name or file name).
    pub label: String,
    /// What the input was.
    pub kind: InputKind,
    /// Tools, in catalogue order.
    pub tools: Vec<ReleaseTool>,
    /// Operations that got no tool.
    pub skipped: Vec<ReleaseSkipped>,
}

impl Release {
    /// The comparable view of a generated catalogue.
    pub fn from_catalogue(cat: &ir::Catalogue, label: &str, kind: InputKind) -> Self {
        Self {
            api: cat.api.clone(),
            label: label.to_string(),
            kind,
            tools: cat
                .tools()
                .map(|t| ReleaseTool {
                    name: t.name.clone(),
                    operation_id: t.operation_id.clone(),
                    product: t.product.clone(),
                    method: t.method.as_str().to_string(),
                    path: t.path.clone(),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    output_schema: t.output_value(),
                    annotations: Hints::from(t.annotations),
                    permissions: t.permissions.clone(),
                })
                .collect(),
            skipped: cat
                .skipped
                .iter()
                .map(|s| ReleaseSkipped {
                    method: s.method.as_str().to_string(),
                    path: s.path.clone(),
                    operation_id: s.operation_id.clone(),
                    reason: s.reason.clone(),
                })
                .collect(),
        }
    }
}

/// A tool of one release (the fields of `tools.json` the diff compares).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseTool {
    /// MCP tool name.
    pub name: String,
    /// `operationId` (or `METHOD path` when the spec has none).
    #[serde(default)]
    pub operation_id: String,
    /// Product.
    #[serde(default)]
    pub product: String,
    /// Upper-case HTTP method.
    pub method: String,
    /// Path as written in the spec.
    pub path: String,
    /// Description for the model.
    #[serde(default)]
    pub description: String,
    /// Input schema.
    #[serde(default)]
    pub input_schema: Value,
    /// Output schema.
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// MCP annotations.
    pub annotations: Hints,
    /// Required permissions.
    #[serde(default)]
    pub permissions: Vec<String>,
}

/// An operation without a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseSkipped {
    /// Upper-case HTTP method.
    pub method: String,
    /// Path as written.
    pub path: String,
    /// `operationId`, possibly empty.
    #[serde(default)]
    pub operation_id: String,
    /// Why no tool.
    #[serde(default)]
    pub reason: String,
}

/// The four MCP annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hints {
    /// readOnlyHint.
    pub read_only_hint: bool,
    /// destructiveHint.
    pub destructive_hint: bool,
    /// idempotentHint.
    pub idempotent_hint: bool,
    /// openWorldHint.
    pub open_world_hint: bool,
}

impl From<ir::Annotations> for Hints {
    fn from(a: ir::Annotations) -> Self {
        Self {
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        }
    }
}

impl Hints {
    /// `(name, value)` of each hint in MCP order.
    pub fn named(&self) -> [(&'static str, bool); 4] {
        [
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        ]
    }
}

/// The whole diff, serialised as the machine-readable JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffReport {
    /// How operations are matched across releases.
    pub identity: String,
    /// The old release.
    pub old: ReleaseSide,
    /// The new release.
    pub new: ReleaseSide,
    /// Counts.
    pub summary: Summary,
    /// Tool-name stability.
    pub stability: Stability,
    /// Thresholds exceeded.
    pub warnings: Vec<Warning>,
    /// Counts per product (products with at least one change), by name.
    pub products: Vec<ProductCounts>,
    /// New tools, by product then name.
    pub added: Vec<AddedTool>,
    /// Tools gone, by product then name.
    pub removed: Vec<RemovedTool>,
    /// Same operation, new name; by product then new name.
    pub renamed: Vec<RenamedTool>,
    /// Same operation, different observable data; by product then name.
    pub changed: Vec<ChangedTool>,
    /// Permissions before and after.
    pub permissions: PermissionSummary,
    /// `options.name_lock` entries written by this run (`--write-lock`).
    pub name_lock_added: Vec<LockEntry>,
}

/// Totals of one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseSide {
    /// Label.
    pub label: String,
    /// API name.
    pub api: String,
    /// What the input was.
    pub kind: InputKind,
    /// Operations (tools plus skipped).
    pub operations: usize,
    /// Tools.
    pub tools: usize,
    /// Operations without a tool.
    pub skipped: usize,
    /// Tools that name at least one permission.
    pub tools_with_permissions: usize,
    /// Distinct permission names.
    pub distinct_permissions: usize,
}

/// Counts of the diff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Operations (tool or skipped) present in both releases.
    pub operations_common: usize,
    /// Operations only in the new release.
    pub operations_added: usize,
    /// Operations only in the old release.
    pub operations_removed: usize,
    /// Tools only in the new release.
    pub tools_added: usize,
    /// Tools only in the old release.
    pub tools_removed: usize,
    /// Tools whose operation got a new name.
    pub tools_renamed: usize,
    /// Tools with an observable change (listed in `changed`).
    pub tools_changed: usize,
    /// Of which: input schema.
    pub changed_input: usize,
    /// Of which: output schema.
    pub changed_output: usize,
    /// Of which: permissions.
    pub changed_permissions: usize,
    /// Of which: hints.
    pub changed_hints: usize,
    /// Tools whose only change is description text (not listed).
    pub docs_only: usize,
}

/// Share of operations present in both releases (with a tool in both) that
/// keep their tool name.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stability {
    /// Operations with a tool in both releases.
    pub common: usize,
    /// Of which keep their name.
    pub kept: usize,
    /// `kept / common` (1 when nothing is common).
    pub share: f64,
}

/// Which threshold a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Too many tools removed.
    RemovedTools,
    /// Too many permissions dropped from operations that still exist.
    PermissionLoss,
}

/// A threshold exceeded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// Kind.
    pub kind: WarningKind,
    /// Measured count.
    pub count: usize,
    /// Out of.
    pub total: usize,
    /// `count / total`.
    pub share: f64,
    /// Configured maximum share.
    pub threshold: f64,
    /// One line for humans.
    pub message: String,
}

/// Counts of one product.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProductCounts {
    /// Product (new release's for kept tools, old release's for removed).
    pub product: String,
    /// Added tools.
    pub added: usize,
    /// Removed tools.
    pub removed: usize,
    /// Renamed tools.
    pub renamed: usize,
    /// Changed tools.
    pub changed: usize,
}

/// A tool only in the new release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddedTool {
    /// Name.
    pub name: String,
    /// Product.
    pub product: String,
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// `operationId`.
    pub operation_id: String,
    /// Permissions.
    pub permissions: Vec<String>,
    /// Set when the operation existed before without a tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A tool only in the old release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedTool {
    /// Name.
    pub name: String,
    /// Product.
    pub product: String,
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// `operationId`.
    pub operation_id: String,
    /// Permissions it required.
    pub permissions: Vec<String>,
    /// `operation removed`, or why the operation has no tool any more.
    pub reason: String,
    /// `METHOD path` of a new operation with the same `operationId`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
}

/// Same operation, new tool name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenamedTool {
    /// Operation identity.
    pub key: String,
    /// Old name.
    pub old_name: String,
    /// New name.
    pub new_name: String,
    /// Product (new release).
    pub product: String,
    /// Method.
    pub method: String,
    /// Path in the old release.
    pub old_path: String,
    /// Path in the new release.
    pub new_path: String,
}

/// What changed about a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The input schema (beyond description text).
    InputSchema,
    /// The output schema (beyond description text).
    OutputSchema,
    /// Required permissions.
    Permissions,
    /// MCP annotations.
    Hints,
}

impl ChangeKind {
    /// Human label.
    pub fn label(self) -> &'static str {
        match self {
            ChangeKind::InputSchema => "input schema",
            ChangeKind::OutputSchema => "output schema",
            ChangeKind::Permissions => "permissions",
            ChangeKind::Hints => "hints",
        }
    }
}

/// How a schema changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SchemaDelta {
    /// `added` or `removed` when the schema appeared or disappeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence: Option<String>,
    /// Top-level properties only in the new schema.
    pub properties_added: Vec<String>,
    /// Of `properties_added`, those the new schema requires.
    pub properties_added_required: Vec<String>,
    /// Top-level properties only in the old schema.
    pub properties_removed: Vec<String>,
    /// Properties in both schemas that became required.
    pub required_added: Vec<String>,
    /// Properties in both schemas that are no longer required.
    pub required_removed: Vec<String>,
    /// Something else changed (types, constraints, nested properties).
    pub other: bool,
}

/// One annotation that flipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HintChange {
    /// MCP annotation name.
    pub hint: String,
    /// Before.
    pub old: bool,
    /// After.
    pub new: bool,
}

/// A tool present in both releases whose observable data changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedTool {
    /// Name in the new release.
    pub name: String,
    /// Product.
    pub product: String,
    /// Method.
    pub method: String,
    /// Path in the new release.
    pub path: String,
    /// What changed, in [`ChangeKind`] order.
    pub kinds: Vec<ChangeKind>,
    /// Input schema delta.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<SchemaDelta>,
    /// Output schema delta.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<SchemaDelta>,
    /// Permissions now required.
    pub permissions_added: Vec<String>,
    /// Permissions no longer listed.
    pub permissions_removed: Vec<String>,
    /// Annotations that flipped.
    pub hints: Vec<HintChange>,
}

/// Permissions before and after.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PermissionSummary {
    /// `(operation, permission)` pairs of the old release on operations
    /// that have a tool in both releases.
    pub common_pairs_before: usize,
    /// Of which gone in the new release.
    pub common_pairs_lost: usize,
    /// Pairs the new release adds on those operations.
    pub common_pairs_gained: usize,
    /// `common_pairs_lost / common_pairs_before` (0 when there are none).
    pub loss_share: f64,
    /// Permission names no tool of the new release requires any more.
    pub dropped_entirely: Vec<String>,
    /// Permission names no tool of the old release required.
    pub introduced: Vec<String>,
}

/// One `options.name_lock` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LockEntry {
    /// `METHOD /path` as written in the new release.
    pub key: String,
    /// The name kept.
    pub name: String,
}
