//! The mock OpenAI-compatible provider server.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::response::MockResponse;

/// A function that answers a chat request from its parsed JSON body (see
/// [`MockProvider::set_responder`]); `None` passes the request on to the queue.
pub type Responder = Arc<dyn Fn(&Value) -> Option<MockResponse> + Send + Sync>;

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    /// Request path (`/v1/chat/completions`).
    pub path: String,
    /// Request headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// Body parsed as JSON (`Value::String` with the raw text when it is not JSON).
    pub body: Value,
}

impl CapturedRequest {
    /// The first header value with this (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    queue: VecDeque<MockResponse>,
    routed: Vec<(String, MockResponse)>,
    requests: Vec<CapturedRequest>,
    models: Option<Value>,
    fallback: Option<MockResponse>,
    responder: Option<Responder>,
    props: Option<Value>,
}

type SharedState = Arc<Mutex<Shared>>;

fn lock(s: &SharedState) -> MutexGuard<'_, Shared> {
    match s.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// An OpenAI-compatible server on `127.0.0.1:<free port>` running inside the test's tokio
/// runtime. `POST /v1/chat/completions` (and, for the Anthropic and Responses adapters,
/// `POST /v1/messages` and `POST /v1/responses`, which share the same queue) serves a
/// response routed to the request by its content ([`MockProvider::push_matching`]) first,
/// else the [`MockProvider::set_responder`] function's answer, else queued [`MockResponse`]s in order (then the [`MockProvider::set_fallback`] response, if any, else
/// HTTP 500 with an explanatory error body) and records every request;
/// `GET /v1/models` lists one model; `GET /props` (llama.cpp server) answers 404 until
/// [`MockProvider::set_props`]. The server stops when this value is dropped.
pub struct MockProvider {
    addr: SocketAddr,
    state: SharedState,
    task: tokio::task::JoinHandle<()>,
}

impl MockProvider {
    /// Starts the server. Panics if no loopback port can be bound (test helper).
    pub async fn start() -> MockProvider {
        let state: SharedState = Arc::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/messages", post(chat))
            .route("/v1/responses", post(chat))
            .route("/v1/models", get(models))
            .route("/props", get(props))
            .with_state(state.clone());
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => panic!("mock provider cannot bind 127.0.0.1:0: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("mock provider has no local address: {e}"),
        };
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockProvider { addr, state, task }
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues a response for the next chat request.
    pub fn push(&self, response: MockResponse) {
        lock(&self.state).queue.push_back(response);
    }

    /// Serves `response` once, to the first chat request whose raw body contains `needle`
    /// (a byte-exact substring of the JSON text; beware JSON escaping), ahead of the queue.
    /// Routed responses are tried in the order they were added. For concurrent callers whose
    /// request order is not fixed (a gateway turn and a scheduled run).
    pub fn push_matching(&self, needle: &str, response: MockResponse) {
        lock(&self.state)
            .routed
            .push((needle.to_string(), response));
    }

    /// Serves `response` (again and again) whenever the queue is empty, instead of the HTTP 500
    /// "no response queued" error; `None` restores the error. For runs whose number of model
    /// calls is not known in advance (crash and concurrency drivers).
    pub fn set_fallback(&self, response: Option<MockResponse>) {
        lock(&self.state).fallback = response;
    }

    /// Answers every chat request this function returns `Some` for, computed from the request
    /// body (after routed responses, before the queue); `None` from it falls through to the
    /// queue. For programs whose calls are not known in advance, e.g. a scripted model that
    /// reads its instructions from the latest user message, shared by several processes at
    /// once.
    pub fn set_responder(
        &self,
        responder: impl Fn(&Value) -> Option<MockResponse> + Send + Sync + 'static,
    ) {
        lock(&self.state).responder = Some(Arc::new(responder));
    }

    /// Drops every queued response (the fallback stays).
    pub fn clear_queue(&self) {
        lock(&self.state).queue.clear();
    }

    /// Replaces the `GET /v1/models` body.
    pub fn set_models(&self, body: Value) {
        lock(&self.state).models = Some(body);
    }

    /// Serves `body` at `GET /props` (as a llama.cpp server does).
    pub fn set_props(&self, body: Value) {
        lock(&self.state).props = Some(body);
    }

    /// Every chat request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state)
            .requests
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body.clone())
            .collect()
    }

    /// Every request received so far (any path), with headers.
    pub fn captured(&self) -> Vec<CapturedRequest> {
        lock(&self.state).requests.clone()
    }

    /// Responses still queued.
    pub fn pending(&self) -> usize {
        lock(&self.state).queue.len()
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn capture(headers: &HeaderMap, path: &str, body: &[u8]) -> CapturedRequest {
    CapturedRequest {
        path: path.to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned())),
    }
}

async fn chat(
    State(state): State<SharedState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (next, responder, parsed) = {
        let mut s = lock(&state);
        let captured = capture(&headers, uri.path(), &body);
        let parsed = captured.body.clone();
        s.requests.push(captured);
        let text = String::from_utf8_lossy(&body);
        match s
            .routed
            .iter()
            .position(|(needle, _)| text.contains(needle.as_str()))
        {
            Some(i) => (Some(s.routed.remove(i).1), None, parsed),
            None => (None, s.responder.clone(), parsed),
        }
    };
    // The responder runs outside the lock (it may be slow or re-entrant).
    let next = match next {
        Some(r) => Some(r),
        None => match responder.and_then(|f| f(&parsed)) {
            Some(r) => Some(r),
            None => {
                let mut s = lock(&state);
                s.queue.pop_front().or_else(|| s.fallback.clone())
            }
        },
    };
    let Some(resp) = next else {
        return plain(
            500,
            "application/json",
            json!({"error": {"message": "mock provider: no response queued for this request",
                "type": "mock_exhausted", "code": null}})
            .to_string(),
        );
    };
    if let Some(d) = resp.delay {
        tokio::time::sleep(d).await;
    }
    let chunks = resp.chunking.split(&resp.body);
    let pause = resp.chunk_pause;
    let body_stream = futures::stream::iter(chunks).then(move |c| async move {
        match pause {
            Some(d) => tokio::time::sleep(d).await,
            None => tokio::task::yield_now().await,
        }
        Ok::<Bytes, std::io::Error>(c)
    });
    let body = if resp.hang {
        Body::from_stream(body_stream.chain(futures::stream::pending()))
    } else {
        Body::from_stream(body_stream)
    };
    let mut out = Response::new(body);
    *out.status_mut() =
        StatusCode::from_u16(resp.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (k, v) in &resp.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            out.headers_mut().append(name, value);
        }
    }
    out
}

async fn models(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    let body = {
        let mut s = lock(&state);
        s.requests.push(capture(&headers, "/v1/models", b""));
        s.models.clone()
    };
    let body = body.unwrap_or_else(|| {
        json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "hermes-testkit"}]})
    });
    plain(200, "application/json", body.to_string())
}

async fn props(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    let body = {
        let mut s = lock(&state);
        s.requests.push(capture(&headers, "/props", b""));
        s.props.clone()
    };
    match body {
        Some(b) => plain(200, "application/json", b.to_string()),
        None => plain(404, "text/plain", "Not Found".to_string()),
    }
}

fn plain(status: u16, content_type: &'static str, body: String) -> Response {
    let mut out = Response::new(Body::from(body));
    *out.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    out.headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    out
}
