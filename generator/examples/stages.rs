//! Times each pipeline stage on one spec and shows resident memory after it
//! (development aid): `cargo run --release -p toolforge-generator --example
//! stages -- SPEC [cloudflare|generic]`; `PARTS=1` also times emission's parts;
//! `ONLY_BUILD=1` stops after the catalogue build (for profiling it).
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Instant;
use toolforge_generator::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `VmRSS` and `VmHWM` of this process in MB (Linux).
fn mem() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    format!("rss {} MB, peak {} MB", field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let policy = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "cloudflare".into());
    let bytes = std::fs::read(&path).unwrap();
    let mut config = config::ForgeConfig::generic("x", std::path::Path::new(&path), "0");
    if policy == "cloudflare" {
        config.policy = config::PolicyKind::Cloudflare;
    }
    let t = Instant::now();
    let doc = load::load(&bytes, "spec.json").unwrap();
    eprintln!("load {:?} ({})", t.elapsed(), mem());
    let t = Instant::now();
    let cycles = schema::Cycles::compute(&doc);
    eprintln!("cycles {:?} ({})", t.elapsed(), mem());
    let t = Instant::now();
    let cat = build_catalogue_with(&doc, &config, &cycles).unwrap();
    eprintln!("build {:?} ({})", t.elapsed(), mem());
    // Tools with an output schema, and how many distinct ones they share.
    let outputs: Vec<_> = cat
        .tools()
        .filter_map(|t| t.output_schema.as_ref())
        .collect();
    let distinct: std::collections::HashSet<_> =
        outputs.iter().map(|o| std::sync::Arc::as_ptr(o)).collect();
    eprintln!(
        "  output schemas {}, distinct {}",
        outputs.len(),
        distinct.len()
    );
    if std::env::var_os("ONLY_BUILD").is_some() {
        return;
    }
    let t = Instant::now();
    let res = emit::resolved::write_document(
        &doc,
        &cycles,
        &schema::Limits::default(),
        &policy::Policy::new(config.policy).merged_paths(&doc),
        "stages",
    )
    .unwrap();
    eprintln!("resolve {:?} ({})", t.elapsed(), mem());
    let t = Instant::now();
    let layout = CrateLayout {
        runtime_path: Some("../runtime".into()),
        standalone: true,
    };
    if std::env::var_os("PARTS").is_some() {
        emit_parts(&cat);
    }
    let files = emit::emit(&cat, &config, &layout, Some(res)).unwrap();
    eprintln!("emit {:?} ({})", t.elapsed(), mem());
    let total: usize = files.iter().map(|f| f.contents.len()).sum();
    eprintln!("{} files, {} bytes", files.len(), total);
    for f in &files {
        if f.contents.len() > 1_000_000 {
            eprintln!("  {} {}", f.path, f.contents.len());
        }
    }
}

/// Times the parts of emission separately (`PARTS=1`).
fn emit_parts(cat: &ir::Catalogue) {
    let t = Instant::now();
    let table = emit::interned::SchemaTable::build(cat).unwrap();
    eprintln!("  table {:?}", t.elapsed());
    let t = Instant::now();
    let text = table.render("//");
    eprintln!("  render {:?} {}", t.elapsed(), text.len());
    // Declarations are made with the table; their literal bytes remain in
    // the modules.
    let literal: usize = table
        .tools
        .iter()
        .flatten()
        .flat_map(|t| &t.declaration)
        .map(|p| match p {
            emit::chunks::Piece::Text(t) => t.len(),
            emit::chunks::Piece::Chunk(_) => 0,
        })
        .sum();
    eprintln!("  ts declarations: {literal} literal bytes in modules");
    let t = Instant::now();
    for (i, p) in cat.products.iter().enumerate() {
        emit::rust::product_module(p, table.tools.get(i).map(Vec::as_slice), "//").unwrap();
    }
    eprintln!("  modules (1 thread) {:?}", t.elapsed());
    let t = Instant::now();
    let tj = emit::artifacts::tools_json(cat, &table, "x").unwrap();
    eprintln!("  tools.json {:?} {}", t.elapsed(), tj.len());
}
