//! How a request body is encoded.

use serde::Serialize;

/// How the body is encoded.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BodyKind {
    /// `application/json` and `+json` types.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `multipart/form-data`.
    Multipart,
    /// Any other type: the argument is sent as text (or base64-decoded bytes).
    Raw,
}

impl BodyKind {
    /// Every kind.
    pub const ALL: [BodyKind; 4] = [Self::Json, Self::Form, Self::Multipart, Self::Raw];

    /// The Rust name of the variant, for code that writes this value.
    pub fn variant(self) -> &'static str {
        match self {
            Self::Json => "Json",
            Self::Form => "Form",
            Self::Multipart => "Multipart",
            Self::Raw => "Raw",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BodyKind;

    #[test]
    fn variant_names_are_the_rust_names() {
        for k in BodyKind::ALL {
            assert_eq!(k.variant(), format!("{k:?}"));
        }
    }
}
