#![allow(clippy::unwrap_used, clippy::panic)]
//! The strict schema profile of the generic sample compiles: the larder
//! spec is generated with `schema_profile: strict` (what `toolforge generate
//! --schema-profile strict --out DIR` does) into a temporary directory as a
//! standalone crate whose runtime dependency is this repository's `runtime/`,
//! and `cargo clippy --all-targets -- -D warnings` must pass on it within a
//! time limit.
//!
//! The build uses its own persistent target directory,
//! `<target>/larder-strict`, so its dependencies are compiled once and
//! reused by later runs; sharing the workspace's would rebuild the runtime
//! back and forth (it is a workspace member there and a plain path
//! dependency here). `Cargo.lock` is the workspace's, so the versions are
//! the ones the workspace builds, and cargo runs `--offline`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use toolforge_generator::config::{ForgeConfig, SchemaProfile};
use toolforge_generator::{CrateLayout, generate};
use toolforge_tests::process;

/// Bound on the clippy run (a first run compiles the runtime's dependencies).
const BUILD_LIMIT: Duration = Duration::from_secs(900);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap()
}

fn target_dir(repo: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target"))
        .join("larder-strict")
}

#[test]
fn the_strict_larder_crate_compiles_without_clippy_warnings() {
    let repo = repo();
    let config_path = repo.join("forge.larder.json");
    let mut config = ForgeConfig::parse(
        &std::fs::read_to_string(&config_path).unwrap(),
        &config_path,
    )
    .unwrap();
    assert_eq!(config.options.schema_profile, SchemaProfile::Full);
    config.options.schema_profile = SchemaProfile::Strict;
    let spec = std::fs::read(repo.join(&config.spec.path)).unwrap();
    let layout = CrateLayout {
        runtime_path: Some(repo.join("runtime").to_string_lossy().into_owned()),
        standalone: true,
    };
    let generated = generate(&spec, "larder.yaml", &config, &layout).unwrap();

    let dir = tempfile::tempdir().unwrap();
    for file in &generated.files {
        let path = dir.path().join(&file.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &file.contents).unwrap();
    }
    // The profile really is another one: the strict tool schemas differ
    // from the committed (full) ones.
    let committed = std::fs::read(repo.join("generated-larder/artifacts/tools.json")).unwrap();
    let strict = std::fs::read(dir.path().join("artifacts/tools.json")).unwrap();
    assert_ne!(committed, strict, "strict tools.json equals the full one");
    std::fs::copy(repo.join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command
        .args([
            "clippy",
            "--offline",
            "--quiet",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", target_dir(&repo))
        .env("CARGO_TERM_COLOR", "never");
    let finished = process::run(command, b"", BUILD_LIMIT).unwrap();
    println!(
        "strict larder crate: {} tools, clippy in {:.1?}",
        generated.catalogue.tools().count(),
        finished.elapsed
    );
    assert!(
        finished.success(),
        "cargo clippy on the strict larder crate failed:\n{}",
        finished.describe()
    );
}
