//! Store cases for what a stranger can make the store keep (issue 39):
//! replayed sign-ins, superseded tokens, unused clients, bogus codes.

use std::sync::Arc;

use super::super::{
    NOW, Outcome, client, code, ensure, ensure_eq, exchanged, fail, grant, hash, pending, rotate,
};
use crate::model::{CodeUse, RefreshUse};
use crate::store::GrantStore;

/// A second sign-in with the same state hash (a replayed consent form)
/// stores nothing and leaves the first one whole.
pub async fn a_replayed_sign_in_stores_nothing(store: Arc<dyn GrantStore>) -> Outcome {
    let p = pending("replayed-form", NOW + 600);
    let first = store.put_pending(&p).await.map_err(fail("put_pending"))?;
    ensure!(first, "the first sign-in was not stored");
    let mut replay = pending("replayed-form", NOW + 900);
    replay.sealed = b"another request".to_vec();
    let again = store
        .put_pending(&replay)
        .await
        .map_err(fail("put_pending"))?;
    ensure!(!again, "a replayed sign-in was stored");
    let taken = store
        .take_pending(&p.hash, NOW)
        .await
        .map_err(fail("take_pending"))?;
    ensure_eq!(taken, Some(p), "the first sign-in");
    Ok(())
}

/// `count_pending` counts the unexpired sign-ins only.
pub async fn pending_count_is_of_the_live(store: Arc<dyn GrantStore>) -> Outcome {
    let before = store
        .count_pending(NOW)
        .await
        .map_err(fail("count_pending"))?;
    for (label, expires) in [("count-live", NOW + 600), ("count-dead", NOW - 1)] {
        store
            .put_pending(&pending(label, expires))
            .await
            .map_err(fail("put_pending"))?;
    }
    let after = store
        .count_pending(NOW)
        .await
        .map_err(fail("count_pending"))?;
    ensure_eq!(after, before + 1, "live sign-ins counted");
    store
        .take_pending(&hash("count-live"), NOW)
        .await
        .map_err(fail("take_pending"))?;
    Ok(())
}

/// Rotation deletes the access tokens it supersedes and all but the last
/// dropped refresh token: a grant refreshed many times holds one access
/// and at most three refresh rows, and the last dropped token is still
/// recognised as reuse.
pub async fn rotation_deletes_what_it_superseded(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "superseded";
    exchanged(&*store, id).await?;
    let mut presented = format!("{id}-0-r");
    for n in 1..=6 {
        let next = format!("{id}-{n}");
        let used = rotate(&*store, id, &presented, &next).await?;
        ensure!(
            matches!(used, RefreshUse::Rotated { .. }),
            "rotation {n}: {used:?}"
        );
        presented = format!("{next}-r");
    }
    let mut live = Vec::new();
    for n in 0..=6 {
        for kind in ["a", "r"] {
            let label = format!("{id}-{n}-{kind}");
            if store
                .token(&hash(&label), NOW)
                .await
                .map_err(fail("token"))?
                .is_some()
            {
                live.push(label);
            }
        }
    }
    ensure_eq!(
        live,
        vec![
            format!("{id}-4-r"),
            format!("{id}-5-r"),
            format!("{id}-6-a"),
            format!("{id}-6-r"),
        ],
        "rows left after six rotations"
    );
    let reused = rotate(&*store, id, &format!("{id}-4-r"), &format!("{id}-x")).await?;
    ensure_eq!(reused, RefreshUse::Reused, "the last dropped token");
    Ok(())
}

/// Registered clients never used expire after `unused_before`; a sign-in
/// (`create_grant`) is a use, and a used client expires once idle.
pub async fn clients_expire_unused_or_idle(store: Arc<dyn GrantStore>) -> Outcome {
    let unused_before = store
        .count_unused_clients()
        .await
        .map_err(fail("count_unused_clients"))?;
    for id in ["expiry-unused", "expiry-used"] {
        let mut c = client(id);
        c.created_at = NOW - 1000;
        store
            .register_client(&c)
            .await
            .map_err(fail("register_client"))?;
    }
    let mut g = grant("expiry-grant");
    g.client_id = "expiry-used".to_owned();
    g.created_at = NOW - 10;
    store
        .create_grant(&g, &code("expiry-code", &g.id))
        .await
        .map_err(fail("create_grant"))?;
    let unused = store
        .count_unused_clients()
        .await
        .map_err(fail("count_unused_clients"))?;
    ensure_eq!(unused, unused_before + 1, "unused clients");
    let gone = store
        .expire_clients(NOW - 500, NOW - 20)
        .await
        .map_err(fail("expire_clients"))?;
    ensure_eq!(gone, 1, "clients expired");
    ensure!(
        store
            .client("expiry-unused")
            .await
            .map_err(fail("client"))?
            .is_none(),
        "the unused client is still there"
    );
    ensure!(
        store
            .client("expiry-used")
            .await
            .map_err(fail("client"))?
            .is_some(),
        "the client used 10 s ago went"
    );
    store
        .expire_clients(NOW - 500, NOW)
        .await
        .map_err(fail("expire_clients"))?;
    ensure!(
        store
            .client("expiry-used")
            .await
            .map_err(fail("client"))?
            .is_none(),
        "the idle client is still there"
    );
    Ok(())
}

/// A code never issued is `Unknown` (found so without a write).
pub async fn unknown_codes_are_unknown(store: Arc<dyn GrantStore>) -> Outcome {
    for n in 0..3 {
        let used = store
            .take_code(&hash(&format!("bogus-code-{n}")), NOW)
            .await
            .map_err(fail("take_code"))?;
        ensure_eq!(used, CodeUse::Unknown, "bogus code");
    }
    Ok(())
}
