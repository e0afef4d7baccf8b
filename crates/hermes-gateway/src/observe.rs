//! `GET /metrics` (the Prometheus text format) and `GET /_status` (a JSON document) for
//! operators (issue 24 §2–3): served by the API server beside its routes, and on a listener
//! of their own (`observability.metrics` in config.yaml) for gateways without one.
//!
//! Both need `Authorization: Bearer <key>` when a key is set; without a key the listener
//! binds only to loopback ([`ObserveError::UnprotectedBind`]). The listener has the API
//! server's request checks: the `Host` must name it, browser cross-site requests are
//! refused, heads and idle connections time out, connections are capped, bodies are
//! refused. What the documents hold comes from the front end's [`Observer`]: counts,
//! names and states, never message text, prompts or secrets.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::serve::ServeLimits;
use crate::serve::guard::{BrowserPolicy, Guard, HostPolicy, Refusal};

/// Produces the two documents. The front end implements it: it knows the gateway, the
/// store, the cron scheduler and the MCP servers of its process.
#[async_trait::async_trait]
pub trait Observer: Send + Sync {
    /// The `/_status` document (JSON object).
    async fn status(&self) -> serde_json::Value;
    /// Every metric in the Prometheus text format, gauges brought up to date first.
    async fn metrics(&self) -> String;
}

/// Settings of the listener of its own (`observability.metrics` in config.yaml).
#[derive(Debug, Clone)]
pub struct ObserveSettings {
    /// Address to bind (default `127.0.0.1:9464`, the port Prometheus' exporter list keeps
    /// for OpenTelemetry-style exporters).
    pub addr: SocketAddr,
    /// Bearer key (`None`: open, loopback only).
    pub key: Option<String>,
    /// `Host` names served besides the bound address (behind a proxy).
    pub allowed_hosts: Vec<String>,
    /// Connection limits.
    pub limits: ServeLimits,
}

/// Default listener address: loopback, port 9464.
pub const DEFAULT_OBSERVE_ADDR: &str = "127.0.0.1:9464";

/// Why the listener could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// No key and a non-loopback address.
    #[error(
        "refusing to serve /metrics and /_status on {addr} without a key: set HERMES_METRICS_KEY (or API_SERVER_KEY), or bind to 127.0.0.1"
    )]
    UnprotectedBind {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// Binding or serving failed.
    #[error("/metrics listener on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// Whether `headers` carry `Authorization: Bearer <key>` (constant-time comparison); true
/// when no key is set.
pub(crate) fn bearer_allows(headers: &HeaderMap, key: Option<&str>) -> bool {
    let Some(key) = key else {
        return true;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .unwrap_or("");
    given.as_bytes().ct_eq(key.as_bytes()).into()
}

/// The `/metrics` response for `text`.
pub(crate) fn metrics_response(text: String) -> Response {
    (
        [(header::CONTENT_TYPE, hermes_telemetry::CONTENT_TYPE)],
        text,
    )
        .into_response()
}

/// The `/_status` response for `doc`.
pub(crate) fn status_response(doc: serde_json::Value) -> Response {
    axum::Json(doc).into_response()
}

fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

#[derive(Clone)]
struct ObserveState {
    observer: Arc<dyn Observer>,
    key: Option<Arc<str>>,
}

async fn require_key(State(s): State<ObserveState>, request: Request, next: Next) -> Response {
    if !bearer_allows(request.headers(), s.key.as_deref()) {
        return error_response(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "missing or wrong `Authorization: Bearer` key",
        );
    }
    next.run(request).await
}

async fn metrics(State(s): State<ObserveState>) -> Response {
    metrics_response(s.observer.metrics().await)
}

async fn status(State(s): State<ObserveState>) -> Response {
    status_response(s.observer.status().await)
}

/// `/metrics` and `/_status` over `observer`, behind the key check (no network checks:
/// [`serve_observe`] adds those).
pub fn observe_router(observer: Arc<dyn Observer>, key: Option<String>) -> Router {
    let state = ObserveState {
        observer,
        key: key.map(Arc::from),
    };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/_status", get(status))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_key,
        ))
        .fallback(|| async { error_response(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .with_state(state)
}

/// Serves [`observe_router`] on `listener` until `cancel`, behind the request checks.
///
/// Errors: [`ObserveError::UnprotectedBind`] (checked first), [`ObserveError::Io`].
pub async fn serve_observe(
    listener: TcpListener,
    observer: Arc<dyn Observer>,
    settings: ObserveSettings,
    cancel: CancellationToken,
) -> Result<(), ObserveError> {
    let addr = listener.local_addr().map_err(|source| ObserveError::Io {
        addr: settings.addr,
        source,
    })?;
    if settings.key.is_none() && !addr.ip().is_loopback() {
        return Err(ObserveError::UnprotectedBind { addr });
    }
    let guard = Guard {
        hosts: HostPolicy::new(addr, &settings.allowed_hosts),
        browsers: BrowserPolicy {
            origins: Vec::new(),
        },
        require_json: true,
        body_timeout: settings.limits.body_timeout,
        // Only GETs: nothing to read.
        max_body_bytes: 0,
        render: Arc::new(|r: Refusal| error_response(r.status, r.code, &r.message)),
    };
    let router = observe_router(observer, settings.key.clone()).layer(
        axum::middleware::from_fn_with_state(Arc::new(guard), crate::serve::guard::guard),
    );
    tracing::info!(%addr, auth = settings.key.is_some(), "metrics and status listening");
    crate::serve::serve_router(listener, router, settings.limits, cancel.cancelled_owned())
        .await
        .map_err(|source| ObserveError::Io { addr, source })
}
