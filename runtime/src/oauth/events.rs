//! Authorization events, logged without any token or user data (the
//! metrics registry of the operations work counts them too).

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
        }
    }
}

/// Records an event.
pub fn record(event: AuthEvent) {
    tracing::debug!(event = event.as_str(), "oauth");
}
