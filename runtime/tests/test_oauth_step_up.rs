//! Step-up over HTTP: a call the upstream refuses for a scope the grant
//! lacks is answered 403 `insufficient_scope` with the scopes to ask for
//! (or, on request, as a tool result carrying the challenge); a grant
//! that already holds an accepted scope gets the plain refusal.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;

#[tokio::test]
async fn a_missing_scope_is_answered_with_an_insufficient_scope_challenge() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("minimal").await;
    let access = tokens["access_token"].as_str().unwrap();

    let (status, challenge, body) = h.list_records(access, "", "forbidden").await;
    assert_eq!(status, 403, "{body}");
    let challenge = challenge.expect("WWW-Authenticate");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"dns_records:read offline_access\""),
        "the held scopes plus the missing one: {challenge}"
    );
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            h.origin
        )),
        "{challenge}"
    );
    assert!(
        challenge.contains("error_description=\"GET /zones/forbidden/dns_records needs the scope dns_records:read\""),
        "{challenge}"
    );

    // The tool-result delivery, asked for by the query.
    let (status, header, body) = h
        .list_records(access, "scopeChallenge=tool", "forbidden")
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(header.is_none());
    assert_eq!(body["result"]["isError"], true, "{body}");
    let carried = body["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap();
    assert_eq!(carried, challenge);
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("grant `dns_records:read`"), "{text}");

    // A call that succeeds is not challenged.
    let (status, header, body) = h.list_records(access, "", "z1").await;
    assert_eq!((status, header), (200, None), "{body}");
}

#[tokio::test]
async fn a_grant_holding_an_accepted_scope_is_never_challenged() {
    let h = start(Options::default()).await;
    let (_, tokens) = h.tokens_choosing("all").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, header, body) = h.list_records(access, "", "forbidden").await;
    assert_eq!((status, header), (200, None), "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("holds the scope `dns_records"), "{text}");
}
