//! Connections the server can cut without answering: the faults `connect_refused`,
//! `reset_before_commit` and `drop_response_after_commit` must look to an HTTP client
//! like a dead connection (an error, never a response).
//!
//! [`KillableListener`] wraps every accepted `TcpStream` in a [`KillableStream`]
//! whose [`ConnectionHandle`] reaches handlers as `ConnectInfo`. Killing the handle
//! makes the next read or write fail, so hyper abandons the connection and drops the
//! socket before a single byte of the response is written.
//!
//! What it deliberately does not do: refuse the TCP handshake itself. One listener
//! serves every route, and rules match on method and path, which are only known once
//! the request head has been read.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

const ALIVE: u8 = 0;
const CLOSE: u8 = 1;
const RESET: u8 = 2;

/// How a killed connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// FIN: an orderly close with no response.
    Close,
    /// RST (zero linger): a connection reset.
    Reset,
}

/// A handle on one accepted connection; cloned into each request as `ConnectInfo`.
#[derive(Clone, Debug)]
pub struct ConnectionHandle {
    state: Arc<AtomicU8>,
}

impl ConnectionHandle {
    /// Marks the connection dead: nothing more is read from or written to it.
    pub fn kill(&self, cut: Cut) {
        let value = match cut {
            Cut::Close => CLOSE,
            Cut::Reset => RESET,
        };
        self.state.store(value, Ordering::SeqCst);
    }
}

/// A `TcpListener` whose connections can be killed from a handler.
pub struct KillableListener {
    inner: TcpListener,
}

impl KillableListener {
    pub fn new(inner: TcpListener) -> Self {
        Self { inner }
    }
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = Listener::accept(&mut self.inner).await;
        let stream = KillableStream {
            stream,
            state: Arc::new(AtomicU8::new(ALIVE)),
        };
        (stream, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for ConnectionHandle {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Self {
        ConnectionHandle {
            state: stream.io().state.clone(),
        }
    }
}

/// An accepted stream that fails every operation once its handle was killed.
pub struct KillableStream {
    stream: TcpStream,
    state: Arc<AtomicU8>,
}

impl KillableStream {
    /// `Some(error)` once killed; arranges an RST for [`Cut::Reset`].
    fn killed(&self) -> Option<io::Error> {
        match self.state.load(Ordering::SeqCst) {
            ALIVE => None,
            state => {
                if state == RESET {
                    // Zero linger: closing the socket sends RST instead of FIN.
                    let _ = self.stream.set_zero_linger();
                }
                Some(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "connection cut by fault injection",
                ))
            }
        }
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(error) = self.killed() {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(error) = self.killed() {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(error) = self.killed() {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(error) = self.killed() {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(error) = self.killed() {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
