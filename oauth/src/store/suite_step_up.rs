//! Store cases for the pending step-up mark (issue 38): recorded on one
//! grant only, replaced by a later challenge, kept across a refresh and
//! refused on a revoked grant.

use std::sync::Arc;

use super::super::{NOW, Outcome, ensure, ensure_eq, exchanged, fail, rotate};
use crate::model::{PendingStepUp, RefreshUse};
use crate::store::GrantStore;

/// A mark is read back on the grant (by id and with its tokens), on that
/// grant only, and a later challenge replaces it.
pub async fn step_up_marks_one_grant(store: Arc<dyn GrantStore>) -> Outcome {
    let a = exchanged(&*store, "stepup-a").await?;
    let b = exchanged(&*store, "stepup-b").await?;
    ensure_eq!(a.step_up, None, "a new grant has no pending step-up");
    let first = PendingStepUp {
        scope: "dns_records:read".to_owned(),
        at: NOW,
    };
    let marked = store
        .mark_step_up(&a.id, &first)
        .await
        .map_err(fail("mark_step_up"))?;
    ensure!(marked, "the mark was not stored");
    let read = store.grant(&a.id).await.map_err(fail("grant"))?;
    ensure_eq!(
        read.and_then(|g| g.step_up),
        Some(first.clone()),
        "the mark read back"
    );
    let with_token = store
        .token(&super::super::hash("stepup-a-0-r"), NOW)
        .await
        .map_err(fail("token"))?;
    ensure_eq!(
        with_token.and_then(|(_, g)| g.step_up),
        Some(first),
        "the mark read back with a token"
    );
    let other = store.grant(&b.id).await.map_err(fail("grant"))?;
    ensure_eq!(
        other.and_then(|g| g.step_up),
        None,
        "another grant is not marked"
    );
    let later = PendingStepUp {
        scope: "zone:read".to_owned(),
        at: NOW + 5,
    };
    store
        .mark_step_up(&a.id, &later)
        .await
        .map_err(fail("mark_step_up"))?;
    let used = rotate(&*store, &a.id, "stepup-a-0-r", "stepup-a-1").await?;
    let RefreshUse::Rotated { grant, .. } = used else {
        return Err(format!("the rotation failed: {used:?}"));
    };
    ensure_eq!(
        grant.step_up,
        Some(later),
        "a later challenge replaces the mark, and a rotation keeps it"
    );
    Ok(())
}

/// An unknown or revoked grant cannot be marked.
pub async fn step_up_needs_a_live_grant(store: Arc<dyn GrantStore>) -> Outcome {
    let mark = PendingStepUp {
        scope: "zone:read".to_owned(),
        at: NOW,
    };
    let unknown = store
        .mark_step_up("stepup-nobody", &mark)
        .await
        .map_err(fail("mark_step_up"))?;
    ensure!(!unknown, "an unknown grant was marked");
    let g = exchanged(&*store, "stepup-revoked").await?;
    store
        .revoke_grant(&g.id)
        .await
        .map_err(fail("revoke_grant"))?;
    let revoked = store
        .mark_step_up(&g.id, &mark)
        .await
        .map_err(fail("mark_step_up"))?;
    ensure!(!revoked, "a revoked grant was marked");
    Ok(())
}
