//! Profiles for unit tests: one like a generated profile of an API with
//! an envelope, account filling and merged paths, and the generic one.

use super::{
    AccountFill, AccountList, BodyEnvelope, MergedSelector, MergedVariant, Profile, Refusals,
};

/// Where the enveloped test API's tokens are managed (quoted in its texts).
pub(crate) const TOKENS_URL: &str = "tokens.example.com/profile/api-tokens";

/// The account listing of the enveloped test API.
pub(crate) const ACCOUNTS: AccountList = AccountList {
    args: &["account_id", "accountId", "account_identifier"],
    path: "/accounts?per_page=50",
    items: "/result",
    id_field: "id",
    name_field: "name",
    total: Some("/result_info/total_count"),
    permission: Some("Account Settings Read"),
};

/// Its merged account/zone selector.
pub(crate) const MERGED: MergedSelector = MergedSelector {
    arg: "account_or_zone",
    id_arg: "account_or_zone_id",
    variants: &[
        MergedVariant {
            value: "accounts",
            id: "account_id",
            noun: "account",
        },
        MergedVariant {
            value: "zones",
            id: "zone_id",
            noun: "zone",
        },
    ],
};

/// An API with the `{success, errors, messages, result, result_info}`
/// envelope, permission-filtered lists, account filling and merged paths.
pub(crate) static ENVELOPED: Profile = Profile {
    base_url: Some("https://api.example.com/client/v4"),
    envelope: BodyEnvelope {
        payload: "/result",
        failure_flag: Some("/success"),
        page: Some("/result_info"),
        ..BodyEnvelope::BARE
    },
    refusals: Refusals {
        grant: "This call needs the token permission(s) {permissions}; grant them to the API token at tokens.example.com/profile/api-tokens, or use a role that includes them.",
        unknown: "The API documents no specific permission for this call; check the API token's permissions and resources at tokens.example.com/profile/api-tokens (the account or zone must be included).",
        empty_list: Some(
            "Note: the list is empty. If you expected items, the API token may lack the permission(s) {permissions} (the API filters lists by permission instead of refusing them); check the token at tokens.example.com/profile/api-tokens.",
        ),
    },
    accounts: AccountFill::FromList(ACCOUNTS),
    merged: Some(MERGED),
    execute_example: r#"async () => { const r = await api.request({ method: "GET", path: "/zones", query: { per_page: 5 } }); return r.result.map(z => ({ id: z.id, name: z.name })); }"#,
    ..Profile::generic("EXAMPLE_API_TOKEN")
};

/// An API without special rules.
pub(crate) static GENERIC: Profile = Profile::generic("EXAMPLE_API_TOKEN");
