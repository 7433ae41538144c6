//! The variables of the default server's URL template: data only. They
//! are filled from their defaults and `--server-var name=value` by
//! `config::servers::server_url`.

/// One variable of the default server's URL template (OpenAPI's Server
/// Variable Object).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerVar {
    /// The placeholder's name (`region` for `{region}`).
    pub name: &'static str,
    /// The value used unless `--server-var` gives another.
    pub default: &'static str,
    /// The values allowed (the spec's `enum`); empty: any value.
    pub allowed: &'static [&'static str],
}
