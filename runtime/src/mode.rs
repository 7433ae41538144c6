//! The server modes (a command-line value), present whichever features are on.

/// How the server presents the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One MCP tool per operation.
    Direct,
    /// Two tools: `search` (the spec) and `execute` (`api.request`).
    #[value(name = "codemode")]
    CodeMode,
    /// One `code` tool calling typed tool functions.
    Code,
}

impl Mode {
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::CodeMode => "codemode",
            Mode::Code => "code",
        }
    }
}
