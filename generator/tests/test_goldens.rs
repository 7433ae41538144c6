//! Goldens per spec × setting, as progenitor keeps them: the Cloudflare
//! sample and Larder, each with the `full` and the `strict` schema
//! profile, and the Cloudflare sample `full` without subschema sharing. Each cell is
//! generated in memory and two of its tools are written to
//! `tests/goldens/<spec>-<setting>.json` (the first tool by name, and the
//! first whose input schema has `$defs` in the shared `full` cell, else
//! the largest): what a setting changes in a tool's schemas shows as a
//! diff of one small file. `TOOLFORGE_BLESS=1` rewrites them.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use serde_json::{Map, Value, json};
use toolforge_generator::config::{ForgeConfig, SchemaProfile};
use toolforge_generator::ir::Tool;

/// (cell name, forge file, schema profile, sharing).
const CELLS: [(&str, &str, SchemaProfile, bool); 5] = [
    ("cloudflare-full", "forge.json", SchemaProfile::Full, true),
    (
        "cloudflare-strict",
        "forge.json",
        SchemaProfile::Strict,
        true,
    ),
    (
        "cloudflare-unshared",
        "forge.json",
        SchemaProfile::Full,
        false,
    ),
    (
        "larder-full",
        "forge.larder.json",
        SchemaProfile::Full,
        true,
    ),
    (
        "larder-strict",
        "forge.larder.json",
        SchemaProfile::Strict,
        true,
    ),
];

/// The catalogue of `forge` with the schema profile and sharing set.
fn generate(forge: &str, profile: SchemaProfile, share: bool) -> toolforge_generator::Generated {
    let repo = common::repo();
    let path = repo.join(forge);
    let mut config = ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    config.options.schema_profile = profile;
    config.options.share_subschemas = share;
    let spec = repo.join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    toolforge_generator::generate(&bytes, &name, &config, &common::layout(&config)).unwrap()
}

/// The names of the two tools a spec's cells show, chosen in its shared
/// `full` cell so every cell shows the same tools.
fn chosen(tools: &[&Tool]) -> Vec<String> {
    let mut names: Vec<&Tool> = tools.to_vec();
    names.sort_by(|a, b| a.name.cmp(&b.name));
    let first = names[0].name.clone();
    let second = names
        .iter()
        .find(|t| t.input_schema.get("$defs").is_some() && t.name != first)
        .or_else(|| {
            names
                .iter()
                .max_by_key(|t| t.input_schema.to_string().len())
        })
        .map(|t| t.name.clone())
        .unwrap();
    vec![first, second]
}

fn shown(tool: &Tool) -> Value {
    let mut out = Map::new();
    out.insert("input_schema".into(), tool.input_schema.clone());
    if let Some(output) = tool.output_value() {
        out.insert("output_schema".into(), output);
    }
    Value::Object(out)
}

#[test]
fn each_spec_and_setting_matches_its_golden() {
    let bless = std::env::var_os("TOOLFORGE_BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for spec in ["cloudflare", "larder"] {
        let forge = CELLS.iter().find(|c| c.0.starts_with(spec)).unwrap().1;
        let base = generate(forge, SchemaProfile::Full, true);
        let names = chosen(&base.catalogue.tools().collect::<Vec<_>>());
        for (cell, forge, profile, share) in CELLS.iter().filter(|c| c.0.starts_with(spec)) {
            let generated = generate(forge, *profile, *share);
            let mut tools = Map::new();
            for name in &names {
                let tool = generated
                    .catalogue
                    .tools()
                    .find(|t| &t.name == name)
                    .unwrap();
                tools.insert(name.clone(), shown(tool));
            }
            let text = serde_json::to_string_pretty(&json!({ "tools": tools })).unwrap() + "\n";
            let path = common::repo().join(format!("generator/tests/goldens/{cell}.json"));
            if bless {
                std::fs::write(&path, &text).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "goldens differ (run with TOOLFORGE_BLESS=1 if the change is meant): {failures:?}"
    );
}
