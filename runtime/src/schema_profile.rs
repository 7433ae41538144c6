//! Which input schemas a client is listed, chosen per request: `full` (the
//! generated JSON Schema, repeated parts shared through `$defs`) or
//! `strict` (the subset OpenAI strict function calling and Gemini function
//! declarations accept, made from the full schema by [`strict`]).
//!
//! One binary serves both. The choice, most specific first:
//! 1. `?schema_profile=full|strict` on the request's URL (HTTP);
//! 2. `--schema-profile full|strict` (the operator's; `auto`, the default,
//!    leaves it to the next rule);
//! 3. the name the client announces, looked up in [`clients::CLIENTS`]:
//!    the 2026-07-28 era's `io.modelcontextprotocol/clientInfo` in the
//!    request's `_meta`, the `clientInfo` of `initialize` (stdio), then the
//!    HTTP `User-Agent` (what a stateless server sees on every request);
//! 4. `full`.
//!
//! The choice is made from the request alone: nothing is kept between
//! requests, so one client's choice never changes another's listing.
//! Calls are validated against the full schema whatever was listed (the
//! strict one is a loosening of it).

pub mod clients;
/// The strict simplification, shared with the generator (`toolforge-model`).
pub use toolforge_model::strict;

pub use strict::strict_input_schema;

/// The input schemas a client is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SchemaProfile {
    /// The generated schemas as they are.
    #[default]
    Full,
    /// The strict simplification ([`strict_input_schema`]).
    Strict,
}

impl SchemaProfile {
    /// Both profiles.
    pub const ALL: [Self; 2] = [Self::Full, Self::Strict];

    /// The profile's name (`full` or `strict`), as the URL and the CLI take it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Strict => "strict",
        }
    }

    /// The profile named `name` (`full` or `strict`, ASCII case ignored).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(name))
    }
}

impl std::str::FromStr for SchemaProfile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| format!("`{s}` is not a schema profile: full or strict"))
    }
}

/// The operator's `--schema-profile`: `auto` chooses per client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaChoice {
    /// Per client (the table, else `full`).
    #[default]
    Auto,
    /// Every client gets this profile unless its URL asks otherwise.
    Fixed(SchemaProfile),
}

impl SchemaChoice {
    /// `auto`, `full` or `strict`.
    pub fn parse(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("auto") {
            return Some(Self::Auto);
        }
        SchemaProfile::parse(name).map(Self::Fixed)
    }

    /// The profile of a request whose URL query is `query` and whose client
    /// announced `names` (most authoritative first; see the module
    /// documentation for the order).
    pub fn choose<'a>(
        self,
        query: Option<&str>,
        names: impl IntoIterator<Item = &'a str>,
    ) -> SchemaProfile {
        if let Some(asked) = query_profile(query) {
            return asked;
        }
        if let Self::Fixed(profile) = self {
            return profile;
        }
        names
            .into_iter()
            .find_map(clients::profile_of)
            .unwrap_or_default()
    }
}

impl std::str::FromStr for SchemaChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| format!("`{s}` is not a schema profile: auto, full or strict"))
    }
}

/// `schema_profile=full|strict` in a URL query (the last one given wins;
/// an unknown value is ignored, as if absent).
pub fn query_profile(query: Option<&str>) -> Option<SchemaProfile> {
    query?
        .rsplit('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(k, _)| *k == "schema_profile")
        .find_map(|(_, v)| SchemaProfile::parse(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODEX: &str = "codex-mcp-client";
    const CLAUDE: &str = "claude-code";

    #[test]
    fn profiles_and_choices_parse() {
        assert_eq!(SchemaProfile::parse("strict"), Some(SchemaProfile::Strict));
        assert_eq!(SchemaProfile::parse("FULL"), Some(SchemaProfile::Full));
        assert_eq!(SchemaProfile::parse("auto"), None);
        assert_eq!(SchemaChoice::parse("auto"), Some(SchemaChoice::Auto));
        assert_eq!(
            SchemaChoice::parse("strict"),
            Some(SchemaChoice::Fixed(SchemaProfile::Strict))
        );
        assert_eq!(SchemaChoice::parse("loose"), None);
    }

    #[test]
    fn the_url_query_is_read_exactly() {
        assert_eq!(
            query_profile(Some("schema_profile=strict")),
            Some(SchemaProfile::Strict)
        );
        assert_eq!(
            query_profile(Some("output_schemas=1&schema_profile=full")),
            Some(SchemaProfile::Full)
        );
        assert_eq!(
            query_profile(Some("schema_profile=full&schema_profile=strict")),
            Some(SchemaProfile::Strict)
        );
        for ignored in [
            None,
            Some(""),
            Some("schema_profile"),
            Some("schema_profile=loose"),
            Some("xschema_profile=strict"),
            Some("schema_profile_x=strict"),
        ] {
            assert_eq!(query_profile(ignored), None, "{ignored:?}");
        }
    }

    #[test]
    fn the_table_decides_under_auto() {
        let auto = SchemaChoice::Auto;
        assert_eq!(auto.choose(None, [CODEX]), SchemaProfile::Strict);
        assert_eq!(auto.choose(None, [CLAUDE]), SchemaProfile::Full);
        assert_eq!(auto.choose(None, ["some-agent"]), SchemaProfile::Full);
        assert_eq!(auto.choose(None, []), SchemaProfile::Full);
        // The first name the table knows decides: an unknown clientInfo
        // name leaves it to the User-Agent.
        assert_eq!(
            auto.choose(None, ["some-agent", "GeminiCLI/0.9 (linux; x64)"]),
            SchemaProfile::Strict
        );
        assert_eq!(auto.choose(None, [CLAUDE, CODEX]), SchemaProfile::Full);
    }

    #[test]
    fn the_url_overrides_the_flag_which_overrides_the_table() {
        let strict = SchemaChoice::Fixed(SchemaProfile::Strict);
        let full = SchemaChoice::Fixed(SchemaProfile::Full);
        assert_eq!(strict.choose(None, [CLAUDE]), SchemaProfile::Strict);
        assert_eq!(full.choose(None, [CODEX]), SchemaProfile::Full);
        assert_eq!(
            strict.choose(Some("schema_profile=full"), [CODEX]),
            SchemaProfile::Full
        );
        assert_eq!(
            SchemaChoice::Auto.choose(Some("schema_profile=strict"), [CLAUDE]),
            SchemaProfile::Strict
        );
        assert_eq!(
            full.choose(Some("schema_profile=bogus"), [CODEX]),
            SchemaProfile::Full
        );
    }
}
