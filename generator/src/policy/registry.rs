//! The policy registry: every policy forge.json's `policy`, the CLI's
//! `--policy` and `forge.schema.json`'s enum may name, in one table. A new
//! API policy is one module and one [`REGISTRY`] line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ApiPolicy, cloudflare, generic};

/// One registered policy.
#[derive(Debug)]
pub struct Registered {
    /// The name forge.json and `--policy` use (`^[a-z0-9_]+$`).
    pub name: &'static str,
    /// One line for `forge.schema.json` and `--help`.
    pub description: &'static str,
    /// Its rules.
    pub rules: &'static dyn ApiPolicy,
}

/// Every policy, by name; the order is that of the CLI and the schema.
pub static REGISTRY: &[Registered] = &[
    Registered {
        name: "cloudflare",
        description: "Cloudflare rules (merged account/zone paths, permissions, envelope).",
        rules: &cloudflare::Cloudflare,
    },
    Registered {
        name: "generic",
        description: "Any other OpenAPI 3.x API.",
        rules: &generic::Generic,
    },
];

/// The registered policy called `name`.
pub fn lookup(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|r| r.name == name)
}

/// The registered names, in order.
pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|r| r.name)
}

/// API-specific policy applied to the IR: the name of an entry of
/// [`crate::policy::REGISTRY`]. Serialised as that name; the schema's enum
/// is the registry's names.
#[derive(Clone, Copy)]
pub struct PolicyKind(&'static Registered);

// The two first policies keep their old variant names as constants, so
// code written against the closed enum reads the same.
#[allow(non_upper_case_globals)]
impl PolicyKind {
    /// Cloudflare rules (merged account/zone paths, permissions, envelope).
    pub const Cloudflare: PolicyKind = PolicyKind(&REGISTRY[0]);
    /// Any other OpenAPI 3.x API.
    pub const Generic: PolicyKind = PolicyKind(&REGISTRY[1]);

    /// The registered policy called `name`.
    pub fn from_name(name: &str) -> Option<PolicyKind> {
        lookup(name).map(PolicyKind)
    }

    /// Its forge.json name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Its registry entry.
    pub fn registered(self) -> &'static Registered {
        self.0
    }
}

impl std::fmt::Debug for PolicyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl PartialEq for PolicyKind {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for PolicyKind {}

impl Serialize for PolicyKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name)
    }
}

impl<'de> Deserialize<'de> for PolicyKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        PolicyKind::from_name(&name).ok_or_else(|| {
            let names: Vec<String> = names().map(|n| format!("`{n}`")).collect();
            serde::de::Error::custom(format!(
                "unknown policy `{name}`, expected one of {}",
                names.join(", ")
            ))
        })
    }
}

impl JsonSchema for PolicyKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PolicyKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one_of: Vec<serde_json::Value> = REGISTRY
            .iter()
            .map(|r| {
                serde_json::json!({
                    "const": r.name,
                    "description": r.description,
                    "type": "string",
                })
            })
            .collect();
        schemars::json_schema!({
            "description": "API-specific policy applied to the IR.",
            "oneOf": one_of,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lower_snake() {
        let mut seen = std::collections::BTreeSet::new();
        for r in REGISTRY {
            assert!(seen.insert(r.name), "{} registered twice", r.name);
            assert!(
                !r.name.is_empty()
                    && r.name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                r.name
            );
            assert!(!r.description.is_empty());
        }
        assert!(lookup("generic").is_some() && lookup("cloudflare").is_some());
        assert!(lookup("Generic").is_none() && lookup("").is_none());
    }
}
