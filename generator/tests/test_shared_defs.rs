//! Output and response schemas cut into the parts they share across tools
//! (`artifacts/schemas.json`, embedded by `src/schemas.rs` and named by
//! `artifacts/tools.json`): putting the pieces back
//! together, as the runtime and `toolforge diff` do, gives every tool
//! exactly the schema text it had before the split, on both committed
//! specs and, with `TOOLFORGE_SHARED`, on the full Cloudflare release.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::commands::diff::{Input, read_input_with};
use toolforge_generator::config::ForgeConfig;
use toolforge_generator::emit::chunks::Piece;
use toolforge_generator::emit::interned::SchemaTable;
use toolforge_generator::generate;

/// Generates `config`, from `spec` instead of its own spec when given.
fn load_from(config: &str, spec: Option<std::path::PathBuf>) -> toolforge_generator::Generated {
    let path = common::repo().join(config);
    let config = ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let spec = spec.unwrap_or_else(|| common::repo().join(&config.spec.path));
    let bytes = std::fs::read(&spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    generate(&bytes, &name, &config, &common::layout(&config)).unwrap()
}

fn load(config: &str) -> toolforge_generator::Generated {
    load_from(config, None)
}

/// The text a tool serves for entry `name`, joined from the table.
fn rebuild(table: &SchemaTable, name: &str) -> String {
    table.text(name).unwrap()
}

/// Whether entry `name` is joined from shared parts.
fn joined(table: &SchemaTable, name: &str) -> bool {
    table.entries[name]
        .iter()
        .any(|p| matches!(p, Piece::Chunk(_)))
}

/// Checks every input, output and response schema of `config`'s
/// catalogue; returns how many were joined from shared parts.
fn check(config: &str) -> usize {
    check_generated(config, &load(config))
}

/// The line lengths `src/schemas.rs` writes are those of the entries'
/// lines in the `artifacts/schemas.json` written beside it.
fn check_offsets(config: &str, table: &SchemaTable, g: &toolforge_generator::Generated) {
    let Some(file) = g.files.iter().find(|f| f.path == "artifacts/schemas.json") else {
        return;
    };
    let document = std::str::from_utf8(&file.contents).unwrap();
    let mut body = &document[document.find('\n').unwrap() + 1..];
    let lengths = table.line_lengths().unwrap();
    assert_eq!(lengths.len(), table.entries.len());
    for (len, (name, pieces)) in lengths.iter().zip(&table.entries) {
        let (line, rest) = body.split_at(body.find('\n').unwrap() + 1);
        let text = toolforge_generator::emit::chunks::marked(pieces, &table.key);
        assert!(
            line == format!("\"{name}\":{text},\n") || line == format!("\"{name}\":{text}\n"),
            "{config}: {name}"
        );
        if !rest.starts_with('}') {
            assert_eq!(*len as usize, line.len(), "{config}: {name}");
        }
        body = rest;
    }
    let rust = g.files.iter().find(|f| f.path == "src/schemas.rs").unwrap();
    let first: Vec<String> = (lengths.iter().take(3))
        .map(|l| format!("        {l},\n"))
        .collect();
    assert!(
        String::from_utf8_lossy(&rust.contents).contains(&format!("    &[\n{}", first.concat())),
        "{config}: src/schemas.rs lacks the line lengths"
    );
}

fn check_generated(config: &str, g: &toolforge_generator::Generated) -> usize {
    let table = SchemaTable::build(&g.catalogue).unwrap();
    check_offsets(config, &table, g);
    let mut split = 0;
    for (p, product) in g.catalogue.products.iter().enumerate() {
        for (t, tool) in product.tools.iter().enumerate() {
            let refs = table.tool(p, t).unwrap();
            let input = refs.input.as_ref().unwrap();
            assert_eq!(
                rebuild(&table, input),
                serde_json::to_string(&tool.input_schema).unwrap(),
                "{config}: {} input",
                tool.name
            );
            split += usize::from(joined(&table, input));
            let mut declaration = String::new();
            for piece in &refs.declaration {
                match piece {
                    Piece::Text(text) => declaration.push_str(text),
                    Piece::Chunk(name) => {
                        split += 1;
                        declaration.push_str(&rebuild(&table, name));
                    }
                }
            }
            assert_eq!(
                declaration,
                toolforge_generator::emit::typescript::tool_declaration(tool).unwrap(),
                "{config}: {} declaration",
                tool.name
            );
            match (&tool.output_schema, &refs.output) {
                (Some(schema), Some(r)) => {
                    let today = serde_json::to_string(schema).unwrap();
                    assert_eq!(rebuild(&table, r), today, "{config}: {}", tool.name);
                    split += usize::from(joined(&table, r));
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
                        split += usize::from(joined(&table, r));
                    }
                    (None, None) => {}
                    other => panic!("{config}: {} {} {other:?}", tool.name, resp.status),
                }
            }
        }
    }
    split
}

/// `artifacts/tools.json` writes shared output parts once; read back (as
/// `toolforge diff` reads it), every tool has its whole output schema.
fn check_tools_json(config: &str) {
    check_tools_json_of(config, &load(config));
}

fn check_tools_json_of(config: &str, g: &toolforge_generator::Generated) {
    let file = |path: &str| g.files.iter().find(|f| f.path == path);
    let tools = file("artifacts/tools.json").unwrap();
    let schemas = file("artifacts/schemas.json").map(|f| f.contents.clone());
    let mut beside = |name: &str| (name == "schemas.json").then(|| schemas.clone()).flatten();
    let Ok(Input::Catalogue(release)) = read_input_with(&tools.contents, "tools.json", &mut beside)
    else {
        panic!("{config}: tools.json does not read back as a catalogue");
    };
    let tools: Vec<_> = g.catalogue.tools().collect();
    assert_eq!(release.tools.len(), tools.len());
    for (read, tool) in release.tools.iter().zip(tools) {
        assert_eq!(read.name, tool.name);
        assert_eq!(
            serde_json::to_string(&read.input_schema).unwrap(),
            serde_json::to_string(&tool.input_schema).unwrap(),
            "{config}: {} input",
            tool.name
        );
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

#[test]
fn full_cloudflare_release_rebuilds_exactly() {
    let Some(shared) = common::shared_dir("full_cloudflare_release_rebuilds_exactly") else {
        return;
    };
    let spec = shared.join("specs/cloudflare/openapi.json");
    let g = load_from("forge.json", Some(spec));
    assert!(check_generated("full release", &g) > 1_000);
    check_tools_json_of("full release", &g);
    let file = |path: &str| g.files.iter().find(|f| f.path == path).unwrap();
    let text = String::from_utf8_lossy(&file("artifacts/tools.json").contents);
    assert!(
        text.contains("\"x-toolforge-chunks\":\"schemas.json\""),
        "tools.json names no table"
    );
    let table = String::from_utf8_lossy(&file("artifacts/schemas.json").contents);
    assert!(
        table.contains("{\"x-toolforge-chunk\":\"S_"),
        "no chunks written"
    );
}

/// A spec whose own schemas hold the reference key: the table picks
/// another key (named in `src/schemas.rs` and `artifacts/schemas.json`),
/// and every text still rebuilds exactly, through the table and through
/// `tools.json` (a spec cannot plant references the runtime or the diff
/// would follow).
#[test]
fn a_spec_holding_the_reference_key_gets_another_key() {
    let part = serde_json::json!({
        "type": "object",
        "description": "A part long enough to be shared between both operations, and then some more text.",
        "properties": {
            "x-toolforge-chunk": {"type": "string", "description": "{\"x-toolforge-chunk\":\"S_0000000000000000\"}"},
            "n": {"type": "integer"}
        }
    });
    let op = |id: &str| {
        serde_json::json!({
            "get": {
                "operationId": id,
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {"item": part, "id": {"type": "string"}, "op": {"type": "string", "description": id}}
                }}}}}
            }
        })
    };
    let spec = serde_json::json!({
        "openapi": "3.0.3",
        "info": {"title": "clash", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/a": op("get_a"), "/b": op("get_b")}
    });
    let bytes = serde_json::to_vec(&spec).unwrap();
    let config = ForgeConfig::generic("clash", std::path::Path::new("clash.json"), "0");
    let g = generate(&bytes, "clash.json", &config, &common::layout(&config)).unwrap();
    let table = SchemaTable::build(&g.catalogue).unwrap();
    assert_eq!(&*table.key, "x-toolforge-chunk-2");
    assert!(check_generated("clash", &g) > 0, "nothing was shared");
    check_tools_json_of("clash", &g);
    let file = |path: &str| g.files.iter().find(|f| f.path == path).unwrap();
    let text = String::from_utf8_lossy(&file("src/schemas.rs").contents);
    assert!(
        text.contains("SharedTexts::with_line_lengths(\n    \"x-toolforge-chunk-2\","),
        "{text}"
    );
    let table = String::from_utf8_lossy(&file("artifacts/schemas.json").contents);
    assert!(
        table.starts_with("{\"@generated\":")
            && table.contains(",\"key\":\"x-toolforge-chunk-2\","),
        "{table}"
    );
    assert!(table.contains("{\"x-toolforge-chunk-2\":\"S_"), "{table}");
}
