//! Environment variable names of the credential schemes: `<API>_<SCHEME>`
//! in upper snake case (the API prefix is not repeated when the scheme
//! name already starts with it), with `_USERNAME`/`_PASSWORD` for basic
//! and `_CLIENT_ID`/`_CLIENT_SECRET` for client credentials; a clash gets
//! `_2`, `_3`, … on the later scheme (schemes in name order).

use std::collections::HashSet;

use crate::ir::SchemeKind;
pub use crate::naming::api_prefix;
use crate::naming::snake;

/// The stem of scheme `scheme`'s variables before clashes are resolved:
/// `<API>_<SCHEME>`, or `<SCHEME>` alone when it already starts with the
/// API prefix.
pub fn stem(api: &str, scheme: &str) -> String {
    let prefix = api_prefix(api);
    let mut part = snake(scheme).to_ascii_uppercase();
    if part.is_empty() {
        part = "CREDENTIAL".to_owned();
    }
    let already = !prefix.is_empty()
        && part
            .strip_prefix(prefix.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'));
    if already || prefix.is_empty() {
        part
    } else {
        format!("{prefix}_{part}")
    }
}

/// Suffixes of a kind's variables, in [`SchemeKind::env_parts`] order.
fn suffixes(kind: &SchemeKind) -> &'static [&'static str] {
    match kind {
        SchemeKind::ApiKey { .. } | SchemeKind::Bearer => &[""],
        SchemeKind::Basic => &["_USERNAME", "_PASSWORD"],
        SchemeKind::ClientCredentials { .. } => &["_CLIENT_ID", "_CLIENT_SECRET"],
        SchemeKind::Unsupported { .. } => &[],
    }
}

/// The variables of each scheme (`(name, kind)` in table order), clashes
/// resolved in that order: a scheme whose variables would repeat an
/// earlier one's takes the first free `_2`, `_3`, … stem.
pub fn env_names(api: &str, schemes: &[(&str, &SchemeKind)]) -> Vec<Vec<String>> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(schemes.len());
    for (name, kind) in schemes {
        let suffixes = suffixes(kind);
        if suffixes.is_empty() {
            out.push(Vec::new());
            continue;
        }
        let base = stem(api, name);
        let mut n = 1usize;
        let vars = loop {
            let stem = if n == 1 {
                base.clone()
            } else {
                format!("{base}_{n}")
            };
            let vars: Vec<String> = suffixes.iter().map(|s| format!("{stem}{s}")).collect();
            if vars.iter().all(|v| !taken.contains(v)) {
                break vars;
            }
            n += 1;
        };
        taken.extend(vars.iter().cloned());
        out.push(vars);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_add_the_api_prefix_once() {
        assert_eq!(stem("cloudflare", "api_token"), "CLOUDFLARE_API_TOKEN");
        assert_eq!(stem("cloudflare", "apiKey"), "CLOUDFLARE_API_KEY");
        assert_eq!(stem("cloudflare", "cloudflare_token"), "CLOUDFLARE_TOKEN");
        assert_eq!(stem("cloudflare", "CloudflareAuth"), "CLOUDFLARE_AUTH");
        assert_eq!(stem("cloudflare", "cloudflare"), "CLOUDFLARE");
        assert_eq!(stem("cloud", "cloudflare"), "CLOUD_CLOUDFLARE");
        assert_eq!(stem("git-hub", "OAuth2 (PKCE)"), "GIT_HUB_O_AUTH2_PKCE");
        assert_eq!(stem("git-hub", "git_hub_key"), "GIT_HUB_KEY");
        assert_eq!(stem("x", "HTTPBearer"), "X_HTTP_BEARER");
        assert_eq!(stem("x", "---"), "X_CREDENTIAL");
    }

    #[test]
    fn each_kind_gets_its_variables_and_clashes_are_numbered() {
        let bearer = SchemeKind::Bearer;
        let basic = SchemeKind::Basic;
        let cc = SchemeKind::ClientCredentials {
            token_url: "/token".into(),
            scopes: vec![],
        };
        let mtls = SchemeKind::Unsupported {
            what: "mutualTLS".into(),
        };
        let envs = env_names(
            "pets",
            &[
                ("ApiToken", &bearer),
                ("api_token", &bearer),
                ("api-token", &bearer),
                ("basic", &basic),
                ("basic_username", &bearer),
                ("mtls", &mtls),
                ("oauth", &cc),
            ],
        );
        assert_eq!(
            envs,
            [
                vec!["PETS_API_TOKEN"],
                vec!["PETS_API_TOKEN_2"],
                vec!["PETS_API_TOKEN_3"],
                vec!["PETS_BASIC_USERNAME", "PETS_BASIC_PASSWORD"],
                vec!["PETS_BASIC_USERNAME_2"],
                vec![],
                vec!["PETS_OAUTH_CLIENT_ID", "PETS_OAUTH_CLIENT_SECRET"],
            ]
        );
        // A two-variable scheme moves as a whole.
        let envs = env_names("pets", &[("a_password", &bearer), ("a", &basic)]);
        assert_eq!(
            envs,
            [
                vec!["PETS_A_PASSWORD"],
                vec!["PETS_A_2_USERNAME", "PETS_A_2_PASSWORD"]
            ]
        );
    }
}
