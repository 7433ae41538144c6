//! The start-up summary of unset credential variables: for each scheme
//! that is not configured, the tools it would enable, so an operator sees
//! what an unset variable costs, and a scheme no tool needs (Stripe's
//! basic form when its bearer token is set) is not reported as missing.

use super::ServerSecrets;
use crate::security::{Requirement, SchemeKind};

/// One unset scheme and the tools that cannot be called without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsetScheme<'t> {
    /// The scheme's variables (names only).
    pub vars: Vec<String>,
    /// The tools it would enable, in the order given.
    pub tools: Vec<&'t str>,
}

impl UnsetScheme<'_> {
    /// `A and B disable 3 tools: x, y, z` (at most `shown` names).
    pub fn describe(&self, shown: usize) -> String {
        let vars = self.vars.join(" and ");
        let count = self.tools.len();
        let mut names = self
            .tools
            .iter()
            .take(shown)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if count > shown {
            names.push_str(&format!(" and {} more", count - shown));
        }
        let noun = if count == 1 { "tool" } else { "tools" };
        format!("{vars} unset disables {count} {noun}: {names}")
    }
}

impl ServerSecrets {
    /// Per unset scheme, the tools (name, requirement) that no configured
    /// alternative serves and that an alternative holding the scheme
    /// would, if it and the alternative's other schemes were set (an
    /// alternative with a scheme toolforge cannot send serves nobody).
    /// Schemes that would enable no tool are left out; the order is the
    /// profile's scheme order.
    pub fn disabled_tools<'t>(
        &self,
        tools: impl IntoIterator<Item = (&'t str, Requirement)>,
    ) -> Vec<UnsetScheme<'t>> {
        let configured = |i: u16| self.values.get(usize::from(i)).is_some_and(Option::is_some);
        let sendable = |i: u16| {
            self.profile
                .schemes
                .get(usize::from(i))
                .is_some_and(|s| !matches!(s.kind, SchemeKind::Unsupported { .. }))
        };
        let mut per_scheme: Vec<Vec<&'t str>> = vec![Vec::new(); self.values.len()];
        for (name, requirement) in tools {
            let served = requirement.is_empty()
                || requirement
                    .iter()
                    .any(|alt| alt.iter().all(|&i| configured(i)));
            if served {
                continue;
            }
            let mut needed: Vec<u16> = requirement
                .iter()
                .filter(|alt| alt.iter().all(|&i| sendable(i)))
                .flat_map(|alt| alt.iter().copied())
                .filter(|&i| !configured(i))
                .collect();
            needed.sort_unstable();
            needed.dedup();
            for i in needed {
                if let Some(list) = per_scheme.get_mut(usize::from(i)) {
                    list.push(name);
                }
            }
        }
        per_scheme
            .into_iter()
            .zip(&self.vars)
            .filter(|(tools, _)| !tools.is_empty())
            .map(|(tools, vars)| UnsetScheme {
                vars: vars.clone(),
                tools,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;

    use super::*;
    use crate::profile::Profile;
    use crate::security::SecurityScheme;

    static SCHEMES: [SecurityScheme; 4] = [
        SecurityScheme {
            name: "basicAuth",
            kind: SchemeKind::Basic,
            env: &["S_BASIC_USERNAME", "S_BASIC_PASSWORD"],
        },
        SecurityScheme {
            name: "bearerAuth",
            kind: SchemeKind::Bearer,
            env: &["S_BEARER"],
        },
        SecurityScheme {
            name: "digest",
            kind: SchemeKind::Unsupported {
                what: "http digest",
            },
            env: &[],
        },
        SecurityScheme {
            name: "signing",
            kind: SchemeKind::Bearer,
            env: &["S_SIGNING"],
        },
    ];

    static PROFILE: Profile = Profile {
        schemes: &SCHEMES,
        security: &[&[0], &[1]],
        primary: Some(1),
        ..Profile::generic("S_BEARER")
    };

    /// Stripe's requirement: basic or bearer.
    const EITHER: Requirement = &[&[0], &[1]];
    /// Only with a scheme toolforge cannot send, or with nothing.
    const DIGEST_AND_SIGNING: Requirement = &[&[2, 3]];
    const PUBLIC: Requirement = &[];
    const SIGNING: Requirement = &[&[3]];

    fn secrets(pairs: &[(&str, &str)]) -> ServerSecrets {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ServerSecrets::from_env(&PROFILE, "S_BEARER", |n| env.get(n).cloned()).unwrap()
    }

    fn tools() -> Vec<(&'static str, Requirement)> {
        vec![
            ("customers_list", EITHER),
            ("customers_get", EITHER),
            ("status_get", PUBLIC),
            ("webhooks_sign", SIGNING),
            ("legacy_digest", DIGEST_AND_SIGNING),
        ]
    }

    #[test]
    fn a_scheme_every_tool_can_do_without_is_not_reported() {
        // Bearer set: basic serves no tool that is not already served.
        let s = secrets(&[("S_BEARER", "sk_test_1")]);
        let report = s.disabled_tools(tools());
        assert_eq!(
            report,
            vec![UnsetScheme {
                vars: vec!["S_SIGNING".into()],
                tools: vec!["webhooks_sign"],
            }],
            "the digest pair serves nobody, so S_SIGNING is reported for its own tool only"
        );
    }

    #[test]
    fn each_unset_scheme_names_the_tools_it_disables() {
        let s = secrets(&[]);
        let report = s.disabled_tools(tools());
        let basic = &report[0];
        assert_eq!(basic.vars, ["S_BASIC_USERNAME", "S_BASIC_PASSWORD"]);
        assert_eq!(basic.tools, ["customers_list", "customers_get"]);
        assert_eq!(report[1].vars, ["S_BEARER"]);
        assert_eq!(report[1].tools, ["customers_list", "customers_get"]);
        assert_eq!(
            basic.describe(1),
            "S_BASIC_USERNAME and S_BASIC_PASSWORD unset disables 2 tools: customers_list and 1 more"
        );
        assert_eq!(report.len(), 3);
        // The user name alone configures basic: nothing is reported for
        // Stripe's tools then.
        let s = secrets(&[("S_BASIC_USERNAME", "sk_test_1")]);
        let report = s.disabled_tools(tools());
        assert_eq!(report.len(), 1, "{report:?}");
        assert_eq!(
            report[0].describe(5),
            "S_SIGNING unset disables 1 tool: webhooks_sign"
        );
    }
}
