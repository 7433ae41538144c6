//! The resolved spec the generator writes (`artifacts/spec.json`, shared
//! component expansions written once as inline markers), read through the
//! runtime's spec index, is exactly the fully inlined document the
//! generator's reference resolver builds: on both committed specs and, with
//! `TOOLFORGE_SHARED`, on the full Cloudflare release and (when present)
//! the other flagship-sized specs of the shared data.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolforge_generator::config::PolicyKind;
use toolforge_generator::emit::resolved::{
    GENERATED_KEY, INLINE_MARKER, INLINE_REFS_KEY, SHARED_REFS_KEY, resolve_document,
    split_merged_paths, write_document,
};
use toolforge_generator::load::load;
use toolforge_generator::policy::Policy;
use toolforge_generator::schema::{Cycles, Limits};
use toolforge_runtime::sandbox::SpecIndex;
use toolforge_runtime::sandbox::lazy::inline_refs;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Writes `spec`'s resolved document, reads it through the runtime's index
/// and compares it with the reference resolver's; returns the written size
/// and the number of markers.
fn check(spec: &Path, kind: PolicyKind) -> (usize, usize) {
    let bytes = std::fs::read(spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    let doc = load(&bytes, &name).unwrap();
    let merged = Policy::new(kind).merged_paths(&doc);
    let cycles = Cycles::compute(&doc);
    let written = write_document(&doc, &cycles, &Limits::default(), &merged, "gen").unwrap();
    let text = std::str::from_utf8(&written).unwrap();
    let markers = text.matches(&format!("{{\"{INLINE_MARKER}\":")).count();
    let parsed: Value = serde_json::from_str(text).unwrap();
    assert!(
        parsed.get(SHARED_REFS_KEY).is_none(),
        "{name}: inlined whole, not with shared refs"
    );
    assert_eq!(
        parsed.get(INLINE_REFS_KEY).is_some(),
        markers > 0,
        "{name}: the root notes markers exactly when there are some"
    );
    let index = SpecIndex::from_json(text).unwrap();
    let mut expected = resolve_document(&doc, &Limits::default()).unwrap();
    split_merged_paths(&mut expected, &merged);
    expected[GENERATED_KEY] = json!("gen");
    let seen = index.to_value();
    assert!(
        serde_json::to_string(&seen).unwrap() == serde_json::to_string(&expected).unwrap(),
        "{name}: the index does not read as the inlined document"
    );
    (written.len(), markers)
}

#[test]
fn committed_specs_read_as_fully_inlined() {
    assert_eq!(inline_refs::INLINE_MARKER, INLINE_MARKER);
    assert_eq!(inline_refs::INLINE_REFS_KEY, INLINE_REFS_KEY);
    let (_, markers) = check(
        &repo().join("specs/cloudflare-sample.yaml"),
        PolicyKind::Cloudflare,
    );
    assert!(markers > 0, "the sample shares components");
    check(&repo().join("specs/larder.yaml"), PolicyKind::Generic);
}

#[test]
fn full_cloudflare_release_reads_as_fully_inlined() {
    let Some(shared) = toolforge_tests::clients::shared_dir(
        "full_cloudflare_release_reads_as_fully_inlined",
        "specs/cloudflare/openapi.json",
    )
    .unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let spec = shared.join("specs/cloudflare/openapi.json");
    let (bytes, markers) = check(&spec, PolicyKind::Cloudflare);
    // 23.7 MB fully written out; 4.7 MB with each shared expansion once.
    assert!(bytes < 8_000_000, "{bytes} bytes");
    assert!(markers > 1_000, "{markers} markers");
}
