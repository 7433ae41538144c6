//! Shared helpers of the generator's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use toolforge_generator::config::ForgeConfig;
use toolforge_generator::{CrateLayout, Generated, generate_with};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The repo's forge.json.
pub fn config() -> ForgeConfig {
    let path = repo().join("forge.json");
    ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

/// Layout of the committed `generated/` crate.
pub fn layout(config: &ForgeConfig) -> CrateLayout {
    CrateLayout {
        runtime_path: config.krate.runtime_path.clone(),
        standalone: false,
    }
}

/// Generates the pinned sample spec in memory, with the pinned skills
/// directory (checked against its pin).
pub fn generate_sample() -> Generated {
    let config = config();
    let spec = repo().join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    let skills = match &config.skills {
        Some(pin) => {
            let (set, digest) =
                toolforge_generator::skills::read_dir(&repo().join(&pin.path)).unwrap();
            assert_eq!(
                digest, pin.sha256,
                "the skills pin is stale: run `toolforge pin`"
            );
            set
        }
        None => Default::default(),
    };
    generate_with(&bytes, &name, &config, &layout(&config), &skills).unwrap()
}

/// The shared data directory (`../shared`). Without `TOOLFORGE_SHARED` the
/// test fails, unless `TOOLFORGE_REQUIRE_SHARED=0` says explicitly that a
/// skip is wanted (`tests/run.sh` sets it on a machine without `../shared`):
/// then None, with a loud notice.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    match std::env::var_os("TOOLFORGE_SHARED") {
        Some(p) if Path::new(&p).is_dir() => Some(PathBuf::from(p)),
        found => {
            let why = match found {
                Some(p) => format!("TOOLFORGE_SHARED={} is not a directory", p.display()),
                None => "TOOLFORGE_SHARED is not set".to_owned(),
            };
            assert!(
                std::env::var("TOOLFORGE_REQUIRE_SHARED").as_deref() == Ok("0"),
                "{test}: {why}; point it at the shared data directory (../shared), \
                 or set TOOLFORGE_REQUIRE_SHARED=0 to skip the tests that need it"
            );
            // Straight to the process's stderr: libtest captures `eprintln!` of
            // passing tests, and a skip must be seen.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "*** SKIPPED {test}: {why} (TOOLFORGE_REQUIRE_SHARED=0) ***"
            );
            None
        }
    }
}

/// Runs the real `toolforge` binary in `dir` with `args`.
pub fn toolforge(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolforge"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A finished command's stdout and stderr, as one text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Copies the tree at `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A temporary copy of the repository's pin, spec, generated crate and
/// skills, for running the CLI as a user does.
pub fn repo_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo();
    std::fs::copy(repo.join("forge.json"), tmp.path().join("forge.json")).unwrap();
    copy_dir(&repo.join("specs"), &tmp.path().join("specs"));
    copy_dir(&repo.join("generated"), &tmp.path().join("generated"));
    copy_dir(&repo.join("skills"), &tmp.path().join("skills"));
    tmp
}
