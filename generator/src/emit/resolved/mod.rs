//! The resolved document for Code Mode: the whole spec with every local
//! `$ref` inlined, so model-written queries never chase references.
//!
//! A reference back into a target already being inlined on the current
//! branch becomes `{"$circular": "#/components/schemas/Name"}`. Expansions
//! are memoised: a target whose reference cycle (strongly connected
//! component, see [`Cycles`]) has no member on the current branch expands
//! the same way everywhere, so it is expanded once and copied.
//!
//! [`write_document`] writes the document straight to JSON bytes (what
//! `generate` uses; it keeps large shared schemas as references when the
//! whole would be too large); `oracle::resolve_document` builds the inlined
//! value and is the reference the writer is tested against, compiled only
//! for tests (`cfg(test)` or the `oracles` feature).

#[cfg(any(test, feature = "oracles"))]
mod oracle;
mod writer;

use crate::error::escape_token;

#[cfg(any(test, feature = "oracles"))]
pub use oracle::{resolve_document, split_merged_paths};

pub use writer::write_document;
#[cfg(any(test, feature = "oracles"))]
pub use writer::{
    GENERATED_KEY, INLINE_MARKER, INLINE_MIN_NODES, INLINE_REFS_KEY, SHARED_INLINE_MAX,
    SHARED_REFS_KEY,
};

/// How much deeper than a tool schema the resolved document may nest
/// (paths, operations and responses wrap the schemas).
pub const DEPTH_FACTOR: usize = 4;
/// How many times a tool schema's node budget the resolved document gets.
pub const NODES_FACTOR: usize = 100;

/// Appends `/token` (RFC 6901 escaped) to a pointer.
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    if token.contains(['~', '/']) {
        pointer.push_str(&escape_token(token));
    } else {
        pointer.push_str(token);
    }
}
