//! The credentials of a profile's schemes, read once from the server's
//! environment, and the choice of what to send for one request.

use std::sync::Arc;

use base64::Engine as _;

use super::CredentialError;
use super::oauth2::TokenSource;
use crate::profile::Profile;
use crate::redact::forms::{pair_forms, sent_forms};
use crate::security::{KeyLocation, Requirement, SchemeKind, SecurityScheme};

/// The value configured for one scheme (no `Debug`: it holds secrets).
pub(super) enum SchemeValue {
    /// An API key or bearer token.
    Secret(String),
    /// HTTP basic: the secret (the password, or the user name when the
    /// password is empty, as Stripe's key), the `user:password` pair and
    /// the whole header value.
    Basic {
        secret: String,
        pair: String,
        header: String,
    },
    /// OAuth client credentials.
    Client(Arc<TokenSource>),
}

/// Every scheme's credential from the server's environment; shared by all
/// callers of a server (client-credentials tokens are fetched once). Its
/// `Debug` output names the configured variables, never a value.
pub struct ServerSecrets {
    pub(super) profile: &'static Profile,
    /// Per scheme index: what is configured.
    pub(super) values: Vec<Option<SchemeValue>>,
    /// Per scheme index: the variables it is read from.
    pub(super) vars: Vec<Vec<String>>,
}

impl std::fmt::Debug for ServerSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSecrets")
            .field("configured", &self.configured())
            .finish_non_exhaustive()
    }
}

impl ServerSecrets {
    /// Reads every scheme of `profile` through `env` (the process
    /// environment in the server). The primary scheme is read from
    /// `token_env` (`--token-env`, by default the profile's). A variable
    /// that is unset or empty leaves its scheme unconfigured.
    ///
    /// # Errors
    ///
    /// A value that cannot be sent in a header, a basic user name with a
    /// colon, a basic password without a user name, or half of a client
    /// pair (ID without secret). A basic user name without a password is
    /// valid: RFC 7617 allows an empty password, and APIs such as Stripe
    /// take the key as the user name.
    pub fn from_env(
        profile: &'static Profile,
        token_env: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, CredentialError> {
        let mut values = Vec::with_capacity(profile.schemes.len());
        let mut vars = Vec::with_capacity(profile.schemes.len());
        for (index, scheme) in profile.schemes.iter().enumerate() {
            let mut names: Vec<String> = scheme.env.iter().map(|s| (*s).to_owned()).collect();
            if profile.primary == u16::try_from(index).ok()
                && let Some(first) = names.first_mut()
            {
                token_env.clone_into(first);
            }
            let read = |i: usize| -> Result<Option<String>, CredentialError> {
                let Some(name) = names.get(i) else {
                    return Ok(None);
                };
                read_var(name, &env)
            };
            let value = match scheme.kind {
                SchemeKind::ApiKey { .. } | SchemeKind::Bearer => read(0)?.map(SchemeValue::Secret),
                SchemeKind::Basic => match (read(0)?, read(1)?) {
                    (Some(user), password) => {
                        Some(basic(&names[0], user, password.unwrap_or_default())?)
                    }
                    (None, None) => None,
                    (None, Some(_)) => {
                        return Err(half_pair(
                            &names,
                            "a password needs the user name (the user name alone is enough)",
                        ));
                    }
                },
                SchemeKind::ClientCredentials { token_url, scopes } => match (read(0)?, read(1)?) {
                    (Some(id), Some(secret)) => Some(SchemeValue::Client(Arc::new(
                        TokenSource::new(scheme.name, token_url, scopes, id, secret),
                    ))),
                    (None, None) => None,
                    _ => return Err(half_pair(&names, "set both variables or neither")),
                },
                SchemeKind::Unsupported { .. } => None,
            };
            values.push(value);
            vars.push(names);
        }
        Ok(Self {
            profile,
            values,
            vars,
        })
    }

    /// The profile these secrets belong to.
    pub fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// The variables of the configured schemes (names only, for logs).
    pub fn configured(&self) -> Vec<&str> {
        self.values
            .iter()
            .zip(&self.vars)
            .filter(|(v, _)| v.is_some())
            .flat_map(|(_, names)| names.iter().map(String::as_str))
            .collect()
    }

    /// The variables of the schemes that are not configured (and can be).
    pub fn unconfigured(&self) -> Vec<&str> {
        self.values
            .iter()
            .zip(&self.vars)
            .filter(|(v, _)| v.is_none())
            .flat_map(|(_, names)| names.iter().map(String::as_str))
            .collect()
    }

    /// Every static secret in every form it is sent in, for the
    /// redactor: keys and tokens (raw and form-encoded, as in a query),
    /// passwords, the basic `user:password` and its base64, client IDs and
    /// secrets with their Basic pair (see [`crate::redact::forms`]).
    pub(super) fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        for value in self.values.iter().flatten() {
            match value {
                SchemeValue::Secret(s) => out.extend(sent_forms(s)),
                SchemeValue::Basic { secret, pair, .. } => {
                    out.extend(sent_forms(secret));
                    out.extend(pair_forms(pair));
                }
                SchemeValue::Client(source) => {
                    out.extend(source.client_secrets().map(str::to_owned));
                }
            }
        }
        out
    }

    /// The client-credentials sources (their fetched tokens are redacted).
    pub(super) fn token_sources(&self) -> impl Iterator<Item = &Arc<TokenSource>> {
        self.values.iter().flatten().filter_map(|v| match v {
            SchemeValue::Client(source) => Some(source),
            _ => None,
        })
    }

    /// The alternative of `requirement` to send: the first whose every
    /// scheme is configured (`has_primary`: the caller brings the primary
    /// scheme's token). `Ok(None)`: send nothing. `Err`: what to set.
    pub(super) fn choose(
        &self,
        requirement: Requirement,
        has_primary: bool,
    ) -> Result<Option<&'static [u16]>, String> {
        if requirement.is_empty() {
            return Ok(None);
        }
        let available = |i: u16| {
            (has_primary && self.profile.primary == Some(i))
                || self.values.get(usize::from(i)).is_some_and(Option::is_some)
        };
        if let Some(alt) = requirement
            .iter()
            .copied()
            .find(|alt| !alt.is_empty() && alt.iter().all(|&i| available(i)))
        {
            return Ok(Some(alt));
        }
        if requirement.iter().any(|alt| alt.is_empty()) {
            return Ok(None);
        }
        Err(self.missing(requirement, &available))
    }

    /// `set `A`, or both `B` and `C`` for the unmet alternatives.
    fn missing(&self, requirement: Requirement, available: &dyn Fn(u16) -> bool) -> String {
        // What to set for each alternative that can be sent, and what makes
        // the others impossible.
        let mut sendable: Vec<String> = Vec::new();
        let mut impossible: Vec<String> = Vec::new();
        for alt in requirement {
            let mut needs: Vec<String> = Vec::new();
            let mut blocked = None;
            for &i in *alt {
                let Some(scheme) = self.profile.schemes.get(usize::from(i)) else {
                    blocked = Some(format!("an undeclared scheme #{i}"));
                    break;
                };
                if let SchemeKind::Unsupported { what } = scheme.kind {
                    blocked = Some(format!("scheme `{}` ({what})", scheme.name));
                    break;
                }
                if !available(i) {
                    // Basic needs only its user name (the password may
                    // be empty).
                    let vars = &self.vars[usize::from(i)];
                    let required = match scheme.kind {
                        SchemeKind::Basic => &vars[..vars.len().min(1)],
                        _ => &vars[..],
                    };
                    needs.extend(required.iter().map(|n| format!("`{n}`")));
                }
            }
            let (list, item) = match blocked {
                Some(what) => (
                    &mut impossible,
                    format!("{what}, which toolforge cannot send"),
                ),
                None => (&mut sendable, join_and(&needs)),
            };
            if !list.contains(&item) {
                list.push(item);
            }
        }
        if sendable.is_empty() {
            return format!("the operation needs {}", impossible.join(", or "));
        }
        format!(
            "the server has no credential for this operation: set {} in the server's environment",
            sendable.join(", or ")
        )
    }

    /// The configured value of scheme `index`.
    pub(super) fn value(&self, index: u16) -> Option<&SchemeValue> {
        self.values.get(usize::from(index))?.as_ref()
    }

    /// Scheme `index` of the profile.
    pub(super) fn scheme(&self, index: u16) -> Option<&'static SecurityScheme> {
        self.profile.schemes.get(usize::from(index))
    }
}

/// Where an API key goes, by the scheme's location.
pub(super) fn key_location(kind: SchemeKind) -> Option<(KeyLocation, &'static str)> {
    match kind {
        SchemeKind::ApiKey { location, name } => Some((location, name)),
        _ => None,
    }
}

fn read_var(
    name: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, CredentialError> {
    let Some(value) = env(name) else {
        return Ok(None);
    };
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(CredentialError::NotHeaderSafe {
            source_label: format!("env `{name}`"),
        });
    }
    Ok(Some(value.to_owned()))
}

fn basic(user_var: &str, user: String, password: String) -> Result<SchemeValue, CredentialError> {
    if user.contains(':') {
        return Err(CredentialError::Invalid {
            source_label: format!("env `{user_var}`"),
            reason: "an HTTP basic user name cannot contain `:`",
        });
    }
    let pair = format!("{user}:{password}");
    let header = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(&pair)
    );
    // With an empty password the user name is the key: it is what the
    // redactor must hide (an empty pattern would match everywhere).
    let secret = if password.is_empty() { user } else { password };
    Ok(SchemeValue::Basic {
        secret,
        pair,
        header,
    })
}

fn half_pair(names: &[String], reason: &'static str) -> CredentialError {
    CredentialError::Invalid {
        source_label: names
            .iter()
            .map(|n| format!("env `{n}`"))
            .collect::<Vec<_>>()
            .join(" and "),
        reason,
    }
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => "nothing".to_owned(),
        [one] => one.clone(),
        [init @ .., last] => format!("both {} and {last}", init.join(", ")),
    }
}
