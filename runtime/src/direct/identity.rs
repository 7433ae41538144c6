//! The credential's identity ([`Identity`]): what the `whoami` tool
//! answers, as a stable string `<prefix>:<id>` (`user:7c5d…`), never the
//! credential itself.
//!
//! A profile lists identity probes, each a `GET` whose payload (the
//! envelope's `result` when the profile has one) holds the ID at a JSON
//! pointer. They are tried in order; a probe that is refused (any 4xx),
//! whose answer is not JSON, reports failure in its envelope or lacks the
//! ID, gives way to the next one. A probe with [`IdentityProbe::only`]
//! reads a list that must hold exactly one item (an account-owned token's
//! account). The answer is cached per credential (successes only).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::catalogue::Method;
use crate::credential::Credential;
use crate::profile::{BodyEnvelope, Identity, IdentityProbe};
use crate::request::HttpRequest;
use crate::security::Requirement;
use crate::upstream::Upstream;

/// Longest ID or name kept from an answer (longer values are cut).
const MAX_VALUE_CHARS: usize = 200;

/// Who a credential is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Whoami {
    /// `<prefix>:<id>`, stable for the credential.
    pub identity: String,
    /// A display name, when the API gives one.
    pub name: Option<String>,
}

/// Why no identity was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the credential's identity could not be determined: {}", .0.join("; "))]
pub struct IdentityError(pub Vec<String>);

/// What one probe gave: an identity, a reason to try the next probe, or
/// a failure that ends the lookup (the API could not be reached).
#[derive(Debug, PartialEq, Eq)]
enum Probed {
    Found(Whoami),
    Next(String),
    Stop(String),
}

/// Reads one probe's answer (`status`, `body`).
fn read_answer(probe: &IdentityProbe, envelope: BodyEnvelope, status: u16, body: &[u8]) -> Probed {
    let shown = probe.shown_path();
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        let mut detail = format!("GET {shown} answered {status}");
        let messages = parsed
            .as_ref()
            .map(|b| envelope.error_messages(b))
            .unwrap_or_default();
        if !messages.is_empty() {
            detail.push_str(&format!(" ({})", messages.join("; ")));
        }
        return if (400..500).contains(&status) {
            Probed::Next(detail)
        } else {
            Probed::Stop(detail)
        };
    }
    let Some(mut body) = parsed else {
        return Probed::Next(format!("GET {shown} did not answer JSON"));
    };
    if envelope.reports_failure(&body) {
        let messages = envelope.error_messages(&body);
        return Probed::Next(format!(
            "GET {shown} reported failure ({})",
            messages.join("; ")
        ));
    }
    let payload = match envelope.unwrap(&mut body) {
        Some((result, _)) => result,
        None => body,
    };
    let item = match probe.only {
        None => &payload,
        Some(pointer) => match payload.pointer(pointer).and_then(Value::as_array) {
            Some(items) if items.len() == 1 => &items[0],
            Some(items) => {
                return Probed::Next(format!(
                    "GET {shown} lists {} items, not exactly one",
                    items.len()
                ));
            }
            None => return Probed::Next(format!("GET {shown} did not return a list")),
        },
    };
    let Some(id) = item.pointer(probe.id).and_then(scalar) else {
        return Probed::Next(format!("GET {shown} answered without `{}`", probe.id));
    };
    let name = probe
        .name
        .and_then(|p| item.pointer(p))
        .and_then(scalar)
        .filter(|n| !n.is_empty());
    Probed::Found(Whoami {
        identity: format!("{}:{id}", probe.prefix),
        name,
    })
}

/// A non-empty string or a number, cut to [`MAX_VALUE_CHARS`].
fn scalar(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then(|| text.chars().take(MAX_VALUE_CHARS).collect())
}

type Slot = Arc<tokio::sync::OnceCell<Whoami>>;

/// Per-credential cache of identities (successes only; a failed lookup is
/// retried on the next call).
#[derive(Debug, Default)]
pub struct IdentityCache {
    slots: Mutex<HashMap<[u8; 32], Slot>>,
}

/// What a lookup needs besides the credential.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    /// The probes.
    pub identity: &'a Identity,
    /// The profile's envelope.
    pub envelope: BodyEnvelope,
    /// The upstream client.
    pub upstream: &'a Upstream,
    /// The requirement of each probe (the matching tool's, else `None`:
    /// the profile's global one), in probe order.
    pub security: &'a [Option<Requirement>],
}

impl IdentityCache {
    /// The identity of `credential`, from the cache or the probes. The
    /// texts are redacted of the credential.
    ///
    /// # Errors
    ///
    /// Every probe failed, or the API could not be reached.
    pub async fn whoami(
        &self,
        lookup: Lookup<'_>,
        credential: &Credential,
    ) -> Result<Whoami, IdentityError> {
        let slot: Slot = {
            let mut slots = self
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(credential.cache_key()).or_default().clone()
        };
        slot.get_or_try_init(|| probe_all(lookup, credential))
            .await
            .cloned()
    }
}

async fn probe_all(lookup: Lookup<'_>, credential: &Credential) -> Result<Whoami, IdentityError> {
    let mut reasons = Vec::new();
    for (i, probe) in lookup.identity.probes.iter().enumerate() {
        let req = HttpRequest {
            method: Method::Get,
            path_and_query: probe.path.to_owned(),
            headers: Vec::new(),
            body: None,
            security: lookup.security.get(i).cloned().flatten(),
            operation: None,
        };
        let probed = match lookup.upstream.send(&req, Some(credential)).await {
            Ok(resp) => read_answer(probe, lookup.envelope, resp.status.as_u16(), &resp.body),
            Err(e) => Probed::Stop(format!("GET {}: {e}", probe.shown_path())),
        };
        match probed {
            Probed::Found(who) => return Ok(clean(who, credential)),
            Probed::Next(why) => reasons.push(credential.redact(&why)),
            Probed::Stop(why) => {
                reasons.push(credential.redact(&why));
                break;
            }
        }
    }
    if reasons.is_empty() {
        reasons.push("the profile declares no identity probe".into());
    }
    Err(IdentityError(reasons))
}

/// `who` with any trace of the credential removed: a name holding it is
/// dropped, an ID holding it is redacted.
fn clean(who: Whoami, credential: &Credential) -> Whoami {
    let name = who.name.filter(|n| credential.redact(n) == *n);
    Whoami {
        identity: credential.redact(&who.identity),
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::testing::ENVELOPED;

    const USER: IdentityProbe = IdentityProbe {
        path: "/user",
        only: None,
        id: "/id",
        name: Some("/email"),
        prefix: "user",
    };
    const ACCOUNT: IdentityProbe = IdentityProbe {
        path: "/accounts?per_page=50",
        only: Some(""),
        id: "/id",
        name: Some("/name"),
        prefix: "account",
    };

    fn read(probe: &IdentityProbe, envelope: BodyEnvelope, status: u16, body: &str) -> Probed {
        read_answer(probe, envelope, status, body.as_bytes())
    }

    fn found(identity: &str, name: Option<&str>) -> Probed {
        Probed::Found(Whoami {
            identity: identity.into(),
            name: name.map(str::to_owned),
        })
    }

    #[test]
    fn extracts_the_id_and_name_from_an_envelope() {
        let body =
            r#"{"success":true,"errors":[],"messages":[],"result":{"id":"7c5d","email":"a@b.c"}}"#;
        assert_eq!(
            read(&USER, ENVELOPED.envelope, 200, body),
            found("user:7c5d", Some("a@b.c"))
        );
        // bare bodies are the payload; numbers are IDs too
        assert_eq!(
            read(&USER, BodyEnvelope::BARE, 200, r#"{"id":42}"#),
            found("user:42", None)
        );
    }

    #[test]
    fn a_single_account_list_gives_the_account() {
        let one = r#"{"success":true,"result":[{"id":"acc1","name":"Main"}]}"#;
        assert_eq!(
            read(&ACCOUNT, ENVELOPED.envelope, 200, one),
            found("account:acc1", Some("Main"))
        );
        let two = r#"{"success":true,"result":[{"id":"a"},{"id":"b"}]}"#;
        let Probed::Next(why) = read(&ACCOUNT, ENVELOPED.envelope, 200, two) else {
            panic!("several accounts are no identity");
        };
        assert!(why.contains("2 items"), "{why}");
        assert!(matches!(
            read(
                &ACCOUNT,
                ENVELOPED.envelope,
                200,
                r#"{"success":true,"result":{}}"#
            ),
            Probed::Next(_)
        ));
    }

    #[test]
    fn refusals_missing_fields_and_non_json_try_the_next_probe() {
        let refused =
            r#"{"success":false,"errors":[{"code":9109,"message":"Invalid access token"}]}"#;
        let Probed::Next(why) = read(&USER, ENVELOPED.envelope, 403, refused) else {
            panic!("a refusal tries the next probe");
        };
        assert_eq!(
            why,
            "GET /user answered 403 (code 9109: Invalid access token)"
        );
        assert!(matches!(
            read(&USER, ENVELOPED.envelope, 200, refused),
            Probed::Next(_)
        ));
        assert!(matches!(
            read(&USER, BodyEnvelope::BARE, 200, "<html>"),
            Probed::Next(_)
        ));
        assert!(matches!(
            read(&USER, BodyEnvelope::BARE, 200, r#"{"id":"","email":"x"}"#),
            Probed::Next(_)
        ));
        assert!(matches!(
            read(&USER, BodyEnvelope::BARE, 200, r#"{"id":{"nested":1}}"#),
            Probed::Next(_)
        ));
        assert!(matches!(
            read(&USER, BodyEnvelope::BARE, 502, "bad gateway"),
            Probed::Stop(_)
        ));
    }

    #[test]
    fn long_values_are_cut_and_the_credential_is_removed() {
        let long = "x".repeat(500);
        let Probed::Found(who) = read(
            &USER,
            BodyEnvelope::BARE,
            200,
            &format!(r#"{{"id":"{long}"}}"#),
        ) else {
            panic!("found");
        };
        assert_eq!(who.identity.len(), "user:".len() + MAX_VALUE_CHARS);
        let credential = Credential::new("secret-token-value-1234", "test").unwrap();
        let who = clean(
            Whoami {
                identity: "user:secret-token-value-1234".into(),
                name: Some("secret-token-value-1234".into()),
            },
            &credential,
        );
        assert!(!who.identity.contains("secret-token-value-1234"));
        assert_eq!(who.name, None);
    }
}
