//! The credential's reach, as the profile carries it: the account an
//! omitted argument is filled with, the identity `whoami` reports and the
//! scoped URLs a session may be bound to.

use serde::Serialize;

/// A scoped URL under `/mcp` (`toolforge_runtime::profile::ScopedPath`):
/// a session connected there is bound to its path parameters' values.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ScopedPath {
    /// The template after `/mcp`; placeholders are spec path-parameter
    /// names (`/accounts/{account_id}`).
    pub template: String,
    /// The `GET` (same placeholders) that shows a user's token can see
    /// the scoped resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

/// The listing that finds a credential's only account, and the path
/// arguments it fills.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AccountList {
    /// Path arguments naming an account.
    pub args: Vec<String>,
    /// Path and query of the `GET` listing the accounts.
    pub path: String,
    /// JSON pointer to the array of accounts in the answer.
    pub items: String,
    /// Field of an account holding its ID.
    pub id_field: String,
    /// Field of an account holding its name.
    pub name_field: String,
    /// JSON pointer to the total count, when the answer is paginated.
    pub total: Option<String>,
    /// The permission the listing needs.
    pub permission: Option<String>,
}

/// How the credential's identity is found
/// (`toolforge_runtime::profile::Identity`): probes tried in order.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Identity {
    /// The probes, first preferred.
    pub probes: Vec<IdentityProbe>,
}

/// One identity `GET` (`toolforge_runtime::profile::IdentityProbe`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IdentityProbe {
    /// Path and query, relative to the base URL.
    pub path: String,
    /// JSON pointer, in the payload, to a list that must hold exactly one
    /// item that `id` and `name` then point into.
    pub only: Option<String>,
    /// JSON pointer to the ID in the payload (after the envelope).
    pub id: String,
    /// JSON pointer to a display name.
    pub name: Option<String>,
    /// What the ID names: the identity is `<prefix>:<id>`.
    pub prefix: String,
}
