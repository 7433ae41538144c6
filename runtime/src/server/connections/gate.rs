//! The bound on open connections, in total and per peer address, and what
//! happens at the bound.
//!
//! A connection that has not sent a complete request head (a fresh one,
//! one whose head is still arriving) or that sits idle between requests
//! costs a stranger nothing to hold: without a rule, a few dozen silent
//! sockets a second from one host kept every slot full before anyone
//! authenticated. So at the bound the oldest such connection is dropped to
//! make room (it has sent no request to answer, and an idle keep-alive
//! connection may be closed by the server at any time, RFC 9112 §9.6), and
//! only when every open connection is busy with a request is the newcomer
//! refused (`503`). Each peer address may hold at most `per_peer` slots
//! (IPv6 counted per /64, which one host usually owns); past that its new
//! connections get `429`, so one host cannot fill the table by itself.
//!
//! The evictable connections are kept in a [`BTreeMap`] ordered by when
//! they became evictable: admitting, evicting and every change of a
//! connection's phase cost O(log n) under one short lock.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::Activity;

/// Rejected connections being answered at once; beyond this a rejected
/// connection is closed without an answer, so a flood cannot make the
/// server hold unbounded work for connections it refused.
const MAX_REFUSING: usize = 64;
/// How long the refusal writer may take to write its answer, and then how
/// long it reads what the client sent before closing (so the close does
/// not reset the connection before the client has read the answer).
const REFUSE_WRITE: Duration = Duration::from_secs(1);
const REFUSE_LINGER: Duration = Duration::from_secs(1);
/// Bytes the refusal writer reads and discards at most.
const REFUSE_DRAIN_BYTES: usize = 64 * 1024;

/// Which peers share a per-address bound: an IPv4 address, or the /64 of
/// an IPv6 one (an IPv4-mapped IPv6 address counts as its IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerKey(IpAddr);

impl PeerKey {
    /// The key of a peer address.
    pub fn of(ip: IpAddr) -> PeerKey {
        match ip {
            IpAddr::V4(v4) => PeerKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => PeerKey(IpAddr::V4(v4)),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    PeerKey(IpAddr::V6(prefix.into()))
                }
            },
        }
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Every slot is held by a connection busy with a request (`503`).
    Full,
    /// Its peer address holds its share of slots already (`429`).
    PeerFull,
}

/// The outcome of [`Gate::admit`].
#[derive(Debug)]
pub enum Admission {
    /// A slot: the connection holds it until the [`Slot`] drops.
    Admitted(Slot),
    /// No slot, and why.
    Refused(Refusal),
}

/// The counts and the eviction order, under one lock.
#[derive(Debug, Default)]
struct Table {
    open: usize,
    peers: HashMap<PeerKey, usize>,
    /// Connections without a request in flight, oldest first.
    evictable: BTreeMap<u64, Arc<Activity>>,
    next: u64,
}

impl Table {
    /// Takes `activity`'s counts off the table (once).
    fn release(&mut self, activity: &Activity, peer: PeerKey) {
        if activity.released.swap(true, Ordering::Relaxed) {
            return;
        }
        self.open = self.open.saturating_sub(1);
        if let Some(n) = self.peers.get_mut(&peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.peers.remove(&peer);
            }
        }
    }
}

/// The shared part of a [`Gate`], which each admitted connection's
/// [`Activity`] reaches to enter and leave the eviction order.
#[derive(Debug)]
pub struct GateShared {
    max: usize,
    per_peer: usize,
    table: Mutex<Table>,
}

impl GateShared {
    fn table(&self) -> MutexGuard<'_, Table> {
        // No critical section can panic; a poisoned table is still valid.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `activity` last in the eviction order; `None` when it has been
    /// evicted or released already.
    pub(super) fn enlist(&self, activity: &Arc<Activity>) -> Option<u64> {
        let mut table = self.table();
        if activity.released.load(Ordering::Relaxed) {
            return None;
        }
        let seq = table.next;
        table.next = table.next.wrapping_add(1);
        table.evictable.insert(seq, Arc::clone(activity));
        Some(seq)
    }

    /// Takes entry `seq` out of the eviction order (if still there).
    pub(super) fn delist(&self, seq: u64) {
        self.table().evictable.remove(&seq);
    }
}

/// The bound on open connections (see the module documentation): an
/// admitted connection holds a [`Slot`] until it closes; the others are
/// answered by [`Gate::refuse`].
#[derive(Debug)]
pub struct Gate {
    shared: Arc<GateShared>,
    refusing: Arc<Semaphore>,
    full: Bytes,
    peer_full: Bytes,
    saturated: AtomicBool,
    evicting: AtomicBool,
    /// The flags of the two bounds, named in the log.
    flags: (&'static str, &'static str),
}

/// A place among the open connections, given back on drop.
#[derive(Debug)]
pub struct Slot {
    activity: Arc<Activity>,
    peer: PeerKey,
}

impl Slot {
    /// The state of the connection holding this slot.
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Lock order: the connection's phase, then the table.
        let queued = self.activity.state().queued.take();
        let Some(shared) = &self.activity.gate else {
            return;
        };
        let mut table = shared.table();
        if let Some(seq) = queued {
            table.evictable.remove(&seq);
        }
        table.release(&self.activity, self.peer);
    }
}

impl Gate {
    /// A bound of `max` open connections, `per_peer` of them from one
    /// peer address (each at least one).
    pub fn new(max: usize, per_peer: usize) -> Gate {
        let max = max.max(1);
        Gate {
            shared: Arc::new(GateShared {
                max,
                per_peer: per_peer.max(1),
                table: Mutex::new(Table::default()),
            }),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
            full: service_unavailable(max),
            peer_full: too_many_from_peer(per_peer.max(1)),
            saturated: AtomicBool::new(false),
            evicting: AtomicBool::new(false),
            flags: ("--max-connections", "--max-connections-per-ip"),
        }
    }

    /// The same gate, naming these flags (total, per peer) in its log lines.
    pub fn with_flags(mut self, total: &'static str, per_peer: &'static str) -> Gate {
        self.flags = (total, per_peer);
        self
    }

    /// A slot for a connection from `peer` accepted at `now`, evicting the
    /// oldest connection without a request in flight when every slot is
    /// taken. Never waits: the accept loop must keep accepting.
    pub fn admit(&self, peer: IpAddr, now: Instant) -> Admission {
        let peer = PeerKey::of(peer);
        let mut table = self.shared.table();
        if table.peers.get(&peer).copied().unwrap_or(0) >= self.shared.per_peer {
            return Admission::Refused(Refusal::PeerFull);
        }
        if table.open >= self.shared.max {
            let Some((_, victim)) = table.evictable.pop_first() else {
                return Admission::Refused(Refusal::Full);
            };
            if let Some(victim_peer) = victim.peer {
                table.release(&victim, victim_peer);
            }
            victim.evict();
            // One line per episode, as for refusals.
            if !self.evicting.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    limit = self.shared.max,
                    flag = self.flags.0,
                    "connection table full: dropping the oldest connections without a request in flight to admit new ones"
                );
            }
        } else {
            self.evicting.store(false, Ordering::Relaxed);
        }
        self.saturated.store(false, Ordering::Relaxed);
        table.open += 1;
        *table.peers.entry(peer).or_insert(0) += 1;
        let seq = table.next;
        table.next = table.next.wrapping_add(1);
        let activity = Activity::gated(now, Arc::clone(&self.shared), peer, seq);
        table.evictable.insert(seq, Arc::clone(&activity));
        Admission::Admitted(Slot { activity, peer })
    }

    /// Whether every slot is taken (a new connection would evict one or be
    /// refused).
    pub fn is_full(&self) -> bool {
        self.shared.table().open >= self.shared.max
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.shared.table().open
    }

    /// Answers a connection that got no slot (`503`, or `429` for a peer
    /// over its share; `Retry-After: 1`, `Connection: close`) on a task of
    /// its own, then closes it. When [`MAX_REFUSING`] answers are already
    /// being written the connection is closed at once instead. Returns
    /// immediately.
    pub fn refuse<S>(&self, stream: S, why: Refusal)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let answer = match why {
            Refusal::Full => {
                // One warning per episode of saturation, not one per connection.
                if !self.saturated.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        limit = self.shared.max,
                        flag = self.flags.0,
                        "connection limit reached: every connection is busy with a request; new connections get 503 until some close"
                    );
                }
                self.full.clone()
            }
            Refusal::PeerFull => {
                tracing::debug!(
                    limit = self.shared.per_peer,
                    flag = self.flags.1,
                    "a peer address holds its share of connections; answered 429"
                );
                self.peer_full.clone()
            }
        };
        let Ok(permit) = Arc::clone(&self.refusing).try_acquire_owned() else {
            tracing::debug!("too many refusals in progress; closing a connection unanswered");
            return;
        };
        tokio::spawn(async move {
            let _permit = permit;
            refuse(stream, &answer).await;
        });
    }
}

/// A whole plain-text response that closes its connection, built once.
fn closing_answer(status: &str, body: &str) -> Bytes {
    Bytes::from(format!(
        "HTTP/1.1 {status}\r\nRetry-After: 1\r\nConnection: close\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
}

/// The `503` of a full table.
pub(super) fn service_unavailable(max: usize) -> Bytes {
    closing_answer(
        "503 Service Unavailable",
        &format!(
            "Service Unavailable: the server has its maximum of {max} open connections; retry shortly.\n"
        ),
    )
}

/// The `429` of a peer over its share.
fn too_many_from_peer(per_peer: usize) -> Bytes {
    closing_answer(
        "429 Too Many Requests",
        &format!(
            "Too Many Requests: your address has the maximum of {per_peer} open connections; retry shortly.\n"
        ),
    )
}

/// Writes `answer`, shuts the write side, then reads (bounded in bytes and
/// time) until the client closes: closing a socket with unread input makes
/// the kernel send a reset, which can destroy the answer before the client
/// has read it.
async fn refuse<S>(mut stream: S, answer: &[u8])
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let written = tokio::time::timeout(REFUSE_WRITE, async {
        stream.write_all(answer).await?;
        stream.shutdown().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
    let _ = tokio::time::timeout(REFUSE_LINGER, async {
        let mut buf = [0u8; 4096];
        let mut read = 0;
        while read < REFUSE_DRAIN_BYTES {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests;
