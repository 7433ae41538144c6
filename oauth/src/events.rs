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

/// Records an event: logged, and counted in the metrics registry
/// (`toolforge_auth_events_total`; a rejection is counted where the 401 is
/// answered, so not here).
pub fn record(event: AuthEvent) {
    tracing::debug!(event = event.as_str(), "oauth");
    use crate::metrics::{AuthEvent as Counted, auth_event};
    match event {
        AuthEvent::Issued => auth_event(Counted::Issued),
        AuthEvent::Refreshed => auth_event(Counted::Refreshed),
        AuthEvent::Revoked => auth_event(Counted::Revoked),
        AuthEvent::Authorized
        | AuthEvent::UpstreamRefreshed
        | AuthEvent::Rejected
        | AuthEvent::StepUpRefused => {}
    }
}
