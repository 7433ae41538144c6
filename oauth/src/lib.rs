//! `--auth oauth`: the server as an OAuth 2.1 authorization server for its
//! MCP clients, wrapping the upstream API's own OAuth. The MCP client gets
//! tokens this server issues; each token's grant holds the user's upstream
//! tokens, sealed, which never leave the server.
//!
//! A crate of its own (`toolforge-oauth`), re-exported by
//! `toolforge-runtime` as `oauth` behind its `oauth` feature, so generated
//! crates keep one dependency. It knows grants, tokens and scopes, never
//! tools: the MCP server passes in what it needs from the API's profile
//! ([`ScopedUrls`]), sets the events hook ([`events::set_hook`]) and puts
//! the peer address on each request ([`limits::ClientAddr`]). The grant
//! store's conformance suite (`store::suite`) is behind the `testing`
//! feature.
//!
//! - [`config`]: the `--oauth-config` file;
//! - [`crypto`]: random tokens, keyed hashes, sealing, signatures;
//! - [`store`]: the grant store trait and its SQLite / PostgreSQL backends;
//! - [`clients`]: Client ID Metadata Documents and registered clients;
//! - [`limits`]: per-address rates and totals a stranger is held to;
//! - [`upstream`]: the server as the upstream provider's OAuth client;
//! - [`server`]: the endpoints and the per-request token check.

mod cimd;
pub mod clients;
pub mod config;
pub mod crypto;
pub mod events;
pub mod limits;
pub mod model;
pub mod server;
pub mod store;
pub mod upstream;

pub use server::{NoScopedUrls, OAuthServer, OAuthSetup, Rejection, ScopedUrls, Session};
