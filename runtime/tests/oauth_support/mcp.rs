//! The harness as an MCP client: sign-in with a consent choice, JSON-RPC
//! requests to `/mcp`, the listed tool names.

use serde_json::{Value, json};

use super::{Browser, Harness, Page, REDIRECT, VERIFIER, hidden, http, query_of};

impl Harness {
    /// Approves a consent page with the template `exposure` and more form
    /// `fields` (e.g. the advanced template's `scopes`).
    pub async fn approve_with(
        &self,
        browser: &mut Browser,
        consent: &Page,
        exposure: &str,
        fields: &[(&str, &str)],
    ) -> Page {
        let csrf = hidden(&consent.body, "csrf");
        let request = hidden(&consent.body, "request");
        let mut all = vec![
            ("csrf", csrf.as_str()),
            ("request", request.as_str()),
            ("decision", "approve"),
            ("exposure", exposure),
        ];
        all.extend_from_slice(fields);
        browser
            .post_form(&format!("{}/authorize", self.bound), &self.origin, &all)
            .await
    }

    /// Client registered, signed in with the consent choice `exposure`
    /// (`all`, `read_only`, …) and tokens obtained.
    pub async fn tokens_choosing(&self, exposure: &str) -> (String, Value) {
        let client_id = self.register(&[REDIRECT]).await;
        let mut browser = Browser::default();
        let consent = self.consent(&mut browser, &client_id).await;
        let to_provider = self.approve(&mut browser, &consent, exposure).await;
        assert_eq!(to_provider.status, 302, "{}", to_provider.body);
        let back = browser.get(to_provider.location.as_deref().unwrap()).await;
        assert_eq!(back.status, 302);
        let done = browser.get(back.location.as_deref().unwrap()).await;
        assert_eq!(done.status, 302, "{}", done.body);
        let code = query_of(&done.location.unwrap())["code"].clone();
        let (status, tokens) = self.exchange(&client_id, &code, VERIFIER).await;
        assert_eq!(status, 200, "{tokens}");
        (client_id, tokens)
    }

    /// One JSON-RPC request to `/mcp` with a bearer token: (status, body).
    pub async fn rpc(&self, bearer: &str, method: &str, params: Value) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = http()
            .post(format!("{}/mcp", self.bound))
            .header("authorization", format!("Bearer {bearer}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// `tools/call` of `dns_records_list` for `zone` at `/mcp?{query}`:
    /// (status, `WWW-Authenticate`, body).
    pub async fn list_records(
        &self,
        bearer: &str,
        query: &str,
        zone: &str,
    ) -> (u16, Option<String>, Value) {
        self.list_records_in("2025-11-25", bearer, query, zone)
            .await
    }

    /// [`Harness::list_records`] in protocol era `version` (2026-07-28
    /// carries its version in `_meta` and mirrors method and name in
    /// headers).
    pub async fn list_records_in(
        &self,
        version: &str,
        bearer: &str,
        query: &str,
        zone: &str,
    ) -> (u16, Option<String>, Value) {
        let mut params = json!({"name": "dns_records_list", "arguments": {"zone_id": zone}});
        let mut request = http()
            .post(format!("{}/mcp?{query}", self.bound))
            .header("authorization", format!("Bearer {bearer}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version);
        if version >= "2026-07-28" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "step-up-test", "version": "1"}
            });
            request = request
                .header("mcp-method", "tools/call")
                .header("mcp-name", "dns_records_list");
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let response = request.body(body.to_string()).send().await.unwrap();
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap();
        (
            status,
            challenge,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The tool names `tools/list` gives a bearer token.
    pub async fn listed(&self, bearer: &str) -> Vec<String> {
        let (status, body) = self.rpc(bearer, "tools/list", json!({})).await;
        assert_eq!(status, 200, "{body}");
        body["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {body}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}
