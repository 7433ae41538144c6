//! Times each pipeline stage on one spec (development aid).
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Instant;
use toolforge_generator::*;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut config = config::ForgeConfig::generic("x", std::path::Path::new(&path), "0");
    config.policy = config::PolicyKind::Cloudflare;
    let t = Instant::now();
    let doc = load::load(&bytes, "spec.json").unwrap();
    eprintln!("load {:?}", t.elapsed());
    let t = Instant::now();
    let cat = build::build_catalogue(&doc, &config).unwrap();
    eprintln!("build {:?}", t.elapsed());
    let t = Instant::now();
    let res = resolved::resolve_document(&doc, &schema::Limits::default()).unwrap();
    eprintln!("resolve {:?}", t.elapsed());
    let t = Instant::now();
    let layout = CrateLayout {
        runtime_path: "../runtime".into(),
        standalone: true,
    };
    let files = emit::emit(&cat, &config, &layout, Some(res)).unwrap();
    eprintln!("emit {:?}", t.elapsed());
    let total: usize = files.iter().map(|f| f.contents.len()).sum();
    eprintln!("{} files, {} bytes", files.len(), total);
    for f in &files {
        if f.contents.len() > 1_000_000 {
            eprintln!("  {} {}", f.path, f.contents.len());
        }
    }
}
