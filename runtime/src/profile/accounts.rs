//! How a profile fills an omitted account argument ([`AccountFill`]):
//! data only. The cache that asks the API for a credential's accounts is
//! `direct::accounts`.

/// Whether, and how, a profile fills omitted account arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountFill {
    /// Callers pass every argument; nothing is filled.
    Never,
    /// An omitted account argument is filled with the credential's only
    /// account, found by one cached listing request.
    FromList(AccountList),
}

/// The listing request that finds a credential's accounts, and the
/// arguments it fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountList {
    /// Path arguments that name an account (`account_id`, …); the first is
    /// the one named in the server instructions.
    pub args: &'static [&'static str],
    /// Path and query of the `GET` that lists the accounts, relative to the
    /// base URL (`/accounts?per_page=50`).
    pub path: &'static str,
    /// JSON pointer to the array of accounts in its answer (`/result`).
    pub items: &'static str,
    /// Field of an account holding its ID.
    pub id_field: &'static str,
    /// Field of an account holding its name (shown when there are several).
    pub name_field: &'static str,
    /// JSON pointer to the total number of accounts, when the answer is
    /// paginated (`/meta/total`).
    pub total: Option<&'static str>,
    /// The permission the listing needs, named when it is refused.
    pub permission: Option<&'static str>,
}

impl AccountList {
    /// The listing path without its query, as messages show it.
    pub fn shown_path(&self) -> &'static str {
        self.path.split('?').next().unwrap_or(self.path)
    }
}
