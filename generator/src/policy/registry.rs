//! The policy registry: every policy forge.json's `policy`, the CLI's
//! `--policy` and `forge.schema.json`'s enum may name, in one table. A new
//! API policy is one module and one [`REGISTRY`] line.

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
