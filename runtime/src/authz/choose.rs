//! Which missing scope to ask for: a read scope for a read, then the
//! account or zone variant that matches the path, then the scope whose
//! name is closest to the path. A tie names none.

use super::ScopeRule;

/// The scope to ask for among `accepted` (none of them held), or the tied
/// candidates when the rules cannot pick one.
pub(super) fn ask_for<'a>(
    accepted: &[&'a ScopeRule],
    reads: bool,
    path: &str,
) -> Result<&'a ScopeRule, Vec<&'a ScopeRule>> {
    let mut candidates: Vec<&ScopeRule> = accepted.to_vec();
    // A read is best served by a read scope; a write needs a write scope.
    narrow(&mut candidates, |s| s.read_only == reads);
    let words = path_words(path);
    if let Some(root) = words.first() {
        narrow(&mut candidates, |s| {
            name_words(&s.id).first().is_some_and(|w| w == root)
        });
    }
    let best = candidates
        .iter()
        .map(|s| closeness(&s.id, &words))
        .max()
        .unwrap_or(0);
    narrow(&mut candidates, |s| closeness(&s.id, &words) == best);
    match candidates.as_slice() {
        [one] => Ok(one),
        _ => Err(candidates),
    }
}

/// Keeps the candidates `keep` accepts, unless it would keep none.
fn narrow(candidates: &mut Vec<&ScopeRule>, keep: impl Fn(&ScopeRule) -> bool) {
    if candidates.iter().any(|s| keep(s)) {
        candidates.retain(|s| keep(s));
    }
}

/// How many of a scope name's words appear in the path.
fn closeness(id: &str, path_words: &[String]) -> usize {
    name_words(id)
        .iter()
        .filter(|w| path_words.contains(w))
        .count()
}

/// The words of a path's literal segments, lower case and singular
/// (`/zones/{id}/dns_records` → `zone`, `dns`, `record`). Segments that
/// carry digits (ids) are skipped.
fn path_words(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|seg| !seg.is_empty() && !seg.starts_with('{'))
        .filter(|seg| !seg.bytes().any(|b| b.is_ascii_digit()))
        .flat_map(name_words)
        .collect()
}

/// The words of a name, split on anything but letters, lower case and
/// singular.
fn name_words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(|w| singular(&w.to_ascii_lowercase()))
        .collect()
}

fn singular(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
        _ => word.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, read_only: bool) -> ScopeRule {
        ScopeRule {
            id: id.into(),
            read_only,
            permissions: Vec::new(),
        }
    }

    #[test]
    fn a_read_prefers_the_read_scope() {
        let (r, w) = (rule("zone:read", true), rule("zone:write", false));
        assert_eq!(ask_for(&[&w, &r], true, "/zones").map(|s| &s.id), Ok(&r.id));
        assert_eq!(
            ask_for(&[&r, &w], false, "/zones").map(|s| &s.id),
            Ok(&w.id)
        );
    }

    #[test]
    fn the_variant_matching_the_path_wins() {
        let (a, z) = (rule("account:read", true), rule("zone:read", true));
        let path = "/accounts/0123abc/rulesets";
        assert_eq!(ask_for(&[&z, &a], true, path).map(|s| &s.id), Ok(&a.id));
        let path = "/zones/0123abc/rulesets";
        assert_eq!(ask_for(&[&a, &z], true, path).map(|s| &s.id), Ok(&z.id));
    }

    #[test]
    fn then_the_closest_name_and_a_tie_names_none() {
        let (d, w) = (rule("dns_records:read", true), rule("waf:read", true));
        let path = "/zones/{zone_id}/dns_records";
        assert_eq!(ask_for(&[&w, &d], true, path).map(|s| &s.id), Ok(&d.id));
        let (x, y) = (rule("alpha:read", true), rule("beta:read", true));
        let tied = ask_for(&[&x, &y], true, path).map(|s| s.id.clone());
        let ids: Vec<&str> = tied.unwrap_err().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["alpha:read", "beta:read"]);
    }

    #[test]
    fn words_are_singular_and_ids_are_skipped() {
        assert_eq!(
            path_words("/zones/abc123/dns_records"),
            ["zone", "dns", "record"]
        );
        assert_eq!(name_words("Access: Apps"), ["access", "app"]);
    }
}
