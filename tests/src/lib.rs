//! Test helpers for toolforge's end-to-end tests.
//!
//! - [`sample`]: deterministic, schema-valid arguments for a tool's input schema;
//! - [`http`]: a tiny HTTP/1.1 client over `std::net::TcpStream`;
//! - [`prism`]: a Prism mock server child process, killed on drop;
//! - [`mock`]: sending a built [`HttpRequest`] to a mock server and reading its verdict;
//! - [`prism_tools`]: every tool of a catalogue, with sample arguments, against a Prism mock;
//! - [`server`]: the generated `cloudflare-mcp` binary as a child process, killed on drop;
//! - [`upstream`]: a scripted loopback HTTP upstream for fault tests;
//! - [`echo`]: upstream responses that echo the credential in many forms, and an oracle for it;
//! - [`mcp`]: a raw MCP client over Streamable HTTP;
//! - [`clients`]: the TypeScript and Python SDK client scripts (`tests/js`, `tests/py`);
//! - [`proxy`]: a proxy adding a bearer token, for clients that cannot send one;
//! - [`process`]: running a helper program with a time limit;
//! - [`postgres`]: a throwaway PostgreSQL server (initdb + pg_ctl), stopped on drop;
//! - [`sha256`]: token digests for the server's tokens file;
//! - [`oauth`]: the `--auth oauth` harness: a real upstream OAuth provider, the server, client scripts;
//! - [`oauth_flow`]: a raw OAuth client (register, authorize, exchange, refresh, revoke);
//! - [`oauth_driver`]: the OAuth SDK client scripts' line protocol;
//! - [`browser`]: a cookie-keeping HTTP walker through sign-in pages;
//! - [`webdriver`]: headless Chromium through chromedriver (W3C WebDriver);
//! - [`with_deadline`]: runs a test body on a thread and fails it after a time limit.

pub mod browser;
pub mod clients;
pub mod echo;
pub mod http;
pub mod in_process;
pub mod mcp;
pub mod mock;
pub mod oauth;
pub mod oauth_driver;
pub mod oauth_flow;
pub mod paging;
pub mod paging_fakes;
pub mod postgres;
pub mod prism;
pub mod prism_tools;
pub mod process;
pub mod proxy;
pub mod sample;
pub mod server;
pub mod sha256;
pub mod step_up_run;
pub mod upstream;
pub mod webdriver;

use std::time::Duration;

pub use toolforge_runtime::request::HttpRequest;

/// Runs `body` on its own thread and waits at most `limit` for it.
///
/// Resources that must be released on failure (such as a [`prism::Prism`]
/// guard) should stay with the caller: when the limit passes this returns
/// `Err` and the caller's guards drop as it fails.
///
/// # Errors
///
/// The body did not finish in time, or it panicked (the message is kept).
pub fn with_deadline<T, F>(limit: Duration, body: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        let _ = tx.send(result);
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(value)) => {
            let _ = handle.join();
            Ok(value)
        }
        Ok(Err(panic)) => {
            let _ = handle.join();
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic without a message".to_owned());
            Err(format!("the test body panicked: {message}"))
        }
        Err(_) => Err(format!("the test body did not finish within {limit:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_passes_values_panics_and_timeouts() {
        assert_eq!(with_deadline(Duration::from_secs(5), || 7), Ok(7));
        let err = with_deadline(Duration::from_secs(5), || -> u8 { panic!("boom") }).unwrap_err();
        assert!(err.contains("boom"), "{err}");
        let err = with_deadline(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(2))
        })
        .unwrap_err();
        assert!(err.contains("did not finish"), "{err}");
    }
}
