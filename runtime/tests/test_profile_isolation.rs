//! The runtime never names an API: everything API-specific comes from the
//! catalogue's profile, which the generator's policy emits. This test fails
//! when the word `cloudflare` (any letter case) appears in the runtime's
//! sources, code or comments, outside `src/cloudflare.rs` (the one place a
//! Cloudflare-only behaviour could go; today there is none, every
//! Cloudflare fact is profile data). A second test keeps the field names
//! of known response envelopes out of the runtime's code: the readers
//! follow the profile's `BodyEnvelope` pointers.
#![allow(clippy::panic)]

use std::path::{Path, PathBuf};

/// The only file allowed to name the flagship API.
const ALLOWED: &str = "cloudflare.rs";

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_api_name_in_runtime_sources() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(
        files.len() > 20,
        "found only {} files under {}",
        files.len(),
        src.display()
    );
    let mut found = Vec::new();
    for file in &files {
        if file.strip_prefix(&src).ok() == Some(Path::new(ALLOWED)) {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (n, line) in text.lines().enumerate() {
            if line.to_ascii_lowercase().contains("cloudflare") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the runtime must read API behaviour from `catalogue.profile`, not name an API:\n{}",
        found.join("\n")
    );
}

/// Field names of real APIs' envelopes and pagination (Cloudflare's
/// `success`/`result_info`, Stripe's `has_more`/`starting_after`, Graph's
/// `@odata.nextLink`, Slack's `next_cursor`): profile data, never code.
const ENVELOPE_FIELDS: [&str; 6] = [
    "success",
    "result_info",
    "has_more",
    "starting_after",
    "nextLink",
    "next_cursor",
];

/// Whether a file holds only tests (its code is fixtures, not readers).
fn test_only(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "tests.rs" || n == "testing.rs" || n.ends_with("_tests.rs"))
}

#[test]
fn no_envelope_field_name_in_runtime_code() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !test_only(f)) {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // A file's own unit tests follow its first `#[cfg(test)]`.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or("");
            for field in ENVELOPE_FIELDS {
                if line.contains(&format!("\"{field}")) || line.contains(&format!("/{field}\"")) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the runtime must read response envelopes through `profile.envelope`, not name their fields:\n{}",
        found.join("\n")
    );
}
