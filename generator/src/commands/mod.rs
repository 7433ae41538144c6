//! The libraries of the `toolforge` subcommands that are not `generate`:
//! each reads the pipeline's stages and results, and none of the stages
//! reads them (their CLI halves are in `bin/toolforge/`).

pub mod corpus;
pub mod diff;
pub mod init;
pub mod init_lock;
pub mod schema_report;
