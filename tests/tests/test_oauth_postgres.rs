//! `--auth oauth` on PostgreSQL, in process (the runtime's OAuth harness:
//! a loopback upstream provider and the real router): a whole sign-in,
//! refresh and call leave no token in the clear in any row, and two
//! instances behind one public name share the store: authorize on one,
//! token, refresh and tool calls on the other, a revocation on either seen
//! by both. Needs PostgreSQL (`TOOLFORGE_SKIP_POSTGRES=1` skips loudly).
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "../../runtime/tests/oauth_support/mod.rs"]
mod oauth_support;

use oauth_support::*;
use toolforge_runtime::oauth::store::suite;
use toolforge_tests::postgres::Postgres;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_store_dump_holds_no_token_in_the_clear() {
    let Some(pg) = Postgres::start_or_skip().unwrap() else {
        return;
    };
    let url = pg.create_database("flow").unwrap();
    let h = start(Options {
        store: Some(url.clone()),
        ..Options::default()
    })
    .await;
    let (client, tokens) = h.tokens().await;
    let (status, fresh) = h
        .refresh(&client, tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(status, 200);
    assert_eq!(h.call(fresh["access_token"].as_str().unwrap()).await.0, 200);
    let mut secrets: Vec<String> = ["access_token", "refresh_token"]
        .iter()
        .flat_map(|k| {
            [
                tokens[k].as_str().unwrap().to_owned(),
                fresh[k].as_str().unwrap().to_owned(),
            ]
        })
        .collect();
    {
        let p = h.provider.lock().unwrap();
        secrets.extend(p.access.keys().cloned());
        secrets.extend(p.refresh.iter().cloned());
    }
    let dump = suite::postgres_dump(&url).await.unwrap();
    assert!(dump.contains("-- oauth_grants: 1 rows"), "{dump}");
    let lower = dump.to_ascii_lowercase();
    for secret in &secrets {
        assert!(
            !dump.contains(secret.as_str()),
            "a token is in a row in the clear"
        );
        assert!(
            !lower.contains(&hex(secret.as_bytes())),
            "a token is in a row as hex"
        );
    }
    assert!(
        !dump.contains("Zq9") && !lower.contains(&hex(b"Zq9")),
        "upstream token marker in the dump"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_postgres_store() {
    let Some(pg) = Postgres::start_or_skip().unwrap() else {
        return;
    };
    let url = pg.create_database("instances").unwrap();
    let a = start(Options {
        store: Some(url.clone()),
        token_cache_secs: 0,
        ..Options::default()
    })
    .await;
    let b = start_with(
        Options {
            store: Some(url.clone()),
            public_url: Some(a.origin.clone()),
            token_cache_secs: 0,
            ..Options::default()
        },
        a.provider.clone(),
        a.provider_url.clone(),
        a.dir.clone(),
    )
    .await;
    assert_ne!(a.bound, b.bound);
    assert_eq!(a.resource(), b.resource());
    // Register and sign in on A …
    let client = a.register(&[REDIRECT]).await;
    let mut browser = Browser::default();
    let done = a.sign_in(&mut browser, &client).await;
    let code = query_of(&done)["code"].clone();
    // … redeem, refresh and call on B.
    let (status, tokens) = b.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(b.call(access).await.0, 200);
    assert_eq!(a.call(access).await.0, 200);
    let (status, fresh) = b
        .refresh(&client, tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(status, 200);
    let access2 = fresh["access_token"].as_str().unwrap();
    assert_eq!(a.call(access2).await.0, 200);
    // A replayed code on A (after B redeemed it) is refused by A.
    let (status, _) = a.exchange(&client, &code, VERIFIER).await;
    assert_eq!(status, 400);
    // The replay revoked the grant everywhere.
    assert_eq!(b.call(access2).await.0, 401);
    assert_eq!(a.call(access2).await.0, 401);
    // A second grant, revoked on B, is refused by A.
    let done = a.sign_in(&mut Browser::default(), &client).await;
    let code = query_of(&done)["code"].clone();
    let (_, t) = a.exchange(&client, &code, VERIFIER).await;
    let access = t["access_token"].as_str().unwrap();
    assert_eq!(a.call(access).await.0, 200);
    assert_eq!(b.revoke(access).await, 200);
    assert_eq!(
        a.call(access).await.0,
        401,
        "revocation seen by the other instance"
    );
}
