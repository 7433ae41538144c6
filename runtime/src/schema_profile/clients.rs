//! The table of known clients and the schema profile each reads.
//!
//! Keyed by a case-insensitive prefix of the name a client announces: its
//! `clientInfo.name` (at `initialize`, or in each request's `_meta` from
//! the 2026-07-28 revision on) or the `User-Agent` of its HTTP requests.
//! Data, not code: a client added here needs no other change. Names as
//! seen in public fixtures and the clients' sources (2026).

use super::SchemaProfile;

/// One known client family.
#[derive(Debug, Clone, Copy)]
pub struct ClientRule {
    /// The start of the announced name, compared without ASCII case.
    pub prefix: &'static str,
    /// The profile its models read.
    pub profile: SchemaProfile,
    /// Who announces it, and why this profile.
    pub why: &'static str,
}

const fn rule(prefix: &'static str, profile: SchemaProfile, why: &'static str) -> ClientRule {
    ClientRule {
        prefix,
        profile,
        why,
    }
}

/// Known clients, first match wins (longer prefixes before shorter ones
/// that start them).
pub const CLIENTS: &[ClientRule] = &[
    rule(
        "codex",
        SchemaProfile::Strict,
        "OpenAI Codex (`codex-mcp-client`, User-Agent `codex_cli_rs/…`): OpenAI strict function schemas",
    ),
    rule(
        "openai",
        SchemaProfile::Strict,
        "OpenAI's Agents SDK and Responses API connectors (`openai-mcp`): strict function schemas",
    ),
    rule(
        "chatgpt",
        SchemaProfile::Strict,
        "ChatGPT connectors: OpenAI strict function schemas",
    ),
    rule(
        "gemini",
        SchemaProfile::Strict,
        "Gemini CLI (`gemini-cli`, User-Agent `GeminiCLI/…`): Gemini function declarations",
    ),
    rule(
        "google-adk",
        SchemaProfile::Strict,
        "Google's Agent Development Kit: Gemini function declarations",
    ),
    rule(
        "cursor",
        SchemaProfile::Strict,
        "Cursor (`cursor-vscode`): no `$ref`, no `oneOf`/`allOf`",
    ),
    rule(
        "claude",
        SchemaProfile::Full,
        "Claude Code (`claude-code`), Claude apps (`claude-ai`): full JSON Schema 2020-12",
    ),
    rule(
        "anthropic",
        SchemaProfile::Full,
        "Anthropic's API MCP connector: full JSON Schema",
    ),
    rule(
        "mcp",
        SchemaProfile::Full,
        "the Python SDK's default name (`mcp`), and SDK-based clients",
    ),
    rule(
        "python-httpx",
        SchemaProfile::Full,
        "the Python SDK's User-Agent",
    ),
];

/// The profile the table gives a client announcing `name`, if it knows it.
pub fn profile_of(name: &str) -> Option<SchemaProfile> {
    let name = name.trim_start();
    CLIENTS
        .iter()
        .find(|r| {
            name.get(..r.prefix.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(r.prefix))
        })
        .map(|r| r.profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_clients_get_their_profile() {
        for (name, profile) in [
            ("codex-mcp-client", SchemaProfile::Strict),
            (
                "codex_cli_rs/0.44.0 (Linux 6.8; x86_64)",
                SchemaProfile::Strict,
            ),
            ("openai-mcp", SchemaProfile::Strict),
            ("gemini-cli", SchemaProfile::Strict),
            ("GeminiCLI/0.9.0 (darwin; arm64)", SchemaProfile::Strict),
            ("cursor-vscode", SchemaProfile::Strict),
            ("claude-code", SchemaProfile::Full),
            ("Claude-AI", SchemaProfile::Full),
            ("mcp", SchemaProfile::Full),
            ("python-httpx/0.28.1", SchemaProfile::Full),
        ] {
            assert_eq!(profile_of(name), Some(profile), "{name}");
        }
    }

    #[test]
    fn unknown_and_odd_names_are_not_matched() {
        for name in [
            "",
            "node",
            "my-codex",
            "cod",
            "gem",
            "é-codex",
            "\u{1F600}gemini",
            "Gem",
        ] {
            assert_eq!(profile_of(name), None, "{name:?}");
        }
        // A multi-byte character where a prefix would end is not a match
        // (and not a panic).
        assert_eq!(profile_of("cod\u{e9}x"), None);
        assert_eq!(profile_of("mc\u{1F600}"), None);
    }

    #[test]
    fn every_rule_is_reachable() {
        for (i, r) in CLIENTS.iter().enumerate() {
            assert!(!r.prefix.is_empty() && !r.why.is_empty());
            let shadowed = CLIENTS[..i].iter().any(|earlier| {
                r.prefix
                    .get(..earlier.prefix.len())
                    .is_some_and(|s| s.eq_ignore_ascii_case(earlier.prefix))
            });
            assert!(!shadowed, "{} is shadowed by an earlier rule", r.prefix);
        }
    }
}
