//! How the API tells who a credential belongs to ([`Identity`]): data
//! only. The probes are sent, and their answers cached, by
//! `direct::identity`.

/// How the API tells who a credential belongs to: probes tried in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// The probes, first preferred.
    pub probes: &'static [IdentityProbe],
}

/// One identity request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentityProbe {
    /// Path and query of the `GET`, relative to the base URL (`/user`).
    pub path: &'static str,
    /// JSON pointer, in the payload, to a list that must hold exactly one
    /// item; `id` and `name` then point into that item. `None`: they point
    /// into the payload itself.
    pub only: Option<&'static str>,
    /// JSON pointer to the ID (a string or a number), e.g. `/id`.
    pub id: &'static str,
    /// JSON pointer to a display name, when the answer has one.
    pub name: Option<&'static str>,
    /// What the ID names (`user`, `account`): the identity is
    /// `<prefix>:<id>`.
    pub prefix: &'static str,
}

impl IdentityProbe {
    /// The probe's path without its query, as messages show it.
    pub fn shown_path(&self) -> &'static str {
        self.path.split('?').next().unwrap_or(self.path)
    }
}
