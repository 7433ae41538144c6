//! Defaults of the HTTP connection limits, outside [`super::connections`]
//! so the command line can show them in a build without the `http` feature.

/// Default of `--body-read-timeout-secs`: a whole MCP request body (small
/// JSON, at most `--max-request-bytes`) arrives in well under a second on
/// any working link, and 10 s still leaves a slow one room.
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 10;
/// Default of `--idle-timeout-secs`: longer than the keep-alive time of the
/// usual MCP client stacks (Node's undici 4 s, Python's httpx 5 s), so the
/// server is not the side that drops a connection a client still uses.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
/// Default of `--max-connections`: half the common soft limit of 1,024 open
/// files, leaving room for upstream connections, sandbox worker pipes and
/// the 503 writers; idle connections cost little memory each, so 512 of
/// them stay well within a small server.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default of `--max-connections-per-ip`: an eighth of the default bound,
/// far more than one MCP client or browser opens (a handful each), so one
/// host alone cannot hold the whole table; several clients behind one NAT
/// address still fit.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 64;
/// Default of `--metrics-max-connections`: a scraper opens one connection
/// at a time; a few more leave room for a second scraper and a person.
pub const DEFAULT_METRICS_MAX_CONNECTIONS: usize = 16;
