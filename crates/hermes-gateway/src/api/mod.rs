//! The OpenAI-compatible HTTP API server (issue 7 §1, FEATURES §1 Gateway), behind the
//! `api-server` feature.
//!
//! Routes: `POST /v1/chat/completions` (stateless, or session-continuing with
//! `X-Hermes-Session-Id`; SSE with `stream: true`), `GET /v1/models`, `GET /health`,
//! `GET`/`POST /api/sessions`, `GET /api/sessions/{id}/messages`, and `GET /metrics` and
//! `GET /_status` when the state has an observer ([`crate::observe`]). Every route except
//! `/health` needs `Authorization: Bearer <API_SERVER_KEY>` when a key is set; without a key
//! the server only listens on loopback. Agents come from the front end's
//! [`crate::AgentFactory`]; this module owns the HTTP surface, not the agent.
//!
//! Served by [`serve_on`] behind the checks of [`crate::serve`] (issue 18 §3): the `Host`
//! must name the server (421 otherwise), browser cross-site requests are refused (403) even
//! without a key, request bodies must be `application/json` (415), heads, bodies and idle
//! connections are timed out, and open connections are capped. Every error body is an
//! OpenAI error object (404, 405, 413 included); 409/429/503 carry `Retry-After`.

mod completions;
mod error;
mod sessions;
mod settings;
mod state;
mod turn;
mod wire;

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use completions::{NOTICE_HEADER, SESSION_HEADER};
pub use error::ApiError;
pub use sessions::{DEFAULT_SESSION_PAGE, MAX_SESSION_PAGE};
pub use settings::{
    ApiSettings, DEFAULT_API_HOST, DEFAULT_API_PORT, DEFAULT_MAX_CONCURRENT_TURNS,
    DEFAULT_SSE_KEEPALIVE,
};
pub use state::ApiState;
pub use turn::{API_SOURCE, MAX_SESSION_ID_LEN};
pub use wire::SERVED_MODEL;

use error::ApiFailure;

/// The API routes over `state`. Authentication is part of the router (so tests and
/// embedders get it too); `/health` is always open. The network checks (host, origin,
/// content type, body limits) are not: [`guarded_router`] adds them for a bound address.
pub fn api_router(state: ApiState) -> Router {
    let protected = Router::new()
        .route("/v1/chat/completions", post(completions::chat_completions))
        .route("/v1/models", get(models))
        .route("/api/sessions", get(sessions::list).post(sessions::create))
        .route("/api/sessions/{id}/messages", get(sessions::messages))
        .route("/metrics", get(metrics))
        .route("/_status", get(status))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_key,
        ));
    Router::new()
        .route("/health", get(health))
        .route("/health/ready", get(ready))
        .merge(protected)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// [`api_router`] behind the request checks of [`crate::serve::guard`] for a server bound
/// to `bound`, refusals rendered as OpenAI error objects.
pub fn guarded_router(state: ApiState, bound: SocketAddr) -> Router {
    let settings = state.settings();
    let guard = crate::serve::guard::Guard {
        hosts: crate::serve::guard::HostPolicy::new(bound, &settings.allowed_hosts),
        browsers: crate::serve::guard::BrowserPolicy {
            origins: settings.cors_origins.clone(),
        },
        require_json: true,
        body_timeout: settings.limits.body_timeout,
        max_body_bytes: settings.limits.max_body_bytes,
        render: std::sync::Arc::new(|r: crate::serve::guard::Refusal| {
            ApiFailure {
                status: r.status,
                message: r.message,
                kind: "invalid_request_error",
                code: r.code,
            }
            .into_response()
        }),
    };
    api_router(state)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(
            std::sync::Arc::new(guard),
            crate::serve::guard::guard,
        ))
        .layer(axum::middleware::from_fn(echo_session_on_errors))
}

/// The outermost layer: an error response raised before a route ran (a guard refusal, the
/// key check's 401, 404, 405) carries the request's valid `X-Hermes-Session-Id` as route
/// errors do, so a client can tie every failure to its session.
async fn echo_session_on_errors(request: Request, next: Next) -> Response {
    let known = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| turn::check_session_id(id).is_ok())
        .and_then(|id| axum::http::HeaderValue::from_str(id).ok());
    let mut response = next.run(request).await;
    if let Some(v) = known
        && (response.status().is_client_error() || response.status().is_server_error())
        && !response.headers().contains_key(SESSION_HEADER)
    {
        response
            .headers_mut()
            .insert(axum::http::HeaderName::from_static(SESSION_HEADER), v);
    }
    response
}

/// Binds `addr` and serves [`api_router`] until `cancel` fires; see [`serve_on`].
///
/// Errors: [`ApiError::UnprotectedBind`] when no key is set and `addr` is not loopback
/// (checked before binding), [`ApiError::Bind`], [`ApiError::Serve`].
pub async fn serve(
    addr: SocketAddr,
    state: ApiState,
    cancel: CancellationToken,
) -> Result<(), ApiError> {
    check_exposure(addr, &state)?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ApiError::Bind { addr, source })?;
    serve_on(listener, state, cancel).await
}

/// Serves [`api_router`] on an already bound listener until `cancel` fires. Shutdown
/// interrupts running turns (their agents record the interruption), lets open responses
/// finish, then returns.
///
/// Errors: as [`serve`] (the loopback rule is checked against the listener's address).
pub async fn serve_on(
    listener: TcpListener,
    state: ApiState,
    cancel: CancellationToken,
) -> Result<(), ApiError> {
    let addr = listener.local_addr().map_err(ApiError::Serve)?;
    check_exposure(addr, &state)?;
    tracing::info!(%addr, auth = state.settings().key.is_some(), "API server listening");
    let router = guarded_router(state.clone(), addr);
    let limits = state.settings().limits;
    let shutdown = async move {
        cancel.cancelled().await;
        state.interrupt_all();
    };
    crate::serve::serve_router(listener, router, limits, shutdown)
        .await
        .map_err(ApiError::Serve)
}

fn check_exposure(addr: SocketAddr, state: &ApiState) -> Result<(), ApiError> {
    if state.settings().key.is_none() && !addr.ip().is_loopback() {
        return Err(ApiError::UnprotectedBind { addr });
    }
    Ok(())
}

/// Bearer check (constant-time comparison of the key). No key configured → open (the
/// server then only listens on loopback).
async fn require_key(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    if !crate::observe::bearer_allows(request.headers(), state.settings().key.as_deref()) {
        return ApiFailure::unauthorized().into_response();
    }
    next.run(request).await
}

/// `GET /metrics` from the state's observer (404 without one).
async fn metrics(State(state): State<ApiState>, request: Request) -> Response {
    match &state.observer {
        Some(o) => crate::observe::metrics_response(o.metrics().await),
        None => not_found(request).await,
    }
}

/// `GET /_status` from the state's observer (404 without one).
async fn status(State(state): State<ApiState>, request: Request) -> Response {
    match &state.observer {
        Some(o) => crate::observe::status_response(o.status().await),
        None => not_found(request).await,
    }
}

async fn health() -> Response {
    axum::Json(serde_json::json!({"status": "ok"})).into_response()
}

/// How long the readiness probe waits for the session store.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Readiness (issue 21 item 5): 200 `{"status":"ready","store":…}` when the session store
/// answers within [`READY_TIMEOUT`], else 503 with `Retry-After` and the reason, so a load
/// balancer stops sending turns to a replica that cannot store them. `/health` stays the
/// liveness answer (the process serves).
async fn ready(State(state): State<ApiState>) -> Response {
    let store = state.inner.store.clone();
    let provider = store.provider().as_str();
    let probe = tokio::time::timeout(
        READY_TIMEOUT,
        tokio::task::spawn_blocking(move || store.schema_version()),
    )
    .await;
    let why = match probe {
        Ok(Ok(Ok(_))) => {
            return axum::Json(serde_json::json!({"status": "ready", "store": provider}))
                .into_response();
        }
        Ok(Ok(Err(e))) => e.to_string(),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {} s", READY_TIMEOUT.as_secs()),
    };
    let mut r = (
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(serde_json::json!({
            "status": "unavailable",
            "store": provider,
            "error": format!("the session store is unreachable: {why}"),
        })),
    )
        .into_response();
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("5"),
    );
    r
}

async fn models() -> Response {
    axum::Json(wire::models_json(chrono::Utc::now().timestamp())).into_response()
}

async fn method_not_allowed(request: Request) -> Response {
    ApiFailure {
        status: axum::http::StatusCode::METHOD_NOT_ALLOWED,
        message: format!(
            "{} is not allowed on {}.",
            request.method(),
            request.uri().path()
        ),
        kind: "invalid_request_error",
        code: "method_not_allowed",
    }
    .into_response()
}

async fn not_found(request: Request) -> Response {
    ApiFailure {
        status: axum::http::StatusCode::NOT_FOUND,
        message: format!(
            "No route for {} {}.",
            request.method(),
            request.uri().path()
        ),
        kind: "invalid_request_error",
        code: "unknown_route",
    }
    .into_response()
}
