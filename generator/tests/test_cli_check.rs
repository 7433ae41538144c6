//! `toolforge check`, `generate` and `pin` as a user runs them: the real
//! binary on a copy of the repository's pin, spec and generated crate.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::{repo_copy, text, toolforge};

#[test]
fn check_passes_on_the_committed_output() {
    let o = toolforge(&common::repo(), &["check"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("up to date"));
}

#[test]
fn check_fails_after_a_spec_edit() {
    let tmp = repo_copy();
    let spec = tmp.path().join("specs/cloudflare-sample.yaml");
    let original = std::fs::read_to_string(&spec).unwrap();
    let edited = original.replacen("summary: List zones", "summary: List all zones", 1);
    assert_ne!(
        original, edited,
        "the sample spec changed: update this test's edit"
    );
    std::fs::write(&spec, edited).unwrap();

    // Unpinned edit: refused, naming the file and both digests.
    let o = toolforge(tmp.path(), &["check"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("sha256 mismatch"), "{}", text(&o));

    // Re-pinned: the pin is fine, the output is stale and named.
    let o = toolforge(tmp.path(), &["pin"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = toolforge(tmp.path(), &["check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("changed: src/zones.rs"), "{}", text(&o));
    assert!(text(&o).contains("changed: source.json"), "{}", text(&o));

    // generate brings it back in line, and a second generate writes nothing.
    let o = toolforge(tmp.path(), &["generate"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = toolforge(tmp.path(), &["check"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = toolforge(tmp.path(), &["generate"]);
    assert!(text(&o).contains("(0 files changed)"), "{}", text(&o));
    // Nothing on stdout: an MCP client launching `generate && server` reads
    // stdout as JSON-RPC.
    assert!(
        o.stdout.is_empty(),
        "generate wrote to stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn check_names_stale_and_hand_edited_files() {
    let tmp = repo_copy();
    std::fs::write(tmp.path().join("generated/src/extra.rs"), "// left over\n").unwrap();
    let lib = tmp.path().join("generated/src/lib.rs");
    let mut s = std::fs::read_to_string(&lib).unwrap();
    s.push_str("// hand edit\n");
    std::fs::write(&lib, s).unwrap();
    let o = toolforge(tmp.path(), &["check"]);
    assert_eq!(o.status.code(), Some(1));
    let t = text(&o);
    assert!(
        t.contains("changed: src/lib.rs") && t.contains("extra.rs"),
        "{t}"
    );
}

#[test]
fn check_covers_the_skills() {
    let tmp = repo_copy();
    let md = tmp.path().join("skills/kv-bulk-writes/SKILL.md");
    let mut text_md = std::fs::read_to_string(&md).unwrap();
    text_md.push_str("\nOne more line.\n");
    std::fs::write(&md, text_md).unwrap();

    // An edited skill no longer matches the pin.
    let o = toolforge(tmp.path(), &["check"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("skills sha256 mismatch"), "{}", text(&o));

    // Re-pinned: the table changes, the new blob is missing, the old one stale.
    let o = toolforge(tmp.path(), &["pin"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = toolforge(tmp.path(), &["check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("changed: src/skills.rs"), "{t}");
    assert!(t.contains("missing: skills/"), "{t}");
    assert!(t.contains("stale:") && t.contains("skills/"), "{t}");

    // A skill left out is named with its reason.
    std::fs::create_dir_all(tmp.path().join("skills/Bad_Name")).unwrap();
    std::fs::write(
        tmp.path().join("skills/Bad_Name/SKILL.md"),
        "---\nname: Bad_Name\ndescription: d\n---\n",
    )
    .unwrap();
    let o = toolforge(tmp.path(), &["pin"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = toolforge(tmp.path(), &["generate"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("warning: skills: Bad_Name: skill left out: the directory name is not a valid skill name"),
        "{}",
        text(&o)
    );
    let o = toolforge(tmp.path(), &["check"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn an_archive_of_the_skills_generates_the_same_crate() {
    let tmp = repo_copy();
    // A release tarball: everything below one top-level directory.
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    b.append_dir_all("repo-1.0/skills", tmp.path().join("skills"))
        .unwrap();
    let bytes = b.into_inner().unwrap().finish().unwrap();
    std::fs::write(tmp.path().join("skills.tar.gz"), &bytes).unwrap();
    std::fs::remove_dir_all(tmp.path().join("skills")).unwrap();
    let forge = tmp.path().join("forge.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&forge).unwrap()).unwrap();
    config["skills"] = serde_json::json!({
        "path": "skills.tar.gz",
        "sha256": toolforge_generator::config::sha256_hex(&bytes),
    });
    std::fs::write(&forge, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let o = toolforge(tmp.path(), &["check"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn fetch_without_url_and_missing_spec_are_clear() {
    let tmp = repo_copy();
    let o = toolforge(tmp.path(), &["fetch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("nothing to fetch"), "{}", text(&o));
    let o = toolforge(tmp.path(), &["generate", "--spec", "specs/missing.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("specs/missing.yaml"), "{}", text(&o));
}

#[test]
fn pin_to_a_new_file_records_its_path_and_digest() {
    let tmp = repo_copy();
    let new = tmp.path().join("specs/next-release.yaml");
    std::fs::copy(tmp.path().join("specs/cloudflare-sample.yaml"), &new).unwrap();
    let o = toolforge(
        tmp.path(),
        &[
            "pin",
            "--spec",
            "specs/next-release.yaml",
            "--release",
            "next",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let forge = std::fs::read_to_string(tmp.path().join("forge.json")).unwrap();
    assert!(forge.contains("\"specs/next-release.yaml\""), "{forge}");
    assert!(forge.contains("\"next\""), "{forge}");
    let o = toolforge(tmp.path(), &["generate"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = toolforge(tmp.path(), &["check"]);
    assert!(o.status.success(), "{}", text(&o));
}
