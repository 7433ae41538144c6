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
/// scheme declares ([`SchemeKind::ClientCredentials::scopes`]).
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

/// How a scheme's credential reaches the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemeKind {
    /// `apiKey`: a key sent as a header, query parameter or cookie named
    /// `name`.
    ApiKey {
        /// Where the key goes.
        location: KeyLocation,
        /// Header, parameter or cookie name.
        name: &'static str,
    },
    /// `Authorization: Bearer <token>`: `http` bearer, `openIdConnect`, and
    /// `oauth2` flows other than client credentials (the operator supplies
    /// the access token).
    Bearer,
    /// `http` basic: `Authorization: Basic base64(user:password)`.
    Basic,
    /// `oauth2` client credentials: the server fetches an access token from
    /// `token_url` with the client ID and secret, caches it until shortly
    /// before it expires, and sends it as a bearer token.
    ClientCredentials {
        /// The token endpoint (absolute, or relative to the base URL).
        token_url: &'static str,
        /// Scopes requested, joined by spaces (empty: none sent).
        scopes: &'static [&'static str],
    },
    /// A scheme toolforge cannot send (`http` digest, `mutualTLS`, …): an
    /// operation whose every alternative needs one fails with a tool error
    /// naming it.
    Unsupported {
        /// What the spec declares, e.g. `http digest`.
        what: &'static str,
    },
}

impl SchemeKind {
    /// What each of [`SecurityScheme::env`]'s variables holds, in order.
    pub fn env_parts(self) -> &'static [&'static str] {
        match self {
            Self::ApiKey { .. } => &["API key"],
            Self::Bearer => &["bearer token"],
            Self::Basic => &["user name", "password"],
            Self::ClientCredentials { .. } => &["OAuth client ID", "OAuth client secret"],
            Self::Unsupported { .. } => &[],
        }
    }

    /// A short phrase for listings (`apiKey in query \`key\``).
    pub fn describe(self) -> String {
        match self {
            Self::ApiKey { location, name } => format!("API key in {} `{name}`", location.as_str()),
            Self::Bearer => "bearer token".to_owned(),
            Self::Basic => "HTTP basic".to_owned(),
            Self::ClientCredentials { .. } => "OAuth 2.0 client credentials".to_owned(),
            Self::Unsupported { what } => format!("{what} (not supported)"),
        }
    }
}

/// Where an `apiKey` scheme sends its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLocation {
    /// A request header.
    Header,
    /// A query parameter (scrubbed from every URL shown).
    Query,
    /// A cookie.
    Cookie,
}

impl KeyLocation {
    /// `header`, `query` or `cookie`, as in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::Query => "query",
            Self::Cookie => "cookie",
        }
    }
}
