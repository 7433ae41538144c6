//! How a credential scheme's secret reaches the upstream.
//!
//! [`SchemeKind`] is generic over its text and list types: the generator
//! holds owned values (`String`, `Vec<String>`) read from a spec, the runtime
//! `&'static` ones written into a generated crate. Both sides name their
//! instance with a type alias, and the phrases shown to operators
//! ([`SchemeKind::env_parts`], [`SchemeKind::describe`]) exist once.

use serde::Serialize;

/// How a scheme's credential reaches the upstream.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum SchemeKind<S, L> {
    /// `apiKey`: a key sent as a header, query parameter or cookie named
    /// `name`.
    ApiKey {
        /// Where the key goes.
        location: KeyLocation,
        /// Header, parameter or cookie name.
        name: S,
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
        token_url: S,
        /// Scopes requested (sorted; empty: none sent).
        scopes: L,
    },
    /// A scheme toolforge cannot send (`http` digest, `mutualTLS`, …): an
    /// operation whose every alternative needs one fails with a tool error
    /// naming it.
    Unsupported {
        /// What the spec declares, e.g. `http digest`.
        what: S,
    },
}

impl<S: AsRef<str>, L> SchemeKind<S, L> {
    /// What each environment variable of the scheme holds, in order (one
    /// secret; or user name and password; or client ID and secret).
    pub fn env_parts(&self) -> &'static [&'static str] {
        match self {
            Self::ApiKey { .. } => &["API key"],
            Self::Bearer => &["bearer token"],
            Self::Basic => &["user name", "password"],
            Self::ClientCredentials { .. } => &["OAuth client ID", "OAuth client secret"],
            Self::Unsupported { .. } => &[],
        }
    }

    /// A short phrase for listings (``API key in query `key` ``).
    pub fn describe(&self) -> String {
        match self {
            Self::ApiKey { location, name } => {
                format!("API key in {} `{}`", location.as_str(), name.as_ref())
            }
            Self::Bearer => "bearer token".to_owned(),
            Self::Basic => "HTTP basic".to_owned(),
            Self::ClientCredentials { .. } => "OAuth 2.0 client credentials".to_owned(),
            Self::Unsupported { what } => format!("{} (not supported)", what.as_ref()),
        }
    }

    /// Whether one secret is the whole credential (API key or bearer
    /// token): the kinds a per-client token can fill.
    pub fn is_one_secret(&self) -> bool {
        matches!(self, Self::ApiKey { .. } | Self::Bearer)
    }
}

/// Where an `apiKey` scheme sends its key.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum KeyLocation {
    /// A request header.
    Header,
    /// A query parameter (scrubbed from every URL shown).
    Query,
    /// A cookie.
    Cookie,
}

impl KeyLocation {
    /// Every location.
    pub const ALL: [KeyLocation; 3] = [Self::Header, Self::Query, Self::Cookie];

    /// `header`, `query` or `cookie`, as in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::Query => "query",
            Self::Cookie => "cookie",
        }
    }

    /// The Rust name of the variant, for code that writes this value.
    pub fn variant(self) -> &'static str {
        match self {
            Self::Header => "Header",
            Self::Query => "Query",
            Self::Cookie => "Cookie",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyLocation, SchemeKind};

    type Owned = SchemeKind<String, Vec<String>>;
    type Static = SchemeKind<&'static str, &'static [&'static str]>;

    #[test]
    fn owned_and_static_instances_say_the_same() {
        let pairs: [(Owned, Static); 5] = [
            (
                Owned::ApiKey {
                    location: KeyLocation::Query,
                    name: "key".into(),
                },
                Static::ApiKey {
                    location: KeyLocation::Query,
                    name: "key",
                },
            ),
            (Owned::Bearer, Static::Bearer),
            (Owned::Basic, Static::Basic),
            (
                Owned::ClientCredentials {
                    token_url: "/token".into(),
                    scopes: vec!["read".into()],
                },
                Static::ClientCredentials {
                    token_url: "/token",
                    scopes: &["read"],
                },
            ),
            (
                Owned::Unsupported {
                    what: "http digest".into(),
                },
                Static::Unsupported {
                    what: "http digest",
                },
            ),
        ];
        for (owned, fixed) in pairs {
            assert_eq!(owned.describe(), fixed.describe());
            assert_eq!(owned.env_parts(), fixed.env_parts());
            assert_eq!(owned.is_one_secret(), fixed.is_one_secret());
        }
    }

    #[test]
    fn phrases_name_the_key_and_the_unsupported_scheme() {
        let key = Static::ApiKey {
            location: KeyLocation::Header,
            name: "X-Auth",
        };
        assert_eq!(key.describe(), "API key in header `X-Auth`");
        assert_eq!(key.env_parts(), ["API key"]);
        assert_eq!(Static::Basic.env_parts(), ["user name", "password"]);
        let digest = Static::Unsupported {
            what: "http digest",
        };
        assert_eq!(digest.describe(), "http digest (not supported)");
        assert!(digest.env_parts().is_empty());
        assert!(!Static::Basic.is_one_secret() && Static::Bearer.is_one_secret());
    }

    #[test]
    fn key_location_names() {
        for l in KeyLocation::ALL {
            assert_eq!(l.variant(), format!("{l:?}"));
            assert_eq!(l.as_str(), l.variant().to_ascii_lowercase());
        }
    }
}
