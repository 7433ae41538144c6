#![allow(clippy::unwrap_used)]
//! The per-call log line is written once the answer is (it is a `write`
//! to stderr the client need not wait for), and keeps its fields and the
//! caller's span.

use tokio_util::sync::CancellationToken;

use crate::authz::Connection;
use crate::log_capture_tests::Captured;
use crate::server::example_core_tests::example_core;

#[test]
fn the_call_log_line_comes_after_the_answer_in_the_callers_span() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        rt.block_on(async {
            let core = example_core(&["thing_get"]);
            let span = tracing::info_span!("request", id = 7);
            let connection = Connection::default();
            let call = core.call_observed(
                "thing_get",
                None,
                None,
                &connection,
                CancellationToken::new(),
                None,
            );
            // No credential: a quick tool error, no upstream request.
            let result = tracing::Instrument::instrument(call, span).await.unwrap();
            assert_eq!(result.is_error, Some(true));
            assert!(
                !captured.text().contains("tools/call"),
                "logged before the answer: {}",
                captured.text()
            );
            tokio::task::yield_now().await;
            let log = captured.text();
            let line = log
                .lines()
                .find(|l| l.contains("tools/call"))
                .unwrap_or_else(|| panic!("no call line: {log}"));
            for part in [
                "INFO",
                "request{id=7}",
                "tool=\"thing_get\"",
                "cancelled=false",
                "is_error=true",
                "elapsed_ms=",
            ] {
                assert!(line.contains(part), "{part} missing: {line}");
            }
        });
    });
}
