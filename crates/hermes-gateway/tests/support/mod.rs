//! Loopback fakes shared by the platform adapter tests: a scripted websocket server and a
//! recording HTTP server (axum), both on 127.0.0.1 with an OS-chosen port.
#![allow(dead_code, clippy::expect_used, clippy::result_large_err)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// Bound for anything a test waits on; reaching it means a hang, not slowness.
pub const HANG: Duration = Duration::from_secs(20);

/// Awaits `f` or panics after [`HANG`] naming `what`.
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(HANG, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// The Discord gateway fake's reaction: a heartbeat (op 1) is acknowledged (op 11) and not
/// shown to the test; every other frame is.
pub fn discord_heartbeat_ack(v: &Value) -> Reaction {
    if v["op"] == 1 {
        Reaction {
            reply: Some(serde_json::json!({"op": 11})),
            forward: false,
        }
    } else {
        Reaction {
            reply: None,
            forward: true,
        }
    }
}

/// What the fake does with a frame from the client: an optional automatic reply, and
/// whether the test sees the frame.
pub struct Reaction {
    pub reply: Option<Value>,
    pub forward: bool,
}

type React = Arc<dyn Fn(&Value) -> Reaction + Send + Sync>;

enum Cmd {
    Send(String),
    Close(u16),
    Freeze,
}

/// One accepted websocket connection, driven by the test.
pub struct FakeConn {
    /// Request path and query of the handshake.
    pub path: String,
    cmds: mpsc::UnboundedSender<Cmd>,
    inbox: mpsc::UnboundedReceiver<Value>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeConn {
    /// Sends a JSON text frame to the client.
    pub fn send(&self, v: Value) {
        let _ = self.cmds.send(Cmd::Send(v.to_string()));
    }

    /// Next forwarded frame from the client; a close from the client arrives as
    /// `{"__closed": code}`.
    pub async fn recv(&mut self) -> Value {
        within("a frame from the client", self.inbox.recv())
            .await
            .unwrap_or_else(|| serde_json::json!({"__gone": true}))
    }

    /// Sends a text frame as is (for malformed input).
    pub fn send_raw(&self, text: &str) {
        let _ = self.cmds.send(Cmd::Send(text.to_owned()));
    }

    /// Closes with a close frame carrying `code`.
    pub fn close(&self, code: u16) {
        let _ = self.cmds.send(Cmd::Close(code));
    }

    /// Stops reading and answering (not even pongs) while keeping the TCP connection open:
    /// a dead peer.
    pub fn freeze(&self) {
        let _ = self.cmds.send(Cmd::Freeze);
    }

    /// Drops the TCP connection without a close frame (a network failure).
    pub fn drop_connection(self) {
        self.task.abort();
    }
}

/// A websocket server handing each accepted connection to the test.
pub struct WsServer {
    /// `ws://127.0.0.1:<port>`.
    pub url: String,
    conns: mpsc::UnboundedReceiver<FakeConn>,
}

impl WsServer {
    /// Starts the server; `react` decides automatic replies (heartbeat ACKs).
    pub async fn start(react: impl Fn(&Value) -> Reaction + Send + Sync + 'static) -> WsServer {
        let react: React = Arc::new(react);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("ws://{}", listener.local_addr().expect("addr"));
        let (conn_tx, conns) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let path = Arc::new(Mutex::new(String::new()));
                let p = path.clone();
                let cb = move |req: &tokio_tungstenite::tungstenite::handshake::server::Request,
                               resp| {
                    *p.lock().expect("lock") = req.uri().to_string();
                    Ok(resp)
                };
                let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, cb).await else {
                    continue;
                };
                let (cmds, mut cmd_rx) = mpsc::unbounded_channel();
                let (in_tx, inbox) = mpsc::unbounded_channel();
                let react = react.clone();
                let task = tokio::spawn(async move {
                    let (mut sink, mut stream) = ws.split();
                    loop {
                        tokio::select! {
                            cmd = cmd_rx.recv() => match cmd {
                                Some(Cmd::Send(t)) => {
                                    if sink.send(Message::text(t)).await.is_err() { return; }
                                }
                                Some(Cmd::Close(code)) => {
                                    let _ = sink.send(Message::Close(Some(CloseFrame {
                                        code: CloseCode::from(code),
                                        reason: "test".into(),
                                    }))).await;
                                    return;
                                }
                                Some(Cmd::Freeze) => {
                                    // Hold the socket open, read nothing, until dropped.
                                    while cmd_rx.recv().await.is_some() {}
                                    drop((sink, stream));
                                    return;
                                }
                                None => return,
                            },
                            frame = stream.next() => match frame {
                                Some(Ok(Message::Text(t))) => {
                                    let v: Value = serde_json::from_str(&t).expect("client sent JSON");
                                    let r = react(&v);
                                    if let Some(reply) = r.reply {
                                        let _ = sink.send(Message::text(reply.to_string())).await;
                                    }
                                    if r.forward {
                                        let _ = in_tx.send(v);
                                    }
                                }
                                Some(Ok(Message::Close(f))) => {
                                    let code = f.map(|f| u16::from(f.code)).unwrap_or(1005);
                                    let _ = in_tx.send(serde_json::json!({"__closed": code}));
                                    return;
                                }
                                Some(Ok(_)) => {}
                                Some(Err(_)) | None => return,
                            },
                        }
                    }
                });
                let path = path.lock().expect("lock").clone();
                let _ = conn_tx.send(FakeConn {
                    path,
                    cmds,
                    inbox,
                    task,
                });
            }
        });
        WsServer { url, conns }
    }

    /// The next connection the client opened.
    pub async fn next_conn(&mut self) -> FakeConn {
        within("a websocket connection", self.conns.recv())
            .await
            .expect("server running")
    }
}

/// One HTTP request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    /// The body as JSON (panics when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header value as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// What a fake REST handler answers.
pub type Answer = (StatusCode, Vec<(String, String)>, Vec<u8>);

/// JSON answer with status 200.
pub fn ok_json(v: Value) -> Answer {
    (
        StatusCode::OK,
        vec![("content-type".into(), "application/json".into())],
        v.to_string().into_bytes(),
    )
}

/// JSON answer with a status.
pub fn status_json(status: u16, v: Value) -> Answer {
    (
        StatusCode::from_u16(status).expect("status"),
        vec![("content-type".into(), "application/json".into())],
        v.to_string().into_bytes(),
    )
}

/// A recording HTTP server: every request is recorded, then answered by `handler`.
pub struct HttpFake {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    log: Arc<Mutex<Vec<Recorded>>>,
}

impl HttpFake {
    /// Starts the server.
    pub async fn start(handler: impl Fn(&Recorded) -> Answer + Send + Sync + 'static) -> HttpFake {
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let handler = Arc::new(handler);
        let l = log.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let l = l.clone();
                let handler = handler.clone();
                async move {
                    let rec = Recorded {
                        method: method.to_string(),
                        path: uri.path().to_owned(),
                        query: uri.query().map(str::to_owned),
                        headers,
                        body,
                    };
                    let (status, headers, body) = handler(&rec);
                    l.lock().expect("lock").push(rec);
                    let mut resp: Response = (status, body).into_response();
                    for (k, v) in headers {
                        resp.headers_mut().insert(
                            axum::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                            v.parse().expect("value"),
                        );
                    }
                    resp
                }
            },
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        HttpFake { url, log }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().expect("lock").clone()
    }

    /// Requests whose path is `path` (any method).
    pub fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }
}

#[cfg(feature = "telegram")]
pub mod telegram_fake;
