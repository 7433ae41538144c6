//! Credential schemes and requirements: `components.securitySchemes`, the
//! global `security` and each operation's own, resolved into the scheme
//! table and per-tool requirements of the IR ([`crate::ir::Scheme`],
//! [`crate::ir::Requirement`]).
//!
//! Schemes are sorted by name and requirements are indices into that
//! order. An operation's `security` replaces the global one; `[]` means no
//! credential and an alternative `{}` makes the credential optional.
//! Problems in the spec's security data never stop generation: an
//! alternative naming an undeclared scheme is dropped, an unreadable entry
//! is ignored, and both are recorded as warnings (listed in the README).
//! A spec declaring no scheme gets one synthesised bearer scheme,
//! `api_token`, sent when set.

pub mod env;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::error::push_pointer;
use crate::ir::{
    DeclaredKind, KeyLocation, OperationScopes, Requirement, Scheme, SchemeKind, Tool,
};
use crate::load::Document;
use crate::policy::Policy;
use crate::refs::deref;

/// The name of the scheme synthesised for a spec that declares none.
pub const SYNTHESISED: &str = "api_token";

/// How a declared scheme maps to what the runtime sends, and how the
/// corpus report counts it. Scopes of client-credentials schemes are
/// filled later, from the requirements.
pub fn classify(scheme: &Value) -> (SchemeKind, DeclaredKind) {
    let text = |key: &str| scheme.get(key).and_then(Value::as_str);
    let unsupported = |what: String, kind| (SchemeKind::Unsupported { what }, kind);
    match text("type") {
        Some("apiKey") => {
            let location = match text("in").map(str::to_ascii_lowercase).as_deref() {
                Some("header") => Some((KeyLocation::Header, DeclaredKind::ApiKeyHeader)),
                Some("query") => Some((KeyLocation::Query, DeclaredKind::ApiKeyQuery)),
                Some("cookie") => Some((KeyLocation::Cookie, DeclaredKind::ApiKeyCookie)),
                _ => None,
            };
            match (location, text("name").filter(|n| !n.is_empty())) {
                (Some((location, declared)), Some(name)) => (
                    SchemeKind::ApiKey {
                        location,
                        name: name.to_owned(),
                    },
                    declared,
                ),
                (None, _) => unsupported(
                    "apiKey without a header, query or cookie `in`".into(),
                    DeclaredKind::Other,
                ),
                (Some(_), None) => {
                    unsupported("apiKey without a `name`".into(), DeclaredKind::Other)
                }
            }
        }
        Some("http") => match text("scheme") {
            Some(s) if s.eq_ignore_ascii_case("bearer") => {
                (SchemeKind::Bearer, DeclaredKind::HttpBearer)
            }
            Some(s) if s.eq_ignore_ascii_case("basic") => {
                (SchemeKind::Basic, DeclaredKind::HttpBasic)
            }
            Some(s) => unsupported(format!("http {s}"), DeclaredKind::HttpOther),
            None => unsupported("http without a `scheme`".into(), DeclaredKind::HttpOther),
        },
        Some("oauth2") => {
            let token_url = scheme
                .pointer("/flows/clientCredentials/tokenUrl")
                .and_then(Value::as_str)
                .filter(|u| !u.is_empty());
            match token_url {
                Some(url) => (
                    SchemeKind::ClientCredentials {
                        token_url: url.to_owned(),
                        scopes: Vec::new(),
                    },
                    DeclaredKind::Oauth2ClientCredentials,
                ),
                None => (SchemeKind::Bearer, DeclaredKind::Oauth2Other),
            }
        }
        Some("openIdConnect") => (SchemeKind::Bearer, DeclaredKind::OpenIdConnect),
        Some(other) => unsupported(other.to_owned(), DeclaredKind::Other),
        None => unsupported("a scheme without a `type`".into(), DeclaredKind::Other),
    }
}

/// The readable entries of `components.securitySchemes`, by name (a
/// `$ref` entry is followed), and warnings about the unreadable ones.
pub fn declared(doc: &Document) -> (BTreeMap<String, (SchemeKind, DeclaredKind)>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    let base = "/components/securitySchemes";
    let Some(found) = doc.root.pointer(base) else {
        return (out, warnings);
    };
    let Some(entries) = found.as_object() else {
        warnings.push(format!("{base}: not an object; ignored"));
        return (out, warnings);
    };
    for (name, entry) in entries {
        let at = push_pointer(base, name);
        match deref(doc, entry, &at) {
            Ok((scheme, _)) if scheme.is_object() => {
                out.insert(name.clone(), classify(scheme));
            }
            Ok(_) => warnings.push(format!("{at}: not an object; scheme `{name}` ignored")),
            Err(e) => warnings.push(format!("{e}; scheme `{name}` ignored")),
        }
    }
    (out, warnings)
}

/// How many schemes of each kind `doc` declares (unreadable entries not
/// counted), for the corpus report.
pub fn declared_counts(doc: &Document) -> BTreeMap<DeclaredKind, usize> {
    let mut counts = BTreeMap::new();
    for (_, declared) in declared(doc).0.into_values() {
        *counts.entry(declared).or_default() += 1;
    }
    counts
}

/// One alternative as written: `(scheme, scopes)` pairs.
type RawAlternative = Vec<(String, Vec<String>)>;

/// Reads a `security` value (at `at`); `None` when it is not an array
/// (warned). Alternatives that are not objects are dropped (warned).
fn parse_requirement(
    value: &Value,
    at: &str,
    warnings: &mut Vec<String>,
) -> Option<Vec<RawAlternative>> {
    let Some(items) = value.as_array() else {
        warnings.push(format!("{at}: `security` is not an array; ignored"));
        return None;
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            warnings.push(format!(
                "{at}/{i}: a security requirement must be an object; alternative dropped"
            ));
            continue;
        };
        let alternative = obj
            .iter()
            .map(|(name, scopes)| {
                let scopes = scopes
                    .as_array()
                    .map(|s| {
                        s.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                (name.clone(), scopes)
            })
            .collect();
        out.push(alternative);
    }
    Some(out)
}

/// Sorts each alternative's indices and drops repeated alternatives,
/// keeping the first (the runtime prefers the first it can satisfy).
pub fn normalise(requirement: Requirement) -> Requirement {
    let mut out: Requirement = Vec::with_capacity(requirement.len());
    for mut alternative in requirement {
        alternative.sort_unstable();
        alternative.dedup();
        if !out.contains(&alternative) {
            out.push(alternative);
        }
    }
    out
}

/// An undeclared scheme some requirements name.
struct Undeclared {
    count: usize,
    first: String,
}

/// Resolves requirements against the declared schemes while the catalogue
/// is built, then yields the scheme table ([`Resolver::finish`]).
pub struct Resolver {
    policy: Policy,
    /// Declared schemes in name order (the table's order).
    schemes: Vec<(String, SchemeKind, DeclaredKind)>,
    index: HashMap<String, u16>,
    /// Scopes required of each scheme.
    scopes: Vec<BTreeSet<String>>,
    /// The global requirement, resolved (`None`: absent or unreadable).
    global: Option<Requirement>,
    /// The global requirement as written (for its scopes).
    global_raw: Option<Vec<RawAlternative>>,
    /// The scopes operations list for client-credentials schemes.
    op_scopes: Vec<OperationScopes>,
    warnings: Vec<String>,
    undeclared: BTreeMap<String, Undeclared>,
    /// No scheme declared: every requirement is the synthesised one.
    synthesised: bool,
}

/// What [`Resolver::finish`] yields for the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityTable {
    /// Schemes in name order, with environment variables.
    pub schemes: Vec<Scheme>,
    /// The global requirement.
    pub global: Requirement,
    /// The scheme a per-client token fills.
    pub primary: Option<u16>,
    /// The scopes operations list for client-credentials schemes, sorted.
    pub scopes: Vec<OperationScopes>,
    /// Problems found, sorted.
    pub warnings: Vec<String>,
}

impl Resolver {
    /// Reads the declared schemes and the global requirement of `doc`.
    pub fn new(doc: &Document, policy: Policy) -> Self {
        let (declared, mut warnings) = declared(doc);
        // Indices are u16 in the catalogue; a spec with more schemes keeps
        // the first 65,535 by name (requirements naming the rest are dropped).
        let schemes: Vec<(String, SchemeKind, DeclaredKind)> = declared
            .into_iter()
            .take(usize::from(u16::MAX))
            .map(|(name, (kind, declared))| (name, kind, declared))
            .collect();
        let index = schemes
            .iter()
            .enumerate()
            .filter_map(|(i, (name, _, _))| Some((name.clone(), u16::try_from(i).ok()?)))
            .collect();
        let global = doc
            .root
            .get("security")
            .and_then(|v| parse_requirement(v, "/security", &mut warnings));
        let mut resolver = Resolver {
            policy,
            scopes: vec![BTreeSet::new(); schemes.len()],
            synthesised: schemes.is_empty(),
            schemes,
            index,
            global: None,
            global_raw: global.clone(),
            op_scopes: Vec::new(),
            warnings,
            undeclared: BTreeMap::new(),
        };
        if !resolver.synthesised {
            resolver.global = global.map(|raw| resolver.indices(&raw, "/security"));
        }
        resolver
    }

    /// The scheme names in table order.
    fn names(&self) -> Vec<&str> {
        self.schemes.iter().map(|(n, _, _)| n.as_str()).collect()
    }

    /// Indices of `raw`'s alternatives; alternatives naming an undeclared
    /// scheme are dropped (and counted for the warning). `at` points at
    /// the `security` value.
    fn indices(&mut self, raw: &[RawAlternative], at: &str) -> Requirement {
        let mut out = Vec::with_capacity(raw.len());
        'alternatives: for alternative in raw {
            let mut indices = Vec::with_capacity(alternative.len());
            for (name, _) in alternative {
                match self.index.get(name) {
                    Some(&i) => indices.push(i),
                    None => {
                        let entry = self.undeclared.entry(name.clone()).or_insert(Undeclared {
                            count: 0,
                            first: at.to_owned(),
                        });
                        entry.count += 1;
                        continue 'alternatives;
                    }
                }
            }
            for (name, scopes) in alternative {
                if let Some(&i) = self.index.get(name)
                    && let Some(set) = self.scopes.get_mut(usize::from(i))
                {
                    set.extend(scopes.iter().cloned());
                }
            }
            out.push(indices);
        }
        let names = self.names();
        normalise(self.policy.security(&names, normalise(out)))
    }

    /// The requirement of operation `op` (at pointer `op_ptr`): its own
    /// `security`, else the global one.
    pub fn resolve(&mut self, op: &Value, op_ptr: &str) -> Requirement {
        if self.synthesised {
            return synthesised_requirement();
        }
        let at = push_pointer(op_ptr, "security");
        let own = op
            .get("security")
            .and_then(|v| parse_requirement(v, &at, &mut self.warnings));
        match own {
            Some(own) => self.indices(&own, &at),
            None => self.global.clone().unwrap_or_default(),
        }
    }

    /// Records the scopes operation `operation_id` (`op`) lists for each
    /// client-credentials scheme in its own requirement, else the global
    /// one: the union over the alternatives whose schemes are all declared.
    pub fn record_scopes(&mut self, operation_id: &str, op: &Value) {
        if self.synthesised {
            return;
        }
        let own = op
            .get("security")
            .and_then(|v| parse_requirement(v, "", &mut Vec::new()));
        let Some(raw) = own.as_ref().or(self.global_raw.as_ref()) else {
            return;
        };
        let mut found: BTreeMap<u16, BTreeSet<String>> = BTreeMap::new();
        for alternative in raw {
            if !alternative.iter().all(|(n, _)| self.index.contains_key(n)) {
                continue;
            }
            for (name, scopes) in alternative {
                let Some(&i) = self.index.get(name) else {
                    continue;
                };
                if matches!(
                    self.schemes.get(usize::from(i)),
                    Some((_, SchemeKind::ClientCredentials { .. }, _))
                ) {
                    found.entry(i).or_default().extend(scopes.iter().cloned());
                }
            }
        }
        self.op_scopes
            .extend(found.into_iter().map(|(scheme, scopes)| OperationScopes {
                operation: operation_id.to_owned(),
                scheme,
                scopes: scopes.into_iter().collect(),
            }));
    }

    /// The scheme table, the global requirement, the primary scheme (the
    /// policy's choice, see [`primary`]) and the warnings, given the tools
    /// in catalogue order (their requirements already resolved).
    pub fn finish<'t>(mut self, api: &str, tools: impl Iterator<Item = &'t Tool>) -> SecurityTable {
        if self.synthesised {
            let schemes = vec![Scheme {
                name: SYNTHESISED.to_owned(),
                kind: SchemeKind::Bearer,
                env: vec![crate::naming::token_env_name(api)],
                declared: None,
            }];
            let primary = self.policy.primary_scheme(&schemes, Some(0));
            return SecurityTable {
                schemes,
                global: synthesised_requirement(),
                primary,
                scopes: Vec::new(),
                warnings: self.sorted_warnings(),
            };
        }
        let global = self.global.take().unwrap_or_default();
        let kinds: Vec<(&str, &SchemeKind)> = self
            .schemes
            .iter()
            .map(|(n, k, _)| (n.as_str(), k))
            .collect();
        let envs = env::env_names(api, &kinds);
        let schemes: Vec<Scheme> = std::mem::take(&mut self.schemes)
            .into_iter()
            .zip(envs)
            .zip(std::mem::take(&mut self.scopes))
            .map(|(((name, mut kind, declared), env), scopes)| {
                if let SchemeKind::ClientCredentials { scopes: s, .. } = &mut kind {
                    *s = scopes.into_iter().collect();
                }
                Scheme {
                    name,
                    kind,
                    env,
                    declared: Some(declared),
                }
            })
            .collect();
        let chosen = primary(&schemes, &global, tools.map(|t| &t.security));
        let primary = self.policy.primary_scheme(&schemes, chosen).filter(|&p| {
            schemes
                .get(usize::from(p))
                .is_some_and(|s| s.kind.is_one_secret())
        });
        let mut scopes = std::mem::take(&mut self.op_scopes);
        scopes.sort_by(|a, b| (&a.operation, a.scheme).cmp(&(&b.operation, b.scheme)));
        scopes.dedup_by(|a, b| a.operation == b.operation && a.scheme == b.scheme);
        SecurityTable {
            schemes,
            global,
            primary,
            scopes,
            warnings: self.sorted_warnings(),
        }
    }

    fn sorted_warnings(&mut self) -> Vec<String> {
        let mut out = std::mem::take(&mut self.warnings);
        for (name, u) in std::mem::take(&mut self.undeclared) {
            out.push(format!(
                "{}: security requirement names undeclared scheme `{name}` ({} requirement(s) do); the alternatives naming it are dropped",
                u.first, u.count
            ));
        }
        out.sort();
        out.dedup();
        out
    }
}

/// The requirement of every operation when the spec declares no scheme:
/// the synthesised token when it is set, else no credential.
fn synthesised_requirement() -> Requirement {
    vec![vec![0], vec![]]
}

/// The default primary scheme: the API-key or bearer scheme alone in the
/// first one-scheme alternative of the global requirement that has one;
/// else the first such scheme any tool uses (tools in catalogue order,
/// alternatives in order); else none.
pub fn primary<'r>(
    schemes: &[Scheme],
    global: &Requirement,
    tools: impl Iterator<Item = &'r Requirement>,
) -> Option<u16> {
    let one_secret = |i: u16| {
        schemes
            .get(usize::from(i))
            .is_some_and(|s| s.kind.is_one_secret())
    };
    let from_global = global.iter().find_map(|alternative| match alternative[..] {
        [only] if one_secret(only) => Some(only),
        _ => None,
    });
    from_global.or_else(|| {
        let mut tools = tools;
        tools.find_map(|req| req.iter().flatten().copied().find(|&i| one_secret(i)))
    })
}

#[cfg(test)]
mod tests;
