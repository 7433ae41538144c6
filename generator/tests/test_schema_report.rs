//! `toolforge schema-report`: the mismatch events of two server logs
//! (with noise and one truncated event line) grouped by product →
//! operation → violation; the markdown table is a golden snapshot, and the
//! command writes the same table.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use toolforge_generator::commands::schema_report::{Collected, render};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema-report")
}

#[test]
fn report_groups_events_into_a_golden_table() {
    let mut collected = Collected::default();
    for name in ["server-a.log", "server-b.log"] {
        collected.add_log(&std::fs::read_to_string(fixtures().join(name)).unwrap());
    }
    assert_eq!((collected.events.len(), collected.unreadable), (6, 1));
    let report = render(&collected, 2);
    insta::assert_snapshot!("schema_report", report);

    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("report.md");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_toolforge"))
        .arg("schema-report")
        .arg(fixtures().join("server-a.log"))
        .arg(fixtures().join("server-b.log"))
        .arg("--out")
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), report);
}

#[test]
fn no_events_say_so() {
    let mut collected = Collected::default();
    collected.add_log("INFO nothing here\n");
    assert!(render(&collected, 1).contains("No mismatches."));
}
