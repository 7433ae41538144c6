//! Version words in product names: `v1`, `v2beta1`, dates (`2010_04_01`,
//! `20100401`), the same glued to `api` (`api20100401`, `apiv1`), and the
//! `api` / `rest` words that usually come with them. Generic products drop
//! them ([`strip_versions`]); the corpus report counts the products that
//! still carry one ([`has_version_word`], [`has_api_word`]).

/// Suffixes a version word may carry after its number (`v2beta1`,
/// `v1p1beta1`, `v3preview`), longest first.
const VERSION_SUFFIXES: &[&str] = &["preview", "alpha", "beta", "dev", "rc", "p"];

/// Words that name the API itself rather than a part of it.
const API_WORDS: &[&str] = &["api", "apis", "rest"];

/// `word` is a version: `v` and a number, then suffixes of
/// [`VERSION_SUFFIXES`] each with an optional number (`v1`, `v2beta1`,
/// `v20180820`).
fn is_v_version(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('v') else {
        return false;
    };
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    let mut rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    while !rest.is_empty() {
        let Some(after) = VERSION_SUFFIXES.iter().find_map(|s| rest.strip_prefix(s)) else {
            return false;
        };
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    true
}

fn all_digits(word: &str, len: usize) -> bool {
    word.len() == len && word.bytes().all(|b| b.is_ascii_digit())
}

fn is_year(word: &str) -> bool {
    all_digits(word, 4) && (word.starts_with("19") || word.starts_with("20"))
}

fn in_range(word: &str, low: u32, high: u32) -> bool {
    word.parse::<u32>().is_ok_and(|n| (low..=high).contains(&n))
}

/// `word` is a date written as one number: `20100401`.
fn is_date8(word: &str) -> bool {
    all_digits(word, 8)
        && is_year(&word[..4])
        && in_range(&word[4..6], 1, 12)
        && in_range(&word[6..], 1, 31)
}

/// `word` is a version or a date on its own, or one glued to an API word
/// (`api20100401`, `apiv1`, `restv2`).
fn is_version_word(word: &str) -> bool {
    let bare = |w: &str| is_v_version(w) || is_date8(w);
    bare(word)
        || API_WORDS
            .iter()
            .any(|a| word.strip_prefix(a).is_some_and(bare))
}

/// What a word of a name is, for stripping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// A version or date ([`is_version_word`], or part of `2010_04_01`).
    Version,
    /// One of [`API_WORDS`].
    Api,
    /// Digits only.
    Number,
    /// Anything else: a word that names something.
    Other,
}

/// The class of each word; `yyyy_mm_dd` counts as three version words.
fn classify(words: &[&str]) -> Vec<Class> {
    let mut classes: Vec<Class> = words
        .iter()
        .map(|w| {
            if is_version_word(w) {
                Class::Version
            } else if API_WORDS.contains(w) {
                Class::Api
            } else if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) {
                Class::Number
            } else {
                Class::Other
            }
        })
        .collect();
    for i in 0..words.len().saturating_sub(2) {
        if is_year(words[i])
            && all_digits(words[i + 1], 2)
            && in_range(words[i + 1], 1, 12)
            && all_digits(words[i + 2], 2)
            && in_range(words[i + 2], 1, 31)
        {
            classes[i..i + 3].fill(Class::Version);
        }
    }
    classes
}

/// A snake_case name without its version words: versions and dates always
/// go; `api` / `apis` / `rest` go unless they lead a name and a word that
/// names something follows (`api_keys`, `api_operation` and
/// `rest_endpoints` stay; `users_api`, `api_v2_users` lose it); a number
/// goes when the word before it went (`v1_1`, `rest_api_2`), and every
/// word goes when none names anything (`2`, `api_1`). May return an empty
/// string.
pub fn strip_versions(snake_name: &str) -> String {
    let words: Vec<&str> = snake_name.split('_').filter(|w| !w.is_empty()).collect();
    let classes = classify(&words);
    if classes.iter().all(|c| *c != Class::Other) {
        return String::new();
    }
    let mut kept: Vec<&str> = Vec::with_capacity(words.len());
    let mut dropped_previous = false;
    for (i, (word, class)) in words.iter().zip(&classes).enumerate() {
        let keep = match class {
            Class::Version => false,
            Class::Api => i == 0 && classes.get(1) == Some(&Class::Other),
            Class::Number => !dropped_previous,
            Class::Other => true,
        };
        if keep {
            kept.push(word);
        }
        dropped_previous = !keep;
    }
    kept.join("_")
}

/// A product name (snake_case) with a version or date word in it
/// (`api20100401_account`, `v1`, `users_v2beta1`, `api_2010_04_01`).
pub fn has_version_word(snake_name: &str) -> bool {
    let words: Vec<&str> = snake_name.split('_').filter(|w| !w.is_empty()).collect();
    classify(&words).contains(&Class::Version)
}

/// A product name (snake_case) with an `api`, `apis` or `rest` word in it.
pub fn has_api_word(snake_name: &str) -> bool {
    snake_name.split('_').any(|w| API_WORDS.contains(&w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_words() {
        for w in [
            "v1",
            "v2beta1",
            "v1alpha",
            "v1p1beta1",
            "v3preview",
            "v20180820",
            "20100401",
            "api20100401",
            "apiv1",
            "restv2",
        ] {
            assert!(is_version_word(w), "{w}");
        }
        for w in [
            "v", "vat", "video", "v1x", "api", "apis", "rest", "2010", "20101301", "3d", "value",
        ] {
            assert!(!is_version_word(w), "{w}");
        }
    }

    #[test]
    fn strips_versions_and_dates() {
        assert_eq!(strip_versions("api20100401_account"), "account");
        assert_eq!(strip_versions("users_v2beta1"), "users");
        assert_eq!(strip_versions("v1_1_users"), "users");
        assert_eq!(strip_versions("api_2010_04_01_calls"), "calls");
        assert_eq!(strip_versions("compute_v1_instances"), "compute_instances");
        assert_eq!(strip_versions("users_api"), "users");
        assert_eq!(
            strip_versions("contacts_api_recipients"),
            "contacts_recipients"
        );
        assert_eq!(strip_versions("api_v2_users"), "users");
        assert_eq!(strip_versions("rest_api_2_issue"), "issue");
    }

    #[test]
    fn keeps_api_as_a_noun_and_other_numbers() {
        assert_eq!(strip_versions("api_keys"), "api_keys");
        assert_eq!(
            strip_versions("api_operation_policy"),
            "api_operation_policy"
        );
        assert_eq!(strip_versions("rest_endpoints"), "rest_endpoints");
        assert_eq!(strip_versions("swagger_1_3"), "swagger_1_3");
        assert_eq!(strip_versions("top_10"), "top_10");
        assert_eq!(strip_versions("vat_rates"), "vat_rates");
    }

    #[test]
    fn nothing_left_when_nothing_names_anything() {
        for name in [
            "",
            "api",
            "v1",
            "api_v2",
            "2",
            "2010_04_01",
            "rest_api_2",
            "apis",
        ] {
            assert_eq!(strip_versions(name), "", "{name}");
        }
    }

    #[test]
    fn counts_version_and_api_words() {
        assert!(has_version_word("api20100401_account"));
        assert!(has_version_word("api_2010_04_01"));
        assert!(has_version_word("v1"));
        assert!(!has_version_word("account"));
        assert!(!has_version_word("api_keys"));
        assert!(has_api_word("api_keys"));
        assert!(has_api_word("users_rest"));
        assert!(!has_api_word("apiary"));
    }
}
