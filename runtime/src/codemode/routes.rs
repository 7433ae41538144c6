//! The catalogue's route templates as a matcher for `api.request` paths.
//!
//! A concrete path matches a template segment by segment: literal segments
//! must be equal (after percent-decoding), placeholders take any non-empty
//! segment. Merged account/zone tools contribute one template per real path
//! (`/accounts/{…}/…`, `/zones/{…}/…`). When several templates match, the
//! most specific one wins (a literal beats a placeholder at the first
//! position where they differ), so `/zones/z/dns_records/export` is the
//! export operation, not a record called `export`. Paths that match nothing
//! get an error naming the closest templates.

use percent_encoding::percent_decode_str;

use crate::catalogue::{Method, ToolDef};
use crate::profile::{MergedSelector, Profile};

/// Most close matches named in an error.
const MAX_SUGGESTIONS: usize = 4;
/// Longest accepted path, in bytes.
const MAX_PATH_BYTES: usize = 4096;
/// Most segments in an accepted path.
const MAX_SEGMENTS: usize = 64;
/// Characters of a segment compared when looking for close matches.
const MAX_COMPARED_CHARS: usize = 64;

/// One segment of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// Literal text (as written in the template).
    Literal(&'static str),
    /// A whole-segment placeholder naming an argument.
    Param(&'static str),
    /// Text around one placeholder, e.g. `{name}.json`: the segment must
    /// start with `prefix` and end with `suffix`.
    Pattern {
        prefix: &'static str,
        arg: &'static str,
        suffix: &'static str,
    },
}

/// One template of one tool.
#[derive(Debug)]
struct Entry {
    tool: &'static ToolDef,
    template: &'static str,
    selector: Option<(&'static str, &'static str)>,
    segments: Vec<Seg>,
    exposed: bool,
}

/// A request path matched to a tool.
#[derive(Debug, Clone)]
pub struct Matched {
    /// The tool whose template matched.
    pub tool: &'static ToolDef,
    /// The template (placeholders name the tool's arguments).
    pub template: &'static str,
    /// The merged-route selector to set (`account_or_zone` = `accounts`).
    pub selector: Option<(&'static str, &'static str)>,
    /// Per segment: the decoded value, and the argument it fills (for
    /// whole-segment placeholders).
    pub segments: Vec<(String, Option<&'static str>)>,
    /// Arguments of placeholders inside a segment (`{name}.json`), with the
    /// value found between the literal parts.
    pub embedded: Vec<(&'static str, String)>,
}

impl Matched {
    /// Whether argument `arg` of this match names an account that
    /// `profile` fills (so a literal `{account_id}` in its place asks for the
    /// default account).
    pub fn is_account_arg(&self, profile: &Profile, arg: &str) -> bool {
        profile.is_account_arg(arg, self.selector)
    }
}

/// Why a path was refused. Every message names what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// An absolute URL (or a scheme-relative `//host/…`).
    #[error(
        "api.request: `{shown}` is a URL; pass only the API path (e.g. `/zones`): the server fixes the host and base path, and requests to other hosts are not possible"
    )]
    AbsoluteUrl {
        /// The value (clipped).
        shown: String,
    },
    /// Not starting with `/`, or holding `?`/`#`, empty, `.` or `..` segments.
    #[error("api.request: path `{shown}` {why}")]
    Malformed {
        /// The value (clipped).
        shown: String,
        /// What is wrong.
        why: String,
    },
    /// An unknown HTTP method.
    #[error(
        "api.request: method `{shown}` is not an HTTP method the API uses (GET, POST, PUT, PATCH, DELETE)"
    )]
    Method {
        /// The value (clipped).
        shown: String,
    },
    /// No template matches the path.
    #[error("api.request: {method} {shown} is not an operation of this API{}", suggestions(.close))]
    Unknown {
        /// The method.
        method: String,
        /// The path (clipped).
        shown: String,
        /// Close templates as `METHOD /template`.
        close: Vec<String>,
    },
    /// The path exists but not with this method.
    #[error("api.request: {shown} does not support {method}; it supports: {allowed}")]
    WrongMethod {
        /// The method.
        method: String,
        /// The path (clipped).
        shown: String,
        /// The methods that exist, comma-separated.
        allowed: String,
    },
    /// The operation exists but this server does not expose it.
    #[error(
        "api.request: {method} {template} (tool `{tool}`) is not available on this server (--read-only / --products)"
    )]
    Hidden {
        /// The method.
        method: &'static str,
        /// The template.
        template: String,
        /// The tool name.
        tool: &'static str,
    },
}

fn suggestions(close: &[String]) -> String {
    if close.is_empty() {
        "; use the search tool to find the right path".to_owned()
    } else {
        format!(
            "; close matches: {} (use the search tool to check)",
            close.join(", ")
        )
    }
}

/// Clips untrusted text for messages.
pub(crate) fn shown(text: &str) -> String {
    const MAX: usize = 200;
    let mut out: String = text.chars().take(MAX).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// Parses an HTTP method name (case-insensitive).
pub fn parse_method(text: &str) -> Result<Method, RouteError> {
    Ok(match text.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        "HEAD" => Method::Head,
        "OPTIONS" => Method::Options,
        _ => return Err(RouteError::Method { shown: shown(text) }),
    })
}

/// Splits a request path into decoded segments.
///
/// # Errors
///
/// URLs, relative paths, queries or fragments in the path, empty, `.` or
/// `..` segments (also percent-encoded), and invalid UTF-8.
pub fn split_path(path: &str) -> Result<Vec<String>, RouteError> {
    let malformed = |why: &str| RouteError::Malformed {
        shown: shown(path),
        why: why.to_owned(),
    };
    let lower = path.trim_start().to_ascii_lowercase();
    if lower.starts_with("//") || lower.contains("://") || lower.starts_with("http:") {
        return Err(RouteError::AbsoluteUrl { shown: shown(path) });
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(malformed(&format!("is longer than {MAX_PATH_BYTES} bytes")));
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(malformed("must start with `/` (e.g. `/zones`)"));
    };
    if path.contains(['?', '#']) {
        return Err(malformed(
            "must not contain `?` or `#`: pass query parameters as `query: {name: value}`",
        ));
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Err(malformed("names no resource"));
    }
    if rest.split('/').count() > MAX_SEGMENTS {
        return Err(malformed(&format!("has more than {MAX_SEGMENTS} segments")));
    }
    rest.split('/')
        .map(|raw| {
            let decoded = percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| malformed("has a segment that is not valid UTF-8 once decoded"))?;
            match decoded.as_ref() {
                "" => Err(malformed("has an empty segment (`//`)")),
                "." | ".." => Err(malformed("has a `.` or `..` segment")),
                _ => Ok(decoded.into_owned()),
            }
        })
        .collect()
}

/// Splits a template into segments.
fn template_segments(template: &'static str) -> Vec<Seg> {
    let trimmed = template.strip_prefix('/').unwrap_or(template);
    trimmed
        .split('/')
        .map(|seg| match (seg.find('{'), seg.rfind('}')) {
            (Some(0), Some(end)) if end + 1 == seg.len() && seg.matches('{').count() == 1 => {
                Seg::Param(&seg[1..end])
            }
            (Some(start), Some(end)) if start < end && seg.matches('{').count() == 1 => {
                Seg::Pattern {
                    prefix: &seg[..start],
                    arg: &seg[start + 1..end],
                    suffix: &seg[end + 1..],
                }
            }
            _ => Seg::Literal(seg),
        })
        .collect()
}

/// Every route template of a catalogue.
#[derive(Debug, Default)]
pub struct RouteTable {
    entries: Vec<Entry>,
    merged: Option<MergedSelector>,
}

impl RouteTable {
    /// Indexes the routes of `tools` of a catalogue with `profile`;
    /// `exposed` says which tools may be called.
    pub fn new<'a>(
        tools: impl IntoIterator<Item = &'static ToolDef>,
        profile: &Profile,
        exposed: impl Fn(&ToolDef) -> bool + 'a,
    ) -> Self {
        let mut entries = Vec::new();
        for tool in tools {
            let ok = exposed(tool);
            for route in tool.routes {
                entries.push(Entry {
                    tool,
                    template: route.template,
                    selector: route.when,
                    segments: template_segments(route.template),
                    exposed: ok,
                });
            }
        }
        Self {
            entries,
            merged: profile.merged,
        }
    }

    /// Number of templates.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no template.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Finds the operation of `method` `path`.
    ///
    /// # Errors
    ///
    /// See [`RouteError`].
    pub fn resolve(&self, method: &str, path: &str) -> Result<Matched, RouteError> {
        let parsed = parse_method(method)?;
        let segments = split_path(path)?;
        let matching: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| matches(&e.segments, &segments))
            .collect();
        let best = matching
            .iter()
            .filter(|e| e.tool.method == parsed)
            .max_by(|a, b| specificity(&a.segments).cmp(&specificity(&b.segments)));
        let Some(entry) = best else {
            if matching.is_empty() {
                return Err(RouteError::Unknown {
                    method: parsed.as_str().to_owned(),
                    shown: shown(path),
                    close: self.close(parsed, &segments),
                });
            }
            let mut allowed: Vec<&str> = matching.iter().map(|e| e.tool.method.as_str()).collect();
            allowed.sort_unstable();
            allowed.dedup();
            return Err(RouteError::WrongMethod {
                method: parsed.as_str().to_owned(),
                shown: shown(path),
                allowed: allowed.join(", "),
            });
        };
        if !entry.exposed {
            return Err(RouteError::Hidden {
                method: entry.tool.method.as_str(),
                template: display_template(entry, self.merged.as_ref()),
                tool: entry.tool.name,
            });
        }
        let mut embedded = Vec::new();
        let segments = segments
            .into_iter()
            .zip(&entry.segments)
            .map(|(value, seg)| match seg {
                Seg::Param(arg) => (value, Some(*arg)),
                Seg::Pattern {
                    prefix,
                    arg,
                    suffix,
                } => {
                    let inner = value
                        .get(prefix.len()..value.len().saturating_sub(suffix.len()))
                        .unwrap_or_default();
                    embedded.push((*arg, inner.to_owned()));
                    (value, None)
                }
                Seg::Literal(_) => (value, None),
            })
            .collect();
        Ok(Matched {
            tool: entry.tool,
            embedded,
            template: entry.template,
            selector: entry.selector,
            segments,
        })
    }

    /// The closest exposed templates to a path that matched none.
    fn close(&self, method: Method, segments: &[String]) -> Vec<String> {
        let mut scored: Vec<(u32, String)> = self
            .entries
            .iter()
            .filter(|e| e.exposed)
            .map(|e| {
                let mut d = distance(&e.segments, segments);
                if e.tool.method != method {
                    d += 50;
                }
                (
                    d,
                    format!(
                        "{} {}",
                        e.tool.method.as_str(),
                        display_template(e, self.merged.as_ref())
                    ),
                )
            })
            .collect();
        scored.sort();
        let limit = scored.first().map_or(0, |(d, _)| d + 150);
        let mut out: Vec<String> = Vec::new();
        for (d, text) in scored {
            if d > limit || out.len() == MAX_SUGGESTIONS {
                break;
            }
            if !out.contains(&text) {
                out.push(text);
            }
        }
        out
    }
}

/// The template as the spec shows it: a merged tool's ID placeholder
/// (`{account_or_zone_id}`) becomes the variant's (`{account_id}` /
/// `{zone_id}`).
fn display_template(entry: &Entry, merged: Option<&MergedSelector>) -> String {
    let variant = match (entry.selector, merged) {
        (Some((arg, value)), Some(m)) if arg == m.arg => m.variant(value).map(|v| (m.id_arg, v)),
        _ => None,
    };
    match variant {
        Some((id_arg, v)) => entry
            .template
            .replace(&format!("{{{id_arg}}}"), &format!("{{{}}}", v.id)),
        None => entry.template.to_owned(),
    }
}

fn matches(template: &[Seg], path: &[String]) -> bool {
    template.len() == path.len()
        && template.iter().zip(path).all(|(seg, value)| match seg {
            Seg::Literal(text) => text == value,
            Seg::Param(_) => true,
            Seg::Pattern { prefix, suffix, .. } => {
                value.len() > prefix.len() + suffix.len()
                    && value.starts_with(prefix)
                    && value.ends_with(suffix)
            }
        })
}

/// Literal segments rank above patterns above placeholders, left to right.
fn specificity(template: &[Seg]) -> Vec<u8> {
    template
        .iter()
        .map(|s| match s {
            Seg::Literal(_) => 2,
            Seg::Pattern { .. } => 1,
            Seg::Param(_) => 0,
        })
        .collect()
}

/// Edit distance between a template and a path, in hundredths of a
/// segment: placeholders match anything, a misspelt literal costs its
/// character edit ratio.
fn distance(template: &[Seg], path: &[String]) -> u32 {
    let cost = |seg: &Seg, value: &str| -> u32 {
        match seg {
            Seg::Param(_) => 0,
            Seg::Pattern { .. } => 30,
            Seg::Literal(text) => {
                if *text == value {
                    0
                } else {
                    let longest = text
                        .chars()
                        .count()
                        .max(value.chars().count())
                        .clamp(1, MAX_COMPARED_CHARS);
                    let edits = levenshtein(text, value);
                    u32::try_from(edits * 100 / longest).unwrap_or(100).min(100)
                }
            }
        }
    };
    let mut prev: Vec<u32> = (0..=path.len())
        .map(|i| u32::try_from(i).unwrap_or(u32::MAX).saturating_mul(100))
        .collect();
    for (i, seg) in template.iter().enumerate() {
        let mut row = vec![u32::try_from(i + 1).unwrap_or(u32::MAX).saturating_mul(100)];
        for (j, value) in path.iter().enumerate() {
            let best = (prev[j] + cost(seg, value))
                .min(prev[j + 1] + 100)
                .min(row[j] + 100);
            row.push(best);
        }
        prev = row;
    }
    prev.last().copied().unwrap_or(0)
}

/// Character edit distance of the first 64 characters of each string.
pub(crate) fn levenshtein(a: &str, b: &str) -> usize {
    let a: String = a.chars().take(MAX_COMPARED_CHARS).collect();
    let b: Vec<char> = b.chars().take(MAX_COMPARED_CHARS).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            row.push(sub.min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests;
