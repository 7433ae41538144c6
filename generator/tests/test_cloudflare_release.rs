//! The full Cloudflare release (`../shared/specs/cloudflare/openapi.json`,
//! 1,533 operations), generated in memory with the Cloudflare policy:
//! every operation accounted for, permissions from `x-cfPermissionsRequired`
//! matching an independent count, MCP-valid unique names with (almost) no
//! hashes, and input schemas that strict clients accept. Skipped loudly
//! without `TOOLFORGE_SHARED`. The compile check of the generated crate is
//! `generator/scripts/compile-cloudflare.sh` (too slow for `cargo test`).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use toolforge_generator::config::PolicyKind;
use toolforge_generator::naming::short_hash;
use toolforge_generator::schema::compat::Features;
use toolforge_generator::schema::strict::strict_input_schema;
use toolforge_generator::schema::{inline_shared, trim_input};
use toolforge_generator::{CrateLayout, Generated, generate};

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn generate_release(bytes: &[u8]) -> Generated {
    generate_release_with(bytes, true)
}

fn generate_release_with(bytes: &[u8], share_subschemas: bool) -> Generated {
    let mut config = common::config();
    config.options.share_subschemas = share_subschemas;
    config.policy = PolicyKind::Cloudflare;
    config.spec.release = "cloudflare-2024-08-06".into();
    let layout = CrateLayout {
        runtime_path: Some(
            common::repo()
                .join("runtime")
                .to_string_lossy()
                .into_owned(),
        ),
        standalone: true,
    };
    generate(bytes, "openapi.json", &config, &layout).unwrap()
}

/// `(METHOD, path)` → permissions listed in the spec, read independently
/// of the generator (plain JSON walking).
fn spec_operations(spec: &Value) -> BTreeMap<(String, String), Vec<String>> {
    let mut ops = BTreeMap::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let mut perms: Vec<String> = Vec::new();
            if let Some(list) = op["x-cfPermissionsRequired"]["enum"].as_array() {
                for p in list.iter().filter_map(Value::as_str) {
                    if !perms.iter().any(|q| q == p) {
                        perms.push(p.to_string());
                    }
                }
            }
            ops.insert((method.to_ascii_uppercase(), path.clone()), perms);
        }
    }
    ops
}

#[test]
fn cloudflare_release_invariants() {
    let Some(shared) = common::shared_dir("cloudflare_release_invariants") else {
        return;
    };
    let bytes = std::fs::read(shared.join("specs/cloudflare/openapi.json")).unwrap();
    let spec: Value = serde_json::from_slice(&bytes).unwrap();
    let ops = spec_operations(&spec);
    assert_eq!(ops.len(), 1533, "operations in the release");
    let g = generate_release(&bytes);
    let cat = &g.catalogue;
    let tools: Vec<_> = cat.tools().collect();
    assert_eq!(
        tools.len() + cat.skipped.len(),
        ops.len(),
        "every operation is a tool or listed as skipped"
    );
    for s in &cat.skipped {
        assert!(!s.reason.trim().is_empty(), "{s:?}");
    }

    // Permissions: the same operations carry them, with the same values.
    let spec_with = ops.values().filter(|p| !p.is_empty()).count();
    let mut tools_with = 0;
    for t in &tools {
        let key = (t.method.as_str().to_string(), t.path.clone());
        let expected = ops
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?} not in spec"));
        assert_eq!(&t.permissions, expected, "{}", t.name);
        tools_with += usize::from(!t.permissions.is_empty());
    }
    let skipped_with = cat
        .skipped
        .iter()
        .filter(|s| !ops[&(s.method.as_str().to_string(), s.path.clone())].is_empty())
        .count();
    assert!(
        spec_with > 600,
        "the release lists permissions ({spec_with})"
    );
    assert_eq!(tools_with + skipped_with, spec_with);
    eprintln!("tools with permissions: {tools_with} (spec: {spec_with})");

    // Names: MCP-valid, unique, forge style; hashes only for true collisions.
    let mut seen = BTreeSet::new();
    let mut hashed = Vec::new();
    for t in &tools {
        assert!(
            !t.name.is_empty()
                && t.name.len() <= 64
                && t.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{}",
            t.name
        );
        assert!(seen.insert(t.name.clone()), "duplicate {}", t.name);
        let key = format!("{} {}", t.method.as_str(), t.path);
        if t.name.ends_with(&format!("_{}", short_hash(&key))) {
            hashed.push(t.name.clone());
        }
    }
    eprintln!("names needing a hash: {} {hashed:?}", hashed.len());
    assert!(hashed.len() <= 5, "too many hashed names: {hashed:?}");

    // Input schemas: `type: object`, no top-level combinator, valid 2020-12;
    // the strict profile removes `$ref`/`$defs`, `oneOf` and type arrays.
    let meta = jsonschema::draft202012::meta::validator();
    for t in &tools {
        let s = &t.input_schema;
        assert_eq!(s["type"], "object", "{}", t.name);
        for k in ["oneOf", "anyOf", "allOf", "not", "$ref"] {
            assert!(s.get(k).is_none(), "{}: top-level {k}", t.name);
        }
        assert!(meta.is_valid(s), "{}: not valid 2020-12", t.name);
        let strict = strict_input_schema(s);
        let f = Features::of(&strict);
        assert!(
            !f.refs && !f.one_of && !f.type_array && !f.bad_root,
            "{}: {f:?}",
            t.name
        );
        assert!(
            meta.is_valid(&strict),
            "{}: strict not valid 2020-12",
            t.name
        );
    }

    // Output: one module per product, shared schemas, artifacts.
    let paths: BTreeSet<&str> = g.files.iter().map(|f| f.path.as_str()).collect();
    for p in [
        "src/lib.rs",
        "src/schemas.rs",
        "src/defs.rs",
        "artifacts/spec.json",
        "artifacts/tools.json",
        "README.md",
    ] {
        assert!(paths.contains(p), "{p}");
    }
    assert_eq!(
        paths.iter().filter(|p| p.starts_with("src/")).count(),
        cat.products.len() + 4
    );
}

/// Every `#/$defs/…` reference in `v` names an entry of `defs`.
fn assert_refs_resolve(v: &Value, defs: Option<&Value>, tool: &str) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                let name = r
                    .strip_prefix("#/$defs/")
                    .unwrap_or_else(|| panic!("{tool}: {r}"));
                assert!(
                    defs.and_then(|d| d.get(name)).is_some(),
                    "{tool}: dangling {r}"
                );
            }
            m.values().for_each(|c| assert_refs_resolve(c, defs, tool));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|c| assert_refs_resolve(c, defs, tool)),
        _ => {}
    }
}

/// Sharing repeated subschemas changes where they sit, never what they
/// mean: inlining them again gives back exactly the schema generated without
/// sharing (for input schemas, after the same trims), for every input and
/// output schema of the release.
#[test]
fn shared_subschemas_inline_back_to_the_unshared_release() {
    let Some(shared) = common::shared_dir("shared_subschemas_inline_back_to_the_unshared_release")
    else {
        return;
    };
    let bytes = std::fs::read(shared.join("specs/cloudflare/openapi.json")).unwrap();
    let with = generate_release_with(&bytes, true);
    let without = generate_release_with(&bytes, false);
    let plain: BTreeMap<&str, _> = without
        .catalogue
        .tools()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let size = |v: &Value| serde_json::to_string(v).unwrap().len();
    let (mut before, mut after, mut tools_shared) = (0, 0, 0);
    for t in with.catalogue.tools() {
        let p = plain[t.name.as_str()];
        // The shared setting also trims input schemas (`schema::trim`,
        // checked rewrite by rewrite in test_lossless_listing): compared
        // with the unshared schema trimmed the same way.
        let mut trimmed = p.input_schema.clone();
        trim_input(&mut trimmed);
        assert_eq!(
            *inline_shared(&t.input_schema),
            trimmed,
            "{}: input",
            t.name
        );
        let output = t.output_value();
        assert_eq!(
            output.as_ref().map(|o| inline_shared(o).into_owned()),
            p.output_value(),
            "{}: output",
            t.name
        );
        for s in [Some(&t.input_schema), output.as_ref()]
            .into_iter()
            .flatten()
        {
            assert_refs_resolve(s, s.get("$defs"), &t.name);
        }
        before += size(&p.input_schema);
        after += size(&t.input_schema);
        tools_shared += usize::from(t.input_schema != p.input_schema);
    }
    eprintln!(
        "input schemas: {before} bytes unshared, {after} shared ({:.1}% smaller; {tools_shared} tools changed)",
        100.0 * (before - after) as f64 / before as f64
    );
    assert!(
        after * 10 < before * 8,
        "sharing saves at least 20% ({before} -> {after})"
    );
}

/// Every product module of the release as written (tool statics laid out
/// directly, `emit/layout.rs`) is the text `prettyplease` lays out; the
/// corpus-wide check is `generator/examples/layout_check.rs`.
#[test]
fn cloudflare_release_modules_are_laid_out_as_prettyplease_does() {
    use toolforge_generator::emit::interned::SchemaTable;
    use toolforge_generator::emit::rust::{product_module, product_module_reference};
    let Some(shared) =
        common::shared_dir("cloudflare_release_modules_are_laid_out_as_prettyplease_does")
    else {
        return;
    };
    let bytes = std::fs::read(shared.join("specs/cloudflare/openapi.json")).unwrap();
    let g = generate_release(&bytes);
    let cat = &g.catalogue;
    let table = SchemaTable::build(cat).unwrap();
    assert!(cat.products.len() > 100);
    for (i, p) in cat.products.iter().enumerate() {
        let interned = table.tools.get(i).map(Vec::as_slice);
        let direct = product_module(p, interned, "// h").unwrap();
        let reference = product_module_reference(p, interned, "// h").unwrap();
        assert!(direct == reference, "{}: the direct layout differs", p.name);
    }
}
