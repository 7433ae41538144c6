//! forge.json `skill_groups`: tool-name patterns expanded against the
//! built tools.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{GenerateError, Result};
use crate::ir::{Product, SkillGroup};

/// Whether `name` matches `pattern`, where `*` stands for any run of
/// characters (none included).
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

fn refused(message: String) -> GenerateError {
    GenerateError::Config {
        file: "forge.json".into(),
        message,
    }
}

/// The skill groups forge.json names, each with the tools its patterns
/// match (sorted): a name is `[a-z0-9_-]{1,64}`, and every pattern must
/// match a tool (a typo would silently offer an empty skill).
///
/// # Errors
///
/// A bad name, an empty group or a pattern that matches no tool, with its
/// pointer.
pub fn skill_groups(
    groups: &BTreeMap<String, Vec<String>>,
    products: &[Product],
) -> Result<Vec<SkillGroup>> {
    let names: Vec<&str> = products
        .iter()
        .flat_map(|p| p.tools.iter().map(|t| t.name.as_str()))
        .collect();
    groups
        .iter()
        .map(|(group, patterns)| {
            if !valid_name(group) {
                return Err(refused(format!(
                    "/skill_groups/{group}: a skill name must match ^[a-z0-9_-]{{1,64}}$"
                )));
            }
            if patterns.is_empty() {
                return Err(refused(format!(
                    "/skill_groups/{group}: lists no tool pattern"
                )));
            }
            let mut tools = BTreeSet::new();
            for (i, pattern) in patterns.iter().enumerate() {
                let matched: Vec<&str> =
                    names.iter().copied().filter(|n| glob(pattern, n)).collect();
                if matched.is_empty() {
                    return Err(refused(format!(
                        "/skill_groups/{group}/{i}: `{pattern}` matches no tool"
                    )));
                }
                tools.extend(matched.into_iter().map(str::to_owned));
            }
            Ok(SkillGroup {
                name: group.clone(),
                tools: tools.into_iter().collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn stars_match_any_run() {
        assert!(glob("dns_records_*", "dns_records_list"));
        assert!(glob("*_list", "zones_list"));
        assert!(glob("*", "anything"));
        assert!(glob("a*b*c", "a_x_b_y_c"));
        assert!(glob("exact", "exact"));
        assert!(!glob("exact", "exactly"));
        assert!(!glob("dns_*", "zones_list"));
        assert!(!glob("a*b*c", "a_c_b"));
    }
}
