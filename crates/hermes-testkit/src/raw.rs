//! [`RawHttpServer`]: a loopback server that misbehaves below HTTP framing, for faults an
//! HTTP framework cannot produce (issue 6 part 4): response headers dripped one byte at a
//! time (slow-loris), and a body cut off mid-stream by closing the socket.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does on every connection, after reading the whole request.
#[derive(Debug, Clone)]
pub enum RawFault {
    /// Sends `HTTP/1.1 200 OK\r\n`, then a header line one byte every `interval`, forever: the
    /// headers never end, yet no single read waits longer than `interval`.
    SlowHeaders {
        /// Pause between two header bytes.
        interval: Duration,
    },
    /// Sends a 200 `text/event-stream` head announcing `Content-Length: <len of body> + 4096`,
    /// then `body`, then closes the socket: the client sees the connection drop mid-body.
    CutBody {
        /// The bytes sent before the socket is closed.
        body: Bytes,
    },
}

/// A raw TCP server on `127.0.0.1:<free port>` answering every connection with a
/// [`RawFault`]. Stops when dropped.
pub struct RawHttpServer {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl RawHttpServer {
    /// Starts the server. Panics if no loopback port can be bound (test helper).
    pub async fn start(fault: RawFault) -> RawHttpServer {
        let listener = match TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => panic!("raw server cannot bind 127.0.0.1:0: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("raw server has no local address: {e}"),
        };
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let fault = fault.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, fault).await;
                });
            }
        });
        RawHttpServer {
            addr,
            connections,
            task,
        }
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Connections accepted so far (one per attempt of a client that does not reuse them).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for RawHttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request (head up to the blank line, then `Content-Length` bytes of body).
async fn read_request(socket: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut have = buf.len() - head_end;
    while have < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        have += n;
    }
    Ok(())
}

async fn serve(mut socket: TcpStream, fault: RawFault) -> std::io::Result<()> {
    read_request(&mut socket).await?;
    match fault {
        RawFault::SlowHeaders { interval } => {
            socket.write_all(b"HTTP/1.1 200 OK\r\nx-slow: ").await?;
            loop {
                tokio::time::sleep(interval).await;
                socket.write_all(b"a").await?;
                socket.flush().await?;
            }
        }
        RawFault::CutBody { body } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                body.len() + 4096
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(&body).await?;
            socket.flush().await?;
            // Dropping the socket closes the connection with the body incomplete.
            Ok(())
        }
    }
}
