//! The step-up a refused call asks for: recorded by the surface that saw
//! the refusal, answered by the HTTP layer as an `insufficient_scope`
//! challenge (RFC 6750 §3.1) once the call is known to be safe to retry.

use std::sync::{Arc, Mutex};

/// One missing scope to ask for, and why (for `error_description`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepUp {
    /// The catalogue scope to ask for.
    pub scope: String,
    /// `METHOD path` of the refused request.
    pub request: String,
}

/// Where a request's surfaces leave the step-up for the HTTP layer: one
/// per authenticated request, so nothing leaks between requests.
#[derive(Debug, Clone, Default)]
pub struct ChallengeSlot(Arc<Mutex<Option<StepUp>>>);

impl ChallengeSlot {
    /// Records `step_up` (the first one wins: the call stopped there).
    pub fn set(&self, step_up: StepUp) {
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(step_up);
        }
    }

    /// Takes what was recorded.
    pub fn take(&self) -> Option<StepUp> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// Scratch state, not part of what a grant is: any two slots compare equal.
impl PartialEq for ChallengeSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ChallengeSlot {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_step_up_wins_and_is_taken_once() {
        let slot = ChallengeSlot::default();
        let first = StepUp {
            scope: "a:read".into(),
            request: "GET /a".into(),
        };
        slot.set(first.clone());
        slot.set(StepUp {
            scope: "b:read".into(),
            request: "GET /b".into(),
        });
        assert_eq!(slot.clone().take(), Some(first));
        assert_eq!(slot.take(), None);
    }
}
