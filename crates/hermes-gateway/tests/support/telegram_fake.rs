//! A loopback fake of the Telegram Bot API: serves getUpdates from a script (honouring
//! `offset` the way Telegram does: updates below it are confirmed and forgotten), answers
//! getMe/getFile/send*/edit*, serves file downloads, and records every call.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// One recorded Bot API call.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    /// The JSON body, or `{"multipart": "<body as lossy text>"}` for uploads.
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    pending: Vec<Value>,
    calls: Vec<Call>,
    failures: HashMap<String, VecDeque<(u16, Value)>>,
    files: HashMap<String, (String, Vec<u8>)>,
}

/// Shared state of the fake.
#[derive(Clone)]
pub struct FakeBotApi {
    token: String,
    inner: Arc<Mutex<Inner>>,
    next_message_id: Arc<AtomicI64>,
    pub addr: SocketAddr,
}

fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeBotApi {
    /// Starts the fake on an ephemeral loopback port; `token` is the only one it accepts.
    pub async fn start(token: &str) -> FakeBotApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let fake = FakeBotApi {
            token: token.to_string(),
            inner: Arc::default(),
            next_message_id: Arc::new(AtomicI64::new(1000)),
            addr,
        };
        let app = Router::new()
            .route("/{bot}/{method}", post(method_handler))
            .route("/file/{bot}/{*path}", get(file_handler))
            .with_state(fake.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        fake
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds an update (a full Bot API `Update` object) for getUpdates to serve.
    pub fn push_update(&self, update: Value) {
        lock(&self.inner).pending.push(update);
    }

    /// Makes the next call(s) of `method` fail with this HTTP status and body, in order.
    pub fn fail_next(&self, method: &str, status: u16, body: Value) {
        lock(&self.inner)
            .failures
            .entry(method.to_string())
            .or_default()
            .push_back((status, body));
    }

    /// Registers a downloadable file: getFile(`file_id`) answers `path`, the bytes are served.
    pub fn add_file(&self, file_id: &str, path: &str, bytes: Vec<u8>) {
        lock(&self.inner)
            .files
            .insert(file_id.to_string(), (path.to_string(), bytes));
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        lock(&self.inner)
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Waits (up to 10 s, a hang guard) until `method` was called at least `n` times.
    pub async fn wait_calls(&self, method: &str, n: usize) -> Vec<Call> {
        for _ in 0..1000 {
            let calls = self.calls(method);
            if calls.len() >= n {
                return calls;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "{method} was not called {n} times: {:?}",
            self.calls(method)
        );
    }
}

fn api_error(status: u16, description: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        code,
        axum::Json(json!({"ok": false, "error_code": status, "description": description})),
    )
        .into_response()
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

async fn method_handler(
    State(fake): State<FakeBotApi>,
    Path((bot, method)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if bot != format!("bot{}", fake.token) {
        return api_error(401, "Unauthorized");
    }
    let is_multipart = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/"));
    let body: Value = if is_multipart {
        json!({"multipart": String::from_utf8_lossy(&body)})
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    {
        let mut inner = lock(&fake.inner);
        inner.calls.push(Call {
            method: method.clone(),
            body: body.clone(),
        });
        if let Some((status, answer)) = inner
            .failures
            .get_mut(&method)
            .and_then(VecDeque::pop_front)
        {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (code, axum::Json(answer)).into_response();
        }
    }
    match method.as_str() {
        "getMe" => {
            ok(json!({"id": 777, "is_bot": true, "first_name": "Hermes", "username": "hermes_bot"}))
        }
        "getUpdates" => get_updates(&fake, &body).await,
        "getFile" => {
            let id = body["file_id"].as_str().unwrap_or_default().to_string();
            match lock(&fake.inner).files.get(&id) {
                Some((path, bytes)) => ok(json!({
                    "file_id": id, "file_unique_id": format!("u{id}"),
                    "file_size": bytes.len(), "file_path": path
                })),
                None => api_error(400, "Bad Request: invalid file_id"),
            }
        }
        "sendMessage" | "sendPhoto" | "sendDocument" => {
            let id = fake.next_message_id.fetch_add(1, Ordering::SeqCst);
            ok(json!({"message_id": id, "date": 0, "chat": {"id": 1, "type": "private"}}))
        }
        "editMessageText" => ok(
            json!({"message_id": body["message_id"], "date": 0, "chat": {"id": 1, "type": "private"}}),
        ),
        "sendChatAction" | "setWebhook" | "deleteWebhook" => ok(json!(true)),
        _ => api_error(404, "Not Found: method not found"),
    }
}

async fn get_updates(fake: &FakeBotApi, body: &Value) -> Response {
    let offset = body["offset"].as_i64();
    let wait = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        {
            let mut inner = lock(&fake.inner);
            if let Some(offset) = offset {
                inner
                    .pending
                    .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            }
            if !inner.pending.is_empty() {
                return ok(Value::Array(inner.pending.clone()));
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return ok(json!([]));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn file_handler(
    State(fake): State<FakeBotApi>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    if bot != format!("bot{}", fake.token) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let inner = lock(&fake.inner);
    match inner.files.values().find(|(p, _)| *p == path) {
        Some((_, bytes)) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
