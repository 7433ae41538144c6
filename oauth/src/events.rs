//! Authorization events, logged without any token or user data, and
//! handed to a hook the MCP server sets (its metrics registry counts
//! them).

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthEvent {
    /// A user approved a client and signed in upstream (grant created).
    Authorized,
    /// Tokens were issued for a code.
    Issued,
    /// A refresh token was rotated.
    Refreshed,
    /// A grant's upstream token was refreshed.
    UpstreamRefreshed,
    /// A grant was revoked (by the client, a replay, or the upstream).
    Revoked,
    /// A bearer token was refused at `/mcp`.
    Rejected,
    /// A refresh was refused because a step-up is pending (the client
    /// should authorize again).
    StepUpRefused,
}

impl AuthEvent {
    /// A stable name for logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Authorized => "authorized",
            Self::Issued => "issued",
            Self::Refreshed => "refreshed",
            Self::UpstreamRefreshed => "upstream_refreshed",
            Self::Revoked => "revoked",
            Self::Rejected => "rejected",
            Self::StepUpRefused => "step_up_refused",
        }
    }
}

/// Where events go besides the log: the MCP server's metrics registry
/// (set once, by [`set_hook`]).
static HOOK: std::sync::OnceLock<fn(AuthEvent)> = std::sync::OnceLock::new();

/// Sets the function every event is also handed to (the MCP server counts
/// some in its metrics); the first call wins, later ones change nothing.
pub fn set_hook(hook: fn(AuthEvent)) {
    // A second server in one process installs the same function.
    let _ = HOOK.set(hook);
}

/// Records an event: logged, and handed to the hook (see [`set_hook`]).
pub fn record(event: AuthEvent) {
    tracing::debug!(event = event.as_str(), "oauth");
    if let Some(hook) = HOOK.get() {
        hook(event);
    }
}
