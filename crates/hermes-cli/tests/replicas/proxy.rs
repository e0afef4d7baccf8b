//! Loopback load balancers for the replica test: [`Balancer`] spreads connections over the
//! replicas round-robin (as an L4 load balancer does), [`FanOut`] delivers every request to
//! two replicas at once (a platform that delivers one event twice, to two replicas). Both
//! skip a replica that refuses the connection (stopped or restarting), as a load balancer's
//! health check would.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Reads one whole HTTP/1.1 request (head and `Content-Length` body) from `stream`.
pub fn read_raw(stream: &mut TcpStream) -> Option<(Vec<u8>, usize)> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = stream.read(&mut chunk).ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            buf.truncate(end + 4 + len);
            return Some((buf, end + 4));
        }
    }
}

fn connect(port: u16) -> Option<TcpStream> {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2)).ok()
}

/// The next `want` backends from `start` on (round-robin) that accept a connection.
fn live(backends: &[u16], start: usize, want: usize) -> Vec<TcpStream> {
    (0..backends.len())
        .filter_map(|i| connect(backends[(start + i) % backends.len()]))
        .take(want)
        .collect()
}

/// A round-robin TCP balancer in front of `backends`.
pub struct Balancer {
    /// Where clients connect.
    pub port: u16,
}

impl Balancer {
    /// Starts the balancer on a free loopback port (threads; runs until the test ends).
    pub fn start(backends: Vec<u16>) -> Balancer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let next = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let start = next.fetch_add(1, Ordering::SeqCst);
                let Some(upstream) = live(&backends, start, 1).pop() else {
                    continue;
                };
                pipe(client, upstream);
            }
        });
        Balancer { port }
    }
}

/// Copies bytes both ways until either side closes.
fn pipe(client: TcpStream, upstream: TcpStream) {
    let (Ok(mut c_read), Ok(mut u_read)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let (mut c_write, mut u_write) = (client, upstream);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_read, &mut u_write);
        let _ = u_write.shutdown(Shutdown::Write);
    });
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut u_read, &mut c_write);
        let _ = c_write.shutdown(Shutdown::Write);
    });
}

/// Sends every request to the next two live backends at once and answers with the first
/// answer (requests must say `Connection: close`).
pub struct FanOut {
    /// Where clients connect.
    pub port: u16,
}

impl FanOut {
    /// Starts the fan-out on a free loopback port.
    pub fn start(backends: Vec<u16>) -> FanOut {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let next = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                let start = next.fetch_add(1, Ordering::SeqCst);
                let backends = backends.clone();
                std::thread::spawn(move || {
                    let Some((request, _)) = read_raw(&mut client) else {
                        return;
                    };
                    let (tx, rx) = mpsc::channel::<Vec<u8>>();
                    for mut upstream in live(&backends, start, 2) {
                        let (tx, request) = (tx.clone(), request.clone());
                        std::thread::spawn(move || {
                            let _ = upstream.set_read_timeout(Some(Duration::from_secs(30)));
                            if upstream.write_all(&request).is_ok() {
                                let mut answer = Vec::new();
                                let _ = upstream.read_to_end(&mut answer);
                                if !answer.is_empty() {
                                    let _ = tx.send(answer);
                                }
                            }
                        });
                    }
                    drop(tx);
                    if let Ok(answer) = rx.recv() {
                        let _ = client.write_all(&answer);
                    }
                });
            }
        });
        FanOut { port }
    }
}
