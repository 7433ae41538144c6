#![allow(clippy::unwrap_used, clippy::panic)]
//! `generator/src/init_runtime.lock` is what Cargo writes for a project that
//! depends on this workspace's runtime by path, given this workspace's lock:
//! made again here (a probe project shaped like `toolforge init`'s, this
//! workspace's `Cargo.lock` copied in, `cargo update --workspace --offline` to let
//! Cargo prune and add entries) and compared byte for byte.
//! `TOOLFORGE_BLESS=1` rewrites the committed file.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolforge_generator::commands::init_lock::{entry_name, join_entries, split_entries};

const PROBE: &str = "lock-probe-tools";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn the_init_lock_is_what_cargo_writes_for_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let runtime = workspace().join("runtime");
    std::fs::create_dir_all(root.join("generated/src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nresolver = \"3\"\nmembers = [\"generated\"]\n",
    )
    .unwrap();
    // The dependency exactly as the generated crate's Cargo.toml states it.
    std::fs::write(
        root.join("generated/Cargo.toml"),
        format!(
            "[package]\nname = \"{PROBE}\"\nversion = \"{}\"\nedition = \"2024\"\npublish = false\n\n\
             [dependencies]\ntoolforge-runtime = {{ version = \"{}\", path = {:?}, default-features = false }}\n\n\
             [features]\ndefault = [\"http\", \"codemode\", \"oauth\"]\nhttp = [\"toolforge-runtime/http\"]\n\
             codemode = [\"toolforge-runtime/codemode\"]\noauth = [\"toolforge-runtime/oauth\"]\n",
            toolforge_generator::emit::RUNTIME_VERSION,
            toolforge_generator::emit::RUNTIME_VERSION,
            runtime.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(root.join("generated/src/lib.rs"), "").unwrap();
    std::fs::copy(workspace().join("Cargo.lock"), root.join("Cargo.lock")).unwrap();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["update", "--workspace", "--offline", "--quiet"])
        .current_dir(root)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo update --workspace failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let (header, entries) = split_entries(&written);
    let without_probe: Vec<&str> = entries
        .into_iter()
        .filter(|e| entry_name(e) != Some(PROBE))
        .collect();
    let expected = join_entries(header, &without_probe);

    let committed_path = workspace().join("generator/src/init_runtime.lock");
    if std::env::var("TOOLFORGE_BLESS").as_deref() == Ok("1") {
        std::fs::write(&committed_path, &expected).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap();
    assert!(
        committed == expected,
        "{} is not what Cargo writes for the runtime with this workspace's Cargo.lock \
         (a dependency changed?): run `TOOLFORGE_BLESS=1 cargo test -p toolforge-generator \
         --test test_init_lock` and commit the file",
        committed_path.display()
    );
}
