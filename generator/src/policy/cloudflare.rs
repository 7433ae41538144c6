//! Cloudflare policy: products and forge-style names from paths, merged
//! account/zone paths, token-group permissions, the response envelope, and
//! the runtime profile (base URL, envelope, refusal texts, default account).
//!
//! This module is the one place that knows Cloudflare: the runtime learns
//! all of it from the profile this policy emits ([`Cloudflare::profile`]),
//! so the names below (account arguments, scopes) exist once.

use serde_json::{Map, Value, json};

use super::{ApiPolicy, MergedPath, MergedRoute, OpRef};
use crate::ir::{
    AccountList, BodyEnvelope, Envelope, HttpMethod, Identity, IdentityProbe, MergedSelector,
    MergedVariant, Profile, Refusals, Requirement, Scheme, ScopedPath, Server,
};
use crate::naming::{fit_tool_name, snake};

/// Cloudflare's API v4 base URL (the spec's `servers` entry).
pub const BASE_URL: &str = "https://api.cloudflare.com/client/v4";
/// Where API tokens are managed, quoted in refusal texts.
pub const TOKENS_URL: &str = "dash.cloudflare.com/profile/api-tokens";
/// Path parameters that name an account: optional in tool schemas, filled
/// by the runtime with the credential's only account.
pub const ACCOUNT_ARGS: [&str; 3] = ["account_id", "accountId", "account_identifier"];
/// The selector argument of merged account/zone tools (also the scope word
/// of their scope-qualified names).
pub const SCOPE_ARG: &str = "account_or_zone";
/// The id argument of merged account/zone tools.
pub const SCOPE_ID_ARG: &str = "account_or_zone_id";
/// The bearer scheme of API tokens (`Authorization: Bearer`), preferred
/// in every requirement and filled by the per-client token.
pub const TOKEN_SCHEME: &str = "api_token";
/// How many accounts the runtime's account listing asks for.
const ACCOUNTS_PAGE: u32 = 50;

/// A scope a path can start with (`/accounts/{account_id}/…`).
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    /// First path segment, also the merged selector's value.
    pub value: &'static str,
    /// The id parameter after it in real paths.
    pub id: &'static str,
    /// The scope word (singular), used in names and descriptions.
    pub noun: &'static str,
}

/// The scopes merged paths split into, in selector order.
pub const SCOPES: [Scope; 2] = [
    Scope {
        value: "accounts",
        id: "account_id",
        noun: "account",
    },
    Scope {
        value: "zones",
        id: "zone_id",
        noun: "zone",
    },
];

/// The Cloudflare [`ApiPolicy`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Cloudflare;

impl ApiPolicy for Cloudflare {
    fn product(&self, op: &OpRef<'_>) -> String {
        product(op.path)
    }

    fn name_candidates(&self, op: &OpRef<'_>, _product: &str) -> Vec<String> {
        name_candidates(op)
    }

    fn permissions(&self, op: &OpRef<'_>) -> Vec<String> {
        permissions(op.op)
    }

    fn merged_path(&self, path: &str) -> Option<MergedPath> {
        merged_path(path)
    }

    fn path_param_optional(&self, name: &str) -> bool {
        is_account_param(name) || name == SCOPE_ID_ARG
    }

    fn output(&self, success: Option<super::Success>) -> (Envelope, Option<Value>) {
        output(success.map(super::Success::into_root))
    }

    fn unwraps(&self, success: &Value) -> bool {
        is_envelope(success) || !super::generic::is_object_schema(success)
    }

    /// The envelope, refusal texts naming the token page, the default
    /// account from `GET /accounts`, the account/zone selector, an
    /// `execute` example listing zones, and the identity: `GET /user` for
    /// user tokens (`user:<id>`), else the only account an account-owned
    /// token sees (`account:<id>`).
    fn profile(&self, api: &str) -> Profile {
        let own = |s: &str| s.to_owned();
        Profile {
            envelope: BodyEnvelope {
                payload: own("/result"),
                failure_flag: Some(own("/success")),
                page: Some(own("/result_info")),
                ..BodyEnvelope::bare()
            },
            refusals: Some(Refusals {
                grant: format!(
                    "This call needs the token permission(s) {{permissions}}; grant them to the API token at {TOKENS_URL}, or use a role that includes them."
                ),
                unknown: format!(
                    "The API documents no specific permission for this call; check the API token's permissions and resources at {TOKENS_URL} (the account or zone must be included)."
                ),
                empty_list: Some(format!(
                    "Note: the list is empty. If you expected items, the API token may lack the permission(s) {{permissions}} (the API filters lists by permission instead of refusing them); check the token at {TOKENS_URL}."
                )),
            }),
            accounts: Some(AccountList {
                args: ACCOUNT_ARGS.map(own).to_vec(),
                path: format!("/accounts?per_page={ACCOUNTS_PAGE}"),
                items: own("/result"),
                id_field: own("id"),
                name_field: own("name"),
                total: Some(own("/result_info/total_count")),
                permission: Some(own("Account Settings Read")),
            }),
            merged: Some(MergedSelector {
                arg: own(SCOPE_ARG),
                id_arg: own(SCOPE_ID_ARG),
                variants: SCOPES
                    .iter()
                    .map(|s| MergedVariant {
                        value: own(s.value),
                        id: own(s.id),
                        noun: own(s.noun),
                    })
                    .collect(),
            }),
            execute_example: Some(own(
                r#"async () => { const r = await api.request({ method: "GET", path: "/zones", query: { per_page: 5 } }); return r.result.map(z => ({ id: z.id, name: z.name })); }"#,
            )),
            identity: Some(Identity {
                probes: vec![
                    IdentityProbe {
                        path: own("/user"),
                        only: None,
                        id: own("/id"),
                        name: Some(own("/email")),
                        prefix: own("user"),
                    },
                    IdentityProbe {
                        path: format!("/accounts?per_page={ACCOUNTS_PAGE}"),
                        only: Some(String::new()),
                        id: own("/id"),
                        name: Some(own("/name")),
                        prefix: own("account"),
                    },
                ],
            }),
            scoped_paths: vec![
                ScopedPath {
                    template: own("/accounts/{account_id}"),
                    check: Some(own("/accounts/{account_id}")),
                },
                ScopedPath {
                    template: own("/accounts/{account_id}/zones/{zone_id}"),
                    check: Some(own("/zones/{zone_id}")),
                },
            ],
            ..Profile::generic(api)
        }
    }

    /// [`TOKEN_SCHEME`] first in every requirement that needs a
    /// credential: an API token works for every endpoint, though the
    /// 2024-08-06 release lists only `X-Auth-Email` + `X-Auth-Key` for 653
    /// operations and requires all three schemes at once for 436 (an OR
    /// written as an AND). The spec's alternatives follow, for legacy keys.
    fn security(&self, schemes: &[&str], requirement: Requirement) -> Requirement {
        let Some(token) = schemes.iter().position(|s| *s == TOKEN_SCHEME) else {
            return requirement;
        };
        let Ok(token) = u16::try_from(token) else {
            return requirement;
        };
        if requirement.is_empty() {
            return requirement;
        }
        std::iter::once(vec![token]).chain(requirement).collect()
    }

    /// [`TOKEN_SCHEME`], the scheme `CLOUDFLARE_API_TOKEN` fills.
    fn primary_scheme(&self, schemes: &[Scheme], chosen: Option<u16>) -> Option<u16> {
        schemes
            .iter()
            .position(|s| s.name == TOKEN_SCHEME && s.kind.is_one_secret())
            .and_then(|i| u16::try_from(i).ok())
            .or(chosen)
    }

    /// Always [`BASE_URL`]: the releases (2023-12-04, 2024-08-06) and the
    /// sample declare it as their only server, and a spec declaring another
    /// (or none) still describes the same API.
    fn default_server(&self, _spec: Option<Server>) -> Option<Server> {
        Some(Server::fixed(BASE_URL))
    }
}

/// Path parameters that name an account.
pub fn is_account_param(name: &str) -> bool {
    ACCOUNT_ARGS.contains(&name)
}

/// Splits a path into its scope word (`account`, `zone`, `account_or_zone`)
/// and the segments after the scope.
fn scope_and_rest(path: &str) -> (Option<&'static str>, Vec<&str>) {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let is_param = |s: &str| s.starts_with('{') && s.ends_with('}');
    match segs.as_slice() {
        [first, second, rest @ ..] if is_param(first) && is_param(second) => {
            (Some(SCOPE_ARG), rest.to_vec())
        }
        [first, second, rest @ ..] if is_param(second) && !rest.is_empty() => {
            match SCOPES.iter().find(|s| s.value == *first) {
                Some(scope) => (Some(scope.noun), rest.to_vec()),
                None => (None, segs),
            }
        }
        _ => (None, segs),
    }
}

/// The first literal segment after the scope (`dns_records`, `workers`…).
pub fn product(path: &str) -> String {
    let (_, rest) = scope_and_rest(path);
    rest.iter()
        .find(|s| !s.starts_with('{'))
        .map(|s| snake(s))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "api".to_string())
}

fn action(
    method: HttpMethod,
    last_is_param: bool,
    last_literal: Option<&str>,
) -> Option<&'static str> {
    let plural = last_literal.is_some_and(|w| w.ends_with('s'));
    match method {
        HttpMethod::Get if !last_is_param && plural => Some("list"),
        HttpMethod::Get => Some("get"),
        HttpMethod::Post if last_is_param || plural => Some("create"),
        // `POST …/purge_cache`, `POST …/query`: the last word is the verb.
        HttpMethod::Post => None,
        HttpMethod::Put => Some("update"),
        HttpMethod::Patch => Some("edit"),
        HttpMethod::Delete => Some("delete"),
        HttpMethod::Head => Some("head"),
        HttpMethod::Options => Some("options"),
        HttpMethod::Trace => Some("trace"),
    }
}

fn join_words(words: &[String], action: Option<&str>) -> String {
    let mut out: Vec<&str> = Vec::new();
    for w in words {
        if out.last() != Some(&w.as_str()) && !w.is_empty() {
            out.push(w);
        }
    }
    if let Some(a) = action {
        out.push(a);
    }
    out.join("_")
}

/// Forge-style names: product and sub-resource words plus an action,
/// e.g. `dns_records_list`; then a scope-qualified name
/// (`zone_rulesets_list`), then one naming the path parameters.
pub fn name_candidates(op: &OpRef<'_>) -> Vec<String> {
    let (scope, rest) = scope_and_rest(op.path);
    let key = op.key();
    let literals: Vec<String> = rest
        .iter()
        .filter(|s| !s.starts_with('{'))
        .map(|s| snake(s))
        .collect();
    let with_params: Vec<String> = rest
        .iter()
        .map(|s| {
            if s.starts_with('{') {
                // Placeholder names churn between releases (`{uuid}` →
                // `{policy_id}`); a fixed word keeps names stable.
                "id".to_string()
            } else {
                snake(s)
            }
        })
        .collect();
    let last_is_param = rest.last().is_some_and(|s| s.starts_with('{'));
    let last_literal = literals.last().map(String::as_str);
    let act = action(op.method, last_is_param, last_literal);
    // A POST on a path that can also be listed (`GET …/dns_firewall`)
    // creates an item; otherwise the last word is the verb (`…/purge_cache`).
    let listable = op.path_item.get("get").is_some();
    let act = if act.is_none() && (literals.is_empty() || listable) {
        Some("create")
    } else {
        act
    };
    let words = if literals.is_empty() {
        vec!["api".to_string()]
    } else {
        literals.clone()
    };
    let base = fit_tool_name(&join_words(&words, act), &key);
    let mut out = vec![base];
    if let Some(scope) = scope {
        let mut scoped = vec![scope.to_string()];
        scoped.extend(words.iter().cloned());
        out.push(fit_tool_name(&join_words(&scoped, act), &key));
    }
    let mut param_words = scope.map(|s| vec![s.to_string()]).unwrap_or_default();
    param_words.extend(with_params);
    out.push(fit_tool_name(&join_words(&param_words, act), &key));
    out
}

/// `x-api-token-group` (newer releases) or `x-cfPermissionsRequired.enum` (older).
pub fn permissions(op: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |v: &Value| {
        if let Some(s) = v.as_str()
            && !out.iter().any(|o| o == s)
        {
            out.push(s.to_string());
        }
    };
    match op.get("x-api-token-group") {
        Some(Value::Array(groups)) => groups.iter().for_each(&mut push),
        Some(v @ Value::String(_)) => push(v),
        _ => {}
    }
    if let Some(Value::Array(perms)) = op
        .get("x-cfPermissionsRequired")
        .and_then(|p| p.get("enum"))
    {
        perms.iter().for_each(&mut push);
    }
    out
}

/// Longest account or zone id: both are 32 hex digits.
const ID_MAX_LENGTH: u64 = 32;

/// Recognises `/{account_or_zone}/{account_or_zone_id}/…` (any names whose
/// selector mentions both an account and a zone).
pub fn merged_path(path: &str) -> Option<MergedPath> {
    let trimmed = path.strip_prefix('/')?;
    let mut parts = trimmed.splitn(3, '/');
    let first = parts.next()?;
    let second = parts.next()?;
    let rest = parts.next().map(|r| format!("/{r}")).unwrap_or_default();
    let selector = first.strip_prefix('{')?.strip_suffix('}')?;
    let id = second.strip_prefix('{')?.strip_suffix('}')?;
    let lower = selector.to_ascii_lowercase();
    if !(lower.contains("account") && lower.contains("zone")) {
        return None;
    }
    Some(MergedPath {
        selector: selector.to_string(),
        id_param: id.to_string(),
        selector_description: "Whether the call targets an account or a zone; picks the real path."
            .into(),
        id_description: format!(
            "The account ID (when {SCOPE_ARG} is `accounts`; defaults to the session's only account) or the zone ID."
        ),
        id_max_length: Some(ID_MAX_LENGTH),
        variants: SCOPES
            .iter()
            .map(|s| MergedRoute {
                value: s.value.into(),
                path: format!("/{}/{{{}}}{rest}", s.value, s.id),
                id: s.id.into(),
                noun: s.noun.into(),
            })
            .collect(),
    })
}

/// Collects object properties through nested `allOf`; a later definition of
/// a property replaces an earlier one in place (the envelope's generic
/// `result` is refined by the operation's own). Borrows: only the parts
/// kept in the output are cloned.
fn envelope_properties<'a>(schema: &'a Value, into: &mut Vec<(&'a str, &'a Value)>, depth: usize) {
    if depth > 16 {
        return;
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (k, v) in props {
            match into.iter_mut().find(|(name, _)| *name == k.as_str()) {
                Some(slot) => slot.1 = v,
                None => into.push((k.as_str(), v)),
            }
        }
    }
    if let Some(Value::Array(members)) = schema.get("allOf") {
        for m in members {
            envelope_properties(m, into, depth + 1);
        }
    }
}

/// Whether a success schema is the API's envelope (`success`, `errors`
/// and `messages` among its properties, `allOf` members included).
fn is_envelope(schema: &Value) -> bool {
    let mut props = Vec::new();
    envelope_properties(schema, &mut props, 0);
    ["success", "errors", "messages"]
        .iter()
        .all(|k| props.iter().any(|(name, _)| name == k))
}

/// Output of an enveloped success body: `{result, result_info?}`.
pub fn output(success: Option<Value>) -> (Envelope, Option<Value>) {
    let Some(schema) = success else {
        return (Envelope::None, None);
    };
    if !is_envelope(&schema) {
        return super::generic::output(Some(schema));
    }
    let mut props = Vec::new();
    envelope_properties(&schema, &mut props, 0);
    let get = |key: &str| props.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let mut out = Map::new();
    out.insert(
        "result".into(),
        get("result").cloned().unwrap_or_else(|| json!({})),
    );
    let list = get("result_info").is_some();
    if let Some(info) = get("result_info") {
        out.insert("result_info".into(), info.clone());
    }
    // By hand: `json!` would re-serialise `out` (a deep copy).
    let mut schema_out = Value::Object(Map::from_iter([
        ("type".to_string(), Value::String("object".into())),
        ("properties".to_string(), Value::Object(out)),
    ]));
    if let Some(defs) = schema.get("$defs") {
        schema_out["$defs"] = defs.clone();
    }
    (Envelope::Result { list }, Some(schema_out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(method: HttpMethod, path: &str) -> Vec<String> {
        let item = if method == HttpMethod::Post && path.ends_with("dns_firewall") {
            serde_json::json!({"get": {}})
        } else {
            Value::Null
        };
        name_candidates(&OpRef {
            path_item: &item,
            path,
            method,
            op: &Value::Null,
        })
    }

    #[test]
    fn forge_style_names() {
        assert_eq!(
            names(HttpMethod::Get, "/zones/{zone_id}/dns_records")[0],
            "dns_records_list"
        );
        assert_eq!(
            names(HttpMethod::Get, "/zones/{zone_id}/dns_records/{id}")[0],
            "dns_records_get"
        );
        assert_eq!(
            names(HttpMethod::Post, "/zones/{zone_id}/dns_records")[0],
            "dns_records_create"
        );
        assert_eq!(
            names(HttpMethod::Post, "/zones/{zone_id}/purge_cache")[0],
            "purge_cache"
        );
        assert_eq!(names(HttpMethod::Get, "/accounts")[0], "accounts_list");
        assert_eq!(
            names(HttpMethod::Post, "/accounts/{a}/dns_firewall")[0],
            "dns_firewall_create"
        );
        assert_eq!(
            names(HttpMethod::Get, "/accounts/{account_id}")[0],
            "accounts_get"
        );
        assert_eq!(
            names(HttpMethod::Patch, "/zones/{zone_id}")[0],
            "zones_edit"
        );
        assert_eq!(
            names(
                HttpMethod::Get,
                "/{account_or_zone}/{account_or_zone_id}/rulesets"
            ),
            vec![
                "rulesets_list",
                "account_or_zone_rulesets_list",
                "account_or_zone_rulesets_list"
            ]
        );
        assert_eq!(
            names(HttpMethod::Get, "/zones/{zone_id}/rulesets")[1],
            "zone_rulesets_list"
        );
    }

    #[test]
    fn products() {
        assert_eq!(product("/zones/{zone_id}/dns_records/{id}"), "dns_records");
        assert_eq!(product("/accounts/{a}/workers/scripts"), "workers");
        assert_eq!(product("/accounts"), "accounts");
        assert_eq!(product("/zones/{zone_id}"), "zones");
        assert_eq!(
            product("/{account_or_zone}/{account_or_zone_id}/rulesets"),
            "rulesets"
        );
    }

    #[test]
    fn merged_split() {
        let m =
            merged_path("/{account_or_zone}/{account_or_zone_id}/rulesets/{ruleset_id}").unwrap();
        assert_eq!(
            m.variants[0].path,
            "/accounts/{account_id}/rulesets/{ruleset_id}"
        );
        assert_eq!(m.variants[1].path, "/zones/{zone_id}/rulesets/{ruleset_id}");
        assert_eq!(m.variants[0].noun, "account");
        assert!(merged_path("/zones/{zone_id}/x").is_none());
    }

    #[test]
    fn envelope_output() {
        let schema = json!({"allOf": [
            {"allOf": [{"properties": {"success": {}, "errors": {}, "messages": {}, "result": {"type": "string"}}},
                       {"properties": {"result_info": {"type": "object"}}}]},
            {"properties": {"result": {"type": "array"}}}
        ]});
        let (env, out) = output(Some(schema.clone()));
        assert_eq!(env, Envelope::Result { list: true });
        let out = out.unwrap();
        assert_eq!(out["properties"]["result"]["type"], "array");
        assert!(out["properties"]["result_info"].is_object());
    }

    #[test]
    fn unwraps_exactly_when_output_gives_an_envelope() {
        let schemas = [
            json!({"properties": {"success": {}, "errors": {}, "messages": {}, "result": {}}}),
            json!({"allOf": [{"properties": {"success": {}, "errors": {}}}, {"properties": {"messages": {}}}]}),
            json!({"type": "object", "properties": {"success": {}, "errors": {}}}),
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "string"}),
            json!({"anyOf": [{"type": "object"}, {"type": "null"}]}),
            json!({}),
        ];
        for schema in schemas {
            let (env, out) = output(Some(schema.clone()));
            assert_eq!(
                Cloudflare.unwraps(&schema),
                env != Envelope::None,
                "{schema}"
            );
            if env == Envelope::None {
                assert_eq!(out.as_ref(), Some(&schema), "taken as it is");
            }
        }
    }

    #[test]
    fn permissions_both_generations() {
        assert_eq!(
            permissions(&json!({"x-api-token-group": ["DNS Read", "DNS Read"]})),
            vec!["DNS Read"]
        );
        assert_eq!(
            permissions(&json!({"x-cfPermissionsRequired": {"enum": ["#dns_records:read"]}})),
            vec!["#dns_records:read"]
        );
    }
}
