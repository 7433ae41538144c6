//! HTTP methods as OpenAPI path items list them.

use serde::Serialize;

/// HTTP methods OpenAPI can describe.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// GET
    Get,
    /// PUT
    Put,
    /// POST
    Post,
    /// DELETE
    Delete,
    /// OPTIONS
    Options,
    /// HEAD
    Head,
    /// PATCH
    Patch,
    /// TRACE
    Trace,
}

impl Method {
    /// All methods in the order OpenAPI path items list them.
    pub const ALL: [Method; 8] = [
        Method::Get,
        Method::Put,
        Method::Post,
        Method::Delete,
        Method::Options,
        Method::Head,
        Method::Patch,
        Method::Trace,
    ];

    /// Lower-case key used in OpenAPI path items.
    pub fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Options => "options",
            Method::Head => "head",
            Method::Patch => "patch",
            Method::Trace => "trace",
        }
    }

    /// Upper-case method name as sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Head => "HEAD",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
        }
    }

    /// The Rust name of the variant, for code that writes this value.
    pub fn variant(self) -> &'static str {
        match self {
            Method::Get => "Get",
            Method::Put => "Put",
            Method::Post => "Post",
            Method::Delete => "Delete",
            Method::Options => "Options",
            Method::Head => "Head",
            Method::Patch => "Patch",
            Method::Trace => "Trace",
        }
    }

    /// Safe methods do not change server state.
    pub fn is_safe(self) -> bool {
        matches!(
            self,
            Method::Get | Method::Head | Method::Options | Method::Trace
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn names_agree_with_each_other_and_the_variant() {
        for m in Method::ALL {
            assert_eq!(m.as_str(), m.key().to_ascii_uppercase());
            assert_eq!(m.variant(), format!("{m:?}"));
            assert_eq!(m.variant().to_ascii_lowercase(), m.key());
        }
    }

    #[test]
    fn only_reading_methods_are_safe() {
        let safe: Vec<_> = Method::ALL.into_iter().filter(|m| m.is_safe()).collect();
        assert_eq!(
            safe,
            [Method::Get, Method::Options, Method::Head, Method::Trace]
        );
    }
}
