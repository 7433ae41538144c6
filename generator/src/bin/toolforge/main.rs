//! `toolforge`: generate, check, fetch and pin tool crates from OpenAPI releases.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use toolforge_generator::REGISTRY;
use toolforge_generator::config::{
    ForgeConfig, PolicyKind, SchemaProfile, json_schema, sha256_hex, verify_pin,
};
use toolforge_generator::fs_out::{self, EntryKind, Replace};
use toolforge_generator::ir::Catalogue;
use toolforge_generator::{CrateLayout, OutputFile, generate_into};

mod corpus;
mod diff;
mod init;
mod skills;

// Generation is allocation-heavy (JSON trees, token streams): on the
// Cloudflare release mimalloc needs ~30% less CPU than the system allocator
// (0.48 s vs 0.68 s user) for ~25 MB more peak memory (160 vs 135 MB).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "toolforge",
    version,
    about = "Turns a pinned OpenAPI release into a Rust crate of typed MCP tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Common {
    /// The pin and options.
    #[arg(long, default_value = "forge.json")]
    config: PathBuf,
    /// Use this spec file instead of the pinned one (its sha256 is recorded, not checked).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Override the policy of forge.json.
    #[arg(long, value_parser = policy_parser())]
    policy: Option<PolicyKind>,
    /// Override `options.schema_profile` of forge.json: `strict` inlines and
    /// simplifies input schemas for strict clients (OpenAI strict, Gemini).
    #[arg(long, value_enum)]
    schema_profile: Option<ProfileArg>,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum ProfileArg {
    Full,
    Strict,
}

/// `--policy`: one of the policy registry's names
/// (`toolforge_generator::REGISTRY`).
fn policy_parser() -> impl clap::builder::TypedValueParser<Value = PolicyKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(REGISTRY.iter().map(|r| r.name))
        .try_map(|name: String| PolicyKind::from_name(&name).ok_or("not a registered policy"))
}

#[derive(Subcommand)]
enum Command {
    /// Start a project from a spec: forge.json pinned to it, the generated
    /// crate in a Cargo workspace, a README and the CI and regeneration workflows.
    Init(init::InitArgs),
    /// Generate the crate (writes only files whose content changed).
    Generate {
        #[command(flatten)]
        common: Common,
        /// Output directory (default: forge.json `output`). A directory other
        /// than the configured one gets a standalone crate.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Exit non-zero, naming the files, when the output differs from what `generate` would write.
    Check {
        #[command(flatten)]
        common: Common,
        /// Directory to compare (default: forge.json `output`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Download a URL-pinned release into the cache and verify its sha256.
    Fetch {
        /// The pin.
        #[arg(long, default_value = "forge.json")]
        config: PathBuf,
    },
    /// Summarise what changed between two releases (markdown for a pull request, plus JSON).
    Diff(diff::DiffArgs),
    /// Run the generator over a corpus of specs and write a report.
    Corpus(corpus::CorpusArgs),
    /// Re-pin forge.json to a spec file (records its sha256 and release name)
    /// and the skills pin, if any, to the skills source as it is now.
    Pin {
        /// The pin to update.
        #[arg(long, default_value = "forge.json")]
        config: PathBuf,
        /// Spec file to pin (default: the currently pinned path).
        #[arg(long)]
        spec: Option<PathBuf>,
        /// Release name to record.
        #[arg(long)]
        release: Option<String>,
        /// Published URL of the release.
        #[arg(long)]
        url: Option<String>,
    },
    /// Group the response schema mismatches a server logged (`schema_mismatch`
    /// events) by product, operation and violation, as a markdown table.
    SchemaReport {
        /// Server log files (stderr captures).
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Write the table to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the JSON Schema of forge.json (the committed `generator/forge.schema.json`).
    Schema {
        /// Write it to this file (only when its bytes change) instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    // The main thread is one of rayon's workers, so parallel stages reuse
    // the memory it freed (fresh pages cost a fault each); a failure to set
    // up the pool only means rayon's default one is used.
    let _ = rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build_global();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

struct Loaded {
    config: ForgeConfig,
    config_dir: PathBuf,
    config_path: PathBuf,
}

fn load_config(path: &Path) -> Result<Loaded> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let config = ForgeConfig::parse(&text, path)?;
    let config_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let config_dir = if config_dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        config_dir
    };
    Ok(Loaded {
        config,
        config_dir,
        config_path: path.to_path_buf(),
    })
}

fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(100));
    pb
}

/// Reads the spec (pinned, verified; or the `--spec` override) and runs the
/// pipeline, handing each output file to `sink` (for the output directory)
/// as soon as it is complete. `before_output` sees the output directory
/// before the generator runs (to refuse one that is not safe to write).
fn run_pipeline(
    common: &Common,
    out: Option<&Path>,
    before_output: &dyn Fn(&Path) -> Result<()>,
    sink: &mut (dyn FnMut(&Path, OutputFile) + Send),
) -> Result<(Loaded, PathBuf, Catalogue, f64)> {
    let mut loaded = load_config(&common.config)?;
    if let Some(p) = common.policy {
        loaded.config.policy = p;
    }
    if let Some(p) = common.schema_profile {
        loaded.config.options.schema_profile = match p {
            ProfileArg::Full => SchemaProfile::Full,
            ProfileArg::Strict => SchemaProfile::Strict,
        };
    }
    let start = Instant::now();
    let (spec_path, bytes) = match &common.spec {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            loaded.config.spec.sha256 = sha256_hex(&bytes);
            loaded.config.spec.release = format!(
                "unpinned ({})",
                p.file_name()
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default()
            );
            loaded.config.spec.url = None;
            loaded.config.spec.path = p.clone();
            (p.clone(), bytes)
        }
        None => {
            let p = loaded.config_dir.join(&loaded.config.spec.path);
            let bytes = std::fs::read(&p).with_context(|| {
                if loaded.config.spec.url.is_some() {
                    format!(
                        "reading {} (run `toolforge fetch` first, or pass --spec FILE)",
                        p.display()
                    )
                } else {
                    format!("reading {}", p.display())
                }
            })?;
            verify_pin(&bytes, &loaded.config.spec, &p)?;
            (p, bytes)
        }
    };
    let configured_out = loaded.config_dir.join(&loaded.config.output);
    let out_dir = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| configured_out.clone());
    let standalone = out.is_some_and(|o| normalize(o) != normalize(&configured_out));
    let runtime_path = loaded.config.krate.runtime_path.as_ref().map(|rel| {
        if standalone {
            let rt = configured_out.join(rel);
            std::fs::canonicalize(&rt)
                .unwrap_or(rt)
                .to_string_lossy()
                .into_owned()
        } else {
            rel.clone()
        }
    });
    let layout = CrateLayout {
        runtime_path,
        standalone,
    };
    before_output(&out_dir)?;
    let pb = spinner("generating");
    let file_label = spec_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let skill_set = skills::load(loaded.config.skills.as_ref(), &loaded.config_dir)?;
    let result = generate_into(
        &bytes,
        &file_label,
        &loaded.config,
        &layout,
        &skill_set,
        &mut |f| sink(&out_dir, f),
    );
    pb.finish_and_clear();
    let catalogue = result?;
    Ok((loaded, out_dir, catalogue, start.elapsed().as_secs_f64()))
}

/// Writes `f` under `dir` unless the file already holds these bytes;
/// `Ok(true)` when it wrote. Never through a symbolic link, and an existing
/// file is replaced only as `replace` allows.
fn write_if_changed(dir: &Path, f: &OutputFile, replace: Replace) -> Result<bool> {
    Ok(fs_out::write_file(
        dir,
        Path::new(&f.path),
        &f.contents,
        replace,
    )?)
}

/// Refuses an output directory holding a link or a user's file where the
/// generator writes or deletes, before anything is written.
fn check_output_dir(out: &Path) -> Result<()> {
    Ok(fs_out::check_output_dir(out)?)
}

fn normalize(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.components().collect())
}

/// Entries of the managed directories of `out` that this generation did
/// not write: generated files a previous one left (stale), and links and
/// user files (which are never deleted).
fn unwritten_entries(
    out: &Path,
    written: &BTreeSet<String>,
) -> fs_out::Result<Vec<fs_out::ManagedEntry>> {
    let mut found = fs_out::managed_entries(out)?;
    found.retain(|e| !written.contains(&e.rel));
    Ok(found)
}

/// One function per subcommand.
fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Generate { common, out } => generate(common, out),
        Command::Check { common, out } => check(common, out),
        Command::Fetch { config } => fetch(config),
        Command::Schema { out } => schema(out),
        Command::SchemaReport { logs, out } => schema_report(logs, out),
        Command::Init(args) => init::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Corpus(args) => corpus::run(args),
        Command::Pin {
            config,
            spec,
            release,
            url,
        } => pin(config, spec, release, url),
    }
}

/// `toolforge generate`: writes the files whose content changed and removes
/// the stale generated ones.
fn generate(common: Common, out: Option<PathBuf>) -> Result<ExitCode> {
    let mut written = BTreeSet::new();
    let mut changed = 0;
    let mut failure: Option<anyhow::Error> = None;
    let (_loaded, out_dir, cat, secs) =
        run_pipeline(&common, out.as_deref(), &check_output_dir, &mut |dir, f| {
            written.insert(f.path.clone());
            if failure.is_some() {
                return;
            }
            match write_if_changed(dir, &f, Replace::Generated) {
                Ok(true) => changed += 1,
                Ok(false) => {}
                Err(e) => failure = Some(e),
            }
        })?;
    if let Some(e) = failure {
        return Err(e);
    }
    for stale in unwritten_entries(&out_dir, &written)? {
        // Only generated files: a link or a user's file appearing
        // since the check is refused by name, not removed.
        fs_out::remove_generated(&out_dir, Path::new(&stale.rel))?;
        changed += 1;
    }
    // stderr: the README's quick start chains `generate && <server>
    // --transport stdio`, and an MCP client reads stdout as JSON-RPC.
    eprintln!(
        "toolforge: {} tools, {} skipped, {} products in {:.2}s → {} ({} files changed)",
        cat.tools().count(),
        cat.skipped.len(),
        cat.products.len(),
        secs,
        out_dir.display(),
        changed
    );
    for w in &cat.profile.security_warnings {
        eprintln!("warning: {w}");
    }
    // The process exits next: freeing the catalogue one allocation
    // at a time would only delay that exit.
    std::mem::forget(cat);
    Ok(ExitCode::SUCCESS)
}

/// `toolforge check`: names every file that differs from what `generate`
/// would write, and exits 1 if any does.
fn check(common: Common, out: Option<PathBuf>) -> Result<ExitCode> {
    let mut written = BTreeSet::new();
    let mut differing = Vec::new();
    let (_loaded, out_dir, _cat, _) =
        run_pipeline(&common, out.as_deref(), &|_| Ok(()), &mut |dir, f| {
            // A link is reported, never read through.
            match fs_out::read_file(dir, Path::new(&f.path)) {
                Ok(Some(bytes)) if bytes == f.contents => {}
                Ok(Some(_)) => differing.push(format!("changed: {}", f.path)),
                Ok(None) => differing.push(format!("missing: {}", f.path)),
                Err(fs_out::OutputError::Symlink { link }) => {
                    differing.push(format!("symlink: {}", link.display()));
                }
                Err(e) => differing.push(format!("unreadable: {e}")),
            }
            written.insert(f.path);
        })?;
    differing.sort();
    differing.dedup();
    let unwritten = match unwritten_entries(&out_dir, &written) {
        Err(fs_out::OutputError::Symlink { link }) => {
            // The files' reads may have named this link already.
            let line = format!("symlink: {}", link.display());
            if !differing.contains(&line) {
                differing.push(line);
            }
            Vec::new()
        }
        other => other?,
    };
    for e in unwritten {
        let label = match e.kind {
            EntryKind::Generated => "stale:  ",
            EntryKind::Foreign => "foreign:",
            EntryKind::Symlink => "symlink:",
        };
        differing.push(format!("{label} {}", e.path.display()));
    }
    if differing.is_empty() {
        println!(
            "toolforge check: {} is up to date ({} files)",
            out_dir.display(),
            written.len()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "toolforge check: {} differs from what `toolforge generate` would write:",
            out_dir.display()
        );
        for d in &differing {
            eprintln!("  {d}");
        }
        eprintln!("run `toolforge generate` and commit the result");
        Ok(ExitCode::from(1))
    }
}

/// `toolforge fetch`: downloads a URL-pinned release (and skills) and
/// verifies its sha256.
fn fetch(config: PathBuf) -> Result<ExitCode> {
    let loaded = load_config(&config)?;
    if let Some(pin) = &loaded.config.skills {
        skills::fetch(pin, &loaded.config_dir)?;
    }
    let Some(url) = loaded.config.spec.url.clone() else {
        if loaded
            .config
            .skills
            .as_ref()
            .is_some_and(|p| p.url.is_some())
        {
            return Ok(ExitCode::SUCCESS);
        }
        bail!(
            "{}: the pin names a local file ({}); there is nothing to fetch",
            config.display(),
            loaded.config.spec.path.display()
        );
    };
    let dest = loaded.config_dir.join(&loaded.config.spec.path);
    if let Ok(bytes) = std::fs::read(&dest)
        && verify_pin(&bytes, &loaded.config.spec, &dest).is_ok()
    {
        println!(
            "toolforge fetch: {} already present and verified",
            dest.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let tmp = dest.with_extension("download");
    // curl writes through a link at its output path.
    fs_out::check_named_no_link(&dest)?;
    fs_out::check_named_no_link(&tmp)?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let status = std::process::Command::new("curl")
        .args([
            "--fail",
            "--silent",
            "--show-error",
            "--location",
            "--max-time",
            "600",
            "--proto",
            "=https",
            "-o",
        ])
        .arg(&tmp)
        .arg(&url)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(_) | Err(_) => {
            let _ = std::fs::remove_file(&tmp);
            bail!(
                "could not download {url} (offline?). Download it by other means and run `toolforge generate --spec FILE`, or place it at {}",
                dest.display()
            );
        }
    }
    let bytes = std::fs::read(&tmp)?;
    if let Err(e) = verify_pin(&bytes, &loaded.config.spec, &dest) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    std::fs::rename(&tmp, &dest)?;
    println!(
        "toolforge fetch: {} verified ({})",
        dest.display(),
        loaded.config.spec.sha256
    );
    Ok(ExitCode::SUCCESS)
}

/// `toolforge schema`: the JSON Schema of forge.json.
fn schema(out: Option<PathBuf>) -> Result<ExitCode> {
    let text = json_schema();
    match out {
        None => print!("{text}"),
        Some(path) => {
            fs_out::write_named_file(&path, text.as_bytes())?;
            println!("toolforge schema: {} is up to date", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolforge schema-report`: the logged schema mismatches as a markdown table.
fn schema_report(logs: Vec<PathBuf>, out: Option<PathBuf>) -> Result<ExitCode> {
    let mut collected = toolforge_generator::commands::schema_report::Collected::default();
    for path in &logs {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        collected.add_log(&String::from_utf8_lossy(&bytes));
    }
    let report = toolforge_generator::commands::schema_report::render(&collected, logs.len());
    match out {
        Some(path) => {
            fs_out::write_named_file(&path, report.as_bytes())?;
        }
        None => print!("{report}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolforge pin`: re-pins forge.json to a spec file (and the skills pin).
fn pin(
    config: PathBuf,
    spec: Option<PathBuf>,
    release: Option<String>,
    url: Option<String>,
) -> Result<ExitCode> {
    let mut loaded = load_config(&config)?;
    let path = spec
        .clone()
        .unwrap_or_else(|| loaded.config_dir.join(&loaded.config.spec.path));
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    loaded.config.spec.sha256 = sha256_hex(&bytes);
    if spec.is_some() {
        // Record the new file itself, relative to forge.json when it lives below it.
        let base = normalize(&loaded.config_dir);
        let abs = normalize(&path);
        loaded.config.spec.path = abs
            .strip_prefix(&base)
            .map_or(abs.clone(), Path::to_path_buf);
    }
    if let Some(r) = release {
        loaded.config.spec.release = r;
    }
    if url.is_some() {
        loaded.config.spec.url = url;
    }
    if let Some(pin) = &loaded.config.skills {
        let digest = skills::digest(pin, &loaded.config_dir)?;
        if let Some(pin) = loaded.config.skills.as_mut() {
            pin.sha256 = digest;
        }
    }
    let text = serde_json::to_string_pretty(&loaded.config)? + "\n";
    fs_out::write_named_file(&loaded.config_path, text.as_bytes())?;
    println!(
        "toolforge pin: {} → sha256 {}",
        loaded.config_path.display(),
        loaded.config.spec.sha256
    );
    Ok(ExitCode::SUCCESS)
}
