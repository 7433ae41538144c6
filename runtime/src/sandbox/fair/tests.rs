use std::time::Duration;

use super::*;

const LONG: Duration = Duration::from_secs(5);

fn key(n: u8) -> ClientKey {
    ClientKey([n; 32])
}

fn gate(capacity: usize, per_key: usize, max_queued: usize, per_key_queue: usize) -> Arc<FairGate> {
    FairGate::new(GateSize {
        capacity,
        per_key,
        max_queued,
        max_queued_per_key: per_key_queue,
    })
}

/// Spawns a waiter that reports its label when it gets a permit, then
/// holds the permit until told to let go.
fn waiter(
    gate: &Arc<FairGate>,
    k: ClientKey,
    label: &'static str,
    order: tokio::sync::mpsc::UnboundedSender<&'static str>,
) -> tokio::task::JoinHandle<Result<Permit, Refusal>> {
    let gate = Arc::clone(gate);
    tokio::spawn(async move {
        let permit = gate.acquire(k, LONG).await;
        let _ = order.send(label);
        permit
    })
}

async fn until_queued(gate: &FairGate, n: usize) {
    for _ in 0..1000 {
        if gate.queued() == n {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("queue never reached {n} (is {})", gate.queued());
}

#[tokio::test]
async fn keys_are_served_in_turn_not_in_arrival_order() {
    let g = gate(1, 1, 16, 16);
    let first = g.acquire(key(1), LONG).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // key 1 queues three runs before key 2 and key 3 queue one each
    let mut handles = Vec::new();
    for label in ["a1", "a2", "a3"] {
        handles.push(waiter(&g, key(1), label, tx.clone()));
        until_queued(&g, handles.len()).await;
    }
    handles.push(waiter(&g, key(2), "b1", tx.clone()));
    until_queued(&g, 4).await;
    handles.push(waiter(&g, key(3), "c1", tx.clone()));
    until_queued(&g, 5).await;
    drop(first);
    let mut served = Vec::new();
    // each served waiter releases its permit as soon as it reports
    for _ in 0..5 {
        let label = rx.recv().await.unwrap();
        served.push(label);
        let i = ["a1", "a2", "a3", "b1", "c1"]
            .iter()
            .position(|l| *l == label)
            .unwrap();
        let permit = (&mut handles[i]).await.unwrap().unwrap();
        drop(permit);
    }
    assert_eq!(served, ["a1", "b1", "c1", "a2", "a3"]);
}

#[tokio::test]
async fn one_key_cannot_hold_more_than_its_share() {
    let g = gate(4, 2, 16, 16);
    let a1 = g.acquire(key(1), LONG).await.unwrap();
    let _a2 = g.acquire(key(1), LONG).await.unwrap();
    // a third permit for key 1 waits although two are free
    let blocked = g.acquire(key(1), Duration::from_millis(30)).await;
    assert_eq!(blocked.unwrap_err(), Refusal::Timeout);
    // another key gets one at once
    let _b = tokio::time::timeout(Duration::from_millis(100), g.acquire(key(2), LONG))
        .await
        .unwrap()
        .unwrap();
    // when key 1 gives one back, its waiter is served
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let h = waiter(&g, key(1), "a3", tx);
    until_queued(&g, 1).await;
    drop(a1);
    assert_eq!(rx.recv().await, Some("a3"));
    assert!(h.await.unwrap().is_ok());
}

#[tokio::test]
async fn the_queue_is_bounded_in_all_and_per_key() {
    let g = gate(1, 1, 3, 2);
    let _held = g.acquire(key(9), LONG).await.unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let _w1 = waiter(&g, key(1), "1", tx.clone());
    let _w2 = waiter(&g, key(1), "2", tx.clone());
    until_queued(&g, 2).await;
    // key 1's part of the queue is full
    assert_eq!(
        g.acquire(key(1), LONG).await.unwrap_err(),
        Refusal::QueueFull { queued: 2 }
    );
    let _w3 = waiter(&g, key(2), "3", tx.clone());
    until_queued(&g, 3).await;
    // the whole queue is full
    assert_eq!(
        g.acquire(key(3), LONG).await.unwrap_err(),
        Refusal::QueueFull { queued: 3 }
    );
}

#[tokio::test]
async fn a_waiter_that_gives_up_leaves_no_trace() {
    let g = gate(1, 1, 4, 4);
    let held = g.acquire(key(1), LONG).await.unwrap();
    // timed out
    assert_eq!(
        g.acquire(key(2), Duration::from_millis(10))
            .await
            .unwrap_err(),
        Refusal::Timeout
    );
    assert_eq!(g.queued(), 0);
    // dropped while queued
    let g2 = Arc::clone(&g);
    let dropped = tokio::spawn(async move { g2.acquire(key(3), LONG).await });
    until_queued(&g, 1).await;
    dropped.abort();
    let _ = dropped.await;
    assert_eq!(g.queued(), 0);
    drop(held);
    // every permit is back: the full capacity can be taken again
    let again = tokio::time::timeout(Duration::from_millis(100), g.acquire(key(4), LONG))
        .await
        .unwrap();
    assert!(again.is_ok());
}

#[tokio::test]
async fn sizes_are_clamped() {
    let g = gate(0, 0, 0, 0);
    assert_eq!(g.size().capacity, 1);
    assert_eq!(g.size().per_key, 1);
    let p = g.acquire(ClientKey::ANONYMOUS, LONG).await;
    assert!(p.is_ok());
}
