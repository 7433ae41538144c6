//! The API profile: everything API-specific the runtime needs beyond the
//! tools themselves, as static data in the catalogue.
//!
//! The generator's policy decides the profile and emits it into the
//! generated `CATALOGUE` (`generator/src/policy/*.rs`); the runtime only
//! reads it and never compares API names. A profile says
//!
//! - where the API lives ([`Profile::base_url`], a URL template whose
//!   [`Profile::server_vars`] are filled by `config::servers::server_url`) and
//!   which environment variable holds its token ([`Profile::token_env`]);
//! - the shape of its response bodies ([`BodyEnvelope`]): JSON pointers to
//!   the payload, a failure flag (`false` is a failure even with a 2xx
//!   status), the errors and their message and code, page metadata and a
//!   list's items; bare bodies by default;
//! - how it pages its lists ([`Pagination`]): the next call's exact
//!   arguments from a list answer;
//! - how refused calls (401/403) are explained and whether an empty list
//!   from a tool that needs permissions is flagged ([`Refusals`]);
//! - which path arguments name an account and how an omitted one is filled
//!   ([`AccountFill`]: the credential's only account, from one cached list
//!   request);
//! - the selector of merged paths, one tool for several path prefixes
//!   ([`MergedSelector`]);
//! - the example in the Code Mode `execute` description;
//! - how the credential's identity is found for the `whoami` tool
//!   ([`Identity`]: `GET` probes tried in order, `<prefix>:<id>`).
//!
//! [`Profile::generic`] is what any OpenAPI API gets; an API's policy
//! overrides fields of it. Adding an API means writing its generator policy
//! (the profile is one of its methods) or overriding profile fields in
//! forge.json and, only for a behaviour no profile can express yet, a new
//! field here.
//!
//! ```
//! use toolforge_runtime::profile::{AccountFill, BodyEnvelope, Profile};
//!
//! static PROFILE: Profile = Profile {
//!     base_url: Some("https://api.example.com/v1"),
//!     envelope: BodyEnvelope { payload: "/data", failure_flag: Some("/ok"), ..BodyEnvelope::BARE },
//!     ..Profile::generic("EXAMPLE_API_TOKEN")
//! };
//! assert_eq!(PROFILE.accounts, AccountFill::Never);
//! assert!(PROFILE.envelope.reports_failure(&serde_json::json!({"ok": false})));
//! ```

pub mod accounts;
pub mod envelope;
pub mod identity;
pub mod pagination;
pub mod servers;

use crate::security::{Requirement, SecurityScheme};

pub use accounts::{AccountFill, AccountList};
pub use envelope::BodyEnvelope;
pub use identity::{Identity, IdentityProbe};
pub use pagination::Pagination;
pub use servers::ServerVar;

/// Where `{permissions}` goes in the [`Refusals`] texts.
pub const PERMISSIONS_PLACEHOLDER: &str = "{permissions}";

/// What a catalogue says about its API, decided by the generator's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Base URL used when `--upstream` is not given (the spec's first
    /// server), a template whose `{name}` placeholders are
    /// [`Profile::server_vars`]; `None`, or a relative URL, makes the flag
    /// required.
    pub base_url: Option<&'static str>,
    /// The variables of [`Profile::base_url`], filled from their defaults
    /// or `--server-var name=value`.
    pub server_vars: &'static [ServerVar],
    /// Environment variable holding the upstream token for stdio (and HTTP
    /// with `--insecure-no-auth`) unless `--token-env` names another; the
    /// generator names it `<API>_API_TOKEN`.
    pub token_env: &'static str,
    /// Shape of the API's response bodies.
    pub envelope: BodyEnvelope,
    /// How the API pages its lists: list results of direct tools carry the
    /// next call's arguments.
    pub pagination: Pagination,
    /// How refused calls and empty lists are explained.
    pub refusals: Refusals,
    /// Path arguments naming an account, and how an omitted one is filled.
    pub accounts: AccountFill,
    /// The selector argument of merged-path tools, when the API has them.
    pub merged: Option<MergedSelector>,
    /// Code Mode: the example ending the `execute` tool's description (an
    /// async arrow function calling `api.request`). The generic value
    /// means "none given": the runtime then builds one from the served
    /// tools (`codemode::examples`).
    pub execute_example: &'static str,
    /// The API's credential schemes (`components.securitySchemes`); empty
    /// means one bearer token from [`Profile::token_env`] for every call.
    pub schemes: &'static [SecurityScheme],
    /// The spec's global requirement, for requests that match no tool
    /// (e.g. the account list).
    pub security: Requirement,
    /// The scheme a per-client upstream token fills (`--tokens-file`,
    /// `--token-env`): a one-secret scheme, whose first variable is
    /// [`Profile::token_env`]. `None`: every scheme is read from the
    /// server's environment.
    pub primary: Option<u16>,
    /// The scopes operations list for client-credentials schemes: a token
    /// request for a call asks only for those (empty: every call asks for
    /// the scheme's every scope).
    pub scopes: &'static [crate::security::OperationScopes],
    /// How the credential's identity is found: the `whoami` tool is listed
    /// only when the profile has one.
    pub identity: Option<Identity>,
    /// The scoped URLs a session may connect to besides `/mcp`
    /// (`/mcp/accounts/{account_id}`): empty for none.
    pub scoped_paths: &'static [ScopedPath],
    /// The skills the OAuth consent page offers (forge.json `skill_groups`):
    /// empty for one per product.
    pub skill_groups: &'static [SkillGroup],
}

/// A named group of tools a user may choose on the OAuth consent page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillGroup {
    /// The name shown and stored on the grant (`dns`).
    pub name: &'static str,
    /// The tools it holds, by name.
    pub tools: &'static [&'static str],
}

/// A path under `/mcp` that binds a session to the values of some spec
/// path parameters (see `crate::authz::PathScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopedPath {
    /// The template after `/mcp`, whose placeholders are the spec's
    /// path-parameter names (`/accounts/{account_id}`).
    pub template: &'static str,
    /// A `GET` path (same placeholders) whose success shows that a user's
    /// upstream token can see the scoped resource; checked once per grant.
    pub check: Option<&'static str>,
}

impl Profile {
    /// The profile of an API with no special rules: no default base URL,
    /// bare bodies, refusals explained from the tool's permissions only,
    /// no account filling, no merged paths, no identity (so no `whoami`
    /// tool). `token_env` is the variable holding the upstream token.
    pub const fn generic(token_env: &'static str) -> Self {
        Self {
            base_url: None,
            server_vars: &[],
            token_env,
            envelope: BodyEnvelope::BARE,
            pagination: Pagination::None,
            refusals: Refusals::GENERIC,
            accounts: AccountFill::Never,
            merged: None,
            execute_example: r#"async () => { const r = await api.request({ method: "GET", path: "/items", query: { limit: 5 } }); return r.result; }"#,
            schemes: &[],
            security: &[],
            primary: None,
            scopes: &[],
            identity: None,
            scoped_paths: &[],
            skill_groups: &[],
        }
    }

    /// Whether path argument `arg` names an account, given the merged
    /// route's selector (`(argument, value)`) when there is one. Always
    /// false when the profile fills no accounts.
    pub fn is_account_arg(&self, arg: &str, selector: Option<(&str, &str)>) -> bool {
        let AccountFill::FromList(list) = &self.accounts else {
            return false;
        };
        if list.args.contains(&arg) {
            return true;
        }
        match (self.merged, selector) {
            (Some(m), Some((selector_arg, value))) if m.id_arg == arg && m.arg == selector_arg => {
                m.variant(value).is_some_and(|v| list.args.contains(&v.id))
            }
            _ => false,
        }
    }

    /// The sentence the server instructions add about omitted account
    /// arguments (direct and `code` modes), when the profile fills them.
    pub fn account_note(&self) -> Option<String> {
        let AccountFill::FromList(list) = &self.accounts else {
            return None;
        };
        let arg = list.args.first()?;
        Some(format!(
            "Account-scoped tools use the token's only account when `{arg}` is omitted."
        ))
    }
}

/// How refused calls are explained. The texts are sentences; each
/// [`PERMISSIONS_PLACEHOLDER`] becomes the tool's permissions, quoted and
/// comma-separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusals {
    /// Added to a 401/403 when the tool documents permissions.
    pub grant: &'static str,
    /// Added to a 401/403 when the tool documents none.
    pub unknown: &'static str,
    /// Added to an empty list from a tool that documents permissions, for
    /// APIs that filter lists by permission instead of refusing them;
    /// `None`: empty lists are not flagged.
    pub empty_list: Option<&'static str>,
}

impl Refusals {
    /// Wording for any API: grant the permissions to the server's credential.
    pub const GENERIC: Self = Self {
        grant: "This call needs the permission(s) {permissions}; grant them to the credential the server uses.",
        unknown: "The API documents no specific permission for this call; check the credential's access.",
        empty_list: None,
    };

    /// The explanation of a refused call to a tool documenting
    /// `permissions`.
    pub fn advice(&self, permissions: &[&str]) -> String {
        if permissions.is_empty() {
            self.unknown.to_owned()
        } else {
            fill_permissions(self.grant, permissions)
        }
    }

    /// The note for an empty list from a tool documenting `permissions`,
    /// when the profile flags them and the tool documents some.
    pub fn empty_list_note(&self, permissions: &[&str]) -> Option<String> {
        let text = self.empty_list?;
        (!permissions.is_empty()).then(|| fill_permissions(text, permissions))
    }
}

fn fill_permissions(text: &str, permissions: &[&str]) -> String {
    let perms = permissions
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    text.replace(PERMISSIONS_PLACEHOLDER, &perms)
}

/// The selector of merged paths: one tool serves several path prefixes
/// (`/{scope}/{id}/…`), and argument `arg` picks the variant whose prefix
/// replaces `{arg}` (see [`crate::catalogue::Route::when`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedSelector {
    /// The selector argument.
    pub arg: &'static str,
    /// The ID argument that follows it in the path.
    pub id_arg: &'static str,
    /// The values the selector takes.
    pub variants: &'static [MergedVariant],
}

impl MergedSelector {
    /// The variant the selector value `value` picks.
    pub fn variant(&self, value: &str) -> Option<&'static MergedVariant> {
        self.variants.iter().find(|v| v.value == value)
    }

    /// The sentence of the Code Mode `search` description that explains
    /// the variants are separate paths in the spec.
    pub fn search_note(&self) -> String {
        let nouns: Vec<&str> = self.variants.iter().map(|v| v.noun).collect();
        let nouns = match nouns.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => return String::new(),
        };
        let mut chars = nouns.chars();
        let nouns: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        let paths: Vec<String> = self
            .variants
            .iter()
            .map(|v| format!("/{}/{{{}}}/…", v.value, v.id))
            .collect();
        format!(
            "{nouns} variants are separate paths ({}).",
            paths.join(", ")
        )
    }
}

/// One value of a [`MergedSelector`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedVariant {
    /// The selector value, also the first path segment (`accounts`).
    pub value: &'static str,
    /// The ID's name in the real path (`account_id`): the resolved spec
    /// for Code Mode shows `/{value}/{id}/…`.
    pub id: &'static str,
    /// What the ID names, in the singular (`account`).
    pub noun: &'static str,
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
