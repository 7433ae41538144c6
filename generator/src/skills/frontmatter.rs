//! The YAML frontmatter of a `SKILL.md`.

use serde_json::Value;

/// The frontmatter fields the generator needs, and all of it as JSON.
#[derive(Debug)]
pub(crate) struct Frontmatter {
    pub name: String,
    pub description: String,
    /// Compact JSON object text of every field, in the author's order.
    pub json: String,
}

/// Longest description the Agent Skills specification allows.
const MAX_DESCRIPTION: usize = 1024;

/// Largest frontmatter (the YAML between the `---` lines) read, in bytes.
/// A real one holds a name, a description of at most 1,024 characters and
/// a little metadata; the bound keeps what the YAML parser is handed small
/// whatever the skill's 16 MiB allow.
pub(crate) const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// Deepest nesting of collections (block and flow together) in a
/// frontmatter. libyaml's work grows with the square of the nesting
/// (50,000 levels in 97 KB took 8.9 s), and the deserializer only refuses
/// past 128 levels after the scanner has read everything, so a linear
/// pre-scan refuses deeper input before libyaml sees it.
pub(crate) const MAX_FRONTMATTER_DEPTH: usize = 64;

/// Nodes a frontmatter may expand to beyond one per byte: without aliases
/// a document has about one node per byte at most, so only alias expansion
/// (`*name`, which yaml_serde alone lets grow to 100 times the document's
/// events: 770 MB for 60 KB) comes near this.
const FRONTMATTER_NODE_SLACK: usize = 4096;

/// Parses the frontmatter at the start of `md`: a `---` line, YAML, a
/// `---` line. `Err` says what is wrong.
pub(crate) fn parse(md: &[u8]) -> Result<Frontmatter, String> {
    let text = std::str::from_utf8(md).map_err(|_| "SKILL.md is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not begin with a `---` frontmatter line")?;
    let end = body
        .split_inclusive('\n')
        .scan(0usize, |at, line| {
            let start = *at;
            *at += line.len();
            Some((start, line))
        })
        .find(|(_, line)| line.trim_end() == "---")
        .map(|(start, _)| start)
        .ok_or("the frontmatter has no closing `---` line")?;
    let yaml = &body[..end];
    check_bounds(yaml)?;
    let value: Value = yaml_serde::from_str(yaml)
        .map_err(|e| format!("the frontmatter is not valid YAML: {e}"))?;
    let Value::Object(fields) = &value else {
        return Err("the frontmatter is not a YAML mapping".into());
    };
    let string = |key: &str| match fields.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(_) => Err(format!("frontmatter `{key}` is not a non-empty string")),
        None => Err(format!("frontmatter has no `{key}`")),
    };
    let name = string("name")?;
    let description = string("description")?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "frontmatter `description` is longer than {MAX_DESCRIPTION} characters"
        ));
    }
    let json = serde_json::to_string(&value).map_err(|e| e.to_string())?;
    Ok(Frontmatter {
        name,
        description,
        json,
    })
}

/// Refuses a frontmatter over [`MAX_FRONTMATTER_BYTES`], nesting deeper
/// than [`MAX_FRONTMATTER_DEPTH`] or expanding past its node budget
/// through aliases, naming the file (and where, for the nesting).
fn check_bounds(yaml: &str) -> Result<(), String> {
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!(
            "{}: the frontmatter is {} bytes, more than the limit of {MAX_FRONTMATTER_BYTES}",
            super::SKILL_MD,
            yaml.len()
        ));
    }
    if let Some((line, column)) =
        crate::yaml_scan::nesting_beyond(yaml.as_bytes(), MAX_FRONTMATTER_DEPTH)
    {
        // The frontmatter starts on the file's second line.
        return Err(format!(
            "{}: the frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels at line {} column {column}",
            super::SKILL_MD,
            line.saturating_add(1)
        ));
    }
    let nodes = yaml.len().saturating_add(FRONTMATTER_NODE_SLACK);
    if !crate::load::yaml_within_nodes(yaml, nodes) {
        return Err(format!(
            "{}: the frontmatter expands to more than {nodes} nodes through aliases (`*name`)",
            super::SKILL_MD
        ));
    }
    Ok(())
}
