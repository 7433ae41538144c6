//! `toolforge diff`: owned by the regeneration-pipeline work.

use std::process::ExitCode;

/// Arguments of `toolforge diff`.
#[derive(clap::Args)]
pub struct DiffArgs {}

/// Runs `toolforge diff`.
pub fn run(_args: DiffArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("toolforge diff is not built yet")
}
