//! toolforge generator: a pure pipeline from an OpenAPI 3.x document to the
//! files of a Rust crate of MCP tools (load → resolve → policy → IR → emit).
//!
//! The core does no I/O: [`generate`] takes bytes and configuration and
//! returns file contents; the `toolforge` binary reads and writes them.

pub mod build;
pub mod config;
pub mod diff;
pub mod emit;
pub mod error;
pub mod ir;
pub mod load;
pub mod naming;
pub mod normalise;
pub mod policy;
pub mod refs;
pub mod resolved;
pub mod schema;

pub use config::ForgeConfig;
pub use emit::{CrateLayout, OutputFile};
pub use error::{GenerateError, Result};

/// The result of one generation.
#[derive(Debug)]
pub struct Generated {
    /// The IR.
    pub catalogue: ir::Catalogue,
    /// Files to write, sorted by path.
    pub files: Vec<OutputFile>,
}

/// Runs the whole pipeline on `spec` (the bytes of `spec_file`).
pub fn generate(
    spec: &[u8],
    spec_file: &str,
    config: &ForgeConfig,
    layout: &CrateLayout,
) -> Result<Generated> {
    let doc = load::load(spec, spec_file)?;
    let catalogue = build::build_catalogue(&doc, config)?;
    let resolved = if config.options.resolved_spec {
        let limits = schema::Limits {
            max_depth: config.options.max_schema_depth,
            max_nodes: config.options.max_schema_nodes,
        };
        Some(resolved::resolve_document(&doc, &limits)?)
    } else {
        None
    };
    let files = emit::emit(&catalogue, config, layout, resolved)?;
    Ok(Generated { catalogue, files })
}
