//! Serving an axum router on the network surfaces of the gateway (the API server and the
//! webhook listener) with the limits a listener exposed to clients needs (issue 18 §3):
//!
//! - at most [`ServeLimits::max_connections`] open connections: beyond it new connections
//!   wait in the kernel's accept queue (no file descriptor is spent on them), so a flood of
//!   silent sockets cannot exhaust the process's descriptors;
//! - a connection must send a complete request head within
//!   [`ServeLimits::header_timeout`] — also between two requests of a keep-alive
//!   connection, which makes it the idle timeout — or it is closed;
//! - a response that makes no progress for [`ServeLimits::write_timeout`] (the client stopped
//!   reading: pipelined requests whose answers it never reads, a stalled stream) closes the
//!   connection, so such clients cannot hold every connection slot;
//! - a request body must arrive within [`ServeLimits::body_timeout`] and stay under
//!   [`ServeLimits::max_body_bytes`] ([`guard`]: 408 / 413);
//! - the `Host` header must name this listener, and browser cross-site requests are refused
//!   ([`guard::HostPolicy`], [`guard::BrowserPolicy`]): DNS rebinding and cross-site form
//!   posts never reach a route.
//!
//! Must not: know the routes or the error shape of a surface (each passes its renderer).

pub mod guard;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Default [`ServeLimits::header_timeout`]: 10 s.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ServeLimits::body_timeout`]: 30 s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`ServeLimits::write_timeout`]: 30 s.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`ServeLimits::max_connections`]: 64.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// Connection and request limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Longest wait for a complete request head, from accepting the connection or from the
    /// end of the previous response (the keep-alive idle limit).
    pub header_timeout: Duration,
    /// Longest wait for the whole request body once the head arrived.
    pub body_timeout: Duration,
    /// Longest time a response write may wait for the client to take any of it (a
    /// client that stops reading is disconnected after it).
    pub write_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_body_bytes: 2 * 1024 * 1024,
        }
    }
}

/// Serves `router` on `listener` under `limits` until `shutdown` completes, then stops
/// accepting, lets every open connection finish its response (HTTP/1 graceful shutdown)
/// and returns. A failed `accept` (for example no descriptor left) is logged and retried
/// after a short pause instead of ending the server.
///
/// Errors: none today besides the semaphore closing, which cannot happen; the `Result`
/// keeps the signature of `axum::serve`.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = permits.clone().acquire_owned() => p.map_err(std::io::Error::other)?,
        };
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; retrying shortly");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let service = TowerToHyperService::new(router.clone());
        let stop = stop.clone();
        tracker.spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .keep_alive(true);
            let io = StallLimit::new(stream, limits.write_timeout);
            let conn = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    stop.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// A connection whose writes fail with `TimedOut` once one has waited `limit` without the
/// client taking a byte (hyper then closes the connection). hyper's own timeouts cover
/// reading request heads only: a client that sends requests and never reads the answers
/// would otherwise hold its connection, and its slot of the cap, forever.
struct StallLimit<S> {
    inner: S,
    limit: Duration,
    /// Started when a write first returns `Pending`; cleared by any progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallLimit<S> {
    fn new(inner: S, limit: Duration) -> StallLimit<S> {
        StallLimit {
            inner,
            limit,
            stalled: None,
        }
    }

    /// `poll`'s result, or `TimedOut` when it has been pending for longer than the limit.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match poll {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let limit = self.limit;
                let timer = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the client took none of the response within the write timeout",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallLimit<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallLimit<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}
