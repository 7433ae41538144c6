//! toolforge generator: a pure pipeline from an OpenAPI 3.x document to the
//! files of a Rust crate of MCP tools (load → resolve → policy → IR → emit).
//!
//! The core does no I/O: [`generate`] takes bytes and configuration and
//! returns file contents; the `toolforge` binary reads and writes them.

/// Declares the pipeline's stage modules: crate-private, and public only
/// with the `oracles` feature, which the generator's own integration tests,
/// its examples and the `tests` crate turn on to reach a stage directly (a
/// test surface, not the library's API: [`generate`] and the items
/// re-exported below are).
macro_rules! stages {
    ($($name:ident;)*) => {$(
        #[cfg(feature = "oracles")]
        pub mod $name;
        #[cfg(not(feature = "oracles"))]
        pub(crate) mod $name;
    )*};
}

pub mod commands;
pub mod config;
pub mod error;
pub mod fs_out;
pub mod ir;
mod json_text;
pub(crate) mod lower;
pub mod naming;
mod quoted;
pub mod skills;
mod small_map;
mod split_parse;
mod walk;
mod yaml_scan;
stages! {
    emit;
    load;
    normalise;
    policy;
    refs;
    schema;
    security;
    servers;
}

pub use config::ForgeConfig;
pub use emit::{CrateLayout, OutputFile, RUNTIME_VERSION};
pub use error::{GenerateError, Result};
pub use load::{Document, load};
/// The lowering stage's entry points (spec → IR), for the commands and
/// the profiling examples; the stage's module itself is private.
pub use lower::{build_catalogue, build_catalogue_with};
pub use policy::REGISTRY;

/// The result of one generation.
#[derive(Debug)]
pub struct Generated {
    /// The IR.
    pub catalogue: ir::Catalogue,
    /// Files to write, sorted by path.
    pub files: Vec<OutputFile>,
}

/// Runs the whole pipeline on `spec` (the bytes of `spec_file`), without skills.
pub fn generate(
    spec: &[u8],
    spec_file: &str,
    config: &ForgeConfig,
    layout: &CrateLayout,
) -> Result<Generated> {
    generate_with(
        spec,
        spec_file,
        config,
        layout,
        &skills::SkillSet::default(),
    )
}

/// [`generate`], embedding `skills` (read from the pin with
/// [`skills::read_dir`] or [`skills::archive::read_tar_gz`]).
pub fn generate_with(
    spec: &[u8],
    spec_file: &str,
    config: &ForgeConfig,
    layout: &CrateLayout,
    skills: &skills::SkillSet,
) -> Result<Generated> {
    let mut files = Vec::new();
    let catalogue = generate_into(spec, spec_file, config, layout, skills, &mut |f| {
        files.push(f)
    })?;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Generated { catalogue, files })
}

/// [`generate`], handing each file to `sink` as soon as it is complete
/// (in no particular order) instead of holding them all: the large
/// artifacts are written and freed before the next is built, which keeps
/// peak memory (and so page faults, a large share of the wall time) low.
/// `sink` is called only once the catalogue has been built; an error after
/// that point is an internal emit error. `skills` (read by the caller from
/// the pin, see [`skills`]) are embedded in the crate.
pub fn generate_into(
    spec: &[u8],
    spec_file: &str,
    config: &ForgeConfig,
    layout: &CrateLayout,
    skills: &skills::SkillSet,
    sink: &mut (dyn FnMut(OutputFile) + Send),
) -> Result<ir::Catalogue> {
    let doc = load::load(spec, spec_file)?;
    let cycles = schema::Cycles::compute(&doc);
    let limits = schema::Limits {
        max_depth: config.options.max_schema_depth,
        max_nodes: config.options.max_schema_nodes,
    };
    let merged = policy::Policy::new(config.policy).merged_paths(&doc);
    let note = emit::generated_note(config);
    // The resolved spec is written on one thread while the catalogue is
    // built on the others (the writer is sequential; the build is parallel
    // per operation). A build error wins, as when they ran in turn.
    let (catalogue, resolved) = rayon::join(
        || lower::build_catalogue_keeping(&doc, config, &cycles),
        || {
            config
                .options
                .resolved_spec
                .then(|| emit::resolved::write_document(&doc, &cycles, &limits, &merged, &note))
                .transpose()
        },
    );
    let (catalogue, caches) = catalogue?;
    if let Some(bytes) = resolved? {
        sink(OutputFile {
            path: "artifacts/spec.json".into(),
            contents: bytes,
        });
    }
    // The document, its cycle graph and the build's caches are freed on a
    // thread of their own while the files are made: freeing a parsed spec
    // (Cloudflare's is about half a million allocations) is otherwise a
    // serial step on the way to the output.
    std::thread::scope(|scope| {
        // A thread that cannot start drops its closure, and so the
        // document, right here.
        let _ =
            std::thread::Builder::new().spawn_scoped(scope, move || drop((caches, cycles, doc)));
        emit::emit_into(&catalogue, config, layout, skills, sink)
    })?;
    Ok(catalogue)
}
