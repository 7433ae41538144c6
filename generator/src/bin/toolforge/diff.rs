//! `toolforge diff`: what changed between two releases, as a pull-request
//! body (markdown) and a JSON report; optionally extends forge.json's name
//! lock so renamed operations keep their old names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use toolforge_generator::commands::diff::lock::{Stabilised, lock_entries, stabilise};
use toolforge_generator::commands::diff::{
    DiffOptions, DiffReport, Input, LockEntry, Release, diff, load_document_release,
    read_input_with, render_markdown,
};
use toolforge_generator::config::{ForgeConfig, PolicyKind};
use toolforge_generator::fs_out;

/// Regenerations `--write-lock` may run before it gives up on a cascade.
const MAX_LOCK_ROUNDS: usize = 8;

/// Arguments of `toolforge diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// Old release: an OpenAPI spec (JSON or YAML) or a generated `tools.json`.
    #[arg(long)]
    old: PathBuf,
    /// New release: an OpenAPI spec (JSON or YAML) or a generated `tools.json`.
    #[arg(long)]
    new: PathBuf,
    /// forge.json whose policy and options (name lock, limits) apply to spec
    /// inputs; its pin is not consulted. Default: ./forge.json when present,
    /// else the generic policy.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override the policy.
    #[arg(long, value_parser = super::policy_parser())]
    policy: Option<PolicyKind>,
    /// Write the markdown summary here (else it goes to stdout).
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Warn when more than this share of the old release's tools is removed.
    #[arg(long, default_value_t = 0.05)]
    max_removed_share: f64,
    /// Warn when tools present in both releases lose more than this share of
    /// their permission entries.
    #[arg(long, default_value_t = 0.10)]
    max_permission_loss: f64,
    /// Exit 1 when a warning is raised.
    #[arg(long)]
    fail_on_warning: bool,
    /// At most this many entries per markdown list (the JSON has them all).
    #[arg(long, default_value_t = 40)]
    markdown_limit: usize,
    /// Label of the old release in the summary (default: its file name).
    #[arg(long)]
    old_label: Option<String>,
    /// Label of the new release in the summary (default: its file name).
    #[arg(long)]
    new_label: Option<String>,
    /// Add forge.json `options.name_lock` entries that keep the old names of
    /// renamed operations, and report on the new release generated with them.
    #[arg(long)]
    write_lock: bool,
}

fn file_label(path: &Path, explicit: Option<&String>) -> String {
    explicit.cloned().unwrap_or_else(|| {
        path.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string())
    })
}

/// The configuration for spec inputs and the file it came from, if any.
fn config_for(args: &DiffArgs) -> Result<(ForgeConfig, Option<PathBuf>)> {
    let path = match &args.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("forge.json")).filter(|p| p.is_file()),
    };
    let mut config = match &path {
        Some(p) => super::load_config(p)?.config,
        None => ForgeConfig::generic("api", Path::new(""), ""),
    };
    if let Some(p) = args.policy {
        config.policy = p;
    }
    Ok((config, path))
}

fn read(path: &Path, label: &str) -> Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    // A catalogue's schema texts are in a file beside it.
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut input = read_input_with(&bytes, label, &mut |name| {
        std::fs::read(dir.join(name)).ok()
    })?;
    if let Input::Catalogue(release) = &mut input {
        release.label = label.to_string();
    }
    Ok(input)
}

fn release(input: Input, config: &ForgeConfig, label: &str) -> Result<Release> {
    Ok(match input {
        Input::Catalogue(r) => r,
        Input::Spec(doc) => load_document_release(&doc, config, label)?,
    })
}

/// Adds `added` to the name lock of the forge.json at `path`, leaving every
/// other field as the file has it.
fn write_lock(path: &Path, added: &[LockEntry]) -> Result<()> {
    let mut pristine = super::load_config(path)?.config;
    for e in added {
        pristine
            .options
            .name_lock
            .entry(e.key.clone())
            .or_insert_with(|| e.name.clone());
    }
    let text = serde_json::to_string_pretty(&pristine)? + "\n";
    fs_out::write_named_file(path, text.as_bytes())?;
    Ok(())
}

fn check_share(name: &str, v: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&v) {
        bail!("--{name} must be a share between 0 and 1 (e.g. 0.05 for 5%), got {v}");
    }
    Ok(())
}

/// Runs `toolforge diff`.
pub fn run(args: DiffArgs) -> Result<ExitCode> {
    check_share("max-removed-share", args.max_removed_share)?;
    check_share("max-permission-loss", args.max_permission_loss)?;
    let options = DiffOptions {
        max_removed_share: args.max_removed_share,
        max_permission_loss: args.max_permission_loss,
    };
    let (config, config_path) = config_for(&args)?;
    let old_label = file_label(&args.old, args.old_label.as_ref());
    let new_label = file_label(&args.new, args.new_label.as_ref());
    let old = release(read(&args.old, &old_label)?, &config, &old_label)?;
    let new_input = read(&args.new, &new_label)?;
    let report = if args.write_lock {
        let Some(path) = &config_path else {
            bail!("--write-lock needs a forge.json (pass --config FILE)");
        };
        let (new, added) = match new_input {
            Input::Spec(doc) => {
                let Stabilised { release, added, .. } =
                    stabilise(&old, &doc, &config, &new_label, MAX_LOCK_ROUNDS)?;
                (release, added)
            }
            Input::Catalogue(new) => {
                let existing: &BTreeMap<String, String> = &config.options.name_lock;
                let added = lock_entries(&diff(&old, &new, &options))
                    .into_iter()
                    .filter(|e| !existing.contains_key(&e.key))
                    .collect();
                eprintln!(
                    "toolforge diff: the new release is a catalogue; regenerate it to apply the lock"
                );
                (new, added)
            }
        };
        if !added.is_empty() {
            write_lock(path, &added)?;
            eprintln!(
                "toolforge diff: {} name-lock entries added to {}",
                added.len(),
                path.display()
            );
        }
        let mut report = diff(&old, &new, &options);
        report.name_lock_added = added;
        report
    } else {
        let new = release(new_input, &config, &new_label)?;
        diff(&old, &new, &options)
    };
    emit(&args, &report)
}

fn summary_line(r: &DiffReport) -> String {
    let s = &r.summary;
    format!(
        "toolforge diff: {} → {}: {} tools added, {} removed, {} renamed, {} changed; name stability {:.2}% ({} of {} operations in both keep their name); {} warning(s)",
        r.old.label,
        r.new.label,
        s.tools_added,
        s.tools_removed,
        s.tools_renamed,
        s.tools_changed,
        r.stability.share * 100.0,
        r.stability.kept,
        r.stability.common,
        r.warnings.len()
    )
}

fn emit(args: &DiffArgs, report: &DiffReport) -> Result<ExitCode> {
    let markdown = render_markdown(report, args.markdown_limit);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(report)? + "\n";
        fs_out::write_named_file(path, text.as_bytes())?;
    }
    match &args.markdown {
        Some(path) => {
            fs_out::write_named_file(path, markdown.as_bytes())?;
            println!("{}", summary_line(report));
        }
        None => {
            print!("{markdown}");
            eprintln!("{}", summary_line(report));
        }
    }
    for w in &report.warnings {
        eprintln!("warning: {}", w.message);
    }
    if args.fail_on_warning && !report.warnings.is_empty() {
        Ok(ExitCode::from(1))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}
