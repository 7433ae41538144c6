//! Connection bookkeeping of the HTTP server: a bound on open connections,
//! in total and per peer address, that evicts connections without a
//! request in flight before it refuses one ([`Gate`]), what each connection
//! is doing (between requests, receiving a request head, or busy with a
//! request), and a deadline for each of those states and for the request
//! body.
//!
//! Why hyper's own timer is not used: hyper 1.12's `header_read_timeout`
//! arms its timer whenever the connection starts waiting for a request
//! head, which is at accept and again as soon as a response has been
//! written (`State::idle` sets `notify_read`, and the next `poll_read_head`
//! arms the timer). So it does cover idle keep-alive time: measured on the
//! previous build, a keep-alive connection left alone after a response was
//! closed exactly `header_read_timeout` (10 s) later, and so was a connection
//! that never sent a byte. An idle timeout longer than the header timeout
//! could then never fire. The server therefore turns hyper's timer off, and
//! [`drive`] measures both phases itself: idle time from the end of the last
//! response, header time from the first byte of the next request head (or
//! from accept). Hyper has no timeout at all for a request body that stops
//! arriving: [`TimedBody`] gives each whole body one deadline.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, Sleep};

pub use super::limits::{
    DEFAULT_BODY_READ_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_IP, DEFAULT_METRICS_MAX_CONNECTIONS,
};
pub use gate::{Admission, Gate, PeerKey, Refusal, Slot};

mod gate;
/// Shortest sleep of a watchdog (a zero timeout must not spin).
const MIN_TICK: Duration = Duration::from_millis(1);

/// The deadlines of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From accept, or from the first byte of a later request, until that
    /// request's head is complete.
    pub header_read: Duration,
    /// From the end of a response until the first byte of the next request.
    pub idle: Duration,
    /// From a complete request head until the end of its body.
    pub body_read: Duration,
}

impl Timeouts {
    /// The longest a watchdog sleeps between checks. A phase that starts
    /// after a check cannot end before the next one, so no deadline is
    /// noticed late, and no request or read has to wake the watchdog.
    fn tick(&self) -> Duration {
        self.header_read.min(self.idle).max(MIN_TICK)
    }
}

// --- what a connection is doing -----------------------------------------

/// What one connection is doing, shared by its stream ([`Tracked`]), its
/// service ([`ConnService`]), its watchdog ([`drive`]) and, while it has
/// no request in flight, the eviction order of its [`Gate`].
#[derive(Debug)]
pub struct Activity {
    state: Mutex<State>,
    /// The gate it holds a slot of, and its peer (`None` when not gated).
    gate: Option<Arc<gate::GateShared>>,
    peer: Option<PeerKey>,
    /// Set (under the gate's lock) once its slot is given back.
    released: AtomicBool,
    /// Woken when the gate evicts it.
    evicted: Notify,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// Its entry in the gate's eviction order, while it has one.
    queued: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head since this instant: a fresh connection,
    /// or the first byte of the next request arrived then.
    Head(Instant),
    /// No request in flight and no byte of the next one since this instant
    /// (the end of the last response).
    Idle(Instant),
    /// This many requests in flight (one for HTTP/1.1: hyper serves a
    /// connection's requests one after another).
    Busy(usize),
}

/// What a connection's watchdog should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing before this instant.
    Wait(Instant),
    /// Idle too long: close it gracefully.
    Idle,
    /// A request head took too long: drop the connection.
    HeadTooSlow,
}

impl Activity {
    /// A connection accepted at `now`, not under a [`Gate`]: its first
    /// request head is due within the header timeout. (Silence on a fresh
    /// connection is not keep-alive, so it does not get the longer idle
    /// timeout.)
    pub fn new(now: Instant) -> Arc<Activity> {
        Arc::new(Activity {
            state: Mutex::new(State {
                phase: Phase::Head(now),
                queued: None,
            }),
            gate: None,
            peer: None,
            released: AtomicBool::new(false),
            evicted: Notify::new(),
        })
    }

    /// A connection admitted by a gate at `now`, entry `seq` of its
    /// eviction order.
    fn gated(now: Instant, gate: Arc<gate::GateShared>, peer: PeerKey, seq: u64) -> Arc<Activity> {
        Arc::new(Activity {
            state: Mutex::new(State {
                phase: Phase::Head(now),
                queued: Some(seq),
            }),
            gate: Some(gate),
            peer: Some(peer),
            released: AtomicBool::new(false),
            evicted: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The critical sections cannot panic; a poisoned lock still holds a
        // valid state.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells the watchdog to drop the connection (the gate needs its slot).
    fn evict(&self) {
        self.evicted.notify_one();
    }

    /// Bytes arrived. Between requests this starts the next request head's
    /// clock (the connection stays evictable until the head is complete).
    /// (Bytes hyper reads while a request is in flight, such as a
    /// pipelined next request, do not: that request is then timed as idle,
    /// still bounded by the idle timeout.)
    fn bytes_read(&self) {
        let mut state = self.state();
        if matches!(state.phase, Phase::Idle(_)) {
            state.phase = Phase::Head(Instant::now());
        }
    }

    /// A request is in flight until the returned guard drops; meanwhile the
    /// connection cannot be evicted.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        let mut state = self.state();
        state.phase = match state.phase {
            Phase::Busy(n) => Phase::Busy(n.saturating_add(1)),
            Phase::Head(_) | Phase::Idle(_) => Phase::Busy(1),
        };
        if let (Some(seq), Some(gate)) = (state.queued.take(), &self.gate) {
            gate.delist(seq);
        }
        InFlight(Arc::clone(self))
    }

    fn end(self: &Arc<Self>) {
        let mut state = self.state();
        state.phase = match state.phase {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        };
        if matches!(state.phase, Phase::Idle(_))
            && state.queued.is_none()
            && let Some(gate) = &self.gate
        {
            state.queued = gate.enlist(self);
        }
    }

    /// What the watchdog should do at `now`.
    pub fn verdict(&self, now: Instant, timeouts: &Timeouts) -> Verdict {
        let (since, limit, expired) = match self.state().phase {
            Phase::Busy(_) => return Verdict::Wait(now + timeouts.tick()),
            Phase::Head(since) => (since, timeouts.header_read, Verdict::HeadTooSlow),
            Phase::Idle(since) => (since, timeouts.idle, Verdict::Idle),
        };
        let deadline = since + limit;
        if now >= deadline {
            expired
        } else {
            Verdict::Wait(deadline)
        }
    }
}

/// Marks a request in flight; dropped when its response body is done (or
/// the request is abandoned), which starts the connection's idle time.
#[derive(Debug)]
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A stream that tells its connection's [`Activity`] when bytes arrive.
#[derive(Debug)]
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Tracked { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    // Forwarded so that hyper keeps writing a response's pieces (the shared
    // listing bytes) with one `writev`.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

// --- the request body deadline -------------------------------------------

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyReadError {
    /// The whole body did not arrive within the body-read timeout.
    #[error("the request body did not arrive within {}", seconds(*.0))]
    TimedOut(Duration),
    /// Reading it failed.
    #[error("reading the request body failed: {0}")]
    Read(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A request body that must end by a deadline; past it, reading fails with
/// [`BodyReadError::TimedOut`] and the shared flag is raised so that the
/// response becomes a 408, whoever was reading the body.
#[derive(Debug)]
pub struct TimedBody<B> {
    inner: B,
    timeout: Duration,
    deadline: Instant,
    // Armed at the first read that has to wait: most bodies are already in
    // hyper's buffer and never need a timer.
    sleep: Option<Pin<Box<Sleep>>>,
    expired: Arc<AtomicBool>,
}

impl<B> TimedBody<B> {
    /// `inner`, due `timeout` after `start`; `expired` is set when it is late.
    pub fn new(inner: B, start: Instant, timeout: Duration, expired: Arc<AtomicBool>) -> Self {
        TimedBody {
            inner,
            timeout,
            deadline: start + timeout,
            sleep: None,
            expired,
        }
    }
}

impl<B> http_body::Body for TimedBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = BodyReadError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyReadError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(|e| BodyReadError::Read(e.into()))));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.expired.store(true, Ordering::Relaxed);
                Poll::Ready(Some(Err(BodyReadError::TimedOut(this.timeout))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `1 s`, `1.5 s`, `250 ms`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The answer to a request whose body was late: `408`, plain text saying
/// so, and `Connection: close` (the rest of the body may still be on its
/// way, so the connection cannot carry another request).
pub fn body_timeout_response(timeout: Duration) -> Response<Body> {
    let text = format!(
        "Request Timeout: the request body did not arrive within {} (--body-read-timeout-secs); closing the connection.\n",
        seconds(timeout)
    );
    let mut resp = Response::new(Body::from(text));
    *resp.status_mut() = StatusCode::REQUEST_TIMEOUT;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

// --- the per-connection service -----------------------------------------

/// The TCP peer of the connection a request came on (a request
/// extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// The hyper service of one connection: marks each request in flight
/// until its response body is done, puts the request body under the
/// body-read deadline, and answers 408 when that deadline passed, whoever
/// read the body (our middleware or rmcp).
#[derive(Debug, Clone)]
pub struct ConnService {
    app: TowerToHyperService<Router>,
    activity: Arc<Activity>,
    body_read: Duration,
    peer: Option<std::net::SocketAddr>,
}

impl ConnService {
    /// The service for a connection whose state is `activity`.
    pub fn new(app: Router, activity: Arc<Activity>, body_read: Duration) -> Self {
        ConnService {
            app: TowerToHyperService::new(app),
            activity,
            body_read,
            peer: None,
        }
    }

    /// Gives each request the connection's peer address as a [`PeerAddr`]
    /// extension (the OAuth routes bound what one address may create).
    #[must_use]
    pub fn with_peer(mut self, peer: std::net::SocketAddr) -> Self {
        self.peer = Some(peer);
        self
    }
}

type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn call(&self, req: Request<Incoming>) -> ServiceFuture {
        let in_flight = self.activity.begin();
        let expired = Arc::new(AtomicBool::new(false));
        let timeout = self.body_read;
        let mut req = req;
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(PeerAddr(peer));
        }
        let req = req.map(|body| {
            Body::new(TimedBody::new(
                body,
                Instant::now(),
                timeout,
                Arc::clone(&expired),
            ))
        });
        let handled = hyper::service::Service::call(&self.app, req);
        Box::pin(async move {
            let resp = match handled.await {
                Ok(resp) => resp,
                Err(never) => match never {},
            };
            let resp = if expired.load(Ordering::Relaxed) {
                tracing::info!(
                    timeout = %seconds(timeout),
                    "request body timed out: answered 408 and closing the connection"
                );
                body_timeout_response(timeout)
            } else {
                resp
            };
            Ok(resp.map(|body| ResponseBody {
                inner: body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// A response body that keeps its request in flight until hyper has taken
/// its last frame and dropped it.
#[derive(Debug)]
pub struct ResponseBody {
    inner: Body,
    _in_flight: InFlight,
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

// --- driving a connection ------------------------------------------------

/// A connection that can be asked to finish its current request and close
/// (hyper's `graceful_shutdown`).
pub trait GracefulClose: Future<Output = Result<(), hyper::Error>> {
    /// Starts the graceful close; the connection must still be polled.
    fn close_gracefully(self: Pin<&mut Self>);
}

impl<I, S, B> GracefulClose for hyper::server::conn::http1::Connection<I, S>
where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// How a connection ended other than cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Hyper reported an error (the client went away, sent garbage, ...).
    #[error(transparent)]
    Http(#[from] hyper::Error),
    /// A request head took longer than the header timeout; dropped.
    #[error("no complete request head within {}", seconds(*.0))]
    HeadTimedOut(Duration),
    /// Dropped without a request in flight to make room for a new
    /// connection (see [`Gate`]).
    #[error("evicted to make room for a new connection")]
    Evicted,
}

/// Serves one connection to its end. It is closed gracefully when the
/// server shuts down (`shutdown` changes or its sender goes away) or after
/// `timeouts.idle` between requests, and dropped when a request head takes
/// longer than `timeouts.header_read` or when its gate evicts it.
///
/// # Errors
///
/// Hyper's error, [`ConnectionError::HeadTimedOut`] or
/// [`ConnectionError::Evicted`].
pub async fn drive<C: GracefulClose>(
    conn: C,
    activity: &Activity,
    timeouts: Timeouts,
    mut shutdown: watch::Receiver<()>,
) -> Result<(), ConnectionError> {
    tokio::pin!(conn);
    let mut closing = false;
    let sleep = tokio::time::sleep(timeouts.tick());
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            biased;
            ended = conn.as_mut() => return ended.map_err(ConnectionError::from),
            () = activity.evicted.notified() => return Err(ConnectionError::Evicted),
            _ = shutdown.changed(), if !closing => {
                conn.as_mut().close_gracefully();
                closing = true;
            }
            () = &mut sleep => {
                let now = Instant::now();
                let next = match activity.verdict(now, &timeouts) {
                    Verdict::Wait(at) => at,
                    Verdict::Idle => {
                        if !closing {
                            tracing::debug!(idle = %seconds(timeouts.idle), "closing an idle connection");
                            conn.as_mut().close_gracefully();
                            closing = true;
                        }
                        now + timeouts.tick()
                    }
                    Verdict::HeadTooSlow => {
                        return Err(ConnectionError::HeadTimedOut(timeouts.header_read));
                    }
                };
                sleep.as_mut().reset(next.min(now + timeouts.tick()));
            }
        }
    }
}

/// Tells every connection to finish and waits until all have; each
/// connection task holds a [`Drain::watcher`] receiver until it ends.
#[derive(Debug)]
pub struct Drain(watch::Sender<()>);

impl Default for Drain {
    fn default() -> Self {
        Drain(watch::channel(()).0)
    }
}

impl Drain {
    /// A receiver for one connection's [`drive`].
    pub fn watcher(&self) -> watch::Receiver<()> {
        self.0.subscribe()
    }

    /// Connections still watching.
    pub fn open(&self) -> usize {
        self.0.receiver_count()
    }

    /// Signals shutdown and resolves once every watcher has been dropped.
    pub async fn finish(self) {
        let _ = self.0.send(());
        self.0.closed().await;
    }
}

#[cfg(test)]
mod tests;
