//! `toolforge corpus`: owned by the generator-at-scale work.

use std::process::ExitCode;

/// Arguments of `toolforge corpus`.
#[derive(clap::Args)]
pub struct CorpusArgs {}

/// Runs `toolforge corpus`.
pub fn run(_args: CorpusArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("toolforge corpus is not built yet")
}
