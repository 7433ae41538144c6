//! Release diffs: what changed between two generated catalogues.
//!
//! The pipeline is pure like the rest of the generator: bytes in, a
//! [`DiffReport`] out, rendered as markdown (a pull-request body) by
//! [`render_markdown`] and as JSON by serde.
//!
//! 1. [`load_release`] turns one input into a [`Release`]: an OpenAPI spec
//!    (generated in memory with the configuration's policy and options) or a
//!    generated `artifacts/tools.json` (detected by content).
//! 2. [`diff`] matches operations across the two releases by their
//!    [`operation_key`] and classifies tools as added, removed, renamed and
//!    changed; it measures name stability and raises [`Warning`]s.
//! 3. [`lock::lock_entries`] proposes `options.name_lock` entries that keep
//!    the old names of renamed operations.
//!
//! # Operation identity
//! An operation is the same across releases when its HTTP method and its
//! path, with every `{placeholder}` name replaced by `{}`, are equal:
//! Cloudflare renames placeholders between releases (`{identifier}` →
//! `{zone_id}`) without changing the endpoint. `operationId` is not part of
//! the identity: it is a label that publishers rename freely, while a
//! changed method or path is a different endpoint for every caller. When the
//! two sides of a removed/added pair share an `operationId`, the removed
//! entry names where it went (`moved_to`) for the reviewer. Two operations of
//! one release that normalise to the same key (equivalent templates, which
//! OpenAPI forbids) keep their raw paths as keys so neither is lost.

mod chunks;
mod compare;
mod input;
pub mod lock;
mod markdown;
mod model;

pub use compare::diff;
pub use input::{Input, load_document_release, load_release, read_input, read_input_with};
pub use markdown::{MAX_MARKDOWN_BYTES, render_markdown};
pub use model::{
    AddedTool, ChangeKind, ChangedTool, DiffReport, HintChange, Hints, InputKind, LockEntry,
    PermissionSummary, ProductCounts, Release, ReleaseSide, ReleaseSkipped, ReleaseTool,
    RemovedTool, RenamedTool, SchemaDelta, Stability, Summary, Warning, WarningKind,
};

/// Errors of the diff: an input that is neither a spec nor a tool catalogue.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The input is an OpenAPI spec that does not generate.
    #[error("{file}: generating the catalogue: {source}")]
    Generate {
        /// Input file.
        file: String,
        /// What the generator refused.
        #[source]
        source: crate::GenerateError,
    },
    /// The input looks like a `tools.json` artifact but has the wrong shape.
    #[error("{file}: not a toolforge tools.json artifact: {message}")]
    Artifact {
        /// Input file.
        file: String,
        /// What is wrong, with the JSON path when known.
        message: String,
    },
}

/// Thresholds and output bounds of one diff.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffOptions {
    /// Warn when more than this share of the old release's tools is removed.
    pub max_removed_share: f64,
    /// Warn when more than this share of the permissions that operations
    /// present in both releases required is gone in the new release.
    pub max_permission_loss: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        Self {
            max_removed_share: 0.05,
            max_permission_loss: 0.10,
        }
    }
}

/// Identity of an operation across releases: `METHOD /path` with every
/// `{placeholder}` written `{}` (see the module documentation).
pub fn operation_key(method: &str, path: &str) -> String {
    format!("{} {}", method.to_ascii_uppercase(), normalise_path(path))
}

/// `path` with each `{name}` placeholder replaced by `{}`. An unclosed `{`
/// is kept as written.
pub fn normalise_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => {
                out.push_str("{}");
                rest = &rest[open + close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_normalised() {
        assert_eq!(
            normalise_path("/zones/{identifier}/dns_records/{id}"),
            "/zones/{}/dns_records/{}"
        );
        assert_eq!(normalise_path("/a/{x"), "/a/{x");
        assert_eq!(normalise_path("/plain"), "/plain");
        assert_eq!(
            operation_key("get", "/zones/{zone_id}"),
            operation_key("GET", "/zones/{identifier}")
        );
        assert_ne!(
            operation_key("GET", "/zones/{zone_id}"),
            operation_key("PUT", "/zones/{zone_id}")
        );
    }
}
