//! One authorization decision for every surface.
//!
//! A call is judged from the connection it arrives on (an OAuth grant
//! with its scopes and exposure, a static client token, or the server's
//! own credential) and the tool's permissions, mapped to upstream scopes
//! through the scope catalogue. Direct tools, `code`, Code Mode `execute`
//! and the refusal texts of a 401/403 all ask [`decide`], so what one
//! surface says about a refused call cannot drift from another
//! ([`explain`] words the decision).

mod challenge;
mod choose;
mod explain;
mod scope;

use std::sync::Arc;

use crate::catalogue::{Method, ToolDef};

pub use challenge::{ChallengeSlot, StepUp};
pub use explain::{MAX_LISTED_PERMISSIONS, explain, hidden_refusal};
pub use scope::{PathScope, parse as parse_scope};

/// One upstream scope of the catalogue, as the decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRule {
    /// The upstream scope id (`dns_records:read`).
    pub id: String,
    /// Grants only reads.
    pub read_only: bool,
    /// The tool permissions it covers.
    pub permissions: Vec<String>,
}

/// The scope catalogue of an OAuth server, shared by every grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeTable {
    /// The catalogue's scopes, in catalogue order.
    pub scopes: Vec<ScopeRule>,
}

impl ScopeTable {
    /// The scopes covering any of `permissions`, in catalogue order.
    fn accepting(&self, permissions: &[&str]) -> Vec<&ScopeRule> {
        self.scopes
            .iter()
            .filter(|s| {
                s.permissions
                    .iter()
                    .any(|p| permissions.contains(&p.as_str()))
            })
            .collect()
    }

    /// Whether any scope maps permissions at all: without that, nothing
    /// can be said about which scope a call needs.
    fn maps_permissions(&self) -> bool {
        self.scopes.iter().any(|s| !s.permissions.is_empty())
    }
}

/// What an OAuth grant lets its session reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantAccess {
    /// The grant's id (where a step-up challenge is recorded as pending).
    pub grant_id: String,
    /// Upstream scopes the grant holds.
    pub scopes: Vec<String>,
    /// Only read-only tools (the consent page's choice).
    pub read_only: bool,
    /// Only these products (`None`: every product).
    pub products: Option<Vec<String>>,
    /// The server's scope catalogue.
    pub catalogue: Arc<ScopeTable>,
    /// Where a refused call leaves the step-up to ask for (read by the
    /// HTTP layer after the call).
    pub step_up: ChallengeSlot,
    /// The path constraint of a grant made for a scoped resource.
    pub path: Option<Arc<PathScope>>,
    /// The skills of the consent page when the profile defines them
    /// (`products` then names skills); empty: one per product.
    pub groups: &'static [crate::profile::SkillGroup],
}

/// How the caller of a tool is connected, which decides whose credential a
/// refused call concerns and how it can be fixed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Connection {
    /// The server's own credential (stdio, or HTTP without client auth).
    #[default]
    ServerCredential,
    /// A static client token of `--tokens-file` / `TOOLFORGE_HTTP_TOKENS`,
    /// mapped by the operator to an upstream token.
    ClientToken,
    /// A static client token used at a scoped URL (the constraint comes
    /// from the URL alone).
    ScopedClientToken(Arc<PathScope>),
    /// A signed-in user's OAuth grant.
    OAuth(Arc<GrantAccess>),
}

impl Connection {
    /// The path constraint of the session, when it was connected at a
    /// scoped URL.
    pub fn path_scope(&self) -> Option<&PathScope> {
        match self {
            Self::OAuth(grant) => grant.path.as_deref(),
            Self::ScopedClientToken(scope) => Some(scope),
            Self::ServerCredential | Self::ClientToken => None,
        }
    }
}

/// Why a tool is outside a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenBy {
    /// The session was authorized read only and the tool writes.
    ReadOnly,
    /// The tool's product was not chosen.
    Product,
}

/// The authorization decision for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The grant holds a scope covering the call (`None`: the tool
    /// documents no permission, or the catalogue maps none, so nothing
    /// more is known).
    Granted {
        /// The held scope that covers it.
        scope: Option<String>,
    },
    /// The tool is outside the grant's exposure.
    Hidden(HiddenBy),
    /// The grant holds none of the scopes that would cover the call.
    Missing {
        /// Every catalogue scope covering the call.
        accepted: Vec<String>,
        /// The one to ask for; `None` when the rules end in a tie.
        ask_for: Option<String>,
        /// The tied candidates when `ask_for` is `None` (else empty).
        options: Vec<String>,
    },
    /// No OAuth scope covers the call: only an API token can make it.
    Unreachable {
        /// The tool's permissions.
        permissions: &'static [&'static str],
    },
    /// A static credential: the permissions it needs.
    Direct {
        /// The tool's permissions.
        permissions: &'static [&'static str],
    },
}

/// Why `tool` is outside the connection's exposure, if it is: only an
/// OAuth grant narrows (the server-wide `--products`/`--read-only` apply
/// before any connection is known).
pub fn hidden(connection: &Connection, tool: &ToolDef) -> Option<HiddenBy> {
    let Connection::OAuth(grant) = connection else {
        return None;
    };
    grant.hides(tool)
}

impl GrantAccess {
    /// Why the grant's exposure hides `tool`, if it does.
    pub fn hides(&self, tool: &ToolDef) -> Option<HiddenBy> {
        if self.read_only && !tool.annotations.read_only {
            return Some(HiddenBy::ReadOnly);
        }
        match &self.products {
            Some(chosen) if !self.chose(tool, chosen) => Some(HiddenBy::Product),
            _ => None,
        }
    }

    /// Whether `tool` is in one of the `chosen` skills: its product, or a
    /// skill group holding it when the profile defines groups.
    fn chose(&self, tool: &ToolDef, chosen: &[String]) -> bool {
        if self.groups.is_empty() {
            return chosen.iter().any(|p| p == tool.product);
        }
        self.groups
            .iter()
            .any(|g| chosen.iter().any(|c| c == g.name) && g.tools.contains(&tool.name))
    }

    /// The skills that would show `tool` (its product, or the groups
    /// holding it).
    pub fn skills_of(&self, tool: &ToolDef) -> Vec<&'static str> {
        if self.groups.is_empty() {
            return vec![tool.product];
        }
        self.groups
            .iter()
            .filter(|g| g.tools.contains(&tool.name))
            .map(|g| g.name)
            .collect()
    }

    /// The same grant with a slot nobody reads: for surfaces that must
    /// never challenge (a `code` run may have written before a refusal).
    pub fn without_step_up(&self) -> Self {
        Self {
            step_up: ChallengeSlot::default(),
            ..self.clone()
        }
    }

    /// Records the step-up for a refused (401/403) request to `tool` at
    /// `path` when the decision names one scope to ask for.
    pub fn refused(&self, tool: &ToolDef, path: &str) {
        if let Decision::Missing {
            ask_for: Some(scope),
            ..
        } = decide_grant(self, tool, path)
        {
            self.step_up.set(StepUp {
                scope,
                request: format!("{} {path}", tool.method.as_str()),
            });
        }
    }

    /// Whether the grant narrows the served tools at all.
    pub fn narrows(&self) -> bool {
        self.read_only || self.products.is_some() || self.path.is_some()
    }
}

/// The decision for calling `tool` (at the concrete request `path`, which
/// picks the account or zone variant of a scope) over `connection`.
pub fn decide(connection: &Connection, tool: &ToolDef, path: &str) -> Decision {
    let grant = match connection {
        Connection::OAuth(grant) => grant,
        Connection::ServerCredential
        | Connection::ClientToken
        | Connection::ScopedClientToken(_) => {
            return Decision::Direct {
                permissions: tool.permissions,
            };
        }
    };
    decide_grant(grant, tool, path)
}

/// [`decide`] for an OAuth grant.
fn decide_grant(grant: &GrantAccess, tool: &ToolDef, path: &str) -> Decision {
    if let Some(by) = grant.hides(tool) {
        return Decision::Hidden(by);
    }
    if tool.permissions.is_empty() || !grant.catalogue.maps_permissions() {
        return Decision::Granted { scope: None };
    }
    let accepted = grant.catalogue.accepting(tool.permissions);
    if accepted.is_empty() {
        return Decision::Unreachable {
            permissions: tool.permissions,
        };
    }
    if let Some(held) = accepted.iter().find(|s| grant.scopes.contains(&s.id)) {
        return Decision::Granted {
            scope: Some(held.id.clone()),
        };
    }
    let reads = matches!(tool.method, Method::Get | Method::Head);
    let (ask_for, options) = match choose::ask_for(&accepted, reads, path) {
        Ok(one) => (Some(one.id.clone()), Vec::new()),
        Err(tied) => (None, tied.iter().map(|s| s.id.clone()).collect()),
    };
    Decision::Missing {
        accepted: accepted.iter().map(|s| s.id.clone()).collect(),
        ask_for,
        options,
    }
}

#[cfg(test)]
mod tests;
