use super::*;
use http_body::Body as _;
use http_body_util::BodyExt as _;

fn timeouts(header_ms: u64, idle_ms: u64) -> Timeouts {
    Timeouts {
        header_read: Duration::from_millis(header_ms),
        idle: Duration::from_millis(idle_ms),
        body_read: Duration::from_secs(1),
    }
}

#[test]
fn phases_and_their_deadlines() {
    let t = timeouts(100, 1000);
    let start = Instant::now();
    let activity = Activity::new(start);
    // A fresh connection is due its first head within the header timeout.
    assert_eq!(
        activity.verdict(start, &t),
        Verdict::Wait(start + t.header_read)
    );
    assert_eq!(
        activity.verdict(start + t.header_read, &t),
        Verdict::HeadTooSlow
    );
    // Busy: only the periodic check.
    let guard = activity.begin();
    let later = start + Duration::from_secs(30);
    assert_eq!(activity.verdict(later, &t), Verdict::Wait(later + t.tick()));
    drop(guard);
    // Idle after the response: the idle timeout, not the header one.
    let idle_since = match activity.state().phase {
        Phase::Idle(since) => since,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        activity.verdict(idle_since + t.header_read, &t),
        Verdict::Wait(idle_since + t.idle)
    );
    assert_eq!(activity.verdict(idle_since + t.idle, &t), Verdict::Idle);
    // A byte of the next request: its head is due within the header timeout.
    activity.bytes_read();
    let head_since = match activity.state().phase {
        Phase::Head(since) => since,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        activity.verdict(head_since, &t),
        Verdict::Wait(head_since + t.header_read)
    );
    // More bytes do not restart that clock.
    activity.bytes_read();
    assert_eq!(activity.state().phase, Phase::Head(head_since));
    assert_eq!(timeouts(0, 0).tick(), MIN_TICK);
}

/// A body that never sends anything.
struct Silent;

impl http_body::Body for Silent {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Pending
    }
}

#[tokio::test]
async fn a_silent_body_times_out_and_raises_the_flag() {
    let expired = Arc::new(AtomicBool::new(false));
    let timeout = Duration::from_millis(50);
    let started = Instant::now();
    let body = TimedBody::new(Silent, started, timeout, Arc::clone(&expired));
    let err = tokio::time::timeout(Duration::from_secs(5), body.collect())
        .await
        .unwrap()
        .unwrap_err();
    assert!(started.elapsed() >= timeout);
    assert!(matches!(err, BodyReadError::TimedOut(t) if t == timeout));
    assert_eq!(
        err.to_string(),
        "the request body did not arrive within 50 ms"
    );
    assert!(expired.load(Ordering::Relaxed));
}

#[tokio::test]
async fn a_complete_body_is_passed_through_even_past_its_deadline() {
    let expired = Arc::new(AtomicBool::new(false));
    let long_ago = Instant::now() - Duration::from_secs(60);
    let body = TimedBody::new(
        http_body_util::Full::new(Bytes::from_static(b"hello")),
        long_ago,
        Duration::from_secs(1),
        Arc::clone(&expired),
    );
    assert_eq!(body.size_hint().exact(), Some(5));
    let bytes = body.collect().await.unwrap().to_bytes();
    assert_eq!(&bytes[..], b"hello");
    assert!(!expired.load(Ordering::Relaxed));
}

#[test]
fn the_408_says_what_happened_and_closes() {
    let resp = body_timeout_response(Duration::from_secs(1));
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(resp.headers()[header::CONNECTION], "close");
    assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    assert_eq!(seconds(Duration::from_secs(10)), "10 s");
}

/// A connection that never ends by itself; a graceful close ends it.
struct FakeConn {
    closed: Arc<AtomicBool>,
}

impl Future for FakeConn {
    type Output = Result<(), hyper::Error>;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if self.closed.load(Ordering::Relaxed) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }
}

impl GracefulClose for FakeConn {
    fn close_gracefully(self: Pin<&mut Self>) {
        self.closed.store(true, Ordering::Relaxed);
    }
}

fn fake() -> (FakeConn, Arc<AtomicBool>) {
    let closed = Arc::new(AtomicBool::new(false));
    (
        FakeConn {
            closed: Arc::clone(&closed),
        },
        closed,
    )
}

#[tokio::test]
async fn the_watchdog_closes_idle_connections_gracefully_and_drops_slow_heads() {
    let t = timeouts(200, 100);
    let drain = Drain::default();
    // Idle after a request: closed gracefully about `idle` later.
    let activity = Activity::new(Instant::now());
    drop(activity.begin());
    let (conn, closed) = fake();
    let started = Instant::now();
    let ended = tokio::time::timeout(
        Duration::from_secs(5),
        drive(conn, &activity, t, drain.watcher()),
    )
    .await
    .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    assert!(closed.load(Ordering::Relaxed));
    assert!(started.elapsed() >= t.idle);
    // A fresh connection that sends nothing: dropped at the header timeout.
    let activity = Activity::new(Instant::now());
    let (conn, closed) = fake();
    let ended = tokio::time::timeout(
        Duration::from_secs(5),
        drive(conn, &activity, t, drain.watcher()),
    )
    .await
    .unwrap();
    assert!(matches!(ended, Err(ConnectionError::HeadTimedOut(_))));
    assert!(!closed.load(Ordering::Relaxed));
    // Busy: left alone however long it takes.
    let activity = Activity::new(Instant::now());
    let _busy = activity.begin();
    let (conn, _) = fake();
    let outcome = tokio::time::timeout(
        Duration::from_millis(500),
        drive(conn, &activity, t, drain.watcher()),
    )
    .await;
    assert!(outcome.is_err(), "a busy connection was ended: {outcome:?}");
}

#[tokio::test]
async fn shutdown_closes_gracefully_and_drain_waits_for_every_connection() {
    let t = timeouts(60_000, 60_000);
    let drain = Drain::default();
    let activity = Activity::new(Instant::now());
    let _busy = activity.begin();
    let (conn, closed) = fake();
    let watcher = drain.watcher();
    let task = tokio::spawn(async move { drive(conn, &activity, t, watcher).await });
    assert_eq!(drain.open(), 1);
    tokio::time::timeout(Duration::from_secs(5), drain.finish())
        .await
        .unwrap();
    assert!(closed.load(Ordering::Relaxed));
    assert!(task.await.unwrap().is_ok());
}

#[tokio::test]
async fn the_watchdog_drops_an_evicted_connection_at_once() {
    let t = timeouts(60_000, 60_000);
    let drain = Drain::default();
    let gate = Gate::new(1, 1);
    let now = Instant::now();
    let Admission::Admitted(silent) = gate.admit("10.0.0.1".parse().unwrap(), now) else {
        panic!("refused");
    };
    let activity = Arc::clone(silent.activity());
    let (conn, closed) = fake();
    let watched = tokio::spawn(async move { drive(conn, &activity, t, drain.watcher()).await });
    let Admission::Admitted(_newcomer) = gate.admit("10.0.0.2".parse().unwrap(), now) else {
        panic!("the newcomer was refused instead of evicting the silent connection");
    };
    let ended = tokio::time::timeout(Duration::from_secs(5), watched)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ended, Err(ConnectionError::Evicted)), "{ended:?}");
    assert!(!closed.load(Ordering::Relaxed));
    drop(silent);
    assert_eq!(gate.open(), 1);
}
