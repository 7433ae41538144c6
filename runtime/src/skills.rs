//! Skills embedded in a generated crate (the MCP Skills extension,
//! `io.modelcontextprotocol/skills`, SEP-2640).
//!
//! The generator reads a pinned skills directory or archive, checks each
//! skill (frontmatter, name, the extension's limits) and emits these tables
//! with every file's bytes embedded (`include_bytes!` of content-addressed
//! copies), so the server serves skills without any I/O. Serving is in
//! `server::resources`.

/// The most files one skill may have (the extension's limit, `SKILL.md`
/// included).
pub const MAX_FILES_PER_SKILL: usize = 512;

/// The largest total size of one skill's files, in bytes (16 MiB).
pub const MAX_BYTES_PER_SKILL: u64 = 16 * 1024 * 1024;

/// The entry file of every skill.
pub const SKILL_MD: &str = "SKILL.md";

/// One skill: a directory of files with a `SKILL.md` at its root.
#[derive(Debug)]
pub struct Skill {
    /// The skill name (frontmatter `name`, equal to its directory name).
    pub name: &'static str,
    /// The frontmatter `description`.
    pub description: &'static str,
    /// The whole `SKILL.md` frontmatter as JSON object text (verbatim,
    /// in the author's key order).
    pub frontmatter: &'static str,
    /// Every file of the skill, `SKILL.md` included, sorted by path.
    pub files: &'static [SkillFile],
}

/// One file of a skill.
#[derive(Debug)]
pub struct SkillFile {
    /// Path relative to the skill directory, `/`-separated (`SKILL.md`,
    /// `references/zones.md`).
    pub path: &'static str,
    /// Lower-case hex sha256 of `bytes`.
    pub sha256: &'static str,
    /// Length of `bytes`.
    pub size: u64,
    /// MIME type, from the file name (`text/markdown` for `SKILL.md`,
    /// `application/octet-stream` when unknown).
    pub mime: &'static str,
    /// The file's content.
    pub bytes: &'static [u8],
}

impl Skill {
    /// The `skill://` URI of one of this skill's files.
    pub fn uri(&self, path: &str) -> String {
        format!("skill://{}/{path}", self.name)
    }

    /// The file at `path`, if the skill has it.
    pub fn file(&self, path: &str) -> Option<&'static SkillFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The `SKILL.md` file.
    pub fn skill_md(&self) -> Option<&'static SkillFile> {
        self.file(SKILL_MD)
    }
}

/// Whether files of this MIME type (as the generator chose it from the
/// file name) are served as text, when they are UTF-8.
pub fn is_text_mime(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json" | "application/yaml" | "application/toml" | "image/svg+xml"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_mime_types() {
        assert!(is_text_mime("text/markdown") && !is_text_mime("image/png"));
    }
}
