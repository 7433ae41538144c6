//! `--auth oauth`: the server as an OAuth 2.1 authorization server for its
//! MCP clients, wrapping the upstream API's own OAuth. The MCP client gets
//! tokens this server issues; each token's grant holds the user's upstream
//! tokens, sealed, which never leave the server.

pub mod model;
pub mod store;
