//! The racing cases of the store suite: many tasks on one code, state,
//! refresh token or version at once.

use std::sync::Arc;

use tokio::task::JoinSet;

use super::{
    NOW, Outcome, RACERS, code, ensure, ensure_eq, exchanged, fail, grant, hash, pair, pending,
    seal,
};
use crate::model::{CodeUse, RefreshUse};
use crate::store::GrantStore;

/// Of [`RACERS`] concurrent takes of one state, exactly one gets it.
pub async fn pending_race_has_one_winner(store: Arc<dyn GrantStore>) -> Outcome {
    let p = pending("pending-race", NOW + 600);
    store.put_pending(&p).await.map_err(fail("put_pending"))?;
    let mut racers = JoinSet::new();
    for _ in 0..RACERS {
        let store = Arc::clone(&store);
        let hash = p.hash;
        racers.spawn(async move { store.take_pending(&hash, NOW).await });
    }
    let mut winners = 0;
    while let Some(joined) = racers.join_next().await {
        let taken = joined
            .map_err(fail("racer"))?
            .map_err(fail("take_pending"))?;
        winners += usize::from(taken.is_some());
    }
    ensure_eq!(winners, 1, "takes that got the sign-in");
    Ok(())
}

/// Of [`RACERS`] concurrent exchanges of one code, exactly one is `Fresh`
/// and every other is `Replayed`.
pub async fn code_race_has_one_winner(store: Arc<dyn GrantStore>) -> Outcome {
    let g = grant("code-race");
    let c = code("code-race-code", &g.id);
    store
        .create_grant(&g, &c)
        .await
        .map_err(fail("create_grant"))?;
    let mut racers = JoinSet::new();
    for _ in 0..RACERS {
        let store = Arc::clone(&store);
        let hash = c.hash;
        racers.spawn(async move { store.take_code(&hash, NOW).await });
    }
    let (mut fresh, mut replayed) = (0, 0);
    while let Some(joined) = racers.join_next().await {
        match joined.map_err(fail("racer"))?.map_err(fail("take_code"))? {
            CodeUse::Fresh(got) => {
                ensure_eq!(got, c, "the fresh code");
                fresh += 1;
            }
            CodeUse::Replayed { grant_id } => {
                ensure_eq!(grant_id, g.id, "replayed code's grant");
                replayed += 1;
            }
            CodeUse::Unknown => return Err("a racer found the code unknown".to_owned()),
        }
    }
    ensure_eq!((fresh, replayed), (1, RACERS - 1), "(fresh, replayed)");
    Ok(())
}

/// [`RACERS`] concurrent rotations of one current token all succeed (the
/// first as current, the rest as previous) and leave a consistent grant.
pub async fn refresh_race_keeps_a_consistent_grant(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "refresh-race";
    exchanged(&*store, id).await?;
    let mut racers = JoinSet::new();
    for n in 0..RACERS {
        let store = Arc::clone(&store);
        racers.spawn(async move {
            let (a, r) = pair(&format!("refresh-race-new-{n}"), id);
            store
                .rotate_refresh(&hash("refresh-race-0-r"), &a, &r, NOW)
                .await
        });
    }
    let mut currents = Vec::new();
    while let Some(joined) = racers.join_next().await {
        match joined
            .map_err(fail("racer"))?
            .map_err(fail("rotate_refresh"))?
        {
            RefreshUse::Rotated { grant, .. } => currents.extend(grant.refresh_current),
            other => return Err(format!("a racer got {other:?}")),
        }
    }
    ensure_eq!(currents.len(), RACERS, "rotations");
    let g = store
        .grant(id)
        .await
        .map_err(fail("grant"))?
        .ok_or("grant vanished")?;
    ensure!(!g.revoked, "racing rotations revoked the grant");
    ensure_eq!(
        g.refresh_previous,
        Some(hash("refresh-race-0-r")),
        "previous"
    );
    ensure!(
        g.refresh_current.is_some_and(|c| currents.contains(&c)),
        "current is none of the issued tokens"
    );
    Ok(())
}

/// Of [`RACERS`] concurrent updates at one version, exactly one wins.
pub async fn upstream_update_race_has_one_winner(store: Arc<dyn GrantStore>) -> Outcome {
    let id = "cas-race";
    let g = exchanged(&*store, id).await?;
    let mut racers = JoinSet::new();
    for n in 0..RACERS {
        let store = Arc::clone(&store);
        let version = g.version;
        racers.spawn(async move {
            let sealed = seal(&format!("racer {n}"));
            let won = store.update_upstream(id, version, &sealed, None).await;
            won.map(|won| won.then_some(sealed))
        });
    }
    let mut winners = Vec::new();
    while let Some(joined) = racers.join_next().await {
        winners.extend(
            joined
                .map_err(fail("racer"))?
                .map_err(fail("update_upstream"))?,
        );
    }
    ensure_eq!(winners.len(), 1, "winning updates");
    let after = store
        .grant(id)
        .await
        .map_err(fail("grant"))?
        .ok_or("grant vanished")?;
    ensure_eq!(after.version, g.version + 1, "version after the race");
    ensure_eq!(
        Some(after.upstream_sealed),
        winners.pop(),
        "the winner's sealed tokens"
    );
    Ok(())
}
