//! The catalogue vocabulary toolforge's generator and runtime share.
//!
//! The generator lowers a spec into these values and writes them into a
//! generated crate as Rust; the runtime reads them back to build requests
//! and explain credentials. Keeping one definition means a variant or a
//! phrase cannot drift between the two sides. Generated crates name these
//! types through `toolforge_runtime` (it re-exports them), so they depend
//! on the runtime alone.
//!
//! [`strict`] is the one implementation of the `strict` schema profile: the
//! generator writes its output into a crate generated with
//! `schema_profile: strict`, the runtime makes it per request from a full
//! crate.

mod body;
mod method;
mod param;
mod scheme;
pub mod strict;

pub use body::BodyKind;
pub use method::Method;
pub use param::{ParamLocation, ParamStyle};
pub use scheme::{KeyLocation, SchemeKind};
