use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn admitted(admission: Admission) -> Slot {
    match admission {
        Admission::Admitted(slot) => slot,
        Admission::Refused(why) => panic!("refused: {why:?}"),
    }
}

fn refused(admission: Admission) -> Refusal {
    match admission {
        Admission::Admitted(_) => panic!("admitted"),
        Admission::Refused(why) => why,
    }
}

fn is_evicted(slot: &Slot) -> bool {
    slot.activity().released.load(Ordering::Relaxed)
}

#[test]
fn busy_connections_fill_the_gate_and_a_newcomer_is_refused_503() {
    let gate = Gate::new(2, 8);
    let now = Instant::now();
    let a = admitted(gate.admit(ip("10.0.0.1"), now));
    let b = admitted(gate.admit(ip("10.0.0.2"), now));
    let _busy = (a.activity().begin(), b.activity().begin());
    assert_eq!(gate.open(), 2);
    assert_eq!(refused(gate.admit(ip("10.0.0.3"), now)), Refusal::Full);
    assert!(!is_evicted(&a) && !is_evicted(&b));
    drop(a);
    assert_eq!(gate.open(), 1);
    let _c = admitted(gate.admit(ip("10.0.0.3"), now));
    assert_eq!(gate.open(), 2);
    drop(b);
    assert_eq!(gate.open(), 1);
    assert_eq!(
        Gate::new(0, 0).shared.max,
        1,
        "a zero bound still admits one"
    );
}

/// The attack: silent sockets (no request head) hold every slot; a new
/// connection takes the oldest one's place, and the evicted one is told so.
#[tokio::test]
async fn at_the_bound_the_oldest_silent_connection_makes_room() {
    let gate = Gate::new(3, 8);
    let now = Instant::now();
    let silent: Vec<Slot> = (1..=3)
        .map(|i| admitted(gate.admit(ip(&format!("10.0.0.{i}")), now)))
        .collect();
    let newcomer = admitted(gate.admit(ip("10.0.1.1"), now));
    assert_eq!(gate.open(), 3);
    assert!(is_evicted(&silent[0]), "the oldest was not evicted");
    assert!(!is_evicted(&silent[1]) && !is_evicted(&silent[2]));
    // The watchdog of the evicted one wakes at once.
    tokio::time::timeout(
        Duration::from_secs(5),
        silent[0].activity().evicted.notified(),
    )
    .await
    .unwrap();
    // Its later drop gives back nothing twice.
    let mut silent = silent.into_iter();
    drop(silent.next());
    assert_eq!(gate.open(), 3);
    // The newcomer sent its head: it is busy and never evicted; the next
    // two newcomers take the remaining silent slots, then a fourth is refused.
    let _busy = newcomer.activity().begin();
    let x = admitted(gate.admit(ip("10.0.1.2"), now));
    let y = admitted(gate.admit(ip("10.0.1.3"), now));
    assert!(silent.all(|s| is_evicted(&s)));
    assert!(!is_evicted(&newcomer));
    // The two newest are silent too: they make room, oldest first.
    let _z = admitted(gate.admit(ip("10.0.1.4"), now));
    assert!(is_evicted(&x) && !is_evicted(&y));
    assert_eq!(gate.open(), 3);
}

/// A connection idle between requests (say after an unauthenticated
/// `/healthz`) is as cheap to hold as a silent one, and is evictable too;
/// it re-enters the order at the end when its response is done.
#[test]
fn idle_keep_alive_connections_are_evictable_busy_ones_are_not() {
    let gate = Gate::new(2, 8);
    let now = Instant::now();
    let first = admitted(gate.admit(ip("10.0.0.1"), now));
    let second = admitted(gate.admit(ip("10.0.0.2"), now));
    // `first` serves a request and goes idle: now the newest in the order.
    drop(first.activity().begin());
    let third = admitted(gate.admit(ip("10.0.0.3"), now));
    assert!(is_evicted(&second) && !is_evicted(&first));
    // A request in flight on `first`: the silent `third` goes first.
    let busy = first.activity().begin();
    let _fourth = admitted(gate.admit(ip("10.0.0.4"), now));
    assert!(is_evicted(&third) && !is_evicted(&first));
    drop(busy);
    assert_eq!(gate.open(), 2);
}

#[test]
fn one_peer_cannot_exceed_its_share_while_others_are_admitted() {
    let gate = Gate::new(100, 3);
    let now = Instant::now();
    let held: Vec<Slot> = (0..3)
        .map(|_| admitted(gate.admit(ip("10.0.0.9"), now)))
        .collect();
    assert_eq!(refused(gate.admit(ip("10.0.0.9"), now)), Refusal::PeerFull);
    // An IPv4-mapped IPv6 address is the same peer.
    assert_eq!(
        refused(gate.admit(ip("::ffff:10.0.0.9"), now)),
        Refusal::PeerFull
    );
    let _other = admitted(gate.admit(ip("10.0.0.10"), now));
    // IPv6 counts per /64: one host rotating its interface id is one peer.
    let v6: Vec<Slot> = (1..=3)
        .map(|i| admitted(gate.admit(ip(&format!("2001:db8:1:2::{i}")), now)))
        .collect();
    assert_eq!(
        refused(gate.admit(ip("2001:db8:1:2:ffff::1"), now)),
        Refusal::PeerFull
    );
    let _next_prefix = admitted(gate.admit(ip("2001:db8:1:3::1"), now));
    // A closed connection gives its peer's share back.
    drop(held);
    drop(v6);
    let _again = admitted(gate.admit(ip("10.0.0.9"), now));
    assert_eq!(gate.open(), 3);
    assert!(gate.shared.table().peers.len() == 3);
}

/// An evicted connection gives back its peer's share at once.
#[test]
fn eviction_gives_back_the_evicted_peers_share() {
    let gate = Gate::new(2, 2);
    let now = Instant::now();
    let a = admitted(gate.admit(ip("10.0.0.1"), now));
    let _b = admitted(gate.admit(ip("10.0.0.1"), now));
    assert_eq!(refused(gate.admit(ip("10.0.0.1"), now)), Refusal::PeerFull);
    let _c = admitted(gate.admit(ip("10.0.0.2"), now));
    assert!(is_evicted(&a));
    let _d = admitted(gate.admit(ip("10.0.0.1"), now));
    assert_eq!(gate.open(), 2);
}

#[test]
fn the_refusals_are_minimal_and_complete() {
    for (answer, status, says) in [
        (
            service_unavailable(4),
            "HTTP/1.1 503 Service Unavailable\r\n",
            "maximum of 4 open connections",
        ),
        (
            too_many_from_peer(2),
            "HTTP/1.1 429 Too Many Requests\r\n",
            "your address has the maximum of 2 open connections",
        ),
    ] {
        let text = std::str::from_utf8(&answer).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with(status), "{head}");
        assert!(head.contains("\r\nRetry-After: 1\r\n"), "{head}");
        assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
        assert!(
            head.contains(&format!("\r\nContent-Length: {}", body.len())),
            "{head}"
        );
        assert!(body.contains(says), "{body}");
    }
}

#[tokio::test]
async fn a_refused_connection_reads_the_answer_then_end_of_stream() {
    let gate = Gate::new(1, 1);
    for (why, want) in [
        (Refusal::Full, service_unavailable(1)),
        (Refusal::PeerFull, too_many_from_peer(1)),
    ] {
        let (client, server) = tokio::io::duplex(4096);
        gate.refuse(server, why);
        let (mut read, mut write) = tokio::io::split(client);
        // The client's request arrives after the answer was written: it is
        // read and discarded, and the client still gets the whole answer.
        write.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), read.read_to_end(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, want.to_vec());
    }
}
