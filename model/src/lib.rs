//! The catalogue vocabulary toolforge's generator and runtime share.
//!
//! The generator lowers a spec into these values and writes them into a
//! generated crate as Rust; the runtime reads them back to build requests
//! and explain credentials. Keeping one definition means a variant or a
//! phrase cannot drift between the two sides. Generated crates name these
//! types through `toolforge_runtime` (it re-exports them), so they depend
//! on the runtime alone.

mod body;
mod method;
mod param;
mod scheme;

pub use body::BodyKind;
pub use method::Method;
pub use param::{ParamLocation, ParamStyle};
pub use scheme::{KeyLocation, SchemeKind};
