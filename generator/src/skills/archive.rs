//! Skills from a `.tar.gz` archive (a release tarball of a repository).
//!
//! Only regular files are kept. Symbolic links, hard links, devices and
//! other entry types are left out, as are absolute paths and paths with a
//! `..`, `.` or empty segment (a leading `./` is allowed): each with a
//! note. The skills root is the archive's `skills/` directory, at the top
//! or below one top-level directory (as in `<repo>-<tag>/skills/`);
//! entries elsewhere are ignored.

use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;

use super::{Collector, SkillSet, SkillsError, clean_path};

/// The most entries read from one archive (bounds the time spent on a
/// hostile one).
pub const MAX_ENTRIES: usize = 100_000;

/// Reads the skills of a gzipped tar archive (`bytes`, read from `path`,
/// which is only used in messages).
///
/// # Errors
///
/// When the archive is not gzip or tar, holds more than [`MAX_ENTRIES`]
/// entries, or more than [`super::MAX_TOTAL_BYTES`] of kept files.
pub fn read_tar_gz(bytes: &[u8], path: &Path) -> Result<SkillSet, SkillsError> {
    let fail = |e: std::io::Error| SkillsError::Read {
        path: path.to_path_buf(),
        message: format!("not a readable .tar.gz archive: {e}"),
    };
    let mut archive = tar::Archive::new(GzDecoder::new(bytes));
    let mut collector = Collector::default();
    for (n, entry) in archive.entries().map_err(fail)?.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(SkillsError::Read {
                path: path.to_path_buf(),
                message: format!("more than {MAX_ENTRIES} entries"),
            });
        }
        let mut entry = entry.map_err(fail)?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if kind.is_symlink() {
            collector.drop(&raw, "symbolic link");
            continue;
        }
        if kind.is_hard_link() {
            collector.drop(&raw, "hard link");
            continue;
        }
        if !kind.is_file() {
            collector.drop(&raw, "not a regular file");
            continue;
        }
        let clean = match clean_path(&raw) {
            Ok(p) => p,
            Err(why) => {
                collector.drop(&raw, why);
                continue;
            }
        };
        let Some(rel) = under_skills(clean) else {
            continue;
        };
        let size = entry.header().size().map_err(fail)?;
        if collector.wants(rel, size) {
            let mut data = Vec::with_capacity(usize::try_from(size.min(1 << 20)).unwrap_or(0));
            entry
                .by_ref()
                .take(size)
                .read_to_end(&mut data)
                .map_err(fail)?;
            collector.keep(rel, data, path)?;
        }
    }
    Ok(collector.finish())
}

/// The part of `path` below the skills root: `skills/<rest>` or
/// `<top>/skills/<rest>`.
fn under_skills(path: &str) -> Option<&str> {
    if let Some(rest) = path.strip_prefix("skills/") {
        return Some(rest);
    }
    let (_, rest) = path.split_once('/')?;
    rest.strip_prefix("skills/")
}
