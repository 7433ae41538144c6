//! The cases of the store suite (see `suite.rs`).

use std::sync::Arc;

use super::{
    Case, NOW, Outcome, RACERS, client, code, ensure, ensure_eq, exchanged, fail, grant, hash,
    pair, pending, rotate, seal, token,
};
use crate::model::{CodeUse, RefreshUse, TokenKind};
use crate::store::GrantStore;

#[path = "suite_races.rs"]
mod races;
pub use races::*;

#[path = "suite_bounds.rs"]
mod bounds;
pub use bounds::*;

#[path = "suite_step_up.rs"]
mod step_up;
pub use step_up::*;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        /// Every case, by name, in the order [`super::run_all`] runs them
        /// (`purge_expired` last: it deletes what earlier cases left).
        pub const CASES: &[(&str, Case)] = &[$((stringify!($name), |s| Box::pin($name(s)))),*];
    };
}

cases![
    ping_and_backend,
    pending_is_single_use,
    pending_expires,
    pending_race_has_one_winner,
    grant_round_trips,
    code_is_single_use,
    code_expires,
    code_race_has_one_winner,
    tokens_issue_and_look_up,
    refresh_rotates_current_and_previous,
    refresh_reuse_revokes,
    refresh_unknown_expired_or_access_is_invalid,
    refresh_race_keeps_a_consistent_grant,
    upstream_update_is_compare_and_swap,
    upstream_update_race_has_one_winner,
    revoke_stops_everything,
    tokens_issued_after_revocation_show_revoked,
    clients_register_and_look_up,
    duplicates_are_refused_without_secrets,
    misuse_is_refused_and_changes_nothing,
    a_replayed_sign_in_stores_nothing,
    pending_count_is_of_the_live,
    rotation_deletes_what_it_superseded,
    clients_expire_unused_or_idle,
    unknown_codes_are_unknown,
    step_up_marks_one_grant,
    step_up_needs_a_live_grant,
    purge_expired_removes_only_the_expired,
];

/// `ping` answers and `backend` is a known name.
pub async fn ping_and_backend(store: Arc<dyn GrantStore>) -> Outcome {
    store.ping().await.map_err(fail("ping"))?;
    ensure!(
        matches!(store.backend(), "sqlite" | "postgres"),
        "unknown backend name {}",
        store.backend()
    );
    Ok(())
}

/// A sign-in is taken once, whole; an unknown state finds nothing.
pub async fn pending_is_single_use(store: Arc<dyn GrantStore>) -> Outcome {
    let p = pending("pending-once", NOW + 600);
    store.put_pending(&p).await.map_err(fail("put_pending"))?;
    let first = store
        .take_pending(&p.hash, NOW)
        .await
        .map_err(fail("take_pending"))?;
    ensure_eq!(first, Some(p.clone()), "first take");
    let second = store
        .take_pending(&p.hash, NOW)
        .await
        .map_err(fail("take_pending"))?;
    ensure_eq!(second, None, "second take");
    let unknown = store
        .take_pending(&hash("pending-never-put"), NOW)
        .await
        .map_err(fail("take_pending"))?;
    ensure_eq!(unknown, None, "unknown state");
    Ok(())
}

/// A sign-in whose expiry is `now` (or earlier) is not returned.
pub async fn pending_expires(store: Arc<dyn GrantStore>) -> Outcome {
    let expired = pending("pending-expired", NOW);
    let live = pending("pending-live", NOW + 1);
    store
        .put_pending(&expired)
        .await
        .map_err(fail("put_pending"))?;
    store
        .put_pending(&live)
        .await
        .map_err(fail("put_pending"))?;
    let got = store
        .take_pending(&expired.hash, NOW)
        .await
        .map_err(fail("take"))?;
    ensure_eq!(got, None, "a sign-in expiring now");
    let got = store
        .take_pending(&live.hash, NOW)
        .await
        .map_err(fail("take"))?;
    ensure_eq!(got, Some(live), "a sign-in expiring in a second");
    Ok(())
}

/// A grant reads back exactly as written; an unknown id is `None`.
pub async fn grant_round_trips(store: Arc<dyn GrantStore>) -> Outcome {
    let mut g = grant("grant-round-trip");
    g.upstream_expires_at = None;
    store
        .create_grant(&g, &code("grant-round-trip-code", &g.id))
        .await
        .map_err(fail("create_grant"))?;
    let back = store.grant(&g.id).await.map_err(fail("grant"))?;
    ensure_eq!(back, Some(g.clone()), "grant read back");
    let mut other = grant("grant-round-trip-2");
    other.exposure = Default::default();
    other.scopes = Vec::new();
    store
        .create_grant(&other, &code("grant-round-trip-2-code", &other.id))
        .await
        .map_err(fail("create_grant"))?;
    let back = store.grant(&other.id).await.map_err(fail("grant"))?;
    ensure_eq!(back, Some(other), "grant with default exposure read back");
    let none = store
        .grant("grant-never-made")
        .await
        .map_err(fail("grant"))?;
    ensure_eq!(none, None, "unknown grant");
    Ok(())
}

/// A code is `Fresh` once (whole), then `Replayed` with its grant id; an
/// unknown code is `Unknown`.
pub async fn code_is_single_use(store: Arc<dyn GrantStore>) -> Outcome {
    let g = grant("code-once");
    let c = code("code-once-code", &g.id);
    store
        .create_grant(&g, &c)
        .await
        .map_err(fail("create_grant"))?;
    let first = store
        .take_code(&c.hash, NOW)
        .await
        .map_err(fail("take_code"))?;
    ensure_eq!(first, CodeUse::Fresh(c.clone()), "first use");
    let second = store
        .take_code(&c.hash, NOW)
        .await
        .map_err(fail("take_code"))?;
    ensure_eq!(
        second,
        CodeUse::Replayed {
            grant_id: g.id.clone()
        },
        "second use"
    );
    let unknown = store
        .take_code(&hash("code-never-issued"), NOW)
        .await
        .map_err(fail("take_code"))?;
    ensure_eq!(unknown, CodeUse::Unknown, "unknown code");
    Ok(())
}

/// An unused code at (or past) its expiry is `Unknown`, every time.
pub async fn code_expires(store: Arc<dyn GrantStore>) -> Outcome {
    let g = grant("code-expired");
    let mut c = code("code-expired-code", &g.id);
    c.expires_at = NOW;
    store
        .create_grant(&g, &c)
        .await
        .map_err(fail("create_grant"))?;
    for attempt in ["first", "second"] {
        let got = store
            .take_code(&c.hash, NOW)
            .await
            .map_err(fail("take_code"))?;
        ensure_eq!(got, CodeUse::Unknown, "{attempt} use of an expired code");
    }
    Ok(())
}

/// Issued tokens look up with their grant (the refresh token current)
/// until they expire; unknown tokens are `None`.
pub async fn tokens_issue_and_look_up(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "tokens";
    let g = exchanged(&*store, id).await?;
    ensure_eq!(
        g.refresh_current,
        Some(hash("tokens-0-r")),
        "current refresh"
    );
    ensure_eq!(g.refresh_previous, None, "previous refresh");
    let (access, refresh) = pair("tokens-0", id);
    let got = store
        .token(&access.hash, NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(
        got,
        Some((access.clone(), g.clone())),
        "access token lookup"
    );
    let got = store
        .token(&refresh.hash, NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(got, Some((refresh, g.clone())), "refresh token lookup");
    let at_expiry = store
        .token(&access.hash, access.expires_at)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(at_expiry, None, "access token at its expiry");
    let unknown = store
        .token(&hash("never-issued"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(unknown, None, "unknown token");
    Ok(())
}

/// Presenting the current refresh token rotates it (it becomes previous);
/// presenting the previous one while the current is unused replaces the
/// current; the presented record comes back with its wrapped key.
pub async fn refresh_rotates_current_and_previous(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "rotation";
    exchanged(&*store, id).await?;
    let r0 = token("rotation-0-r", TokenKind::Refresh, id, NOW + 86_400);
    let RefreshUse::Rotated {
        grant: g,
        presented,
    } = rotate(&*store, id, "rotation-0-r", "rotation-1").await?
    else {
        return Err("the current refresh token did not rotate".to_owned());
    };
    ensure_eq!(presented, r0, "presented record");
    ensure_eq!(
        g.refresh_current,
        Some(hash("rotation-1-r")),
        "current after rotation"
    );
    ensure_eq!(g.refresh_previous, Some(r0.hash), "previous after rotation");
    ensure!(!g.revoked, "rotation revoked the grant");
    let new_access = store
        .token(&hash("rotation-1-a"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure!(new_access.is_some(), "the new access token is not stored");
    // The client lost the answer and presents the previous token again.
    let RefreshUse::Rotated {
        grant: g,
        presented,
    } = rotate(&*store, id, "rotation-0-r", "rotation-2").await?
    else {
        return Err("the previous refresh token (current unused) did not rotate".to_owned());
    };
    ensure_eq!(presented, r0, "presented record (previous)");
    ensure_eq!(
        g.refresh_current,
        Some(hash("rotation-2-r")),
        "current after retry"
    );
    ensure_eq!(g.refresh_previous, Some(r0.hash), "previous after retry");
    // Using the current token moves the previous one out of the window.
    let RefreshUse::Rotated { grant: g, .. } =
        rotate(&*store, id, "rotation-2-r", "rotation-3").await?
    else {
        return Err("the current refresh token did not rotate".to_owned());
    };
    ensure_eq!(
        g.refresh_current,
        Some(hash("rotation-3-r")),
        "current after use"
    );
    ensure_eq!(
        g.refresh_previous,
        Some(hash("rotation-2-r")),
        "previous after use"
    );
    Ok(())
}

/// A refresh token older than the previous one is reuse: `Reused`, the
/// grant revoked, and its other tokens refused from then on.
pub async fn refresh_reuse_revokes(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "reuse";
    exchanged(&*store, id).await?;
    ensure!(
        matches!(
            rotate(&*store, id, "reuse-0-r", "reuse-1").await?,
            RefreshUse::Rotated { .. }
        ),
        "first rotation"
    );
    ensure!(
        matches!(
            rotate(&*store, id, "reuse-1-r", "reuse-2").await?,
            RefreshUse::Rotated { .. }
        ),
        "second rotation"
    );
    let reused = rotate(&*store, id, "reuse-0-r", "reuse-x").await?;
    ensure_eq!(reused, RefreshUse::Reused, "presenting the oldest token");
    let g = store.grant(id).await.map_err(fail("grant"))?;
    ensure!(
        g.is_some_and(|g| g.revoked),
        "reuse did not revoke the grant"
    );
    let current = rotate(&*store, id, "reuse-2-r", "reuse-3").await?;
    ensure_eq!(
        current,
        RefreshUse::Invalid,
        "current token of the revoked grant"
    );
    let access = store
        .token(&hash("reuse-2-a"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure!(
        access.is_none_or(|(_, g)| g.revoked),
        "an access token of the revoked grant still passes"
    );
    let unissued = store
        .token(&hash("reuse-x-a"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(
        unissued,
        None,
        "the Reused call stored its new access token"
    );
    // A replacement current token that was never handed out is reuse too.
    exchanged(&*store, "reuse-b").await?;
    rotate(&*store, "reuse-b", "reuse-b-0-r", "reuse-b-1").await?;
    rotate(&*store, "reuse-b", "reuse-b-0-r", "reuse-b-2").await?;
    let dropped = rotate(&*store, "reuse-b", "reuse-b-1-r", "reuse-b-3").await?;
    ensure_eq!(dropped, RefreshUse::Reused, "the replaced current token");
    Ok(())
}

/// Unknown, expired and access tokens are `Invalid` and revoke nothing.
pub async fn refresh_unknown_expired_or_access_is_invalid(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "invalid-refresh";
    exchanged(&*store, id).await?;
    let unknown = rotate(&*store, id, "never-issued-r", "invalid-refresh-1").await?;
    ensure_eq!(unknown, RefreshUse::Invalid, "unknown token");
    let access = rotate(&*store, id, "invalid-refresh-0-a", "invalid-refresh-1").await?;
    ensure_eq!(
        access,
        RefreshUse::Invalid,
        "an access token presented as refresh"
    );
    let (a, r) = pair("invalid-refresh-2", id);
    let expired = store
        .rotate_refresh(&hash("invalid-refresh-0-r"), &a, &r, NOW + 86_400)
        .await
        .map_err(fail("rotate_refresh"))?;
    ensure_eq!(expired, RefreshUse::Invalid, "expired token");
    let g = store.grant(id).await.map_err(fail("grant"))?;
    ensure!(
        g.as_ref().is_some_and(|g| !g.revoked),
        "an invalid token revoked the grant"
    );
    ensure_eq!(
        g.and_then(|g| g.refresh_current),
        Some(hash("invalid-refresh-0-r")),
        "current after refusals"
    );
    Ok(())
}

/// `update_upstream` replaces the sealed tokens only at the expected
/// version, and bumps it; unknown and revoked grants are not updated.
pub async fn upstream_update_is_compare_and_swap(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "cas";
    let g = exchanged(&*store, id).await?;
    let sealed = seal("new upstream tokens");
    let done = store
        .update_upstream(id, g.version, &sealed, Some(NOW + 7200))
        .await
        .map_err(fail("update_upstream"))?;
    ensure!(done, "update at the current version refused");
    let after = store
        .grant(id)
        .await
        .map_err(fail("grant"))?
        .ok_or("grant vanished")?;
    ensure_eq!(after.version, g.version + 1, "version after update");
    ensure_eq!(after.upstream_sealed, sealed, "sealed after update");
    ensure_eq!(
        after.upstream_expires_at,
        Some(NOW + 7200),
        "upstream expiry"
    );
    let stale = store
        .update_upstream(id, g.version, &seal("stale"), None)
        .await
        .map_err(fail("update_upstream"))?;
    ensure!(!stale, "update at a stale version accepted");
    let kept = store
        .grant(id)
        .await
        .map_err(fail("grant"))?
        .ok_or("grant vanished")?;
    ensure_eq!(kept, after, "grant after a refused update");
    let cleared = store
        .update_upstream(id, after.version, &seal("no expiry"), None)
        .await
        .map_err(fail("update_upstream"))?;
    ensure!(cleared, "second update refused");
    let unknown = store
        .update_upstream("cas-never-made", 0, &sealed, None)
        .await
        .map_err(fail("update_upstream"))?;
    ensure!(!unknown, "update of an unknown grant accepted");
    store.revoke_grant(id).await.map_err(fail("revoke_grant"))?;
    let revoked = store
        .update_upstream(id, after.version + 1, &sealed, None)
        .await
        .map_err(fail("update_upstream"))?;
    ensure!(!revoked, "update of a revoked grant accepted");
    Ok(())
}

/// After `revoke_grant`: the grant reads back revoked; access tokens are
/// gone; a refresh token looks up only with the revoked grant and no
/// wrapped key, and does not rotate; an unused code is `Replayed`.
/// Revoking twice, or an unknown grant, is fine.
pub async fn revoke_stops_everything(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "revoke";
    exchanged(&*store, id).await?;
    store
        .create_grant(&grant("revoke-2"), &code("revoke-2-code", "revoke-2"))
        .await
        .map_err(fail("create_grant"))?;
    for grant_id in [id, id, "revoke-2", "revoke-never-made"] {
        store
            .revoke_grant(grant_id)
            .await
            .map_err(fail("revoke_grant"))?;
    }
    let g = store
        .grant(id)
        .await
        .map_err(fail("grant"))?
        .ok_or("revoked grant vanished")?;
    ensure!(g.revoked, "grant not marked revoked");
    let access = store
        .token(&hash("revoke-0-a"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(access, None, "access token of a revoked grant");
    match store
        .token(&hash("revoke-0-r"), NOW)
        .await
        .map_err(fail("token"))?
    {
        None => {}
        Some((record, g)) => {
            ensure!(g.revoked, "refresh token's grant not revoked");
            ensure!(
                record.wrapped_key.is_empty(),
                "revoked refresh token still wraps the key"
            );
        }
    }
    let refresh = rotate(&*store, id, "revoke-0-r", "revoke-1").await?;
    ensure_eq!(refresh, RefreshUse::Invalid, "refresh of a revoked grant");
    let unused = store
        .take_code(&hash("revoke-2-code"), NOW)
        .await
        .map_err(fail("take_code"))?;
    ensure_eq!(
        unused,
        CodeUse::Replayed {
            grant_id: "revoke-2".to_owned()
        },
        "unused code of a revoked grant"
    );
    Ok(())
}

/// Tokens stored for a grant revoked meanwhile look up with `revoked` set
/// (the caller refuses them) rather than as live.
pub async fn tokens_issued_after_revocation_show_revoked(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "late-issue";
    store
        .create_grant(&grant(id), &code("late-issue-code", id))
        .await
        .map_err(fail("create_grant"))?;
    store.revoke_grant(id).await.map_err(fail("revoke_grant"))?;
    let (access, refresh) = pair("late-issue-0", id);
    store
        .issue_tokens(&access, &refresh)
        .await
        .map_err(fail("issue_tokens"))?;
    let got = store
        .token(&access.hash, NOW)
        .await
        .map_err(fail("token"))?;
    ensure!(
        got.is_some_and(|(_, g)| g.revoked),
        "a token of a revoked grant looks live or is hidden"
    );
    let refused = rotate(&*store, id, "late-issue-0-r", "late-issue-1").await?;
    ensure_eq!(refused, RefreshUse::Invalid, "refresh of a revoked grant");
    Ok(())
}

/// A registered client reads back; unknown ids are `None`; an id is
/// registered once.
pub async fn clients_register_and_look_up(store: Arc<dyn GrantStore>) -> Outcome {
    let c = client("dcr-client-1");
    store
        .register_client(&c)
        .await
        .map_err(fail("register_client"))?;
    let back = store.client(&c.client_id).await.map_err(fail("client"))?;
    ensure_eq!(back, Some(c.clone()), "client read back");
    let unknown = store
        .client("dcr-never-registered")
        .await
        .map_err(fail("client"))?;
    ensure_eq!(unknown, None, "unknown client");
    let mut again = c.clone();
    again.metadata = "{}".to_owned();
    ensure!(
        store.register_client(&again).await.is_err(),
        "a client id registered twice"
    );
    let kept = store.client(&c.client_id).await.map_err(fail("client"))?;
    ensure_eq!(kept, Some(c), "client after a refused re-registration");
    Ok(())
}

/// Reusing a hash or id is an error, and no error message carries the
/// hash (hex) or the sealed bytes.
pub async fn duplicates_are_refused_without_secrets(store: Arc<dyn GrantStore>) -> Outcome {
    let p = pending("duplicate-state", NOW + 600);
    store.put_pending(&p).await.map_err(fail("put_pending"))?;
    let mut errors = Vec::new();
    let g = grant("duplicate-grant");
    store
        .create_grant(&g, &code("duplicate-code", &g.id))
        .await
        .map_err(fail("create_grant"))?;
    let other_code = code("duplicate-code-2", &g.id);
    errors.push(
        store
            .create_grant(&g, &other_code)
            .await
            .err()
            .ok_or("a grant id stored twice")?,
    );
    let mut g2 = grant("duplicate-grant-2");
    g2.upstream_sealed = seal("sealed");
    errors.push(
        store
            .create_grant(&g2, &code("duplicate-code", &g2.id))
            .await
            .err()
            .ok_or("a code hash stored twice")?,
    );
    let replaced = store.grant(&g2.id).await.map_err(fail("grant"))?;
    ensure_eq!(
        replaced,
        None,
        "a failed create_grant left its grant behind"
    );
    let secrets = [
        hex::encode(p.hash.0),
        hex::encode(hash("duplicate-code").0),
        hex::encode(&p.sealed),
        hex::encode(&g.upstream_sealed),
    ];
    for error in errors {
        let text = format!("{error} {error:?}").to_lowercase();
        for secret in &secrets {
            ensure!(
                !text.contains(&secret[..16]),
                "an error message carries a secret: {text}"
            );
        }
    }
    Ok(())
}

/// Tokens for an unknown grant, or new tokens of another grant (or of the
/// wrong kind) on rotation, are errors that leave the store as it was; a
/// used code stays `Replayed` past its expiry until purged.
pub async fn misuse_is_refused_and_changes_nothing(store: Arc<dyn GrantStore>) -> Outcome {
    let (access, refresh) = pair("misuse-orphan", "misuse-never-made");
    ensure!(
        store.issue_tokens(&access, &refresh).await.is_err(),
        "tokens issued for an unknown grant"
    );
    let stored = store
        .token(&access.hash, NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(stored, None, "a refused issue stored its access token");
    let id = "misuse";
    let before = exchanged(&*store, id).await?;
    let (a, r) = pair("misuse-1", "misuse-other-grant");
    let wrong_grant = store.rotate_refresh(&hash("misuse-0-r"), &a, &r, NOW).await;
    ensure!(
        wrong_grant.is_err(),
        "rotation accepted tokens of another grant"
    );
    let (a, _) = pair("misuse-2", id);
    let wrong_kind = store.rotate_refresh(&hash("misuse-0-r"), &a, &a, NOW).await;
    ensure!(
        wrong_kind.is_err(),
        "rotation accepted an access token as the new refresh"
    );
    let after = store.grant(id).await.map_err(fail("grant"))?;
    ensure_eq!(after, Some(before), "grant after refused rotations");
    let leaked = store
        .token(&hash("misuse-1-a"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(leaked, None, "a refused rotation stored its access token");
    let rotated = rotate(&*store, id, "misuse-0-r", "misuse-3").await?;
    ensure!(
        matches!(rotated, RefreshUse::Rotated { .. }),
        "rotation after refusals: {rotated:?}"
    );
    let late = store
        .take_code(&hash("misuse-code"), NOW + 3600)
        .await
        .map_err(fail("take_code"))?;
    ensure_eq!(
        late,
        CodeUse::Replayed {
            grant_id: id.to_owned()
        },
        "a used code after its expiry"
    );
    Ok(())
}

/// `purge_expired` deletes expired sign-ins, codes and tokens and grants
/// past their end (with everything of theirs), counts them, and keeps the
/// rest.
pub async fn purge_expired_removes_only_the_expired(store: Arc<dyn GrantStore>) -> Outcome {
    let later = NOW + 50_000;
    // Expired by `later`: a sign-in, a grant's access token, a whole grant.
    store
        .put_pending(&pending("purge-old-state", NOW + 600))
        .await
        .map_err(fail("put_pending"))?;
    store
        .put_pending(&pending("purge-new-state", later + 600))
        .await
        .map_err(fail("put_pending"))?;
    let mut short = grant("purge-short");
    short.expires_at = NOW + 1000;
    let mut long = grant("purge-long");
    long.expires_at = later + 86_400;
    for g in [&short, &long] {
        let mut c = code(&format!("{}-code", g.id), &g.id);
        c.expires_at = later + 60;
        store
            .create_grant(g, &c)
            .await
            .map_err(fail("create_grant"))?;
        let access = token(&format!("{}-a", g.id), TokenKind::Access, &g.id, NOW + 3600);
        let refresh = token(
            &format!("{}-r", g.id),
            TokenKind::Refresh,
            &g.id,
            later + 3600,
        );
        store
            .issue_tokens(&access, &refresh)
            .await
            .map_err(fail("issue_tokens"))?;
    }
    let purged = store
        .purge_expired(later)
        .await
        .map_err(fail("purge_expired"))?;
    // At least: the old sign-in, two access tokens, the short grant with its
    // code and refresh token.
    ensure!(purged >= 6, "purged only {purged} rows");
    let old = store
        .take_pending(&hash("purge-old-state"), NOW)
        .await
        .map_err(fail("take_pending"))?;
    ensure_eq!(old, None, "expired sign-in (looked up in its lifetime)");
    ensure_eq!(
        store.grant("purge-short").await.map_err(fail("grant"))?,
        None,
        "ended grant"
    );
    let code = store
        .take_code(&hash("purge-short-code"), NOW)
        .await
        .map_err(fail("take_code"))?;
    ensure_eq!(code, CodeUse::Unknown, "code of an ended grant");
    let token = store
        .token(&hash("purge-long-a"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(
        token,
        None,
        "expired access token (looked up in its lifetime)"
    );
    ensure!(
        store
            .grant("purge-long")
            .await
            .map_err(fail("grant"))?
            .is_some(),
        "a live grant was purged"
    );
    let refresh = store
        .token(&hash("purge-long-r"), later)
        .await
        .map_err(fail("token"))?;
    ensure!(refresh.is_some(), "a live refresh token was purged");
    let new = store
        .take_pending(&hash("purge-new-state"), later)
        .await
        .map_err(fail("take_pending"))?;
    ensure!(new.is_some(), "a live sign-in was purged");
    let code = store
        .take_code(&hash("purge-long-code"), later)
        .await
        .map_err(fail("take_code"))?;
    ensure!(
        matches!(code, CodeUse::Fresh(_)),
        "a live code was purged: {code:?}"
    );
    let again = store
        .purge_expired(later)
        .await
        .map_err(fail("purge_expired"))?;
    ensure_eq!(again, 0, "rows purged by a second purge");
    Ok(())
}
