#![allow(clippy::unwrap_used, clippy::panic)]
//! A crate generated outside the workspace (`toolforge generate --out DIR`)
//! is its own workspace root: its manifest turns incremental caches off for
//! the generated package (named as Cargo names it), and Cargo reads it. A
//! crate generated into a workspace member carries no profile (Cargo ignores
//! a member's profiles, with a warning).

mod common;

use std::process::Command;

#[test]
fn a_standalone_crate_builds_its_own_package_without_incremental_caches() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crate");
    let o = common::toolforge(
        &common::repo(),
        &["generate", "--out", dir.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", common::text(&o));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let package = common::config().krate.package;
    assert!(
        manifest.ends_with(&format!(
            "\n[workspace]\n\n[profile.dev.package.\"{package}\"]\nincremental = false\n"
        )),
        "{manifest}"
    );

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // Cargo reads the manifest (profiles included) as a build would;
    // `--offline`: the lock is the workspace's, copied in.
    std::fs::copy(common::repo().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let o = Command::new(&cargo)
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .current_dir(&dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let metadata: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(metadata["packages"][0]["name"], package.as_str());
}

#[test]
fn a_member_crate_carries_no_profile() {
    let generated = common::generate_sample();
    let manifest = generated
        .files
        .iter()
        .find(|f| f.path == "Cargo.toml")
        .unwrap();
    let text = String::from_utf8_lossy(&manifest.contents);
    assert!(!text.contains("[profile"), "{text}");
    assert!(!text.contains("[workspace]"), "{text}");
}
