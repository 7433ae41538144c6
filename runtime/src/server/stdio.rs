//! MCP over stdin/stdout (newline-delimited JSON-RPC); logs go to stderr.
//!
//! The line transport is this module's rather than rmcp's
//! `AsyncRwTransport`: each incoming line goes through
//! `jsonrpc_guard` first, so input that is not JSON gets `-32700`,
//! a wrong message shape `-32600` (both with `"id": null`) and bad params of
//! an implemented method `-32602`, and the session goes on. Outgoing
//! messages (rmcp's and those errors) queue for a single writer, one whole
//! line at a time, with the tool listing spliced in (see [`crate::listing`]).
//!
//! On the process's stdin/stdout, one plain thread reads and one writes,
//! with blocking calls on duplicates of the two descriptors. That works
//! whatever they are (pipe, regular file, terminal), never takes the
//! standard library's `Stdout` lock (the CLI holds it while serving), and
//! never keeps the async runtime from shutting down: a thread blocked
//! reading an open stdin ends with the process.

use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{QuitReason, ServerInitializeError, serve_server};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, ReadBuf};
use tokio::sync::{mpsc, oneshot};

use super::jsonrpc_guard::{Verdict, classify};
use super::{Core, Handler, ServeError};
use crate::credential::Credential;
use crate::listing::Listing;

/// Outgoing messages queued for the writer; senders wait beyond this.
const OUT_QUEUE: usize = 64;

/// One outgoing line, as pieces written in order (a listing response
/// shares the pre-encoded listing instead of copying it).
type Outgoing = Vec<Bytes>;
/// Chunks of stdin read ahead of the session.
const IN_QUEUE: usize = 16;
/// Size of one read from stdin.
const READ_CHUNK: usize = 64 * 1024;
/// How long the end of a session waits for queued output to be written
/// (a client that stopped reading must not keep the server alive).
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Serves one MCP session on stdin/stdout until the client closes stdin or
/// `shutdown` resolves. Lines longer than `max_line_bytes` are dropped
/// (logged); pass a bound well above the argument limit so that oversized
/// tool arguments still reach the handler and get a JSON-RPC error.
///
/// # Errors
///
/// When the standard handles cannot be duplicated or a thread cannot
/// start, or the session fails for another reason than the client leaving.
pub async fn serve_stdio(
    core: Arc<Core>,
    credential: Option<Credential>,
    max_line_bytes: usize,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let (stdin, stdout) = std_handles()?;
    serve_blocking(core, credential, max_line_bytes, stdin, stdout, shutdown).await
}

/// [`serve_stdio`] over blocking byte streams, each served by its own
/// thread (the reading one may outlive the session while it waits for
/// input).
async fn serve_blocking(
    core: Arc<Core>,
    credential: Option<Credential>,
    max_line_bytes: usize,
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let read = spawn_reader(input)?;
    let (out, queued) = mpsc::channel(OUT_QUEUE);
    let written = spawn_writer(output, queued)?;
    let result = serve_lines(core, credential, max_line_bytes, read, out, shutdown).await;
    if tokio::time::timeout(DRAIN_LIMIT, written).await.is_err() {
        tracing::warn!("stdout did not take the last messages within {DRAIN_LIMIT:?}");
    }
    result
}

/// [`serve_stdio`] over any byte streams (newline-delimited JSON-RPC).
///
/// # Errors
///
/// When the session fails for another reason than the client leaving.
pub async fn serve_io<R, W>(
    core: Arc<Core>,
    credential: Option<Credential>,
    max_line_bytes: usize,
    read: R,
    write: W,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (out, queued) = mpsc::channel(OUT_QUEUE);
    let mut writer = tokio::spawn(write_messages(write, queued));
    let result = serve_lines(core, credential, max_line_bytes, read, out, shutdown).await;
    if tokio::time::timeout(DRAIN_LIMIT, &mut writer)
        .await
        .is_err()
    {
        tracing::warn!("the output did not take the last messages within {DRAIN_LIMIT:?}");
        writer.abort();
    }
    result
}

/// Runs the rmcp session over the line transport until the input ends,
/// the output fails or `shutdown` resolves.
async fn serve_lines<R>(
    core: Arc<Core>,
    credential: Option<Credential>,
    max_line_bytes: usize,
    read: R,
    out: mpsc::Sender<Outgoing>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let transport = LineTransport {
        input: LineReader {
            read: BufReader::new(read),
            line: Vec::new(),
            max: max_line_bytes,
            discarding: false,
        },
        out: Some(out),
        listing: core.listing().clone(),
        reply: None,
    };
    let handler = Handler::new(core, credential);
    tokio::pin!(shutdown);
    let running = tokio::select! {
        r = serve_server(handler, transport) => r,
        () = &mut shutdown => return Ok(()),
    };
    let running = match running {
        Ok(r) => r,
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
            return Ok(());
        }
        Err(e) => {
            return Err(ServeError::Mcp {
                context: "initializing the session",
                source: Box::new(e),
            });
        }
    };
    let token = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let reason = tokio::select! {
        r = &mut waiting => r,
        () = &mut shutdown => {
            token.cancel();
            waiting.await
        }
    };
    match reason {
        Ok(QuitReason::JoinError(e)) => Err(ServeError::Mcp {
            context: "serving (the session's task failed)",
            source: Box::new(e),
        }),
        Ok(_) => Ok(()),
        Err(e) => Err(ServeError::Mcp {
            context: "waiting for the session to end",
            source: Box::new(e),
        }),
    }
}

/// Duplicates of the process's stdin and stdout descriptors (the standard
/// handles stay as they are).
fn std_handles() -> Result<(std::fs::File, std::fs::File), ServeError> {
    let failed = |source| ServeError::Io {
        context: "cannot duplicate the stdin/stdout handles".into(),
        source,
    };
    #[cfg(unix)]
    let (stdin, stdout) = {
        use std::os::fd::AsFd;
        (
            std::io::stdin().as_fd().try_clone_to_owned(),
            std::io::stdout().as_fd().try_clone_to_owned(),
        )
    };
    #[cfg(windows)]
    let (stdin, stdout) = {
        use std::os::windows::io::AsHandle;
        (
            std::io::stdin().as_handle().try_clone_to_owned(),
            std::io::stdout().as_handle().try_clone_to_owned(),
        )
    };
    Ok((
        std::fs::File::from(stdin.map_err(failed)?),
        std::fs::File::from(stdout.map_err(failed)?),
    ))
}

/// Reads `input` on a thread, chunk by chunk, into an [`AsyncRead`].
fn spawn_reader(mut input: impl Read + Send + 'static) -> Result<ChunkReader, ServeError> {
    let (chunks, rx) = mpsc::channel(IN_QUEUE);
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            let mut buf = vec![0; READ_CHUNK];
            loop {
                let chunk = match input.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => Ok(buf.get(..n).unwrap_or_default().to_vec()),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let failed = chunk.is_err();
                // The session ended (receiver gone) or the input failed.
                if chunks.blocking_send(chunk).is_err() || failed {
                    break;
                }
            }
        })
        .map_err(|source| ServeError::Io {
            context: "cannot start the stdin thread".into(),
            source,
        })?;
    Ok(ChunkReader {
        rx,
        chunk: Vec::new(),
        at: 0,
    })
}

/// Writes the queued messages to `output` on a thread; the receiver
/// resolves when everything queued was written (or writing failed).
fn spawn_writer(
    mut output: impl Write + Send + 'static,
    mut queued: mpsc::Receiver<Outgoing>,
) -> Result<oneshot::Receiver<()>, ServeError> {
    let (done, finished) = oneshot::channel();
    std::thread::Builder::new()
        .name("mcp-stdout".into())
        .spawn(move || {
            while let Some(message) = queued.blocking_recv() {
                let written = message
                    .iter()
                    .try_for_each(|piece| output.write_all(piece))
                    .and_then(|()| output.flush());
                if let Err(e) = written {
                    tracing::warn!(error = %e, "cannot write to stdout: ending the session");
                    break;
                }
            }
            // Closing the queue tells the session the output is gone.
            drop(queued);
            let _ = done.send(());
        })
        .map_err(|source| ServeError::Io {
            context: "cannot start the stdout thread".into(),
            source,
        })?;
    Ok(finished)
}

/// Writes the queued messages to `write`, flushing when the queue is
/// empty, then shuts it down.
async fn write_messages<W: AsyncWrite + Unpin>(mut write: W, mut queued: mpsc::Receiver<Outgoing>) {
    while let Some(message) = queued.recv().await {
        let mut result = Ok(());
        for piece in &message {
            result = write.write_all(piece).await;
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() && queued.is_empty() {
            result = write.flush().await;
        }
        if let Err(e) = result {
            tracing::warn!(error = %e, "cannot write the output: ending the session");
            return;
        }
    }
    let _ = write.shutdown().await;
}

/// The chunks read by [`spawn_reader`]'s thread as a byte stream.
struct ChunkReader {
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    at: usize,
}

impl AsyncRead for ChunkReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.at >= this.chunk.len() {
            match std::task::ready!(this.rx.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    this.chunk = chunk;
                    this.at = 0;
                }
                Some(Err(e)) => return Poll::Ready(Err(e)),
                // End of input.
                None => return Poll::Ready(Ok(())),
            }
        }
        let rest = this.chunk.get(this.at..).unwrap_or_default();
        let n = rest.len().min(buf.remaining());
        buf.put_slice(rest.get(..n).unwrap_or_default());
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// Newline-delimited JSON-RPC over a byte stream and the output queue.
struct LineTransport<R> {
    input: LineReader<R>,
    /// `None` once closed.
    out: Option<mpsc::Sender<Outgoing>>,
    listing: Arc<Listing>,
    /// A guard's error reply waiting for room in the output queue.
    reply: Option<Outgoing>,
}

/// Bounded line reading that survives cancellation (the transport's
/// `receive` is polled inside a `select!`): a partial line stays in `line`.
struct LineReader<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
}

enum Line {
    /// A whole line (with its `\n`, unless it ended the input) is in `line`.
    Ready,
    /// A line exceeded the limit; it was dropped.
    Oversized,
    Eof,
    Failed(std::io::Error),
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    async fn next(&mut self) -> Line {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => return Line::Failed(e),
            };
            if available.is_empty() {
                // A last line without `\n` is still a message.
                if !self.line.is_empty() && !self.discarding {
                    return Line::Ready;
                }
                self.line.clear();
                return Line::Eof;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut step = None;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len().saturating_add(take) > self.max {
                self.line.clear();
                self.discarding = newline.is_none();
                step = Some(Line::Oversized);
            } else {
                self.line
                    .extend_from_slice(available.get(..take).unwrap_or_default());
                if newline.is_some() {
                    step = Some(Line::Ready);
                }
            }
            self.read.consume(take);
            if let Some(step) = step {
                return step;
            }
        }
    }
}

/// One step of the line reader, as [`LineFramer`] reports it.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framed {
    /// A whole line, with its `\n` unless it ended the input.
    Line(Vec<u8>),
    /// A line longer than the limit, dropped.
    Oversized,
    /// Reading failed (the session would end here).
    Failed(String),
}

/// The transport's line reader on its own. Public for the fuzz harness
/// only ([`super::fuzzing`]).
#[doc(hidden)]
pub struct LineFramer<R> {
    input: LineReader<R>,
}

impl<R: AsyncRead + Unpin> LineFramer<R> {
    /// Reads lines of at most `max_line_bytes` from `read`.
    pub fn new(read: R, max_line_bytes: usize) -> Self {
        LineFramer {
            input: LineReader {
                read: BufReader::new(read),
                line: Vec::new(),
                max: max_line_bytes,
                discarding: false,
            },
        }
    }

    /// The next step, `None` at the end of the input. Cancel-safe, as the
    /// transport needs (it is polled inside a `select!`).
    pub async fn next(&mut self) -> Option<Framed> {
        match self.input.next().await {
            Line::Ready => Some(Framed::Line(std::mem::take(&mut self.input.line))),
            Line::Oversized => Some(Framed::Oversized),
            Line::Eof => None,
            Line::Failed(e) => Some(Framed::Failed(e.to_string())),
        }
    }
}

/// One JSON message as an output line.
fn encode_line(message: &impl serde::Serialize) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    Ok(line)
}

/// What the transport does with one incoming line (with or without its
/// `\n` / `\r\n`): blank lines are ignored, everything else goes through
/// `classify`. Public for the fuzz harness only ([`super::fuzzing`]).
#[doc(hidden)]
pub fn decode_line(line: &[u8]) -> Verdict {
    let text = trim_line_end(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        Verdict::Ignore
    } else {
        classify(text)
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl<R> Transport<RoleServer> for LineTransport<R>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = encode_line(&item).map(|line| {
            let body = trim_line_end(&line);
            match self.listing.splice(body) {
                // The shared listing is written as it is, never copied.
                Some(spliced) => {
                    let [prefix, listing, suffix] = spliced.pieces();
                    let mut end = suffix.to_vec();
                    end.push(b'\n');
                    vec![prefix, listing, Bytes::from(end)]
                }
                None => vec![Bytes::from(line)],
            }
        });
        async move {
            let Some(out) = out else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            out.send(line?).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the output is closed")
            })
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let out = self.out.as_ref()?;
            if self.reply.is_some() {
                let permit = out.reserve().await.ok()?;
                if let Some(reply) = self.reply.take() {
                    permit.send(reply);
                }
            }
            let line = tokio::select! {
                line = self.input.next() => line,
                // The writer stopped: nobody hears the session any more.
                () = out.closed() => return None,
            };
            match line {
                Line::Ready => {}
                Line::Eof => return None,
                Line::Oversized => {
                    tracing::error!(
                        max_line_bytes = self.input.max,
                        "an incoming message exceeds the line limit; discarding it"
                    );
                    continue;
                }
                Line::Failed(e) => {
                    tracing::error!(error = %e, "cannot read the input");
                    return None;
                }
            }
            let verdict = decode_line(&self.input.line);
            self.input.line.clear();
            match verdict {
                Verdict::Message(message) => return Some(*message),
                Verdict::Reply(error) => {
                    tracing::debug!(%error, "answering a bad incoming message");
                    self.reply = encode_line(&error).ok().map(|l| vec![Bytes::from(l)]);
                }
                Verdict::Ignore => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
