//! Output and response schemas whose root `$defs` are emitted once and
//! shared across tools (`src/schemas.rs`): putting the pieces back
//! together, as the runtime does, gives every tool exactly the schema text
//! it had before the split.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::config::ForgeConfig;
use toolforge_generator::diff::{Input, read_input};
use toolforge_generator::emit::interned::{SchemaRef, SchemaTable};
use toolforge_generator::emit::split::assemble;
use toolforge_generator::generate;

fn load(config: &str) -> toolforge_generator::Generated {
    let path = common::repo().join(config);
    let config = ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let spec = common::repo().join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    generate(&bytes, &name, &config, &common::layout(&config)).unwrap()
}

/// The text a tool serves for `r`, rebuilt from the table's constants.
fn rebuild(table: &SchemaTable, r: &SchemaRef) -> String {
    let root = table.texts.get(&r.root).unwrap();
    let Some(list) = &r.defs else {
        return root.to_string();
    };
    let defs: Vec<(&str, &str)> = table.lists[list]
        .iter()
        .map(|(name, text)| (name.as_str(), &*table.texts[text]))
        .collect();
    assert!(!defs.is_empty(), "{list} is empty");
    assemble(root, &defs)
}

/// Checks every output and response schema of `config`'s catalogue;
/// returns how many were split.
fn check(config: &str) -> usize {
    let g = load(config);
    let table = SchemaTable::build(&g.catalogue).unwrap();
    let mut split = 0;
    for (p, product) in g.catalogue.products.iter().enumerate() {
        for (t, tool) in product.tools.iter().enumerate() {
            let refs = table.tool(p, t).unwrap();
            match (&tool.output_schema, &refs.output) {
                (Some(schema), Some(r)) => {
                    let today = serde_json::to_string(schema).unwrap();
                    assert_eq!(rebuild(&table, r), today, "{config}: {}", tool.name);
                    split += usize::from(r.defs.is_some());
                }
                (None, None) => {}
                other => panic!("{config}: {} output {other:?}", tool.name),
            }
            assert_eq!(refs.responses.len(), tool.responses.len());
            for (resp, r) in tool.responses.iter().zip(&refs.responses) {
                match (&resp.schema, r) {
                    (Some(text), Some(r)) => {
                        assert_eq!(
                            rebuild(&table, r),
                            text.as_str(),
                            "{config}: {} {}",
                            tool.name,
                            resp.status
                        );
                        split += usize::from(r.defs.is_some());
                    }
                    (None, None) => {}
                    other => panic!("{config}: {} {} {other:?}", tool.name, resp.status),
                }
            }
        }
    }
    split
}

/// `artifacts/tools.json` writes shared output `$defs` once; read back
/// (as `toolforge diff` reads it), every tool has its whole output schema.
fn check_tools_json(config: &str) {
    let g = load(config);
    let file = g
        .files
        .iter()
        .find(|f| f.path == "artifacts/tools.json")
        .unwrap();
    let Ok(Input::Catalogue(release)) = read_input(&file.contents, "tools.json") else {
        panic!("{config}: tools.json does not read back as a catalogue");
    };
    let tools: Vec<_> = g.catalogue.tools().collect();
    assert_eq!(release.tools.len(), tools.len());
    for (read, tool) in release.tools.iter().zip(tools) {
        assert_eq!(read.name, tool.name);
        assert_eq!(
            read.output_schema
                .as_ref()
                .map(|v| serde_json::to_string(v).unwrap()),
            tool.output_schema
                .as_ref()
                .map(|v| serde_json::to_string(v).unwrap()),
            "{config}: {}",
            tool.name
        );
    }
}

#[test]
fn tools_json_output_schemas_read_back_whole() {
    check_tools_json("forge.json");
    check_tools_json("forge.larder.json");
}

#[test]
fn sample_schemas_rebuild_exactly() {
    assert!(
        check("forge.json") > 0,
        "the sample spec has recursive outputs"
    );
}

#[test]
fn larder_schemas_rebuild_exactly() {
    check("forge.larder.json");
}
