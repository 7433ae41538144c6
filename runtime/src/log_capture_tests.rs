#![allow(clippy::unwrap_used)]
//! A log writer for tests that read what a `tracing` subscriber wrote.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Every byte the subscriber wrote, shared by its clones (one per writer
/// the subscriber asks for).
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// What was written so far, as text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
