//! `GET /oauth/callback`: the upstream provider sends the browser back
//! here. The state is checked (signature, expiry, single use, the browser
//! that started it), the upstream code exchanged, the grant created with
//! the upstream tokens sealed, and the client's authorization completed.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};

use super::super::crypto::{self, same};
use super::super::model::{AuthCode, Grant};
use super::authorize::{SIGN_IN_COOKIE, SignIn, client_redirect};
use super::{OAuthServer, now, page};

fn bad_state(detail: &str) -> Response {
    page::error(StatusCode::BAD_REQUEST, "Sign-in failed", detail)
}

/// `GET /oauth/callback`.
pub(super) async fn complete(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let keys = &server.setup.keys;
    let Some(signed) = get("state") else {
        return bad_state("The provider did not return the sign-in state.");
    };
    let Some(value) = keys.verify("upstream-state", signed) else {
        return bad_state("The sign-in state was altered.");
    };
    let Some((state_id, expires)) = value.split_once('~') else {
        return bad_state("The sign-in state was altered.");
    };
    let now = now();
    if expires.parse::<i64>().map_or(true, |e| e < now) {
        return bad_state("The sign-in took too long. Start again.");
    }
    let Some(binding) = page::read_cookie(&headers, SIGN_IN_COOKIE) else {
        return bad_state("This browser did not start the sign-in.");
    };
    let hash = keys.hash(state_id);
    let pending = match server.setup.store.take_pending(&hash, now).await {
        Ok(Some(p)) => p,
        Ok(None) => return bad_state("The sign-in was already completed or has expired."),
        Err(e) => {
            tracing::error!(error = %e, "cannot read the sign-in");
            return page::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The grant store is unavailable.",
            );
        }
    };
    if !same(&keys.hash(binding).0, &pending.browser.0) {
        return bad_state("This browser did not start the sign-in.");
    }
    let Some(sign_in) = keys
        .open_state(&pending.sealed, &hash.0)
        .and_then(|plain| serde_json::from_slice::<SignIn>(&plain).ok())
    else {
        return bad_state("The sign-in record is unreadable.");
    };
    let request = &sign_in.request;
    let fail = |error: &str, description: &str| {
        page::redirect(
            &client_redirect(
                &server,
                &request.redirect_uri,
                &[("error", error), ("error_description", description)],
                request.state.as_deref(),
            ),
            &[],
        )
    };
    if let Some(error) = get("error") {
        let error = if error == "access_denied" {
            "access_denied"
        } else {
            "server_error"
        };
        return fail(error, "the upstream sign-in did not complete");
    }
    let Some(code) = get("code") else {
        return fail("server_error", "the upstream provider returned no code");
    };
    let tokens = match server
        .setup
        .upstream
        .exchange_code(code, &sign_in.verifier, &server.callback_url(), now)
        .await
    {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "upstream code exchange failed");
            return fail("server_error", "the upstream token exchange failed");
        }
    };
    match create(&server, &sign_in, &tokens, now).await {
        Ok(code) => page::redirect(
            &client_redirect(
                &server,
                &request.redirect_uri,
                &[("code", &code)],
                request.state.as_deref(),
            ),
            &[page::cookie(SIGN_IN_COOKIE, "", 0, server.secure_cookies())],
        ),
        Err(()) => fail("server_error", "the grant could not be stored"),
    }
}

/// The scopes a grant holds: those asked for, narrowed to what the
/// provider says it granted (a user may untick some; RFC 6749 §5.1 says the
/// response names them when they differ). A reply naming none of the asked
/// scopes is taken as another format, not as a refusal of all of them.
fn granted_scopes(asked: &[String], granted: Option<&str>) -> Vec<String> {
    let Some(granted) = granted else {
        return asked.to_vec();
    };
    let granted: Vec<&str> = granted.split(' ').collect();
    let kept: Vec<String> = asked
        .iter()
        .filter(|s| granted.contains(&s.as_str()))
        .cloned()
        .collect();
    if kept.is_empty() {
        asked.to_vec()
    } else {
        kept
    }
}

/// Stores the grant and its code; returns the code.
async fn create(
    server: &OAuthServer,
    sign_in: &SignIn,
    tokens: &crate::upstream::UpstreamTokens,
    now: i64,
) -> Result<String, ()> {
    let keys = &server.setup.keys;
    let grant_id = keys.new_token("").map_err(|_| ())?;
    let grant_id = format!("g{}", &grant_id[..32]);
    let grant_key = keys.random_key().map_err(|_| ())?;
    let plain = serde_json::to_vec(tokens).map_err(|_| ())?;
    let sealed = crypto::seal(&grant_key, &plain, grant_id.as_bytes()).map_err(|_| ())?;
    let code = keys.new_token("tfc_").map_err(|_| ())?;
    let lifetimes = &server.setup.config.lifetimes;
    let grant = Grant {
        id: grant_id.clone(),
        client_id: sign_in.request.client_id.clone(),
        resource: sign_in
            .request
            .resource
            .clone()
            .unwrap_or_else(|| server.resource().to_owned()),
        scopes: granted_scopes(&sign_in.scopes, tokens.scope.as_deref()),
        exposure: sign_in.exposure.clone(),
        created_at: now,
        expires_at: now + i64::try_from(lifetimes.refresh_token_secs).unwrap_or(i64::MAX / 4),
        upstream_sealed: sealed,
        upstream_expires_at: tokens.expires_at,
        version: 0,
        refresh_current: None,
        refresh_previous: None,
        step_up: None,
        revoked: false,
    };
    let record = AuthCode {
        hash: keys.hash(&code),
        grant_id: grant_id.clone(),
        client_id: sign_in.request.client_id.clone(),
        redirect_uri: sign_in.request.redirect_uri.clone(),
        code_challenge: sign_in.request.code_challenge.clone(),
        expires_at: now + i64::try_from(lifetimes.code_secs).unwrap_or(60),
        wrapped_key: crypto::wrap_grant_key(&code, &grant_id, &grant_key).map_err(|_| ())?,
    };
    server
        .setup
        .store
        .create_grant(&grant, &record)
        .await
        .map_err(|e| tracing::error!(error = %e, "cannot store the grant"))?;
    crate::events::record(crate::events::AuthEvent::Authorized);
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::granted_scopes;

    #[test]
    fn a_grant_holds_only_what_the_provider_granted() {
        let asked: Vec<String> = ["a:read", "b:read", "offline_access"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            granted_scopes(&asked, Some("a:read offline_access")),
            ["a:read", "offline_access"]
        );
        assert_eq!(granted_scopes(&asked, None), asked);
        assert_eq!(granted_scopes(&asked, Some("x y")), asked, "another format");
    }
}
