//! The accept loop shared by the MCP listener and the metrics listener:
//! every connection is admitted by a [`Gate`] (or answered `503`/`429`) and
//! driven by [`drive`] under the header, idle and body deadlines.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::connections::{Admission, ConnService, Drain, Gate, Timeouts, Tracked, drive};

/// Accepts connections on `listener` and serves each with `app` until
/// `shutdown` resolves; each connection task watches `drain`.
pub async fn accept_until(
    listener: &TcpListener,
    app: &Router,
    gate: &Gate,
    timeouts: Timeouts,
    drain: &Drain,
    shutdown: impl Future<Output = ()>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    // hyper's header_read_timeout also runs while a keep-alive connection
    // sits idle between requests (its timer is re-armed as soon as a
    // response is written), so it would cut every idle connection at the
    // header timeout; `drive` times the two phases separately instead. See
    // the `connections` module documentation.
    http.timer(TokioTimer::new()).header_read_timeout(None);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly
                    // rather than spin on a failing accept.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        if gate.is_full() {
            // Connections accepted just before may have their request head
            // in their socket buffer already, not yet parsed: let their
            // tasks run once, so that they count as busy and only
            // connections that really sent no head are evicted.
            tokio::task::yield_now().await;
        }
        let slot = match gate.admit(peer.ip(), tokio::time::Instant::now()) {
            Admission::Admitted(slot) => slot,
            Admission::Refused(why) => {
                gate.refuse(stream, why);
                continue;
            }
        };
        let activity = slot.activity().clone();
        let io = TokioIo::new(Tracked::new(stream, activity.clone()));
        let service =
            ConnService::new(app.clone(), activity.clone(), timeouts.body_read).with_peer(peer);
        let conn = http.serve_connection(io, service);
        let watcher = drain.watcher();
        tokio::spawn(async move {
            if let Err(e) = drive(conn, &activity, timeouts, watcher).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::server::connections::PeerAddr;
    use axum::Extension;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The OAuth limits count per peer address: a connection served here
    /// must carry its peer on every request (a missing one would put every
    /// user in one shared bucket).
    #[tokio::test]
    async fn every_request_carries_its_connections_peer_address() {
        let app = Router::new().route(
            "/",
            get(|peer: Option<Extension<PeerAddr>>| async move {
                peer.map_or_else(|| "none".to_owned(), |Extension(p)| p.0.ip().to_string())
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let gate = Gate::new(8, 8);
            let drain = Drain::default();
            let timeouts = Timeouts {
                header_read: Duration::from_secs(5),
                idle: Duration::from_secs(5),
                body_read: Duration::from_secs(5),
            };
            accept_until(&listener, &app, &gate, timeouts, &drain, async {
                let _ = stopped.await;
            })
            .await;
        });
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut stream = socket.connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert!(answer.ends_with("127.0.0.2"), "{answer}");
        let _ = stop.send(());
        server.await.unwrap();
    }
}
