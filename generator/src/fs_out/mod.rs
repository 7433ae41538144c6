//! Writing and deleting the files `toolforge` produces without following a
//! symbolic link, and telling the generator's files from a user's.
//!
//! The attack this answers: a symbolic link committed inside `generated/`
//! (`generated/skills -> ~/.ssh`, `generated/src/lib.rs -> ~/.bashrc`),
//! which reviewers skip, followed by the weekly regeneration job, which
//! would write through it and delete every other file in the directory it
//! points to. So every component from the output root down to the file
//! is checked with [`std::fs::symlink_metadata`] (which does not follow a
//! link) before anything is written or removed, a link anywhere is refused
//! with [`OutputError::Symlink`] naming it, and a file is replaced by
//! writing a new file beside it (`create_new`, which refuses an existing
//! link) and renaming it over the old one (a rename replaces a link, never
//! its target).
//!
//! Races: the checks and the writes are separate system calls, so a local
//! process that can write into the output directory *while* `toolforge`
//! runs could swap a checked directory for a link in between. That process
//! could already write the output files itself; the threat here is links
//! committed before the run, which the checks see. Closing the window fully
//! needs `openat`/`O_NOFOLLOW` on every component, which the standard
//! library does not offer portably.
//!
//! [`owned`] decides which existing files are the generator's (the
//! `@generated` marker, or a skills blob named by its own sha256), so stale
//! deletion and replacement never touch a user's file.

pub mod owned;
#[cfg(test)]
mod tests;

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use owned::{EntryKind, ManagedEntry, check_output_dir, is_generated, managed_entries};

/// Why a file could not be written, read or removed safely.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A path component is a symbolic link: nothing is written or removed
    /// through it.
    #[error(
        "{link} is a symbolic link: toolforge never writes or deletes through one (replace it with a real directory or file, or remove it)"
    )]
    Symlink {
        /// The link itself.
        link: PathBuf,
    },
    /// A component that must be a directory is something else, or a file
    /// to write is a directory.
    #[error("{path}: expected {expected}")]
    WrongKind {
        /// The path.
        path: PathBuf,
        /// What it should have been (`a directory`, `a regular file`).
        expected: &'static str,
    },
    /// An existing file or directory was not written by toolforge.
    #[error(
        "{path} was not written by toolforge (no `@generated` marker): refusing to {action} it; move it out of the output directory or choose another output directory"
    )]
    Foreign {
        /// The user's file or directory.
        path: PathBuf,
        /// `replace` or `delete`.
        action: &'static str,
    },
    /// A relative path to write has a `..`, root or prefix component.
    #[error("{path}: not a plain relative path")]
    InvalidPath {
        /// The path given.
        path: PathBuf,
    },
    /// The operating system refused an operation.
    #[error("{path}: {source}")]
    Io {
        /// The path operated on.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Result of this module.
pub type Result<T> = std::result::Result<T, OutputError>;

/// Whether an existing file of different content may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Any regular file (files a command owns by name: `init --force`'s
    /// project files, a report the user named).
    Any,
    /// Only a file the generator wrote ([`is_generated`]).
    Generated,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What is at `path`, without following a link: `None` when nothing is.
fn kind_at(path: &Path) -> Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(OutputError::Symlink {
            link: path.to_path_buf(),
        }),
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Checks that `path` is a real directory (or absent): `Ok(false)` when absent.
fn real_dir(path: &Path) -> Result<bool> {
    match kind_at(path)? {
        None => Ok(false),
        Some(meta) if meta.is_dir() => Ok(true),
        Some(_) => Err(OutputError::WrongKind {
            path: path.to_path_buf(),
            expected: "a directory",
        }),
    }
}

/// The plain (`Normal`) components of `rel`; `.` is skipped, anything
/// that could leave the root is refused.
fn plain_components(rel: &Path) -> Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(s) => Ok(s),
            _ => Err(OutputError::InvalidPath {
                path: rel.to_path_buf(),
            }),
        })
        .collect()
}

/// Walks from `root` down `rel` (a directory path), refusing a link at the
/// root or any component; creates what is missing when `create`. Returns
/// the directory, or `None` when it is missing and `create` is false.
pub fn walk_dir(root: &Path, rel: &Path, create: bool) -> Result<Option<PathBuf>> {
    walk(root, rel, create, true)
}

/// [`walk_dir`]; `check_root` false leaves the root itself to the user (a
/// named file's parent directory may be a link they chose).
fn walk(root: &Path, rel: &Path, create: bool, check_root: bool) -> Result<Option<PathBuf>> {
    let root_is_dir = if check_root {
        real_dir(root)?
    } else {
        root.is_dir()
    };
    if !root_is_dir {
        if !create {
            return Ok(None);
        }
        // The root's own ancestors are the user's choice (`--out`, the
        // project directory): created as given.
        std::fs::create_dir_all(root).map_err(io(root))?;
        if check_root {
            real_dir(root)?;
        }
    }
    let mut dir = root.to_path_buf();
    for part in plain_components(rel)? {
        dir.push(part);
        if !real_dir(&dir)? {
            if !create {
                return Ok(None);
            }
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(&dir)(e)),
            }
            // Whatever now stands there must be a real directory.
            if !real_dir(&dir)? {
                return Err(OutputError::WrongKind {
                    path: dir,
                    expected: "a directory",
                });
            }
        }
    }
    Ok(Some(dir))
}

/// Splits `rel` into its directory and file name.
fn split(rel: &Path) -> Result<(&Path, &OsStr)> {
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(OutputError::InvalidPath {
            path: rel.to_path_buf(),
        }),
    }
}

/// Reads the file at `root/rel` without following a link anywhere on the
/// way: `None` when it (or a directory above it) is missing.
///
/// # Errors
///
/// [`OutputError::Symlink`] naming the link, or an I/O error.
pub fn read_file(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>> {
    let (parent, name) = split(rel)?;
    let Some(dir) = walk_dir(root, parent, false)? else {
        return Ok(None);
    };
    let path = dir.join(name);
    match kind_at(&path)? {
        None => Ok(None),
        Some(meta) if meta.is_file() => std::fs::read(&path).map(Some).map_err(io(&path)),
        Some(_) => Err(OutputError::WrongKind {
            path,
            expected: "a regular file",
        }),
    }
}

/// Writes `contents` to `root/rel` unless the file already holds them;
/// `Ok(true)` when it wrote. Missing directories are created; a link at
/// the root or anywhere below it is refused, and so is replacing a file
/// the generator did not write when `replace` is [`Replace::Generated`].
///
/// # Errors
///
/// [`OutputError::Symlink`] naming the link, [`OutputError::Foreign`]
/// naming the user's file, or an I/O error.
pub fn write_file(root: &Path, rel: &Path, contents: &[u8], replace: Replace) -> Result<bool> {
    write_below(root, rel, contents, replace, true)
}

fn write_below(
    root: &Path,
    rel: &Path,
    contents: &[u8],
    replace: Replace,
    check_root: bool,
) -> Result<bool> {
    let (parent, name) = split(rel)?;
    let dir = walk(root, parent, true, check_root)?.unwrap_or_else(|| root.join(parent));
    let path = dir.join(name);
    if let Some(meta) = kind_at(&path)? {
        if !meta.is_file() {
            return Err(OutputError::WrongKind {
                path,
                expected: "a regular file",
            });
        }
        // Only a file of the same length can hold the same bytes.
        if meta.len() == contents.len() as u64
            && std::fs::read(&path).map_err(io(&path))? == contents
        {
            return Ok(false);
        }
        if replace == Replace::Generated
            && !owned::file_is_generated(&rel.to_string_lossy(), &path).map_err(io(&path))?
        {
            return Err(OutputError::Foreign {
                path,
                action: "replace",
            });
        }
    }
    replace_with(&dir, name, &path, contents)?;
    Ok(true)
}

/// Distinguishes the temporary files of concurrent writes in one process.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes a new file beside `path` and renames it over `path`: the new
/// file is created with `create_new` (which fails on any existing entry,
/// a link included), and a rename replaces a link rather than its target.
fn replace_with(dir: &Path, name: &OsStr, path: &Path, contents: &[u8]) -> Result<()> {
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        "{}{}-{seq}.tmp",
        owned::TEMP_INFIX,
        std::process::id()
    ));
    let tmp = dir.join(tmp_name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(contents));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(&tmp)(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(path)(e)
    })
}

/// Removes the generated file `root/rel`, refusing a link on the way, a
/// link or directory at the path, and a file the generator did not write.
///
/// # Errors
///
/// [`OutputError::Symlink`], [`OutputError::Foreign`] or an I/O error.
pub fn remove_generated(root: &Path, rel: &Path) -> Result<()> {
    let (parent, name) = split(rel)?;
    let Some(dir) = walk_dir(root, parent, false)? else {
        return Ok(());
    };
    let path = dir.join(name);
    let Some(meta) = kind_at(&path)? else {
        return Ok(());
    };
    let ours = meta.is_file()
        && owned::file_is_generated(&rel.to_string_lossy(), &path).map_err(io(&path))?;
    if !ours {
        return Err(OutputError::Foreign {
            path,
            action: "delete",
        });
    }
    std::fs::remove_file(&path).map_err(io(&path))
}

/// Writes a single file the user named (`--out`, `--markdown`, forge.json)
/// unless it holds `contents` already; `Ok(true)` when it wrote. The file
/// itself must not be a link; for a relative path, no component is one
/// either (they live in the repository a job checked out). The parent of
/// an absolute or `..` path is the user's to choose.
///
/// # Errors
///
/// [`OutputError::Symlink`] naming the link, or an I/O error.
pub fn write_named_file(path: &Path, contents: &[u8]) -> Result<bool> {
    let (root, rel) = named_root(path)?;
    write_below(root, rel, contents, Replace::Any, false)
}

/// Where the checks of a named file start: the working directory for a
/// plain relative path (every component checked), else its parent (only
/// the file itself checked).
fn named_root(path: &Path) -> Result<(&Path, &Path)> {
    let plain = path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if plain {
        return Ok((Path::new("."), path));
    }
    let (parent, name) = split(path)?;
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    Ok((parent, Path::new(name)))
}

/// [`check_no_link`] for a file the user or a pin names, with the roots
/// of [`write_named_file`].
///
/// # Errors
///
/// [`OutputError::Symlink`] naming the link.
pub fn check_named_no_link(path: &Path) -> Result<()> {
    let (root, rel) = named_root(path)?;
    let (parent, name) = split(rel)?;
    if let Some(dir) = walk(root, parent, false, false)? {
        kind_at(&dir.join(name))?;
    }
    Ok(())
}

/// Refuses a link at `root/rel` or on the way to it, without creating
/// anything (for a file another program writes, such as `curl -o`).
///
/// # Errors
///
/// [`OutputError::Symlink`] naming the link.
pub fn check_no_link(root: &Path, rel: &Path) -> Result<()> {
    let (parent, name) = split(rel)?;
    if let Some(dir) = walk_dir(root, parent, false)? {
        kind_at(&dir.join(name))?;
    }
    Ok(())
}
