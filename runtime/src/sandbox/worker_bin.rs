//! Sandbox worker executable for tests and benchmarks of `toolforge-runtime`.
//!
//! Same as the hook in generated servers, plus the debug `abort` command that
//! tests use to prove a crashing worker does not take the pool down.

use std::process::ExitCode;

use toolforge_runtime::sandbox::{WorkerOptions, worker_main_with};

fn main() -> ExitCode {
    worker_main_with(&WorkerOptions {
        allow_debug_abort: true,
    })
}
