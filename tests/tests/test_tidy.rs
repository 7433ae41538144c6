#![allow(clippy::panic)]
//! House rules over the workspace's own sources (after rust-analyzer's tidy
//! test): files stay small enough to read, integration test files say what
//! they are, non-test code has no `unwrap()`, and the generator names an API
//! only in its policy. Each rule keeps a list of today's exceptions with a
//! ceiling: an exception may shrink or go, never grow, and a new file is
//! held to the rule. Generated crates (`generated/`, `generated-larder/`)
//! are output, not sources, and are not checked here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Longest source file, in lines.
const MAX_LINES: usize = 800;

/// Files longer than [`MAX_LINES`] today, with their length as the ceiling.
const LONG_FILES: [(&str, usize); 6] = [
    ("generator/tests/fuzz_loader.rs", 1088),
    ("generator/tests/test_diff.rs", 842),
    ("runtime/tests/fuzz_jsonrpc.rs", 852),
    ("tests/src/bin/loadtest/main.rs", 909),
    ("tests/src/sample.rs", 1018),
    ("tests/tests/test_mcp_protocol.rs", 1038),
];

/// Generator files outside the policy that name the flagship API today
/// (variants and CLI values the policy registry will replace), with the
/// number of such code lines as the ceiling.
const API_WORD_OUTSIDE_POLICY: [(&str, usize); 8] = [
    ("generator/src/bin/toolforge/diff.rs", 1),
    ("generator/src/bin/toolforge/init.rs", 1),
    ("generator/src/bin/toolforge/main.rs", 2),
    ("generator/src/config.rs", 4),
    ("generator/src/emit/rust.rs", 1),
    ("generator/src/emit/tool_doc.rs", 1),
    ("generator/src/ir.rs", 3),
    ("generator/src/lib.rs", 1),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| panic!("the tests crate has a parent"))
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | "node_modules" | ".venv" | "snapshots") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Every Rust source of the hand-written crates, as paths relative to the
/// workspace root with `/` separators.
fn sources() -> Vec<(String, String)> {
    let root = root();
    let mut files = Vec::new();
    for krate in ["model", "generator", "oauth", "runtime", "tests"] {
        rust_files(&root.join(krate), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "found only {} files", files.len());
    files
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (rel, text)
        })
        .collect()
}

/// Test code by its file name: unit test files beside the code, the test
/// helpers compiled only under `cfg(test)`, integration tests, examples and
/// benchmarks (developer tools that may stop at the first error) and the
/// test support crate.
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs"
        || name == "testing.rs"
        || name.ends_with("_tests.rs")
        || rel.contains("/tests/")
        || rel.contains("/examples/")
        || rel.contains("/benches/")
        || rel.starts_with("tests/")
}

/// The lines of a file before its first `#[cfg(test)]` (the test module
/// sits at the end of a source file by convention).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| !l.trim_start().starts_with("#[cfg(test)]"))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(n, l)| (n + 1, l))
}

fn report(rule: &str, found: &[String]) {
    assert!(
        found.is_empty(),
        "{rule}:\n{}\n(see tests/tests/test_tidy.rs)",
        found.join("\n")
    );
}

#[test]
fn files_stay_short() {
    let ceilings: BTreeMap<&str, usize> = LONG_FILES.into_iter().collect();
    let mut found = Vec::new();
    for (rel, text) in sources() {
        let lines = text.lines().count();
        let limit = ceilings.get(rel.as_str()).copied().unwrap_or(MAX_LINES);
        if lines > limit {
            found.push(format!("{rel}: {lines} lines (at most {limit})"));
        }
    }
    report(
        &format!("files longer than {MAX_LINES} lines: split them by responsibility"),
        &found,
    );
}

#[test]
fn integration_test_files_are_named_for_what_they_are() {
    let mut found = Vec::new();
    for (rel, _) in sources() {
        let Some((dir, name)) = rel.rsplit_once('/') else {
            continue;
        };
        if !matches!(dir, "generator/tests" | "runtime/tests" | "tests/tests") {
            continue;
        }
        let ok = name.starts_with("test_") || name.starts_with("fuzz_") || name == "common.rs";
        if !ok {
            found.push(rel);
        }
    }
    report(
        "integration tests are `test_<behaviour>.rs` (fuzz targets `fuzz_<target>.rs`, shared helpers `common.rs`)",
        &found,
    );
}

#[test]
fn non_test_code_has_no_unwrap() {
    let mut found = Vec::new();
    for (rel, text) in sources() {
        if is_test_file(&rel) || rel.starts_with("tests/") {
            continue;
        }
        for (n, line) in code_lines(&text) {
            if line.contains(".unwrap()") || line.contains("allow(clippy::unwrap_used") {
                found.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    report(
        "`unwrap()` outside tests: return an error with context instead",
        &found,
    );
}

/// No non-test file leaks memory: what lives as long as the process is a
/// `static` (Code Mode's tool definitions are kept in the slots of one,
/// `runtime/src/codemode/statics.rs`), or owned by whoever needs it.
#[test]
fn non_test_code_never_leaks() {
    let mut found = Vec::new();
    for (rel, text) in sources() {
        if is_test_file(&rel) {
            continue;
        }
        let lines: Vec<String> = code_lines(&text)
            .filter(|(_, l)| l.contains("Box::leak") || l.contains(".leak()"))
            .map(|(n, l)| format!("{rel}:{n}: {}", l.trim()))
            .collect();
        found.extend(lines);
    }
    report(
        "`Box::leak` / `.leak()` outside tests: own the value (`Arc`, `OnceLock`) instead",
        &found,
    );
}

#[test]
fn the_generator_names_an_api_only_in_its_policy() {
    let ceilings: BTreeMap<&str, usize> = API_WORD_OUTSIDE_POLICY.into_iter().collect();
    let mut found = Vec::new();
    for (rel, text) in sources() {
        if !rel.starts_with("generator/src/") || is_test_file(&rel) {
            continue;
        }
        if rel.starts_with("generator/src/policy/") {
            continue;
        }
        let lines: Vec<String> = code_lines(&text)
            .filter(|(_, l)| l.to_ascii_lowercase().contains("cloudflare"))
            .map(|(n, l)| format!("{rel}:{n}: {}", l.trim()))
            .collect();
        let limit = ceilings.get(rel.as_str()).copied().unwrap_or(0);
        if lines.len() > limit {
            found.extend(lines);
        }
    }
    report(
        "the generator names an API only in `generator/src/policy/` (its policy file and the registry)",
        &found,
    );
}
