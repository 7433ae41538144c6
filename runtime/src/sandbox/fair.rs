//! A counting gate that hands out its permits fairly among clients.
//!
//! The sandbox pool has two scarce things: worker processes (a run holds
//! one from start to end, waits for the API included) and CPU slots (a run
//! holds one only while its JavaScript runs). First come, first served lets
//! one client that starts many runs starve everybody else, so a
//! [`FairGate`] queues waiters per [`ClientKey`] and serves the keys in
//! round-robin order, caps the permits one key may hold, and bounds the
//! queue: a waiter beyond the bound is refused at once ("busy, retry")
//! instead of waiting behind a backlog that cannot clear in time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

/// Who a run is for: the SHA-256 of the upstream credential (or, with
/// OAuth, of the grant). Runs of one key share that key's fair share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientKey(pub [u8; 32]);

impl ClientKey {
    /// The key of runs that name no client (all share one share).
    pub const ANONYMOUS: ClientKey = ClientKey([0; 32]);
}

/// Sizes of a [`FairGate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GateSize {
    /// Permits in all.
    pub capacity: usize,
    /// Permits one key may hold at once.
    pub per_key: usize,
    /// Waiters in all.
    pub max_queued: usize,
    /// Waiters of one key.
    pub max_queued_per_key: usize,
}

/// Why a permit was not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The queue (in all, or this key's part) is full.
    QueueFull {
        /// Waiters queued when the request came.
        queued: usize,
    },
    /// No permit came within the allowed wait.
    Timeout,
}

/// A fair counting gate; share it as `Arc<FairGate>`.
#[derive(Debug)]
pub(crate) struct FairGate {
    size: GateSize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    free: usize,
    held: HashMap<ClientKey, usize>,
    waiting: HashMap<ClientKey, VecDeque<Waiter>>,
    /// Keys with waiters, in the order they are served next.
    turn: VecDeque<ClientKey>,
    queued: usize,
    next_id: u64,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    tx: oneshot::Sender<Permit>,
}

/// One permit of a [`FairGate`]; given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    gate: Arc<FairGate>,
    key: ClientKey,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let handoffs = {
            let mut state = self.gate.lock();
            state.free += 1;
            if let Some(n) = state.held.get_mut(&self.key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    state.held.remove(&self.key);
                }
            }
            self.gate.dispatch(&mut state)
        };
        self.gate.hand_over(handoffs);
    }
}

/// Removes a waiter that gave up (its future was dropped or timed out).
struct Queued<'a> {
    gate: &'a Arc<FairGate>,
    key: ClientKey,
    id: u64,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        let Some(queue) = state.waiting.get_mut(&self.key) else {
            return;
        };
        let before = queue.len();
        queue.retain(|w| w.id != self.id);
        let removed = before - queue.len();
        let now_empty = queue.is_empty();
        state.queued -= removed;
        if now_empty {
            state.waiting.remove(&self.key);
            state.turn.retain(|k| *k != self.key);
        }
    }
}

impl FairGate {
    /// A gate with `size.capacity` free permits.
    pub(crate) fn new(size: GateSize) -> Arc<Self> {
        let size = GateSize {
            capacity: size.capacity.max(1),
            per_key: size.per_key.clamp(1, size.capacity.max(1)),
            ..size
        };
        Arc::new(Self {
            size,
            state: Mutex::new(State {
                free: size.capacity,
                ..State::default()
            }),
        })
    }

    /// The gate's sizes.
    #[cfg(test)]
    pub(crate) fn size(&self) -> GateSize {
        self.size
    }

    /// Waiters queued now.
    pub(crate) fn queued(&self) -> usize {
        self.lock().queued
    }

    /// A permit for `key`, waiting at most `wait` in the fair queue.
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        key: ClientKey,
        wait: Duration,
    ) -> Result<Permit, Refusal> {
        let (id, rx) = {
            let mut state = self.lock();
            let held = state.held.get(&key).copied().unwrap_or(0);
            // Free permits never sit next to eligible waiters (`dispatch`
            // runs on every change), so taking one skips nobody.
            if state.free > 0 && held < self.size.per_key && !state.waiting.contains_key(&key) {
                state.free -= 1;
                *state.held.entry(key).or_default() += 1;
                return Ok(Permit {
                    gate: Arc::clone(self),
                    key,
                });
            }
            let mine = state.waiting.get(&key).map_or(0, VecDeque::len);
            if state.queued >= self.size.max_queued || mine >= self.size.max_queued_per_key {
                return Err(Refusal::QueueFull {
                    queued: state.queued,
                });
            }
            let id = state.next_id;
            state.next_id += 1;
            let (tx, rx) = oneshot::channel();
            let queue = state.waiting.entry(key).or_default();
            queue.push_back(Waiter { id, tx });
            if queue.len() == 1 {
                state.turn.push_back(key);
            }
            state.queued += 1;
            (id, rx)
        };
        let queued = Queued {
            gate: self,
            key,
            id,
        };
        let mut rx = rx;
        let outcome = tokio::time::timeout(wait, &mut rx).await;
        drop(queued);
        match outcome {
            Ok(Ok(permit)) => Ok(permit),
            // The sender is only dropped when the waiter was removed, which
            // happens here; treat it like a timeout.
            Ok(Err(_)) => Err(Refusal::Timeout),
            // A permit sent in the last instant is still ours.
            Err(_) => rx.try_recv().map_err(|_| Refusal::Timeout),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent counts (every
        // update is a few plain assignments), so poisoning is ignored.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Gives free permits to eligible waiters, keys in turn; returns the
    /// hand-overs to make once the lock is released.
    fn dispatch(&self, state: &mut State) -> Vec<(ClientKey, oneshot::Sender<Permit>)> {
        let mut out = Vec::new();
        let mut passed = 0;
        while state.free > 0 && passed < state.turn.len() {
            let Some(key) = state.turn.pop_front() else {
                break;
            };
            let held = state.held.get(&key).copied().unwrap_or(0);
            if held >= self.size.per_key {
                state.turn.push_back(key);
                passed += 1;
                continue;
            }
            let Some(queue) = state.waiting.get_mut(&key) else {
                continue;
            };
            let Some(waiter) = queue.pop_front() else {
                state.waiting.remove(&key);
                continue;
            };
            if queue.is_empty() {
                state.waiting.remove(&key);
            } else {
                state.turn.push_back(key);
            }
            state.queued -= 1;
            state.free -= 1;
            *state.held.entry(key).or_default() += 1;
            out.push((key, waiter.tx));
            passed = 0;
        }
        out
    }

    /// Sends each permit; a waiter that has gone away returns its permit
    /// through `Permit::drop`, outside the lock.
    fn hand_over(self: &Arc<Self>, handoffs: Vec<(ClientKey, oneshot::Sender<Permit>)>) {
        for (key, tx) in handoffs {
            let permit = Permit {
                gate: Arc::clone(self),
                key,
            };
            drop(tx.send(permit));
        }
    }
}

#[cfg(test)]
mod tests;
