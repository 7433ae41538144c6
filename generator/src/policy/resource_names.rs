//! `resource_action` names from a path and a method (`customers_list`,
//! `customers_sources_get`), for operations whose `operationId` is missing
//! or only restates the method and the path (a *path mashup*, see
//! [`is_path_mashup`]).

use super::versions::strip_versions;
use crate::ir::HttpMethod;
use crate::naming::snake;

/// File endings dropped from a literal path segment (`Calls.json`).
const PATH_EXTENSIONS: &[&str] = &["json", "xml", "yaml", "yml", "csv"];

/// One path segment as words.
#[derive(Debug, PartialEq, Eq)]
enum Segment {
    /// A literal segment's words (without a file ending).
    Literal(Vec<String>),
    /// A version or API word (`v1`, `api`): a mashup may leave it out and
    /// a resource name never carries it.
    Version(Vec<String>),
    /// A `{parameter}`'s words.
    Param(Vec<String>),
}

fn words_of(text: &str) -> Vec<String> {
    snake(text)
        .split('_')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

fn segments(path: &str) -> Vec<Segment> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            if let Some(name) = s.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
                return Segment::Param(words_of(name));
            }
            let stem = match s.rsplit_once('.') {
                Some((stem, ext))
                    if PATH_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) =>
                {
                    stem
                }
                _ => s,
            };
            let words = words_of(stem);
            if !words.is_empty() && strip_versions(&words.join("_")).is_empty() {
                Segment::Version(words)
            } else {
                Segment::Literal(words)
            }
        })
        .filter(|s| match s {
            Segment::Literal(w) | Segment::Version(w) | Segment::Param(w) => !w.is_empty(),
        })
        .collect()
}

/// Whether `operation_id` is a *path mashup*: its snake-case words are the
/// method's word (`get`, `post`, …, the operation's own method) followed by
/// the words of the path's segments in order, where every literal segment
/// appears whole and a parameter or version segment (`{customer}`, `v1`,
/// `api`) may appear whole or be left out. Such an id says nothing the
/// method and path do not (`GetCustomersCustomer` and
/// `post_customers_customer` for `/v1/customers/{customer}`,
/// `get_customers` for `/v1/customers`), so it does not name the tool. An
/// id with any other word (`listCustomers`, `getPantry` for
/// `/pantries/{pantryId}`), or with the words of another method, is not one.
pub fn is_path_mashup(operation_id: &str, method: HttpMethod, path: &str) -> bool {
    let words = words_of(operation_id);
    let Some((first, rest)) = words.split_first() else {
        return false;
    };
    if first != method.key() {
        return false;
    }
    // Positions in `rest` reachable after matching a prefix of the
    // segments; a set of booleans, so the walk is linear in both lengths.
    let mut reach = vec![false; rest.len() + 1];
    reach[0] = true;
    for segment in segments(path) {
        let (seg_words, optional) = match &segment {
            Segment::Literal(w) => (w, false),
            Segment::Version(w) | Segment::Param(w) => (w, true),
        };
        let mut next = if optional {
            reach.clone()
        } else {
            vec![false; rest.len() + 1]
        };
        for (at, _) in reach.iter().enumerate().filter(|(_, r)| **r) {
            let end = at + seg_words.len();
            if end <= rest.len() && rest[at..end] == seg_words[..] {
                next[end] = true;
            }
        }
        reach = next;
    }
    reach[rest.len()]
}

/// Plurals without an `s` that name collections in paths.
const IRREGULAR_PLURALS: &[&str] = &["people", "children", "data", "media"];

/// A plural resource word: it ends in `s` but not `ss` or `us` (`address`,
/// `status`), or is one of [`IRREGULAR_PLURALS`].
fn is_plural(word: &str) -> bool {
    (word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us"))
        || IRREGULAR_PLURALS.contains(&word)
}

/// The `resource_action` name of an operation, or `None` when its path has
/// no literal word to name a resource (`/`, `/{id}`, `/v1`).
///
/// The resource is the path's literal segments in order, without version
/// and API words and file endings (`/v1/customers/{customer}/sources` →
/// `customers_sources`). The action:
/// - the path ends with a parameter (an item): `get`, `update` (PUT,
///   PATCH, POST), `delete`, or the method's word;
/// - it ends with a plural literal (a collection): `list`, `create`
///   (POST), `update` (PUT, PATCH), `delete`, or the method's word;
/// - it ends with a singular literal after another segment, under POST or
///   under GET after a literal: that word is the action and no suffix is
///   added (`invoices_pay` for `POST /v1/invoices/{invoice}/pay`,
///   `customers_search` for `GET /v1/customers/search`);
/// - any other singular literal (a singleton, `/v1/balance`): as an item.
pub fn resource_action_name(method: HttpMethod, path: &str) -> Option<String> {
    let segments = segments(path);
    let resource: Vec<&str> = segments
        .iter()
        .filter_map(|s| match s {
            Segment::Literal(w) => Some(w),
            _ => None,
        })
        .flatten()
        .map(String::as_str)
        .collect();
    if resource.is_empty() {
        return None;
    }
    let meaningful: Vec<&Segment> = segments
        .iter()
        .filter(|s| !matches!(s, Segment::Version(_)))
        .collect();
    let item_action = || match method {
        HttpMethod::Get => "get",
        HttpMethod::Put | HttpMethod::Patch | HttpMethod::Post => "update",
        HttpMethod::Delete => "delete",
        other => other.key(),
    };
    let action = match meaningful.as_slice() {
        [.., Segment::Param(_)] => Some(item_action()),
        [.., previous, Segment::Literal(last)] if !last.last().is_some_and(|w| is_plural(w)) => {
            let verb = match method {
                HttpMethod::Post => true,
                HttpMethod::Get => matches!(previous, Segment::Literal(_)),
                _ => false,
            };
            (!verb).then(item_action)
        }
        [.., Segment::Literal(last)] if !last.last().is_some_and(|w| is_plural(w)) => {
            Some(item_action())
        }
        _ => Some(match method {
            HttpMethod::Get => "list",
            HttpMethod::Post => "create",
            HttpMethod::Put | HttpMethod::Patch => "update",
            HttpMethod::Delete => "delete",
            other => other.key(),
        }),
    };
    let mut name = resource.join("_");
    if let Some(action) = action {
        name.push('_');
        name.push_str(action);
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use HttpMethod::{Delete, Get, Patch, Post, Put};

    #[test]
    fn mashups_restate_the_method_and_the_path() {
        let item = "/v1/customers/{customer}";
        assert!(is_path_mashup("GetCustomersCustomer", Get, item));
        assert!(is_path_mashup("post_customers_customer", Post, item));
        assert!(is_path_mashup("get_customers", Get, "/v1/customers"));
        // Parameters and version words may be left out or kept.
        assert!(is_path_mashup("GetCustomers", Get, item));
        assert!(is_path_mashup("GetV1Customers", Get, "/v1/customers"));
        assert!(is_path_mashup(
            "GetAccountsAccountPeoplePerson",
            Get,
            "/v1/accounts/{account}/people/{person}"
        ));
        assert!(is_path_mashup(
            "getAccountsAccountSid",
            Get,
            "/Accounts/{AccountSid}.json"
        ));
    }

    #[test]
    fn ids_that_say_more_are_not_mashups() {
        let item = "/v1/customers/{customer}";
        // Another method's word, or none.
        assert!(!is_path_mashup("PostCustomersCustomer", Get, item));
        assert!(!is_path_mashup("CustomersCustomer", Get, item));
        // A word that is not in the path.
        assert!(!is_path_mashup("listCustomers", Get, "/v1/customers"));
        assert!(!is_path_mashup("getPantry", Get, "/pantries/{pantryId}"));
        assert!(!is_path_mashup("GetCustomersSearch", Get, item));
        // A literal segment left out is not the same path.
        assert!(!is_path_mashup(
            "GetCustomersCustomer",
            Get,
            "/v1/customers/{customer}/sources"
        ));
        // Words out of order, or a part of a segment.
        assert!(!is_path_mashup(
            "GetSourcesCustomers",
            Get,
            "/customers/sources"
        ));
        assert!(!is_path_mashup(
            "GetPaymentIntents",
            Get,
            "/payment_intents_beta"
        ));
        assert!(!is_path_mashup("", Get, "/x"));
        assert!(!is_path_mashup("get", Get, "/x"));
    }

    fn name(method: HttpMethod, path: &str) -> String {
        resource_action_name(method, path).unwrap_or_default()
    }

    #[test]
    fn resource_action_names_follow_the_issue_s_examples() {
        assert_eq!(name(Get, "/v1/customers"), "customers_list");
        assert_eq!(name(Get, "/v1/customers/{customer}"), "customers_get");
        assert_eq!(name(Post, "/v1/customers"), "customers_create");
        assert_eq!(name(Post, "/v1/customers/{customer}"), "customers_update");
        assert_eq!(name(Patch, "/customers/{id}"), "customers_update");
        assert_eq!(name(Put, "/customers/{id}"), "customers_update");
        assert_eq!(name(Delete, "/v1/customers/{customer}"), "customers_delete");
        assert_eq!(
            name(Get, "/v1/customers/{customer}/sources"),
            "customers_sources_list"
        );
        assert_eq!(
            name(Get, "/v1/accounts/{account}/people/{person}"),
            "accounts_people_get"
        );
        assert_eq!(
            name(Get, "/v1/accounts/{account}/people"),
            "accounts_people_list"
        );
    }

    #[test]
    fn singular_last_words_are_verbs_or_singletons() {
        assert_eq!(name(Post, "/v1/invoices/{invoice}/pay"), "invoices_pay");
        assert_eq!(name(Get, "/v1/customers/search"), "customers_search");
        assert_eq!(
            name(Get, "/v1/customers/{customer}/discount"),
            "customers_discount_get"
        );
        assert_eq!(
            name(Delete, "/v1/customers/{customer}/discount"),
            "customers_discount_delete"
        );
        assert_eq!(name(Get, "/v1/balance"), "balance_get");
        assert_eq!(name(Post, "/v1/account"), "account_update");
        assert_eq!(name(Get, "/status"), "status_get");
        assert_eq!(name(Get, "/2010-04-01/Accounts.json"), "accounts_list");
    }

    #[test]
    fn paths_without_a_literal_word_have_no_resource_name() {
        for path in ["/", "", "/{id}", "/v1", "/api/v2/{id}"] {
            assert_eq!(resource_action_name(Get, path), None, "{path}");
        }
    }
}
