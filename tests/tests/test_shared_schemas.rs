#![allow(clippy::unwrap_used, clippy::panic)]
//! The generated crates keep each part that output and response schemas
//! share once (`artifacts/schemas.json`, embedded by `src/schemas.rs`:
//! entries of a `SharedTexts` table that refer to each other); the runtime
//! puts each schema back together. For every
//! tool of the committed sample and larder crates, the joined text is
//! exactly the schema the generator built for it (the text it served
//! before sharing).

use std::path::{Path, PathBuf};

use toolforge_generator::config::ForgeConfig;
use toolforge_generator::{CrateLayout, generate};
use toolforge_runtime::catalogue::{Catalogue, SharedText};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Whether `s` refers to shared parts of its table.
fn joined(s: Option<SharedText>) -> bool {
    match s {
        Some(SharedText::Marked(..)) => true,
        Some(SharedText::Entry(name, table)) => {
            let open = format!("{{\"{}\":\"", table.key());
            table.stored(name).is_some_and(|text| text.contains(&open))
        }
        _ => false,
    }
}

/// Checks every tool of `catalogue` against the in-memory generation of
/// `config`; returns how many schemas are joined from shared parts.
fn check(config: &str, catalogue: &Catalogue) -> usize {
    let path = repo().join(config);
    let config = ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let spec = repo().join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    let layout = CrateLayout {
        runtime_path: config.krate.runtime_path.clone(),
        standalone: false,
    };
    let g = generate(&bytes, "spec", &config, &layout).unwrap();
    let mut shared = 0;
    let mut count = 0;
    for tool in g.catalogue.tools() {
        let def = catalogue.tool(&tool.name).unwrap();
        count += 1;
        assert_eq!(
            def.ts_declaration.text(),
            toolforge_generator::emit::typescript::tool_declaration(tool).unwrap(),
            "{}: TypeScript declaration",
            tool.name
        );
        shared += usize::from(joined(Some(def.ts_declaration)));
        assert_eq!(
            def.input_schema_text(),
            serde_json::to_string(&tool.input_schema).unwrap(),
            "{}: input schema",
            tool.name
        );
        shared += usize::from(joined(Some(def.input_schema)));
        let want = tool
            .output_schema
            .as_ref()
            .map(|v| serde_json::to_string(v).unwrap());
        let got = def.output_schema_text().map(|t| t.into_owned());
        assert_eq!(got, want, "{}: output schema", tool.name);
        shared += usize::from(joined(def.output_schema));
        assert_eq!(def.responses.len(), tool.responses.len(), "{}", tool.name);
        for (r, ir) in def.responses.iter().zip(&tool.responses) {
            let got = r.schema_text().map(|t| t.into_owned());
            let want = ir.schema.as_ref().map(|t| t.as_str().to_string());
            assert_eq!(got, want, "{} {}: response schema", tool.name, r.status);
            shared += usize::from(joined(r.schema));
        }
    }
    assert_eq!(count, catalogue.tools().count());
    shared
}

#[test]
fn sample_crate_serves_whole_schemas() {
    assert!(check("forge.json", &cloudflare_tools::CATALOGUE) > 0);
}

#[test]
fn larder_crate_serves_whole_schemas() {
    check("forge.larder.json", &larder_tools::CATALOGUE);
}
