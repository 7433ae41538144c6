//! Typed errors of the generator; every variant names the file and, where
//! it applies, the JSON pointer inside the spec.

use std::path::PathBuf;

/// Everything that can go wrong between reading a spec and emitting files.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The document is neither valid JSON nor valid YAML.
    #[error("{file}: not valid JSON or YAML: {message}")]
    Syntax {
        /// Spec file.
        file: String,
        /// Parser message (with line/column when known).
        message: String,
    },
    /// A Swagger 2.0 document (we only read OpenAPI 3.x).
    #[error(
        "{file}: Swagger 2.0 documents are not supported (found `swagger: {version}` at /swagger); convert it to OpenAPI 3 first, e.g. with swagger2openapi"
    )]
    Swagger2 {
        /// Spec file.
        file: String,
        /// The `swagger` field's value.
        version: String,
    },
    /// The document is not OpenAPI 3.x at all.
    #[error("{file}: {pointer}: {message}")]
    NotOpenApi {
        /// Spec file.
        file: String,
        /// Pointer to the offending field.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// A `$ref` points at nothing in this document.
    #[error("{file}: {pointer}: dangling $ref `{reference}`: nothing at that location")]
    DanglingRef {
        /// Spec file.
        file: String,
        /// Where the `$ref` is.
        pointer: String,
        /// The reference text.
        reference: String,
    },
    /// A `$ref` to another document; remote references are never fetched.
    #[error(
        "{file}: {pointer}: remote $ref `{reference}` is not supported (references are never fetched; bundle the spec into one file first)"
    )]
    RemoteRef {
        /// Spec file.
        file: String,
        /// Where the `$ref` is.
        pointer: String,
        /// The reference text.
        reference: String,
    },
    /// A schema nests deeper than the configured bound.
    #[error("{file}: {pointer}: schema nesting exceeds the limit of {limit} levels")]
    TooDeep {
        /// Spec file.
        file: String,
        /// Where the limit was hit.
        pointer: String,
        /// The limit.
        limit: usize,
    },
    /// A resolved schema grows beyond the configured size bound.
    #[error("{file}: {pointer}: resolved schema exceeds the limit of {limit} nodes")]
    TooLarge {
        /// Spec file.
        file: String,
        /// Where the limit was hit.
        pointer: String,
        /// The limit.
        limit: usize,
    },
    /// A part of the document has the wrong shape.
    #[error("{file}: {pointer}: {message}")]
    Invalid {
        /// Spec file.
        file: String,
        /// Pointer to the offending node.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// `forge.json` is missing, malformed or inconsistent.
    #[error("{file}: {message}")]
    Config {
        /// Config file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The pinned file's sha256 does not match the pin.
    #[error(
        "{file}: sha256 mismatch: forge.json pins {expected} but the file has {actual}; refusing to generate from an unpinned release (run `toolforge pin` after reviewing the new file)"
    )]
    ShaMismatch {
        /// Spec file.
        file: PathBuf,
        /// Pinned digest.
        expected: String,
        /// Actual digest.
        actual: String,
    },
    /// Rust emission failed (a bug in the generator, reported rather than panicking).
    #[error("emitting {file}: {message}")]
    Emit {
        /// Output file being produced.
        file: String,
        /// What went wrong.
        message: String,
        /// The error that caused it (a serialiser's, a parser's, a
        /// template engine's), kept for the error chain.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl GenerateError {
    /// An emit error without an underlying cause.
    pub(crate) fn emit(file: impl Into<String>, message: impl Into<String>) -> Self {
        GenerateError::Emit {
            file: file.into(),
            message: message.into(),
            source: None,
        }
    }

    /// An emit error caused by `source` while doing `what`; the cause is
    /// kept as the error's source, not flattened into its message.
    pub(crate) fn emit_from(
        file: impl Into<String>,
        what: &str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        GenerateError::Emit {
            file: file.into(),
            message: what.to_owned(),
            source: Some(Box::new(source)),
        }
    }
}

impl GenerateError {
    /// The variant's name (`DanglingRef`, `TooDeep`, …), for grouping.
    pub fn kind(&self) -> &'static str {
        match self {
            GenerateError::Syntax { .. } => "Syntax",
            GenerateError::Swagger2 { .. } => "Swagger2",
            GenerateError::NotOpenApi { .. } => "NotOpenApi",
            GenerateError::DanglingRef { .. } => "DanglingRef",
            GenerateError::RemoteRef { .. } => "RemoteRef",
            GenerateError::TooDeep { .. } => "TooDeep",
            GenerateError::TooLarge { .. } => "TooLarge",
            GenerateError::Invalid { .. } => "Invalid",
            GenerateError::Config { .. } => "Config",
            GenerateError::ShaMismatch { .. } => "ShaMismatch",
            GenerateError::Emit { .. } => "Emit",
        }
    }

    /// Where in the spec the problem is: the JSON pointer (`/swagger` for
    /// Swagger 2.0; `None` for syntax, configuration and emit errors).
    pub fn pointer(&self) -> Option<&str> {
        match self {
            GenerateError::NotOpenApi { pointer, .. }
            | GenerateError::DanglingRef { pointer, .. }
            | GenerateError::RemoteRef { pointer, .. }
            | GenerateError::TooDeep { pointer, .. }
            | GenerateError::TooLarge { pointer, .. }
            | GenerateError::Invalid { pointer, .. } => Some(pointer),
            GenerateError::Swagger2 { .. } => Some("/swagger"),
            GenerateError::Syntax { .. }
            | GenerateError::Config { .. }
            | GenerateError::ShaMismatch { .. }
            | GenerateError::Emit { .. } => None,
        }
    }
}

/// Result alias for the generator.
pub type Result<T, E = GenerateError> = std::result::Result<T, E>;

/// Escapes one JSON pointer reference token (RFC 6901).
pub fn escape_token(token: &str) -> String {
    if !token.contains(['~', '/']) {
        return token.to_string();
    }
    token.replace('~', "~0").replace('/', "~1")
}

/// Appends one reference token to pointer text `pointer` (in place: the
/// converters build a pointer for every schema node they visit).
pub fn append_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    if token.contains(['~', '/']) {
        pointer.push_str(&escape_token(token));
    } else {
        pointer.push_str(token);
    }
}

/// Appends one reference token to a pointer.
pub fn push_pointer(base: &str, token: &str) -> String {
    let mut s = String::with_capacity(base.len() + token.len() + 1);
    s.push_str(base);
    append_token(&mut s, token);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_escaped_as_rfc_6901_says() {
        assert_eq!(escape_token("plain"), "plain");
        assert_eq!(escape_token("a/b~c"), "a~1b~0c");
        assert_eq!(escape_token("~1"), "~01");
        assert_eq!(push_pointer("", "paths"), "/paths");
        assert_eq!(push_pointer("/paths", "/pets/{id}"), "/paths/~1pets~1{id}");
        let mut p = String::from("/components");
        append_token(&mut p, "schemas");
        append_token(&mut p, "a~b");
        assert_eq!(p, "/components/schemas/a~0b");
    }

    #[test]
    fn an_emit_error_keeps_its_cause_as_its_source() {
        use std::error::Error as _;
        let cause = serde_json::from_str::<u8>("x").unwrap_err();
        let text = cause.to_string();
        let e = GenerateError::emit_from("artifacts/tools.json", "serialising a tool", cause);
        assert_eq!(
            e.to_string(),
            "emitting artifacts/tools.json: serialising a tool"
        );
        assert_eq!(e.source().map(ToString::to_string), Some(text));
        assert!(GenerateError::emit("README.md", "lost").source().is_none());
    }
}
