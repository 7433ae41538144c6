//! A pending step-up and the refresh token: after a challenge (either
//! delivery, either protocol era) a refresh of that grant answers
//! `invalid_grant` naming the scope, so a client that refreshes before it
//! re-authorizes (the pinned TypeScript SDK) goes to `/authorize` instead
//! of retrying with the same narrow token; the refresh never returns a
//! wider token, another grant is untouched, and after the window the
//! refresh works again (narrow as before).
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;

fn refresh_of(tokens: &serde_json::Value) -> String {
    tokens["refresh_token"].as_str().unwrap().to_owned()
}

/// Moves every grant's pending step-up `secs` into the past, as the clock
/// would (the store is the server's own SQLite file).
async fn age_step_ups(h: &Harness, secs: i64) {
    let pool = sqlx::SqlitePool::connect(&h.store_url).await.unwrap();
    sqlx::query("UPDATE oauth_grants SET step_up_at = step_up_at - ?")
        .bind(secs)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

#[tokio::test]
async fn a_refresh_before_any_challenge_still_works() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("minimal").await;
    let (status, body) = h.refresh(&client, &refresh_of(&tokens)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scope"], "offline_access", "{body}");
}

#[tokio::test]
async fn after_an_http_challenge_the_refresh_sends_the_client_to_authorize() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("minimal").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, challenge, _) = h.list_records(access, "", "forbidden").await;
    assert_eq!(status, 403);
    assert!(challenge.is_some());

    let (status, body) = h.refresh(&client, &refresh_of(&tokens)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant", "{body}");
    let description = body["error_description"].as_str().unwrap();
    assert!(
        description.contains("dns_records:read") && description.contains("authorize again"),
        "{description}"
    );
    assert!(
        body.get("access_token").is_none(),
        "no token, so none wider: {body}"
    );
    // Asking for the missing scope on the refresh is no way around it.
    let (status, body) = h
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh_of(&tokens)),
            ("client_id", &client),
            ("scope", "dns_records:read offline_access"),
        ])
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.get("access_token").is_none(), "{body}");
}

#[tokio::test]
async fn a_tool_result_challenge_in_the_2026_era_marks_the_grant_too() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("minimal").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _, body) = h
        .list_records_in("2026-07-28", access, "scopeChallenge=tool", "forbidden")
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["_meta"]["mcp/www_authenticate"][0].is_string());
    let (status, body) = h.refresh(&client, &refresh_of(&tokens)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn a_pending_step_up_on_one_grant_leaves_another_alone() {
    let h = start(Options::default()).await;
    let (client_a, a) = h.tokens_choosing("minimal").await;
    let (client_b, b) = h.tokens_choosing("minimal").await;
    let access_a = a["access_token"].as_str().unwrap();
    let (status, _, _) = h.list_records(access_a, "", "forbidden").await;
    assert_eq!(status, 403);
    let (status, body) = h.refresh(&client_b, &refresh_of(&b)).await;
    assert_eq!(status, 200, "grant B refreshes: {body}");
    let (status, _) = h.refresh(&client_a, &refresh_of(&a)).await;
    assert_eq!(status, 400, "grant A is sent to authorize");
}

#[tokio::test]
async fn after_the_window_the_refresh_works_again_and_stays_narrow() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("minimal").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _, _) = h.list_records(access, "", "forbidden").await;
    assert_eq!(status, 403);
    let (status, _) = h.refresh(&client, &refresh_of(&tokens)).await;
    assert_eq!(status, 400);

    age_step_ups(&h, 601).await;
    let (status, body) = h.refresh(&client, &refresh_of(&tokens)).await;
    assert_eq!(status, 200, "not stranded after the window: {body}");
    assert_eq!(body["scope"], "offline_access", "never wider: {body}");
    // The same call is challenged again, which opens a new window.
    let fresh = body["access_token"].as_str().unwrap();
    let (status, challenge, _) = h.list_records(fresh, "", "forbidden").await;
    assert_eq!(status, 403);
    assert!(challenge.unwrap().contains("dns_records:read"));
    let (status, _) = h.refresh(&client, &refresh_of(&body)).await;
    assert_eq!(status, 400, "a new challenge, a new window");
}

/// A grant that holds an accepted scope is never challenged, so it is
/// never marked: its refresh keeps working after a refused call.
#[tokio::test]
async fn a_plain_refusal_does_not_block_the_refresh() {
    let h = start(Options::default()).await;
    let (client, tokens) = h.tokens_choosing("all").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, header, _) = h.list_records(access, "", "forbidden").await;
    assert_eq!((status, header), (200, None));
    let (status, body) = h.refresh(&client, &refresh_of(&tokens)).await;
    assert_eq!(status, 200, "{body}");
}
