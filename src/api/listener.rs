//! The server's accept loop: HTTP/1.1 connections served by hyper, with a time limit on
//! reading each request's head and a cap on open connections.
//!
//! Why it exists: `axum::serve` has neither. A client that sends its headers a byte a
//! second (or opens a socket and sends nothing) held a connection, and a file
//! descriptor, for as long as it liked, and nothing bounded how many such connections
//! were open at once, so a flood of idle sockets could use up the process' descriptors
//! and leave nothing for the store or for real clients. This loop keeps what
//! `axum::serve` gave: every request carries the peer's address as
//! [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo) (the rate limiter keys on
//! it), and a graceful stop stops accepting and lets the requests in flight finish.

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

/// How long the loop waits before accepting again after an error that is not one
/// connection's (`EMFILE`, `ENFILE`, `ENOBUFS`...): until descriptors or buffers are
/// freed, accepting again at once would fail again at once.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(500);

/// The limits a server puts on its connections (`--header-read-timeout-s`,
/// `--max-connections`).
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time a connection has to deliver a request's head (request line and headers),
    /// counted from when the connection opens and again from when each answer has been
    /// sent (so it is also the time a kept-alive connection may stay idle); a
    /// connection that takes longer is closed without an answer. `None`: no limit.
    pub header_read_timeout: Option<Duration>,
    /// Most connections open at once; at the cap the loop accepts no more until one
    /// closes (new clients wait in the kernel's listen backlog). At least 1.
    pub max_connections: usize,
}

impl ConnectionLimits {
    /// The limits `topicd serve`'s flags set.
    pub fn of(config: &crate::config::ServeConfig) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: (config.header_read_timeout_s > 0.0).then(|| Duration::from_secs_f64(config.header_read_timeout_s)),
            max_connections: config.max_connections,
        }
    }
}

/// Serve `app` on `listener` until `shutdown` completes, then stop accepting, let every
/// open connection finish the request it is answering (an idle one is closed) and
/// return when all are closed.
pub async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits, shutdown: impl Future<Output = ()> + Send + 'static) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.clamp(1, Semaphore::MAX_PERMITS)));
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    // The same per-connection service axum::serve made: the router with the peer's
    // address in every request's extensions.
    let mut make_service = app.into_make_service_with_connect_info::<SocketAddr>();
    let stopping = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A permit first: at the cap, wait here (not in accept) for a connection to close.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => {
                    tracing::debug!(error = %e, "a connection failed before it was accepted");
                    continue;
                }
                Err(e) => {
                    tracing::error!(error = %e, backoff = ?ACCEPT_ERROR_BACKOFF, "accept failed; accepting again after a pause");
                    tokio::select! {
                        () = tokio::time::sleep(ACCEPT_ERROR_BACKOFF) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        let service = make_service.call(peer).await.unwrap_or_else(|never| match never {});
        connections.spawn(serve_connection(builder.clone(), stream, peer, TowerToHyperService::new(service), permit, stopping.clone()));
    }
    tracing::debug!(open = connections.len(), "not accepting connections; waiting for open ones to finish");
    drop(listener);
    stopping.cancel();
    connections.close();
    connections.wait().await;
}

/// Answer one connection's requests; `permit` is its place under the cap, given back
/// when the connection closes.
async fn serve_connection<S>(
    builder: http1::Builder,
    stream: TcpStream,
    peer: SocketAddr,
    service: S,
    permit: OwnedSemaphorePermit,
    stopping: CancellationToken,
) where
    S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = axum::response::Response> + Send,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let _permit = permit;
    // Small answers go out at once rather than waiting on Nagle's algorithm.
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, %peer, "could not set TCP_NODELAY");
    }
    let mut connection = std::pin::pin!(builder.serve_connection(TokioIo::new(stream), service).with_upgrades());
    let mut shutting_down = false;
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                // A header-read timeout, a reset or a malformed request: the client's doing.
                if let Err(e) = served {
                    tracing::debug!(error = %e, %peer, "connection closed with an error");
                }
                return;
            }
            () = stopping.cancelled(), if !shutting_down => {
                shutting_down = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// An accept error that concerns only the connection being accepted.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::ConnectInfo;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn peer(ConnectInfo(peer): ConnectInfo<SocketAddr>) -> String {
        peer.to_string()
    }

    /// Handlers see the peer's address, and a stop lets the request in flight finish.
    #[tokio::test]
    async fn connect_info_and_graceful_stop() {
        let app = Router::new().route("/peer", get(peer)).route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "done"
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let limits = ConnectionLimits { header_read_timeout: Some(Duration::from_secs(5)), max_connections: 8 };
        let server = tokio::spawn(serve(listener, app, limits, async move {
            let _ = rx.await;
        }));

        let mut client = TcpStream::connect(addr).await.unwrap();
        let local = client.local_addr().unwrap();
        client.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with(&local.to_string()), "the handler saw another peer than {local}: {answer}");

        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        tx.send(()).unwrap();
        let mut answer = String::new();
        slow.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("done"), "{answer}");
        tokio::time::timeout(Duration::from_secs(5), server).await.expect("the server stops").unwrap();
        assert!(TcpStream::connect(addr).await.is_err(), "still accepting after the stop");
    }
}
