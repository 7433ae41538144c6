#![allow(clippy::panic)]
//! The module graph of the generator and the runtime, read from their
//! `crate::` paths: a folder of `src/` (with the file of the same name, so
//! `naming.rs` and `naming/` are one folder) is a node, and a file naming
//! `crate::x` draws an arrow from its folder to `x`. No import circle may
//! span two folders: a circle inside one folder is that folder's business,
//! but one across folders means neither can be read, moved or tested
//! without the other. Neither crate has one. Test code (unit test files, code after `#[cfg(test)]`) is left
//! out, as the shipped binaries leave it out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The folder of `rel` (a path under `src/`): its first component, without
/// `.rs`; `lib.rs` and `main.rs` are the crate root.
fn folder(rel: &str) -> String {
    let first = rel.split('/').next().unwrap_or(rel);
    let stem = first.strip_suffix(".rs").unwrap_or(first);
    match stem {
        "lib" | "main" => "crate".to_owned(),
        other => other.to_owned(),
    }
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name == "testing.rs" || name.ends_with("_tests.rs")
}

/// The code of a file: the lines before its first `#[cfg(test)]`, without
/// line comments.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every `crate::` path in `code`, braces of a
/// grouped `use crate::{a, b::c}` opened one level.
fn targets(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        // `toolforge_runtime::…` or `$crate::` are not this crate's paths.
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(item.trim()).to_owned());
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            found.insert(ident(item.trim()).to_owned());
        } else {
            found.insert(ident(rest).to_owned());
        }
    }
    found.retain(|t| !t.is_empty() && t != "self");
    found
}

/// Arrows between folders of `krate/src`, with the files that draw them.
fn arrows(krate: &str) -> BTreeMap<(String, String), BTreeSet<String>> {
    let src = root().join(krate).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 20,
        "{krate}: found only {} files",
        files.len()
    );
    let folders: BTreeSet<String> = files
        .iter()
        .filter_map(|p| p.strip_prefix(&src).ok())
        .map(|p| folder(&p.to_string_lossy().replace('\\', "/")))
        .collect();
    let mut arrows: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        // A binary of its own: it names the library by its crate name.
        if rel.starts_with("bin/") || is_test_file(&rel) {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let from = folder(&rel);
        for to in targets(&code(&text)) {
            if to != from && folders.contains(&to) {
                arrows
                    .entry((from.clone(), to))
                    .or_default()
                    .insert(format!("{krate}/src/{rel}"));
            }
        }
    }
    arrows
}

/// Strongly connected components of more than one folder (Tarjan).
fn circles(arrows: &BTreeMap<(String, String), BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        next.entry(from).or_default().push(to);
        next.entry(to).or_default();
    }
    struct State<'a> {
        next: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in s.next.get(v).map(Vec::as_slice).unwrap_or(&[]) {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut state = State {
        next: &next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in next.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.out.sort();
    state.out
}

/// Every circle of `krate` across folders, with the arrows that close it.
fn cross_folder_circles(krate: &str) -> Vec<String> {
    let arrows = arrows(krate);
    circles(&arrows)
        .into_iter()
        .map(|c| {
            let ties: Vec<String> = arrows
                .iter()
                .filter(|((from, to), _)| c.contains(from) && c.contains(to))
                .map(|((from, to), files)| {
                    let files: Vec<&str> = files.iter().map(String::as_str).collect();
                    format!("    {from} -> {to} ({})", files.join(", "))
                })
                .collect();
            format!("  {{{}}}:\n{}", c.join(", "), ties.join("\n"))
        })
        .collect()
}

#[test]
fn the_reader_sees_crate_paths_as_arrows() {
    assert_eq!(
        targets(
            "use crate::ir::{A, B};\nuse crate::{config::X, emit, self};\nfoo($crate::x); toolforge_runtime::crate_x;\nlet _ = crate::naming::snake(a);"
        ),
        ["config", "emit", "ir", "naming"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
    assert_eq!(folder("naming.rs"), "naming");
    assert_eq!(folder("emit/resolved/writer.rs"), "emit");
    assert_eq!(folder("lib.rs"), "crate");
    let arrows: BTreeMap<(String, String), BTreeSet<String>> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
            .into_iter()
            .map(|(f, t)| ((f.to_owned(), t.to_owned()), BTreeSet::new()))
            .collect();
    assert_eq!(circles(&arrows), vec![vec!["a", "b", "c"]]);
}

#[test]
fn no_import_circle_spans_two_generator_folders() {
    let found = cross_folder_circles("generator");
    assert!(
        found.is_empty(),
        "import circles across generator/src folders:\n{}",
        found.join("\n")
    );
}

/// The policy's decisions reach the emitters as IR data (merged paths as
/// `ir::MergedPaths`), so an emitter never names the policy.
#[test]
fn emit_never_reads_the_policy() {
    let arrows = arrows("generator");
    let to_policy = arrows.get(&("emit".to_owned(), "policy".to_owned()));
    assert!(
        to_policy.is_none(),
        "emit/ names crate::policy in {to_policy:?}"
    );
}

/// The generator's pipeline stages, in order: a stage reads those before
/// it (through their output types), never one after it. The emitters'
/// TypeScript declarations are their own pass over the IR
/// (`emit::typescript::OutputDeclarations`), not called by the lowering.
const GENERATOR_STAGES: &[&str] = &["load", "schema", "policy", "lower", "emit"];

#[test]
fn no_generator_stage_names_a_later_one() {
    let stage = |folder: &str| GENERATOR_STAGES.iter().position(|s| *s == folder);
    let back: Vec<String> = arrows("generator")
        .into_iter()
        .filter(|((from, to), _)| matches!((stage(from), stage(to)), (Some(f), Some(t)) if f < t))
        .map(|((from, to), files)| format!("  {from} -> {to} ({files:?})"))
        .collect();
    assert!(
        back.is_empty(),
        "a generator stage names a later one:\n{}",
        back.join("\n")
    );
}

/// The generator's stage modules (and the helpers only stages read) are
/// crate-private: `lib.rs` declares them through its `stages!` macro,
/// public only under the `oracles` test feature, and never as `pub mod`.
#[test]
fn generator_stages_are_crate_private() {
    let lib = root().join("generator/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    let private = [
        "emit",
        "load",
        "lower",
        "normalise",
        "policy",
        "refs",
        "schema",
        "security",
        "servers",
    ];
    let public: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';'))
        .filter(|name| private.contains(name))
        .collect();
    assert!(
        public.is_empty(),
        "generator/src/lib.rs: pub mod {public:?}"
    );
    let stages = text
        .split("stages! {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .unwrap_or_else(|| panic!("generator/src/lib.rs has no stages! block"));
    for name in private.iter().filter(|n| **n != "lower") {
        assert!(
            stages.contains(&format!("{name};")),
            "{name} is not declared by stages!"
        );
    }
}

#[test]
fn no_import_circle_spans_two_runtime_folders() {
    let found = cross_folder_circles("runtime");
    assert!(
        found.is_empty(),
        "import circles across runtime/src folders:\n{}",
        found.join("\n")
    );
}

/// The runtime's serving layers, top down: the server (transports, the
/// listing cache, OAuth's front) drives Code Mode, which calls tools
/// through the direct pipeline; a layer names those below it, never one
/// above (Code Mode reached back into `server/` for `Direct` and the rmcp
/// tool form until issue 41 item 3).
const RUNTIME_LAYERS: &[&str] = &["server", "codemode", "direct", "listing"];

#[test]
fn no_runtime_layer_names_a_higher_one() {
    let layer = |folder: &str| RUNTIME_LAYERS.iter().position(|s| *s == folder);
    let up: Vec<String> = arrows("runtime")
        .into_iter()
        .filter(|((from, to), _)| matches!((layer(from), layer(to)), (Some(f), Some(t)) if f > t))
        .map(|((from, to), files)| format!("  {from} -> {to} ({files:?})"))
        .collect();
    assert!(
        up.is_empty(),
        "a runtime layer names a higher one:\n{}",
        up.join("\n")
    );
}

/// `profile/` is data: the profile's types, which the catalogue holds. What
/// reads them for a tool or a call (paging in `pages/`, the account and
/// identity caches in `direct/`, the server URL in `config/`) lives above
/// it, so `profile/` names no runtime folder but `security`.
#[test]
fn the_runtime_profile_holds_data_only() {
    let named: Vec<String> = arrows("runtime")
        .into_iter()
        .filter(|((from, to), _)| from == "profile" && to != "security")
        .map(|((_, to), files)| format!("  profile -> {to} ({files:?})"))
        .collect();
    assert!(
        named.is_empty(),
        "profile/ names other runtime folders:\n{}",
        named.join("\n")
    );
}

/// The shared model (`model/`, `toolforge-model`) sits below both sides:
/// it names neither the generator nor the runtime, in its manifest or its
/// code, so either can use it without pulling in the other.
#[test]
fn the_shared_model_depends_on_neither_side() {
    let model = root().join("model");
    let manifest = std::fs::read_to_string(model.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("model/Cargo.toml: {e}"));
    let mut files = Vec::new();
    rust_files(&model.join("src"), &mut files);
    assert!(!files.is_empty(), "model/src has no sources");
    let mut found: Vec<String> = ["toolforge-runtime", "toolforge-generator"]
        .into_iter()
        .filter(|c| manifest.contains(c))
        .map(|c| format!("model/Cargo.toml names {c}"))
        .collect();
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for c in ["toolforge_runtime", "toolforge_generator"] {
            if code(&text).contains(c) {
                found.push(format!("{} names {c}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The enums both sides used to mirror are defined once, in the shared
/// model: neither the generator nor the runtime declares its own again.
#[test]
fn the_shared_enums_are_defined_only_in_the_model() {
    const SHARED: [&str; 9] = [
        "Method",
        "HttpMethod",
        "ParamLocation",
        "Location",
        "ParamStyle",
        "Style",
        "BodyKind",
        "KeyLocation",
        "SchemeKind",
    ];
    let mut found = Vec::new();
    for krate in ["generator", "runtime"] {
        let mut files = Vec::new();
        rust_files(&root().join(krate).join("src"), &mut files);
        for path in files {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for line in code(&text).lines() {
                let Some(rest) = line.trim_start().strip_prefix("pub enum ") else {
                    continue;
                };
                let name = ident(rest);
                if SHARED.contains(&name) {
                    found.push(format!("{}: enum {name}", path.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "declared outside model/ (use toolforge_model's):\n{}",
        found.join("\n")
    );
}

/// The `strict` schema profile has one implementation, in the shared
/// model: the generator (`schema::strict`) and the runtime
/// (`schema_profile::strict`) re-export it and define no rewrite of their own.
#[test]
fn the_strict_profile_is_defined_only_in_the_model() {
    let mut found = Vec::new();
    for (krate, module) in [
        ("generator", "schema/mod.rs"),
        ("runtime", "schema_profile.rs"),
    ] {
        let src = root().join(krate).join("src");
        let text = std::fs::read_to_string(src.join(module))
            .unwrap_or_else(|e| panic!("{krate}/src/{module}: {e}"));
        if !code(&text).contains("pub use toolforge_model::strict;") {
            found.push(format!(
                "{krate}/src/{module} does not re-export toolforge_model::strict"
            ));
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for path in files {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if code(&text).contains("fn strict_input_schema(") {
                found.push(format!("{} defines strict_input_schema", path.display()));
            }
        }
    }
    let model = std::fs::read_to_string(root().join("model/src/strict.rs"))
        .unwrap_or_else(|e| panic!("model/src/strict.rs: {e}"));
    assert!(model.contains("pub fn strict_input_schema("));
    assert!(found.is_empty(), "{}", found.join("\n"));
}
