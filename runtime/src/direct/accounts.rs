//! Filling an omitted account argument with the credential's only account
//! ([`crate::profile::AccountFill::FromList`]).
//!
//! Account-scoped tools of such a profile take the account ID as a path
//! argument that the schemas mark optional. When it is omitted, the runtime
//! asks the API which accounts the credential sees (one listing request per
//! credential, cached) and uses the only one; with several or none, the call
//! is refused with a message that lists them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::catalogue::{Method, ParamLocation, ToolDef};
use crate::credential::Credential;
use crate::profile::{AccountFill, AccountList, BodyEnvelope, Profile};
use crate::request::{Args, HttpRequest};
use crate::upstream::{Upstream, UpstreamError};

// The profile's reading of one call, defined here beside the cache that
// fills the slot: `profile/` holds data and names no tool or request type.
impl Profile {
    /// The argument of `tool` to fill with the default account because
    /// the caller omitted it (absent, `null` or empty): a path argument
    /// naming an account, or the ID of a merged route whose selector picks
    /// an account scope. `None` when the profile fills no accounts.
    pub fn account_slot(&self, tool: &ToolDef, args: &Args) -> Option<&'static str> {
        let AccountFill::FromList(_) = self.accounts else {
            return None;
        };
        let missing = |arg: &str| match args.get(arg) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        let selector = self
            .merged
            .and_then(|m| Some((m.arg, args.get(m.arg)?.as_str()?)));
        tool.params
            .iter()
            .filter(|p| p.location == ParamLocation::Path)
            .find(|p| self.is_account_arg(p.arg, selector) && missing(p.arg))
            .map(|p| p.arg)
    }
}

/// An account the credential can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Account ID.
    pub id: String,
    /// Account name.
    pub name: String,
}

/// The accounts visible to one credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accounts {
    /// The first page of accounts.
    pub list: Vec<Account>,
    /// Total count reported by the API (may exceed `list.len()`).
    pub total: usize,
}

/// Why no default account could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The credential sees no account.
    #[error(
        "tool `{tool}` needs `{arg}`, and the API token sees no account to default to (GET {listing} returned none); pass `{arg}` explicitly, or grant the token access to an account"
    )]
    None {
        /// Tool name.
        tool: &'static str,
        /// The argument to pass.
        arg: &'static str,
        /// The listing path (without query).
        listing: &'static str,
    },
    /// The credential sees several accounts.
    #[error(
        "tool `{tool}` needs `{arg}`: the API token sees {total} accounts, so there is no single default; pass `{arg}` as one of:\n{}{}",
        .accounts.iter().map(|a| format!("- {} ({})", a.id, a.name)).collect::<Vec<_>>().join("\n"),
        if *.total > .accounts.len() { format!("\n- … and {} more", .total - .accounts.len()) } else { String::new() }
    )]
    Several {
        /// Tool name.
        tool: &'static str,
        /// The argument to pass.
        arg: &'static str,
        /// The accounts listed.
        accounts: Vec<Account>,
        /// How many there are in all.
        total: usize,
    },
    /// The listing request failed.
    #[error(
        "tool `{tool}` needs `{arg}`, and the default account could not be looked up: {detail}; pass `{arg}` explicitly"
    )]
    Lookup {
        /// Tool name.
        tool: &'static str,
        /// The argument to pass.
        arg: &'static str,
        /// What went wrong.
        detail: String,
    },
}

type Slot = Arc<tokio::sync::OnceCell<Accounts>>;

/// Per-credential cache of the account listing (successes only; a failed
/// lookup is retried on the next call).
#[derive(Debug, Default)]
pub struct AccountCache {
    slots: Mutex<HashMap<[u8; 32], Slot>>,
}

impl AccountCache {
    /// Fills `arg` in `args` with the only account `list` finds for the
    /// credential.
    ///
    /// # Errors
    ///
    /// No account, several accounts (listed), or a failed lookup.
    #[allow(clippy::too_many_arguments)]
    pub async fn fill(
        &self,
        list: &AccountList,
        envelope: BodyEnvelope,
        tool: &'static ToolDef,
        arg: &'static str,
        args: &mut Args,
        upstream: &Upstream,
        credential: Option<&Credential>,
    ) -> Result<(), AccountError> {
        let accounts = self
            .accounts(list, envelope, upstream, credential)
            .await
            .map_err(|detail| AccountError::Lookup {
                tool: tool.name,
                arg,
                detail,
            })?;
        let id = choose(list, tool.name, arg, &accounts)?;
        args.insert(arg.to_owned(), Value::String(id));
        Ok(())
    }

    /// The accounts of `credential`, from the cache or one listing request.
    async fn accounts(
        &self,
        list: &AccountList,
        envelope: BodyEnvelope,
        upstream: &Upstream,
        credential: Option<&Credential>,
    ) -> Result<Accounts, String> {
        let key = credential.map_or([0; 32], Credential::cache_key);
        let slot: Slot = {
            let mut slots = self
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(key).or_default().clone()
        };
        slot.get_or_try_init(|| fetch(list, envelope, upstream, credential))
            .await
            .cloned()
    }
}

fn choose(
    listing: &AccountList,
    tool: &'static str,
    arg: &'static str,
    accounts: &Accounts,
) -> Result<String, AccountError> {
    match accounts.list.as_slice() {
        [] => Err(AccountError::None {
            tool,
            arg,
            listing: listing.shown_path(),
        }),
        [only] if accounts.total <= 1 => Ok(only.id.clone()),
        list => Err(AccountError::Several {
            tool,
            arg,
            accounts: list.to_vec(),
            total: accounts.total.max(list.len()),
        }),
    }
}

async fn fetch(
    list: &AccountList,
    envelope: BodyEnvelope,
    upstream: &Upstream,
    credential: Option<&Credential>,
) -> Result<Accounts, String> {
    let shown = list.shown_path();
    let req = HttpRequest {
        method: Method::Get,
        path_and_query: list.path.to_owned(),
        headers: Vec::new(),
        body: None,
        security: None,
        operation: None,
    };
    let resp = upstream
        .send(&req, credential)
        .await
        .map_err(|e: UpstreamError| e.to_string())?;
    let body: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    if !resp.status.is_success() {
        let messages = envelope.error_messages(&body);
        let mut detail = format!("GET {shown} answered {}", resp.status);
        if !messages.is_empty() {
            detail.push_str(" (");
            detail.push_str(&messages.join("; "));
            detail.push(')');
        }
        if matches!(resp.status.as_u16(), 401 | 403)
            && let Some(permission) = list.permission
        {
            detail.push_str(&format!(
                "; listing accounts needs the token permission `{permission}`"
            ));
        }
        return Err(detail);
    }
    let Some(items) = body.pointer(list.items).and_then(Value::as_array) else {
        return Err(format!(
            "GET {shown} did not return a `{}` list",
            list.items.trim_start_matches('/')
        ));
    };
    let found: Vec<Account> = items
        .iter()
        .filter_map(|a| {
            Some(Account {
                id: a.get(list.id_field)?.as_str()?.to_owned(),
                name: a
                    .get(list.name_field)
                    .and_then(Value::as_str)
                    .unwrap_or("unnamed")
                    .to_owned(),
            })
        })
        .collect();
    let total = list
        .total
        .and_then(|pointer| body.pointer(pointer))
        .and_then(Value::as_u64)
        .map_or(found.len(), |n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(Accounts {
        total: total.max(found.len()),
        list: found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::testing::ACCOUNTS;

    #[test]
    fn choosing_the_default_account() {
        let a = |id: &str| Account {
            id: id.into(),
            name: format!("{id} name"),
        };
        let one = Accounts {
            list: vec![a("x")],
            total: 1,
        };
        assert_eq!(choose(&ACCOUNTS, "t", "account_id", &one).unwrap(), "x");
        let err = choose(
            &ACCOUNTS,
            "t",
            "account_id",
            &Accounts {
                list: vec![],
                total: 0,
            },
        )
        .unwrap_err();
        assert!(matches!(err, AccountError::None { .. }));
        assert!(
            err.to_string().contains("(GET /accounts returned none)"),
            "{err}"
        );
        let many = Accounts {
            list: vec![a("x"), a("y")],
            total: 5,
        };
        let text = choose(&ACCOUNTS, "t", "account_id", &many)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("- x (x name)") && text.contains("- y (y name)"),
            "{text}"
        );
        assert!(
            text.contains("5 accounts") && text.contains("3 more"),
            "{text}"
        );
        // one listed but more exist: still ambiguous
        let partial = Accounts {
            list: vec![a("x")],
            total: 2,
        };
        assert!(choose(&ACCOUNTS, "t", "account_id", &partial).is_err());
    }
}
