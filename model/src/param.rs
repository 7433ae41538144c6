//! Where a parameter goes in a request and how it is serialised.

use serde::Serialize;

/// Where a parameter goes in the request.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ParamLocation {
    /// A `{placeholder}` in the path.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
    /// A cookie.
    Cookie,
}

impl ParamLocation {
    /// Every location, in the spec's order.
    pub const ALL: [ParamLocation; 4] = [Self::Path, Self::Query, Self::Header, Self::Cookie];

    /// `path`, `query`, `header` or `cookie`, as in the spec (also the
    /// suffix that tells clashing argument names apart).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "header",
            Self::Cookie => "cookie",
        }
    }

    /// The Rust name of the variant, for code that writes this value.
    pub fn variant(self) -> &'static str {
        match self {
            Self::Path => "Path",
            Self::Query => "Query",
            Self::Header => "Header",
            Self::Cookie => "Cookie",
        }
    }
}

/// OpenAPI serialisation styles.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ParamStyle {
    /// `simple` (path and header default).
    Simple,
    /// `label` (`.a.b`).
    Label,
    /// `matrix` (`;x=a`).
    Matrix,
    /// `form` (query and cookie default).
    Form,
    /// `spaceDelimited`.
    SpaceDelimited,
    /// `pipeDelimited`.
    PipeDelimited,
    /// `deepObject`.
    DeepObject,
}

impl ParamStyle {
    /// Every style, in the specification's order.
    pub const ALL: [ParamStyle; 7] = [
        Self::Simple,
        Self::Label,
        Self::Matrix,
        Self::Form,
        Self::SpaceDelimited,
        Self::PipeDelimited,
        Self::DeepObject,
    ];

    /// The Rust name of the variant, for code that writes this value.
    pub fn variant(self) -> &'static str {
        match self {
            Self::Simple => "Simple",
            Self::Label => "Label",
            Self::Matrix => "Matrix",
            Self::Form => "Form",
            Self::SpaceDelimited => "SpaceDelimited",
            Self::PipeDelimited => "PipeDelimited",
            Self::DeepObject => "DeepObject",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ParamLocation, ParamStyle};

    #[test]
    fn variant_names_are_the_rust_names() {
        for l in ParamLocation::ALL {
            assert_eq!(l.variant(), format!("{l:?}"));
            assert_eq!(l.as_str(), l.variant().to_ascii_lowercase());
        }
        for s in ParamStyle::ALL {
            assert_eq!(s.variant(), format!("{s:?}"));
        }
    }
}
