//! Skills (the MCP Skills extension, SEP-2640): read a pinned skills
//! directory or `.tar.gz` archive, keep the valid skills, and emit them
//! into the generated crate.
//!
//! Each `<name>/` directory under the skills root with a `SKILL.md` whose
//! YAML frontmatter has string `name` (equal to the directory name, a valid
//! skill name) and `description` becomes one skill with all files of its
//! directory. Any other directory is left out with a reason
//! ([`SkillSet::notes`]), as is a skill over the extension's limits (512
//! files, 16 MiB). The archive reader ([`archive`]) keeps regular files
//! only. The pin's sha256 covers the archive's bytes, or for a directory
//! its manifest ([`manifest_sha256`]).

pub mod archive;
mod frontmatter;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The most files one skill may have, `SKILL.md` included.
pub const MAX_FILES: usize = 512;
/// The largest total size of one skill's files (16 MiB).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The most bytes kept from one source in all (bounds memory on hostile
/// input: 16 skills at the limit).
pub const MAX_TOTAL_BYTES: u64 = 16 * MAX_BYTES;
/// The entry file of a skill.
pub const SKILL_MD: &str = "SKILL.md";
/// Largest `SKILL.md` frontmatter read (64 KiB); a larger one leaves its
/// skill out.
pub const MAX_FRONTMATTER_BYTES: usize = frontmatter::MAX_FRONTMATTER_BYTES;
/// Deepest nesting of a `SKILL.md` frontmatter's collections (block and
/// flow together); a deeper one leaves its skill out before YAML parsing.
pub const MAX_FRONTMATTER_DEPTH: usize = frontmatter::MAX_FRONTMATTER_DEPTH;

/// Why a skills source cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SkillsError {
    /// Reading the directory or archive failed.
    #[error("{path}: {message}")]
    Read {
        /// The directory, file or archive.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The source holds more than [`MAX_TOTAL_BYTES`] of files.
    #[error("{path}: the skills source holds more than {limit} bytes of files")]
    TooLarge {
        /// The directory or archive.
        path: PathBuf,
        /// [`MAX_TOTAL_BYTES`].
        limit: u64,
    },
}

/// One valid skill, ready to embed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadSkill {
    /// The skill name (its directory name).
    pub name: String,
    /// The frontmatter `description`.
    pub description: String,
    /// The frontmatter as compact JSON object text, keys in the author's order.
    pub frontmatter: String,
    /// Files by path relative to the skill directory.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// The skills read from one source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillSet {
    /// Valid skills by name.
    pub skills: BTreeMap<String, ReadSkill>,
    /// Everything left out, with the reason (sorted).
    pub notes: Vec<String>,
}

/// Files collected from a source, grouped by their first path segment,
/// with the limits applied while reading (a skill over a limit keeps no
/// more bytes).
#[derive(Debug, Default)]
pub(crate) struct Collector {
    groups: BTreeMap<String, Group>,
    notes: Vec<String>,
    total: u64,
    /// Every kept file as `(path from the root, sha256 hex)`, for the
    /// directory manifest.
    manifest: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct Group {
    files: BTreeMap<String, Vec<u8>>,
    count: usize,
    bytes: u64,
}

impl Collector {
    /// Notes an entry left out.
    pub(crate) fn drop(&mut self, path: &str, why: &str) {
        self.notes.push(format!("{}: {why}", shown(path)));
    }

    /// Whether a file of `size` bytes at `path` (relative to the skills
    /// root, already checked by [`clean_path`]) should be read. Files
    /// outside a skill directory are left out; a skill past a limit stops
    /// keeping bytes (it is refused later with the count).
    pub(crate) fn wants(&mut self, path: &str, size: u64) -> bool {
        let Some((dir, _)) = path.split_once('/') else {
            self.drop(path, "not inside a skill directory");
            return false;
        };
        let group = self.groups.entry(dir.to_string()).or_default();
        group.count += 1;
        group.bytes = group.bytes.saturating_add(size);
        group.count <= MAX_FILES && group.bytes <= MAX_BYTES
    }

    /// Keeps the bytes of a file [`Collector::wants`] accepted.
    pub(crate) fn keep(
        &mut self,
        path: &str,
        bytes: Vec<u8>,
        source: &Path,
    ) -> Result<(), SkillsError> {
        self.total = self.total.saturating_add(bytes.len() as u64);
        if self.total > MAX_TOTAL_BYTES {
            return Err(SkillsError::TooLarge {
                path: source.to_path_buf(),
                limit: MAX_TOTAL_BYTES,
            });
        }
        let Some((dir, rest)) = path.split_once('/') else {
            return Ok(());
        };
        self.manifest
            .insert(path.to_string(), hex::encode(Sha256::digest(&bytes)));
        if let Some(group) = self.groups.get_mut(dir) {
            group.files.insert(rest.to_string(), bytes);
        }
        Ok(())
    }

    /// The lines `<sha256>  <path>` of every kept file, sorted by path.
    pub(crate) fn manifest(&self) -> String {
        self.manifest
            .iter()
            .map(|(path, sha)| format!("{sha}  {path}\n"))
            .collect()
    }

    /// Checks each group and returns the valid skills.
    pub(crate) fn finish(mut self) -> SkillSet {
        let mut skills = BTreeMap::new();
        for (dir, group) in std::mem::take(&mut self.groups) {
            match check_skill(&dir, group) {
                Ok(skill) => {
                    skills.insert(dir, skill);
                }
                Err(why) => self
                    .notes
                    .push(format!("{}: skill left out: {why}", shown(&dir))),
            }
        }
        self.notes.sort();
        SkillSet {
            skills,
            notes: self.notes,
        }
    }
}

fn check_skill(dir: &str, group: Group) -> Result<ReadSkill, String> {
    if group.count > MAX_FILES {
        return Err(format!(
            "{} files, more than the limit of {MAX_FILES}",
            group.count
        ));
    }
    if group.bytes > MAX_BYTES {
        return Err(format!(
            "{} bytes of files, more than the limit of {MAX_BYTES} (16 MiB)",
            group.bytes
        ));
    }
    if !is_valid_skill_name(dir) {
        return Err(
            "the directory name is not a valid skill name (1-64 of a-z, 0-9 and -, no leading, trailing or doubled -)"
                .into(),
        );
    }
    let md = group
        .files
        .get(SKILL_MD)
        .ok_or_else(|| format!("no {SKILL_MD}"))?;
    let fm = frontmatter::parse(md)?;
    if fm.name != dir {
        return Err(format!(
            "frontmatter name `{}` differs from the directory name",
            shown(&fm.name)
        ));
    }
    Ok(ReadSkill {
        name: fm.name,
        description: fm.description,
        frontmatter: fm.json,
        files: group.files,
    })
}

/// A path as quoted in a note (clipped, control characters escaped).
fn shown(path: &str) -> String {
    path.chars()
        .take(120)
        .flat_map(char::escape_debug)
        .collect()
}

/// A `/`-separated relative path with no empty, `.` or `..` segment, no
/// backslash or NUL, and not absolute; a leading `./` is removed. `Err`
/// says why the path is refused.
pub(crate) fn clean_path(raw: &str) -> Result<&str, &'static str> {
    if raw.starts_with('/') {
        return Err("absolute path");
    }
    let mut path = raw;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.contains(['\\', '\0']) {
        return Err("backslash or NUL in the path");
    }
    if path.split('/').any(|s| s == "..") {
        return Err("`..` segment in the path");
    }
    if path.split('/').any(|s| s.is_empty() || s == ".") {
        return Err("empty or `.` segment in the path");
    }
    Ok(path)
}

/// Whether `name` is a valid skill name (the Agent Skills rule in ASCII):
/// 1-64 of `a-z`, `0-9` and `-`, no leading, trailing or doubled `-`.
pub fn is_valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Reads a skills directory: one sub-directory per skill. Symbolic links
/// and other non-regular files are left out with a note. Returns the
/// skills and the directory's manifest digest ([`manifest_sha256`]).
///
/// # Errors
///
/// When the directory cannot be read or holds too much.
pub fn read_dir(root: &Path) -> Result<(SkillSet, String), SkillsError> {
    let mut collector = Collector::default();
    walk(root, root, &mut collector)?;
    let digest = hex::encode(Sha256::digest(collector.manifest().as_bytes()));
    Ok((collector.finish(), digest))
}

fn walk(root: &Path, dir: &Path, c: &mut Collector) -> Result<(), SkillsError> {
    let fail = |p: &Path, e: std::io::Error| SkillsError::Read {
        path: p.to_path_buf(),
        message: e.to_string(),
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| fail(dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| fail(dir, e))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let meta = std::fs::symlink_metadata(&path).map_err(|e| fail(&path, e))?;
        if meta.is_dir() {
            walk(root, &path, c)?;
        } else if !meta.is_file() {
            c.drop(&rel, "not a regular file (symbolic link or special file)");
        } else if let Err(why) = clean_path(&rel) {
            c.drop(&rel, why);
        } else if c.wants(&rel, meta.len()) {
            let bytes = std::fs::read(&path).map_err(|e| fail(&path, e))?;
            c.keep(&rel, bytes, root)?;
        }
    }
    Ok(())
}

/// The sha256 a directory pin names: of the lines `<sha256>  <path>\n`
/// (as `sha256sum` prints them, paths from the directory) of every file
/// kept from a skill directory, sorted by path.
pub fn manifest_sha256(root: &Path) -> Result<String, SkillsError> {
    read_dir(root).map(|(_, digest)| digest)
}

/// The MIME type of a skill file, from its name (`application/octet-stream`
/// when unknown).
pub fn mime_for(path: &str) -> &'static str {
    let ext = path
        .rsplit('/')
        .next()
        .and_then(|f| f.rsplit_once('.'))
        .map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}
