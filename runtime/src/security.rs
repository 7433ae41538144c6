//! The credential schemes of an API and what each operation requires, as
//! static catalogue data (from the spec's `components.securitySchemes` and
//! its global and per-operation `security`).
//!
//! A [`Requirement`] is OpenAPI's: a list of alternatives (any one will
//! do), each a combination of schemes sent together. An empty requirement
//! means the operation needs no credential; an empty alternative means the
//! credential is optional. Indices point into [`crate::profile::Profile::schemes`].
//!
//! When a profile declares no schemes at all, the runtime keeps the
//! behaviour of a hand-written catalogue: every call needs the one token,
//! sent as `Authorization: Bearer`.

/// The credentials of one operation: alternatives of combinations of
/// scheme indices (see the module docs).
pub type Requirement = &'static [&'static [u16]];

/// The OAuth scopes one operation lists for one client-credentials scheme
/// in its `security` requirement (the union over its alternatives). An
/// operation without an entry for a scheme asks for every scope the
/// scheme declares (the `scopes` of [`toolforge_model::SchemeKind::ClientCredentials`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationScopes {
    /// The tool's `operation_id`.
    pub operation: &'static str,
    /// The scheme's index in [`crate::profile::Profile::schemes`].
    pub scheme: u16,
    /// The scopes asked for, sorted (empty: none asked for).
    pub scopes: &'static [&'static str],
}

/// The scopes `operation` lists for scheme `scheme` in `table`, if any.
pub fn operation_scopes(
    table: &'static [OperationScopes],
    operation: &str,
    scheme: u16,
) -> Option<&'static [&'static str]> {
    table
        .iter()
        .find(|s| s.operation == operation && s.scheme == scheme)
        .map(|s| s.scopes)
}

/// One credential scheme of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecurityScheme {
    /// The scheme's key in `components.securitySchemes` (shown in errors).
    pub name: &'static str,
    /// How the credential is sent.
    pub kind: SchemeKind,
    /// Environment variables holding the credential, in the order
    /// [`SchemeKind::env_parts`] names them (one secret; or user name and
    /// password; or client ID and client secret).
    pub env: &'static [&'static str],
}

/// How a scheme's credential reaches the upstream: the shared
/// [`toolforge_model::SchemeKind`] over `&'static` data, as a generated
/// crate writes it.
pub type SchemeKind = toolforge_model::SchemeKind<&'static str, &'static [&'static str]>;

/// Where an `apiKey` scheme sends its key (shared with the generator).
pub use toolforge_model::KeyLocation;
