//! When an `execute` run may ask to step up: every request it made was a
//! GET/HEAD or was itself refused (nothing was written), a request was
//! refused for a scope the grant lacks, and the code let that refusal end
//! the run (it did not catch it). The scope comes from the host's own
//! decision, never from anything the sandbox reports.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::authz::{Connection, Decision, StepUp, decide};
use crate::catalogue::{Method, ToolDef};
use crate::sandbox::SandboxError;

/// What one run's requests did, as far as step-up cares.
#[derive(Debug, Default)]
pub struct RunWatch {
    /// A request that may have changed something was made.
    wrote: AtomicBool,
    /// The first refusal naming a scope to ask for, and the error text
    /// the code received for it.
    refusal: Mutex<Option<(StepUp, String)>>,
}

impl RunWatch {
    /// Notes a request to `tool` at `path` answered with `status`; `error`
    /// is the text the promise rejected with (when it did).
    pub fn saw(
        &self,
        connection: &Connection,
        tool: &ToolDef,
        path: &str,
        status: Option<u16>,
        error: Option<&str>,
    ) {
        let reads = matches!(tool.method, Method::Get | Method::Head);
        let refused = matches!(status, Some(401 | 403));
        if !reads && !refused {
            // Sent (or maybe sent: a transport error) and not refused.
            self.wrote.store(true, Ordering::Relaxed);
        }
        let (Connection::OAuth(grant), true, Some(error)) = (connection, refused, error) else {
            return;
        };
        if let Decision::Missing {
            ask_for: Some(scope),
            ..
        } = decide(connection, tool, path)
            && grant.hides(tool).is_none()
            && let Ok(mut slot) = self.refusal.lock()
            && slot.is_none()
        {
            *slot = Some((
                StepUp {
                    scope,
                    request: format!("{} {path}", tool.method.as_str()),
                },
                error.to_owned(),
            ));
        }
    }

    /// The step-up for a run that ended with `result`, if it may ask.
    pub fn step_up<T>(&self, result: &Result<T, SandboxError>) -> Option<StepUp> {
        if self.wrote.load(Ordering::Relaxed) {
            return None;
        }
        let Err(SandboxError::Thrown { message, .. }) = result else {
            return None;
        };
        let slot = self.refusal.lock().ok()?;
        let (step_up, error) = slot.as_ref()?;
        // Uncaught: the run ended with the very refusal the host gave.
        message.contains(error.as_str()).then(|| step_up.clone())
    }
}
