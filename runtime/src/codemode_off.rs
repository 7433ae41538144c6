//! Code Mode is not compiled in: this build of `toolforge-runtime` has the
//! `codemode` feature off (no QuickJS). Only [`Mode`] is real; the other
//! types have no values, so a server built this way always runs
//! `--mode direct` and the command line refuses the sandboxed modes with a
//! message naming the feature.

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject};
use tokio_util::sync::CancellationToken;

use crate::catalogue::ToolDef;
use crate::credential::Credential;
use crate::direct::Direct;

pub use crate::mode::Mode;

/// The message for `--mode codemode|code` in a build without the feature.
pub const DISABLED: &str = "this server was built without the `codemode` feature of toolforge-runtime, so only --mode direct is available (rebuild with the feature on, the default)";

/// What a sandboxed mode needs at start: no value exists in this build.
#[derive(Debug, Clone)]
pub struct ModeSetup {
    /// The mode asked for.
    pub mode: Mode,
    never: Never,
}

#[derive(Debug, Clone)]
enum Never {}

/// Why a sandboxed mode cannot start.
#[derive(Debug, thiserror::Error)]
pub enum CodeModeError {
    /// The feature is off.
    #[error("{DISABLED}")]
    Disabled,
}

/// The Code Mode engine: no value exists in this build.
#[derive(Debug)]
pub enum Engine {}

impl Engine {
    /// Never called: there is no [`ModeSetup`] to start from.
    ///
    /// # Errors
    ///
    /// None in practice ([`CodeModeError::Disabled`] names the feature).
    pub fn start(
        setup: ModeSetup,
        _direct: Arc<Direct>,
        _release: String,
    ) -> Result<Self, CodeModeError> {
        match setup.never {}
    }

    /// The mode served.
    pub fn mode(&self) -> Mode {
        match *self {}
    }

    /// The tools this mode lists.
    pub fn listed(&self) -> &[&'static ToolDef] {
        match *self {}
    }

    /// The listed tools as a grant sees them.
    pub fn listed_for(&self, _grant: &crate::authz::GrantAccess) -> Vec<rmcp::model::Tool> {
        match *self {}
    }

    /// Runs one call.
    pub async fn call(
        &self,
        _name: &str,
        _arguments: Option<JsonObject>,
        _credential: Option<&Credential>,
        _connection: &crate::authz::Connection,
        _cancel: CancellationToken,
        _progress: Option<crate::progress::ProgressFn>,
    ) -> CallToolResult {
        match *self {}
    }
}
