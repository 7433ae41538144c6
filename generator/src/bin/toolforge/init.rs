//! `toolforge init`: a new project around one spec, one command from a server.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use toolforge_generator::commands::init::{
    InitOptions, OUTPUT_DIR, SPECS_DIR, project_files, validate_name, validate_spec_file,
};
use toolforge_generator::config::{PolicyKind, sha256_hex};

use toolforge_generator::fs_out::{self, Replace};

use crate::{Common, check_output_dir, policy_parser, run_pipeline, write_if_changed};

/// Arguments of `toolforge init`.
#[derive(clap::Args)]
pub struct InitArgs {
    /// The OpenAPI 3.x spec (JSON or YAML), copied into DIR/specs/ as it is.
    #[arg(long)]
    spec: PathBuf,
    /// Project name: lower-case letters, digits and `-` (`<name>-tools` is
    /// the crate, `<name>-mcp` the binary).
    #[arg(long)]
    name: String,
    /// The API policy.
    #[arg(long, value_parser = policy_parser(), default_value = "generic")]
    policy: PolicyKind,
    /// Build against this local `toolforge-runtime` crate (a path override
    /// beside the version; for local development and toolforge's tests).
    #[arg(long)]
    runtime_path: Option<PathBuf>,
    /// Write into a non-empty DIR (files init writes are replaced; others kept).
    #[arg(long)]
    force: bool,
    /// The project directory (created when missing).
    #[arg(default_value = ".")]
    dir: PathBuf,
}

/// Runs `toolforge init`.
pub fn run(args: InitArgs) -> Result<ExitCode> {
    validate_name(&args.name)?;
    let spec_file = args
        .spec
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .with_context(|| format!("--spec {}: not a file name", args.spec.display()))?;
    validate_spec_file(&spec_file)?;
    let bytes =
        std::fs::read(&args.spec).with_context(|| format!("reading {}", args.spec.display()))?;
    let runtime_path = args.runtime_path.as_deref().map(runtime_dir).transpose()?;
    if args.dir.exists() {
        let mut entries = std::fs::read_dir(&args.dir)
            .with_context(|| format!("reading {}", args.dir.display()))?;
        if entries.next().is_some() && !args.force {
            bail!(
                "{} is not empty: choose an empty or new directory, or pass --force to write into it",
                args.dir.display()
            );
        }
    }
    let opts = InitOptions {
        name: args.name.clone(),
        policy: args.policy,
        spec_file: spec_file.clone(),
        sha256: sha256_hex(&bytes),
        runtime_path,
    };
    let dir = &args.dir;
    // Every file below DIR is written without following a link (a project
    // re-initialised with --force may hold committed ones), the generated
    // crate only over the generator's own files.
    let spec_rel = Path::new(SPECS_DIR).join(&spec_file);
    let copy = dir.join(&spec_rel);
    fs_out::check_output_dir(&dir.join(OUTPUT_DIR))?;
    fs_out::write_file(dir, &spec_rel, &bytes, Replace::Any)?;
    // forge.json first: the generator reads the pin like `toolforge generate`.
    let forge =
        serde_json::to_string_pretty(&toolforge_generator::commands::init::forge_config(&opts))?
            + "\n";
    fs_out::write_file(dir, Path::new("forge.json"), forge.as_bytes(), Replace::Any)?;
    let forge_path = dir.join("forge.json");
    let common = Common {
        config: forge_path,
        spec: None,
        policy: None,
        schema_profile: None,
    };
    let mut failure = None;
    let (_loaded, out_dir, catalogue, secs) =
        run_pipeline(&common, None, &check_output_dir, &mut |dir, f| {
            if failure.is_none()
                && let Err(e) = write_if_changed(dir, &f, Replace::Generated)
            {
                failure = Some(e);
            }
        })
        .with_context(|| format!("generating the crate from {}", copy.display()))?;
    if let Some(e) = failure {
        return Err(e);
    }
    for f in project_files(&opts, &catalogue)? {
        write_if_changed(dir, &f, Replace::Any)?;
    }
    println!(
        "toolforge init: {} ({} tools, {} skipped) in {:.2}s → {}",
        opts.name,
        catalogue.tools().count(),
        catalogue.skipped.len(),
        secs,
        out_dir.display()
    );
    println!(
        "next: cd {} && cargo build && target/debug/{}-mcp list   (README.md says how to run it; {} holds the generated crate)",
        dir.display(),
        opts.name,
        OUTPUT_DIR
    );
    Ok(ExitCode::SUCCESS)
}

/// The absolute path of a local runtime crate, refused unless it is one.
fn runtime_dir(path: &Path) -> Result<String> {
    let abs = std::fs::canonicalize(path)
        .with_context(|| format!("--runtime-path {}", path.display()))?;
    let manifest = abs.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).with_context(|| {
        format!(
            "--runtime-path {}: no Cargo.toml (point it at the toolforge-runtime crate, `runtime/` in the toolforge repository)",
            path.display()
        )
    })?;
    if !text.contains("name = \"toolforge-runtime\"") {
        bail!(
            "--runtime-path {}: {} is not the toolforge-runtime crate's manifest",
            path.display(),
            manifest.display()
        );
    }
    Ok(abs.to_string_lossy().into_owned())
}
