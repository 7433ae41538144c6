//! `toolforge`: generate, check, fetch and pin tool crates from OpenAPI releases.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use toolforge_generator::config::{ForgeConfig, PolicyKind, sha256_hex, verify_pin};
use toolforge_generator::{CrateLayout, Generated, generate};

mod corpus;
mod diff;

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
    #[arg(long, value_enum)]
    policy: Option<PolicyArg>,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum PolicyArg {
    Cloudflare,
    Generic,
}

#[derive(Subcommand)]
enum Command {
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
    /// Re-pin forge.json to a spec file (records its sha256 and release name).
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
}

fn main() -> ExitCode {
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

/// Reads the spec (pinned, verified; or the `--spec` override) and runs the pipeline.
fn run_pipeline(common: &Common, out: Option<&Path>) -> Result<(Loaded, PathBuf, Generated, f64)> {
    let mut loaded = load_config(&common.config)?;
    if let Some(p) = common.policy {
        loaded.config.policy = match p {
            PolicyArg::Cloudflare => PolicyKind::Cloudflare,
            PolicyArg::Generic => PolicyKind::Generic,
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
    let runtime_path = if standalone {
        let rt = configured_out.join(&loaded.config.krate.runtime_path);
        std::fs::canonicalize(&rt)
            .unwrap_or(rt)
            .to_string_lossy()
            .into_owned()
    } else {
        loaded.config.krate.runtime_path.clone()
    };
    let layout = CrateLayout {
        runtime_path,
        standalone,
    };
    let pb = spinner("generating");
    let file_label = spec_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let result = generate(&bytes, &file_label, &loaded.config, &layout);
    pb.finish_and_clear();
    let generated = result?;
    Ok((loaded, out_dir, generated, start.elapsed().as_secs_f64()))
}

fn normalize(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.components().collect())
}

/// Files under `out` that a previous generation wrote and this one does not.
fn stale_files(out: &Path, generated: &Generated) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for dir in ["src", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(out.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let rel = format!("{dir}/{}", e.file_name().to_string_lossy());
            if !generated.files.iter().any(|f| f.path == rel) {
                stale.push(e.path());
            }
        }
    }
    stale.sort();
    stale
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Generate { common, out } => {
            let (_loaded, out_dir, generated, secs) = run_pipeline(&common, out.as_deref())?;
            let mut changed = 0;
            for f in &generated.files {
                let path = out_dir.join(&f.path);
                if std::fs::read(&path).ok().as_deref() == Some(&f.contents[..]) {
                    continue;
                }
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                std::fs::write(&path, &f.contents)
                    .with_context(|| format!("writing {}", path.display()))?;
                changed += 1;
            }
            for stale in stale_files(&out_dir, &generated) {
                std::fs::remove_file(&stale)
                    .with_context(|| format!("removing {}", stale.display()))?;
                changed += 1;
            }
            let cat = &generated.catalogue;
            println!(
                "toolforge: {} tools, {} skipped, {} products in {:.2}s → {} ({} files changed)",
                cat.tools().count(),
                cat.skipped.len(),
                cat.products.len(),
                secs,
                out_dir.display(),
                changed
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { common, out } => {
            let (_loaded, out_dir, generated, _) = run_pipeline(&common, out.as_deref())?;
            let mut differing = Vec::new();
            for f in &generated.files {
                match std::fs::read(out_dir.join(&f.path)) {
                    Ok(bytes) if bytes == f.contents => {}
                    Ok(_) => differing.push(format!("changed: {}", f.path)),
                    Err(_) => differing.push(format!("missing: {}", f.path)),
                }
            }
            for stale in stale_files(&out_dir, &generated) {
                differing.push(format!("stale:   {}", stale.display()));
            }
            if differing.is_empty() {
                println!(
                    "toolforge check: {} is up to date ({} files)",
                    out_dir.display(),
                    generated.files.len()
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
        Command::Fetch { config } => {
            let loaded = load_config(&config)?;
            let Some(url) = loaded.config.spec.url.clone() else {
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
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let tmp = dest.with_extension("download");
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
        Command::Diff(args) => diff::run(args),
        Command::Corpus(args) => corpus::run(args),
        Command::Pin {
            config,
            spec,
            release,
            url,
        } => {
            let mut loaded = load_config(&config)?;
            let path = spec.unwrap_or_else(|| loaded.config_dir.join(&loaded.config.spec.path));
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            loaded.config.spec.sha256 = sha256_hex(&bytes);
            if let Some(r) = release {
                loaded.config.spec.release = r;
            }
            if url.is_some() {
                loaded.config.spec.url = url;
            }
            let text = serde_json::to_string_pretty(&loaded.config)? + "\n";
            std::fs::write(&loaded.config_path, text)?;
            println!(
                "toolforge pin: {} → sha256 {}",
                loaded.config_path.display(),
                loaded.config.spec.sha256
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
