//! The explanation of a refused (401/403) call, worded from the decision
//! for the connection it came on: whose credential lacks what, and the fix
//! the caller can act on.

use super::{Connection, Decision, HiddenBy, decide, hidden};
use crate::catalogue::ToolDef;
use crate::profile::{PERMISSIONS_PLACEHOLDER, Profile};

/// Permissions named in one explanation; the rest are counted ("and N more").
pub const MAX_LISTED_PERMISSIONS: usize = 8;

/// The sentence(s) explaining why the upstream refused `tool` at `path`
/// for `connection`, in the words of `profile` for static credentials.
pub fn explain(connection: &Connection, tool: &ToolDef, path: &str, profile: &Profile) -> String {
    match decide(connection, tool, path) {
        Decision::Direct { permissions: [] } => profile.refusals.unknown.to_owned(),
        Decision::Direct { permissions } => {
            let text = profile
                .refusals
                .grant
                .replace(PERMISSIONS_PLACEHOLDER, &listed(permissions));
            match connection {
                Connection::ClientToken | Connection::ScopedClientToken(_) => format!(
                    "{text} The server uses the upstream token its operator mapped to your client token, so ask the operator to grant them."
                ),
                _ => text,
            }
        }
        Decision::Granted { scope: Some(scope) } => format!(
            "This session holds the scope `{scope}`, which covers this call, so the signed-in account itself may not make it (its role, or the resource belongs to an account it cannot reach); signing in again with more scopes will not help."
        ),
        Decision::Granted { scope: None } => format!(
            "The API documents no scope for this call; check that the signed-in account can reach the resource. {}",
            widen()
        ),
        Decision::Hidden(by) => hidden_text(connection, tool, by),
        Decision::Missing {
            accepted,
            ask_for: Some(scope),
            ..
        } => format!(
            "This session was not granted a scope that covers this call (accepted: {}). Re-authorize the connection and grant `{scope}`; clients that support step-up authorization do so on their own.",
            quoted(&accepted)
        ),
        Decision::Missing { options, .. } => format!(
            "This session was not granted a scope that covers this call. Re-authorize the connection and grant one of {}.",
            quoted(&options)
        ),
        Decision::Unreachable { permissions } => format!(
            "No OAuth scope of this server covers this call (it needs the permission(s) {}), so no sign-in can allow it: use a server set up with an API token that has them (`--auth tokens`).",
            listed(permissions)
        ),
    }
}

fn widen() -> &'static str {
    "If the session lacks access, reconnect the server in your client and choose more on the consent page."
}

/// At most [`MAX_LISTED_PERMISSIONS`] quoted, then "and N more".
fn listed(permissions: &[&str]) -> String {
    let shown: Vec<String> = permissions
        .iter()
        .take(MAX_LISTED_PERMISSIONS)
        .map(|p| format!("`{p}`"))
        .collect();
    let rest = permissions.len().saturating_sub(MAX_LISTED_PERMISSIONS);
    let mut out = shown.join(", ");
    if rest > 0 {
        out.push_str(&format!(" and {rest} more"));
    }
    out
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The refusal of a call to a tool outside the connection's exposure,
/// made before any upstream request; `None` when the tool is exposed.
pub fn hidden_refusal(connection: &Connection, tool: &ToolDef) -> Option<String> {
    hidden(connection, tool).map(|by| hidden_text(connection, tool, by))
}

fn hidden_text(connection: &Connection, tool: &ToolDef, by: HiddenBy) -> String {
    let (why, fix) = match by {
        HiddenBy::ReadOnly => (
            "this session was authorized read only and the call writes",
            "choose a template that allows changes (or full access)".to_owned(),
        ),
        HiddenBy::Product => {
            let (skills, grouped) = match connection {
                Connection::OAuth(grant) => (grant.skills_of(tool), !grant.groups.is_empty()),
                _ => (vec![tool.product], false),
            };
            let named: Vec<String> = skills.iter().map(|s| format!("`{s}`")).collect();
            (
                if grouped {
                    "this session was authorized for other skills"
                } else {
                    "this session was authorized for other products"
                },
                match named.as_slice() {
                    [] => "choose full access".to_owned(),
                    [one] => format!("include {one}"),
                    more => format!("include one of {}", more.join(", ")),
                },
            )
        }
    };
    format!(
        "`{}` is outside what this session was authorized for: {why}. To widen the session, reconnect the server in your client (sign in again) and on the consent page {fix}.",
        tool.name
    )
}
