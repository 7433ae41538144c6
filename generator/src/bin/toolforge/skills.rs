//! The skills pin of `forge.json`: read and verify it for `generate` and
//! `check`, download a URL pin for `fetch`, digest it for `pin`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolforge_generator::config::{SkillsPin, sha256_hex};
use toolforge_generator::fs_out;
use toolforge_generator::skills::{SkillSet, archive, read_dir};

/// Reads the pinned skills (directory or `.tar.gz`), checks the pin's
/// sha256 and prints every left-out entry as a warning; an empty set
/// without a pin.
pub fn load(pin: Option<&SkillsPin>, config_dir: &Path) -> Result<SkillSet> {
    let Some(pin) = pin else {
        return Ok(SkillSet::default());
    };
    let path = config_dir.join(&pin.path);
    let (set, actual) = read(&path, pin.url.is_some())?;
    if !actual.eq_ignore_ascii_case(pin.sha256.trim()) {
        bail!(
            "{}: skills sha256 mismatch: the pin says {}, the source has {actual} (run `toolforge pin` after changing the skills)",
            path.display(),
            pin.sha256
        );
    }
    for note in &set.notes {
        eprintln!("warning: skills: {note}");
    }
    Ok(set)
}

/// The skills at `path` and the sha256 a pin of them names.
pub fn read(path: &Path, from_url: bool) -> Result<(SkillSet, String)> {
    if path.is_dir() {
        return Ok(read_dir(path)?);
    }
    let bytes = std::fs::read(path).with_context(|| {
        if from_url {
            format!("reading {} (run `toolforge fetch` first)", path.display())
        } else {
            format!("reading {}", path.display())
        }
    })?;
    let digest = sha256_hex(&bytes);
    Ok((archive::read_tar_gz(&bytes, path)?, digest))
}

/// The pin's sha256 for the source at its path now.
pub fn digest(pin: &SkillsPin, config_dir: &Path) -> Result<String> {
    read(&config_dir.join(&pin.path), pin.url.is_some()).map(|(_, d)| d)
}

/// Downloads a URL pin to its path (with `curl`, https only) and verifies it.
pub fn fetch(pin: &SkillsPin, config_dir: &Path) -> Result<()> {
    let Some(url) = &pin.url else {
        return Ok(());
    };
    let dest: PathBuf = config_dir.join(&pin.path);
    if let Ok(bytes) = std::fs::read(&dest)
        && sha256_hex(&bytes).eq_ignore_ascii_case(pin.sha256.trim())
    {
        println!(
            "toolforge fetch: {} already present and verified",
            dest.display()
        );
        return Ok(());
    }
    let tmp = dest.with_extension("download");
    // curl writes through a link at its output path.
    fs_out::check_named_no_link(&dest)?;
    fs_out::check_named_no_link(&tmp)?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let ok = std::process::Command::new("curl")
        .args(["--fail", "--silent", "--show-error", "--location"])
        .args(["--max-time", "600", "--proto", "=https", "-o"])
        .arg(&tmp)
        .arg(url)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = std::fs::remove_file(&tmp);
        bail!(
            "could not download {url} (offline?); place it at {}",
            dest.display()
        );
    }
    let bytes = std::fs::read(&tmp)?;
    let actual = sha256_hex(&bytes);
    if !actual.eq_ignore_ascii_case(pin.sha256.trim()) {
        let _ = std::fs::remove_file(&tmp);
        bail!(
            "{url}: skills sha256 mismatch: the pin says {}, the download has {actual}",
            pin.sha256
        );
    }
    std::fs::rename(&tmp, &dest)?;
    println!("toolforge fetch: {} verified ({actual})", dest.display());
    Ok(())
}
