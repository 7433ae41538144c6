//! What the grant store keeps: grants, issued tokens (as keyed hashes),
//! authorization codes, upstream sign-ins in flight and registered clients.
//!
//! Nothing here is a secret in the clear: token values are stored only as
//! keyed hashes ([`TokenHash`]), and the upstream tokens of a grant are
//! sealed under the grant's own key, which is itself stored only wrapped
//! under keys derived from the downstream tokens (see `oauth::crypto`).

use serde::{Deserialize, Serialize};

/// Seconds since the Unix epoch.
pub type UnixTime = i64;

/// HMAC-SHA256 of a token value under the server's hashing key: the only
/// form in which a token, code or state id is stored or looked up.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash(pub [u8; 32]);

impl std::fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A prefix is enough to tell hashes apart in a debug print.
        write!(f, "TokenHash({}…)", hex::encode(&self.0[..4]))
    }
}

/// What a grant lets its session do (the consent page's choice). Stored on
/// the grant; refresh never widens it. `read_only` and `products` narrow
/// the served tools (the MCP server's authorization decision); `scopes` records an explicit
/// scope choice (the *minimal* and *advanced* templates).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Exposure {
    /// Only read-only tools.
    #[serde(default)]
    pub read_only: bool,
    /// Only these products (`None`: every product).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub products: Option<Vec<String>>,
    /// Exactly these catalogue scopes are asked for, besides the ones
    /// always requested (`None`: the scopes the other fields select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

/// One user's authorization of one MCP client at one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Random id (32 hex digits).
    pub id: String,
    /// The MCP client (a CIMD URL or a registered client id).
    pub client_id: String,
    /// The RFC 8707 resource the grant is bound to (`<base>/mcp`).
    pub resource: String,
    /// Upstream scopes granted (the scope catalogue's ids), sorted.
    pub scopes: Vec<String>,
    /// What the session may do.
    pub exposure: Exposure,
    /// When the grant was made.
    pub created_at: UnixTime,
    /// When the grant ends whatever happens (refresh token lifetime bound).
    pub expires_at: UnixTime,
    /// The upstream tokens (JSON of `UpstreamTokens`), sealed under the
    /// grant key: nonce ‖ ciphertext ‖ tag.
    pub upstream_sealed: Vec<u8>,
    /// When the upstream access token expires, if the upstream said.
    pub upstream_expires_at: Option<UnixTime>,
    /// Bumped on every change of `upstream_sealed` (compare-and-swap).
    pub version: i64,
    /// The refresh token a client should present now.
    pub refresh_current: Option<TokenHash>,
    /// The refresh token before it, valid until `refresh_current` is used.
    pub refresh_previous: Option<TokenHash>,
    /// Revoked grants keep their row (so replays are recognised) but
    /// authorize nothing.
    pub revoked: bool,
    /// The last step-up challenge answered to this grant's session: while
    /// it is recent, a refresh is refused so the client authorizes again.
    pub step_up: Option<PendingStepUp>,
}

/// A step-up challenge sent to a grant's session (the scope asked for and
/// when): a client that refreshes instead of authorizing again would get
/// the same narrow token back, so the token endpoint sends it to
/// `/authorize` while the challenge is recent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingStepUp {
    /// The catalogue scope the challenge asked for.
    pub scope: String,
    /// When the challenge was sent.
    pub at: UnixTime,
}

/// Which kind of downstream token a [`TokenRecord`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A bearer access token for `/mcp`.
    Access,
    /// A refresh token for `/token`.
    Refresh,
}

/// An issued downstream token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Keyed hash of the token value.
    pub hash: TokenHash,
    /// Access or refresh.
    pub kind: TokenKind,
    /// The grant it belongs to.
    pub grant_id: String,
    /// Expiry.
    pub expires_at: UnixTime,
    /// The grant key, sealed under a key derived from the token value.
    pub wrapped_key: Vec<u8>,
}

/// A downstream authorization code, single use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthCode {
    /// Keyed hash of the code.
    pub hash: TokenHash,
    /// The grant the code completes.
    pub grant_id: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The exact redirect URI of the authorization request.
    pub redirect_uri: String,
    /// The PKCE S256 challenge (base64url, no padding).
    pub code_challenge: String,
    /// Expiry (about a minute after issue).
    pub expires_at: UnixTime,
    /// The grant key, sealed under a key derived from the code.
    pub wrapped_key: Vec<u8>,
}

/// What taking an authorization code found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeUse {
    /// First use: the code, now marked used.
    Fresh(AuthCode),
    /// The code was used before: its grant should be revoked.
    Replayed {
        /// The grant of the replayed code.
        grant_id: String,
    },
    /// No such code (or it expired and was purged).
    Unknown,
}

/// An upstream sign-in in flight: created when the user approves the
/// consent page, taken (once) by the upstream callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSignIn {
    /// Keyed hash of the random state id sent upstream.
    pub hash: TokenHash,
    /// Keyed hash of the browser-binding cookie value.
    pub browser: TokenHash,
    /// Expiry (10 minutes after consent).
    pub expires_at: UnixTime,
    /// The downstream request and the upstream PKCE verifier (JSON), sealed
    /// under the server's state key.
    pub sealed: Vec<u8>,
}

/// A client registered through RFC 7591 dynamic registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredClient {
    /// The issued client id.
    pub client_id: String,
    /// The registration (RFC 7591 client metadata, JSON), as accepted.
    pub metadata: String,
    /// When it was registered.
    pub created_at: UnixTime,
}

/// What presenting a refresh token found (the rotation is atomic).
#[allow(clippy::large_enum_variant)] // built once per refresh
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshUse {
    /// The token was current or previous: `new_refresh` is now current and
    /// `new_access` is stored. Holds the grant (as after the rotation) and
    /// the presented token's record (for unwrapping the grant key).
    Rotated {
        /// The grant after rotation.
        grant: Grant,
        /// The presented refresh token's record.
        presented: TokenRecord,
    },
    /// A refresh token of the grant older than the previous one: the grant
    /// is now revoked.
    Reused,
    /// Unknown, expired, or of a revoked grant.
    Invalid,
}
