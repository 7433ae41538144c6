//! RFC 8707 `resource` at `/authorize`: only this server's MCP endpoint,
//! spelled exactly; a fragment, another host or port, case or encoding
//! tricks, a longer path and two values are refused before any consent.
#![allow(clippy::unwrap_used, clippy::panic)]

mod oauth_support;

use oauth_support::*;

#[tokio::test]
async fn only_this_servers_mcp_endpoint_is_an_acceptable_resource() {
    let h = start(Options::default()).await;
    let client = h.register(&[REDIRECT]).await;
    let challenge = toolforge_runtime::oauth::crypto::s256_challenge(VERIFIER);
    let good = h.resource();
    let upper = good.to_uppercase();
    let bad = [
        format!("{good}#fragment"),
        good.replace("127.0.0.1", "localhost"),
        good.replace("/mcp", "/MCP"),
        upper,
        good.replace("/mcp", "/m%63p"),
        format!("{good}/accounts/a1/../../mcp"),
        format!("{good}/other"),
        "https://evil.example/mcp".to_owned(),
    ];
    for resource in &bad {
        let params: Vec<(&str, String)> = h
            .standard_params(&client, &challenge)
            .into_iter()
            .map(|(k, v)| {
                if k == "resource" {
                    (k, resource.clone())
                } else {
                    (k, v)
                }
            })
            .collect();
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = Browser::default().get(&h.authorize_url(&params)).await;
        assert_eq!(page.status, 302, "{resource}: {}", page.body);
        let q = query_of(page.location.as_deref().unwrap());
        assert_eq!(q["error"], "invalid_target", "{resource}");
    }
    // Two values: refused as a repeated parameter, with no redirect.
    let mut params = h.standard_params(&client, &challenge);
    params.push(("resource", good.clone()));
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = Browser::default().get(&h.authorize_url(&params)).await;
    assert_eq!(page.status, 400, "{}", page.body);
    // The exact one (and with a trailing slash) is accepted.
    for resource in [good.clone(), format!("{good}/")] {
        let params: Vec<(&str, String)> = h
            .standard_params(&client, &challenge)
            .into_iter()
            .map(|(k, v)| {
                if k == "resource" {
                    (k, resource.clone())
                } else {
                    (k, v)
                }
            })
            .collect();
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = Browser::default().get(&h.authorize_url(&params)).await;
        assert_eq!(page.status, 200, "{resource}: {}", page.body);
    }
}
