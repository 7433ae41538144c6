//! Names: tool names (`^[a-z0-9_]{1,64}$`), product names and Rust
//! identifiers, and the environment variable names of an API, all sanitised
//! here and nowhere else.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// Longest MCP tool name.
pub const MAX_TOOL_NAME: usize = 64;

/// The variable prefix of API `api`: upper-cased, non-alphanumerics as `_`
/// (`GIT_HUB` for `git-hub`).
pub fn api_prefix(api: &str) -> String {
    api.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The environment variable holding an API's upstream token: the API name
/// upper-cased, non-alphanumerics as `_`, then `_API_TOKEN`
/// (`CLOUDFLARE_API_TOKEN` for `cloudflare`).
pub fn token_env_name(api: &str) -> String {
    let mut name = api_prefix(api);
    name.push_str("_API_TOKEN");
    name
}

/// `snake_case` of any text: camelCase split, non-alphanumerics to `_`,
/// runs collapsed, trimmed. Empty input gives an empty string.
pub fn snake(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() {
                let prev = i.checked_sub(1).map(|j| chars[j]);
                let next = chars.get(i + 1).copied();
                let boundary = match prev {
                    Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                    Some(p) if p.is_ascii_uppercase() => {
                        next.is_some_and(|n| n.is_ascii_lowercase())
                    }
                    _ => false,
                };
                if boundary && !out.ends_with('_') {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// Words of a name, for shortening.
fn words(name: &str) -> Vec<&str> {
    name.split('_').filter(|w| !w.is_empty()).collect()
}

/// Short stable hash (6 hex chars) of a key.
pub fn short_hash(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    hex::encode(&digest[..3])
}

/// Which words [`fit_tool_name_by`] drops first from a name that is too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shorten {
    /// The second word, repeatedly (the first and last words stay).
    Left,
    /// The second-to-last word, repeatedly.
    Right,
    /// The middle word, repeatedly.
    Middle,
}

/// Shortens `name` to at most [`MAX_TOOL_NAME`] chars: drops middle words
/// (keeping the first and the last), then falls back to a hashed cut.
pub fn fit_tool_name(name: &str, key: &str) -> String {
    fit_tool_name_by(name, key, Shorten::Left)
}

/// [`fit_tool_name`], dropping words in the order `how` says.
pub fn fit_tool_name_by(name: &str, key: &str, how: Shorten) -> String {
    if name.len() <= MAX_TOOL_NAME && !name.is_empty() {
        return name.to_string();
    }
    if name.is_empty() {
        return format!("op_{}", short_hash(key));
    }
    let mut ws = words(name);
    while ws.len() > 2 && ws.join("_").len() > MAX_TOOL_NAME {
        let at = match how {
            // The product and the action carry most meaning.
            Shorten::Left => 1,
            Shorten::Right => ws.len() - 2,
            Shorten::Middle => ws.len() / 2,
        };
        ws.remove(at);
    }
    let joined = ws.join("_");
    if joined.len() <= MAX_TOOL_NAME {
        return joined;
    }
    let hash = short_hash(key);
    let keep = MAX_TOOL_NAME - hash.len() - 1;
    let mut cut = joined[..keep].trim_end_matches('_').to_string();
    cut.push('_');
    cut.push_str(&hash);
    cut
}

/// `name` without the words of three or more letters it already used
/// (`event_instances_event_forward` → `event_instances_forward`).
pub fn dedupe_words(name: &str) -> String {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    words(name)
        .into_iter()
        .filter(|w| w.len() < 3 || seen.insert(*w))
        .collect::<Vec<_>>()
        .join("_")
}

/// One name request: a stable key (`METHOD path`) and candidate names in
/// order of preference.
#[derive(Debug, Clone)]
pub struct NameRequest {
    /// Stable operation key.
    pub key: String,
    /// Candidates, best first; all already fitted and sanitised.
    pub candidates: Vec<String>,
}

/// Resolves names so they are unique: each request gets its first
/// candidate that is not claimed by another request's first choice and not
/// yet taken; the last resort is the base name plus a hash of the key.
/// Deterministic for the same set of requests, whatever their order.
pub fn assign_unique(requests: &[NameRequest], locked: &BTreeMap<String, String>) -> Vec<String> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by(|&a, &b| requests[a].key.cmp(&requests[b].key));
    let mut first_counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in requests {
        if let Some(c) = r.candidates.first() {
            *first_counts.entry(c.as_str()).or_default() += 1;
        }
    }
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut out = vec![String::new(); requests.len()];
    // Locked names first, so they are never displaced.
    for &i in &order {
        if let Some(name) = locked.get(&requests[i].key)
            && taken.insert(name.clone())
        {
            out[i] = name.clone();
        }
    }
    // Uncontested first choices next.
    for &i in &order {
        if !out[i].is_empty() {
            continue;
        }
        if let Some(c) = requests[i].candidates.first()
            && first_counts.get(c.as_str()) == Some(&1)
            && taken.insert(c.clone())
        {
            out[i] = c.clone();
        }
    }
    for &i in &order {
        if !out[i].is_empty() {
            continue;
        }
        let r = &requests[i];
        let chosen = r
            .candidates
            .iter()
            .skip(1)
            .find(|c| !taken.contains(*c) && !first_counts.contains_key(c.as_str()))
            .cloned()
            .unwrap_or_else(|| {
                let base = r
                    .candidates
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "op".to_string());
                let hash = short_hash(&r.key);
                let keep = MAX_TOOL_NAME.saturating_sub(hash.len() + 1).min(base.len());
                format!("{}_{}", base[..keep].trim_end_matches('_'), hash)
            });
        taken.insert(chosen.clone());
        out[i] = chosen;
    }
    out
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe",
    "use", "where", "while", "abstract", "become", "box", "do", "final", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// A Rust module identifier for a product name (`^[a-z0-9_]+$`): keywords,
/// leading digits and the crate's own file names (`lib`, `main`, `schemas`)
/// get a `p_` prefix so file and module names agree.
pub fn module_ident(product: &str) -> String {
    let s = snake(product);
    if s.is_empty() {
        return "p_".to_string();
    }
    if s.starts_with(|c: char| c.is_ascii_digit())
        || RUST_KEYWORDS.contains(&s.as_str())
        || s == "lib"
        || s == "main"
        || s == "schemas"
    {
        format!("p_{s}")
    } else {
        s
    }
}

/// A Rust `static` identifier for a tool name.
pub fn static_ident(tool: &str) -> String {
    let up = tool.to_ascii_uppercase();
    if up.starts_with(|c: char| c.is_ascii_digit()) || up.is_empty() {
        format!("T_{up}")
    } else {
        up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_env_names() {
        assert_eq!(token_env_name("cloudflare"), "CLOUDFLARE_API_TOKEN");
        assert_eq!(token_env_name("git-hub"), "GIT_HUB_API_TOKEN");
    }

    #[test]
    fn snake_cases() {
        assert_eq!(
            snake("dns-records-for-a-zone-list"),
            "dns_records_for_a_zone_list"
        );
        assert_eq!(snake("getHTTPResponse"), "get_http_response");
        assert_eq!(snake("ListV2Items"), "list_v2_items");
        assert_eq!(snake("  --x--  "), "x");
        assert_eq!(snake("Ünïcode"), "n_code");
        assert_eq!(snake(""), "");
    }

    #[test]
    fn long_names_fit() {
        let long = "a_".repeat(50) + "list";
        let fitted = fit_tool_name(&long, "GET /x");
        assert!(fitted.len() <= MAX_TOOL_NAME, "{fitted}");
        let one_word = "x".repeat(100);
        let fitted = fit_tool_name(&one_word, "GET /y");
        assert!(fitted.len() <= MAX_TOOL_NAME);
        assert_ne!(fitted, fit_tool_name(&one_word, "GET /z"));
    }

    #[test]
    fn shortening_orders_and_word_dedupe() {
        let long = "users_calendar_view_instances_exception_occurrences_attachments_get_content";
        assert_eq!(
            fit_tool_name_by(long, "k", Shorten::Left),
            "users_instances_exception_occurrences_attachments_get_content"
        );
        assert_eq!(
            fit_tool_name_by(long, "k", Shorten::Right),
            "users_calendar_view_instances_exception_occurrences_content"
        );
        assert_eq!(
            fit_tool_name_by(long, "k", Shorten::Middle),
            "users_calendar_view_instances_attachments_get_content"
        );
        assert_eq!(
            dedupe_words("event_instances_event_exception_occurrences_event_forward"),
            "event_instances_exception_occurrences_forward"
        );
        // Short words (`id`, `by`) may repeat.
        assert_eq!(
            dedupe_words("get_a_a_id_by_id_list_list"),
            "get_a_a_id_by_id_list"
        );
    }

    #[test]
    fn collisions_resolve_deterministically() {
        let reqs = vec![
            NameRequest {
                key: "GET /zones/{z}/r".into(),
                candidates: vec!["r_list".into(), "zone_r_list".into()],
            },
            NameRequest {
                key: "GET /accounts/{a}/r".into(),
                candidates: vec!["r_list".into(), "account_r_list".into()],
            },
            NameRequest {
                key: "GET /x".into(),
                candidates: vec!["x_list".into()],
            },
        ];
        let names = assign_unique(&reqs, &BTreeMap::new());
        assert_eq!(names, vec!["zone_r_list", "account_r_list", "x_list"]);
        let mut rev = reqs.clone();
        rev.reverse();
        let mut names_rev = assign_unique(&rev, &BTreeMap::new());
        names_rev.reverse();
        assert_eq!(names, names_rev);
    }

    #[test]
    fn locked_names_win() {
        let reqs = vec![NameRequest {
            key: "GET /x".into(),
            candidates: vec!["x_list".into()],
        }];
        let mut lock = BTreeMap::new();
        lock.insert("GET /x".to_string(), "old_name".to_string());
        assert_eq!(assign_unique(&reqs, &lock), vec!["old_name"]);
    }

    #[test]
    fn idents() {
        assert_eq!(module_ident("type"), "p_type");
        assert_eq!(module_ident("3d"), "p_3d");
        assert_eq!(module_ident("schemas"), "p_schemas");
        assert_eq!(static_ident("9x"), "T_9X");
    }
}
