//! Merged paths as data: the policy decides which spec paths stand for
//! several concrete routes (`/{account_or_zone}/{account_or_zone_id}/…`),
//! and the stages after it read the decision from here, never from the
//! policy.

use std::collections::BTreeMap;

/// A merged path split into concrete routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPath {
    /// Wire name of the selector path parameter (`account_or_zone`).
    pub selector: String,
    /// Wire name of the id path parameter (`account_or_zone_id`).
    pub id_param: String,
    /// Description of the selector argument in tool schemas.
    pub selector_description: String,
    /// Description of the id argument in tool schemas.
    pub id_description: String,
    /// The id argument's `maxLength`, when the API's ids have one
    /// (Cloudflare's account and zone ids are 32 hex digits).
    pub id_max_length: Option<u64>,
    /// The concrete routes, in selector order.
    pub variants: Vec<MergedRoute>,
}

/// One concrete route of a [`MergedPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedRoute {
    /// Selector value, also the first path segment (`accounts`).
    pub value: String,
    /// Concrete path with the real parameter names (`/accounts/{account_id}/…`).
    pub path: String,
    /// Real name of the id parameter (`account_id`).
    pub id: String,
    /// What the id names, in the singular (`account`): the resolved spec
    /// describes the parameter as `The account identifier.`
    pub noun: String,
}

/// Every merged path of one spec, keyed by the path as written (see
/// [`crate::policy::Policy::merged_paths`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergedPaths(BTreeMap<String, MergedPath>);

impl MergedPaths {
    /// The decision for `path` as written in the spec (`None`: an ordinary path).
    pub fn get(&self, path: &str) -> Option<&MergedPath> {
        self.0.get(path)
    }

    /// Whether no path of the spec is merged.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(String, MergedPath)> for MergedPaths {
    fn from_iter<I: IntoIterator<Item = (String, MergedPath)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}
