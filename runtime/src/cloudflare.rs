//! Cloudflare behaviours: the default account of a credential, and the
//! envelope's error messages.
//!
//! Account-scoped tools take the account ID as a path argument that the
//! schemas mark optional. When it is omitted, the runtime asks the API which
//! accounts the credential sees (one `GET /accounts` per credential, cached)
//! and uses the only one; with several or none, the call is refused with a
//! message that lists them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::catalogue::{Method, ParamLocation, ToolDef};
use crate::credential::Credential;
use crate::request::{Args, HttpRequest};
use crate::upstream::{Upstream, UpstreamError};

/// Path arguments that name an account.
pub const ACCOUNT_ARGS: [&str; 3] = ["account_id", "accountId", "account_identifier"];
/// The selector argument of merged account/zone tools.
pub const SCOPE_ARG: &str = "account_or_zone";
/// The ID argument of merged account/zone tools.
pub const SCOPE_ID_ARG: &str = "account_or_zone_id";

/// How many accounts one `GET /accounts` asks for.
const ACCOUNTS_PAGE: u32 = 50;

/// The argument of `tool` that should be filled with the default account,
/// when the caller omitted it.
pub fn account_slot(tool: &ToolDef, args: &Args) -> Option<&'static str> {
    let missing = |arg: &str| match args.get(arg) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    for p in tool.params {
        if p.location != ParamLocation::Path {
            continue;
        }
        if ACCOUNT_ARGS.contains(&p.arg) && missing(p.arg) {
            return Some(p.arg);
        }
        if p.arg == SCOPE_ID_ARG
            && args.get(SCOPE_ARG).and_then(Value::as_str) == Some("accounts")
            && missing(p.arg)
        {
            return Some(p.arg);
        }
    }
    None
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
        "tool `{tool}` needs `{arg}`, and the API token sees no account to default to (GET /accounts returned none); pass `{arg}` explicitly, or grant the token access to an account"
    )]
    None {
        /// Tool name.
        tool: &'static str,
        /// The argument to pass.
        arg: &'static str,
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
    /// `GET /accounts` failed.
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

/// Per-credential cache of `GET /accounts` (successes only; a failed
/// lookup is retried on the next call).
#[derive(Debug, Default)]
pub struct AccountCache {
    slots: Mutex<HashMap<[u8; 32], Slot>>,
}

impl AccountCache {
    /// Fills `arg` in `args` with the credential's only account.
    ///
    /// # Errors
    ///
    /// No account, several accounts (listed), or a failed lookup.
    pub async fn fill(
        &self,
        tool: &'static ToolDef,
        arg: &'static str,
        args: &mut Args,
        upstream: &Upstream,
        credential: Option<&Credential>,
    ) -> Result<(), AccountError> {
        let accounts = self
            .accounts(upstream, credential)
            .await
            .map_err(|detail| AccountError::Lookup {
                tool: tool.name,
                arg,
                detail,
            })?;
        let id = choose(tool.name, arg, &accounts)?;
        args.insert(arg.to_owned(), Value::String(id));
        Ok(())
    }

    /// The accounts of `credential`, from the cache or one `GET /accounts`.
    async fn accounts(
        &self,
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
        slot.get_or_try_init(|| fetch(upstream, credential))
            .await
            .cloned()
    }
}

fn choose(
    tool: &'static str,
    arg: &'static str,
    accounts: &Accounts,
) -> Result<String, AccountError> {
    match accounts.list.as_slice() {
        [] => Err(AccountError::None { tool, arg }),
        [only] if accounts.total <= 1 => Ok(only.id.clone()),
        list => Err(AccountError::Several {
            tool,
            arg,
            accounts: list.to_vec(),
            total: accounts.total.max(list.len()),
        }),
    }
}

async fn fetch(upstream: &Upstream, credential: Option<&Credential>) -> Result<Accounts, String> {
    let req = HttpRequest {
        method: Method::Get,
        path_and_query: format!("/accounts?per_page={ACCOUNTS_PAGE}"),
        headers: Vec::new(),
        body: None,
    };
    let resp = upstream
        .send(&req, credential)
        .await
        .map_err(|e: UpstreamError| e.to_string())?;
    let body: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    if !resp.status.is_success() {
        let messages = error_messages(&body);
        let mut detail = format!("GET /accounts answered {}", resp.status);
        if !messages.is_empty() {
            detail.push_str(" (");
            detail.push_str(&messages.join("; "));
            detail.push(')');
        }
        if matches!(resp.status.as_u16(), 401 | 403) {
            detail
                .push_str("; listing accounts needs the token permission `Account Settings Read`");
        }
        return Err(detail);
    }
    let Some(items) = body.get("result").and_then(Value::as_array) else {
        return Err("GET /accounts did not return a `result` list".into());
    };
    let list: Vec<Account> = items
        .iter()
        .filter_map(|a| {
            Some(Account {
                id: a.get("id")?.as_str()?.to_owned(),
                name: a
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("unnamed")
                    .to_owned(),
            })
        })
        .collect();
    let total = body
        .pointer("/result_info/total_count")
        .and_then(Value::as_u64)
        .map_or(list.len(), |n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(Accounts {
        total: total.max(list.len()),
        list,
    })
}

/// The API's error messages from a Cloudflare envelope (`errors[].code`
/// and `.message`) or a generic body (`message`, `error`, `detail`).
pub fn error_messages(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(errors) = body.get("errors").and_then(Value::as_array) {
        for e in errors.iter().take(10) {
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| e.to_string());
            match e.get("code") {
                Some(code) if !code.is_null() => out.push(format!("code {code}: {message}")),
                _ => out.push(message),
            }
        }
    }
    if out.is_empty() {
        for key in ["message", "error", "detail", "error_description"] {
            match body.get(key) {
                Some(Value::String(s)) => out.push(s.clone()),
                Some(Value::Object(o)) => {
                    if let Some(m) = o.get("message").and_then(Value::as_str) {
                        out.push(m.to_owned());
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{ParamDef, ParamStyle};
    use crate::request::testing::{args, custom};
    use serde_json::json;

    fn with_path_params(names: &'static [&'static str]) -> &'static ToolDef {
        let params: Vec<ParamDef> = names
            .iter()
            .map(|&n| ParamDef {
                arg: n,
                name: n,
                location: ParamLocation::Path,
                style: ParamStyle::Simple,
                explode: false,
                required: false,
                allow_reserved: false,
            })
            .collect();
        custom(move |t| t.params = params.leak())
    }

    #[test]
    fn account_slot_finds_omitted_account_arguments() {
        let t = with_path_params(&["account_id", "zone_id"]);
        assert_eq!(account_slot(t, &args(json!({}))), Some("account_id"));
        assert_eq!(
            account_slot(t, &args(json!({"account_id": ""}))),
            Some("account_id")
        );
        assert_eq!(account_slot(t, &args(json!({"account_id": "a"}))), None);
        let t = with_path_params(&["accountId"]);
        assert_eq!(
            account_slot(t, &args(json!({"accountId": null}))),
            Some("accountId")
        );
        let merged = with_path_params(&["account_or_zone_id"]);
        assert_eq!(
            account_slot(merged, &args(json!({"account_or_zone": "accounts"}))),
            Some("account_or_zone_id")
        );
        assert_eq!(
            account_slot(merged, &args(json!({"account_or_zone": "zones"}))),
            None
        );
        assert_eq!(
            account_slot(with_path_params(&["zone_id"]), &args(json!({}))),
            None
        );
    }

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
        assert_eq!(choose("t", "account_id", &one).unwrap(), "x");
        let err = choose(
            "t",
            "account_id",
            &Accounts {
                list: vec![],
                total: 0,
            },
        )
        .unwrap_err();
        assert!(matches!(err, AccountError::None { .. }));
        let many = Accounts {
            list: vec![a("x"), a("y")],
            total: 5,
        };
        let text = choose("t", "account_id", &many).unwrap_err().to_string();
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
        assert!(choose("t", "account_id", &partial).is_err());
    }

    #[test]
    fn error_messages_from_envelopes_and_generic_bodies() {
        assert_eq!(
            error_messages(
                &json!({"errors": [{"code": 7003, "message": "No route"}, {"message": "second"}]})
            ),
            ["code 7003: No route", "second"]
        );
        assert_eq!(error_messages(&json!({"message": "plain"})), ["plain"]);
        assert_eq!(
            error_messages(&json!({"error": {"message": "nested"}})),
            ["nested"]
        );
        assert!(error_messages(&json!({"errors": []})).is_empty());
        assert!(error_messages(&json!([1])).is_empty());
    }
}
