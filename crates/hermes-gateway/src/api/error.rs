//! Errors of the API server: startup errors ([`ApiError`]) and per-request failures rendered
//! as OpenAI error objects (`{"error":{"message","type","code"}}`, OpenAI API reference
//! "Error codes").

use std::net::SocketAddr;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Why the API server could not be configured or started.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// An `API_SERVER_*` variable has a value that cannot be used.
    #[error("{name}: {detail}")]
    Setting {
        /// The variable.
        name: &'static str,
        /// What is wrong with its value.
        detail: String,
    },
    /// No `API_SERVER_KEY` is set and the address is reachable from other machines: the
    /// server fails closed instead of serving the agent to the network unauthenticated.
    #[error(
        "refusing to serve the API on {addr} without API_SERVER_KEY: set API_SERVER_KEY, or \
         listen on a loopback address such as 127.0.0.1"
    )]
    UnprotectedBind {
        /// The address that was asked for.
        addr: SocketAddr,
    },
    /// The listening socket could not be opened (port in use, permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server stopped with an I/O error.
    #[error("API server failed: {0}")]
    Serve(std::io::Error),
}

/// A request that cannot be served, as an HTTP status plus an OpenAI error object.
#[derive(Debug, Clone)]
pub(crate) struct ApiFailure {
    /// HTTP status.
    pub status: StatusCode,
    /// Human-readable reason (no secrets).
    pub message: String,
    /// OpenAI `type` (`invalid_request_error`, `server_error`, …).
    pub kind: &'static str,
    /// OpenAI `code` (`invalid_api_key`, `session_busy`, …).
    pub code: &'static str,
}

impl ApiFailure {
    /// A 400 `invalid_request_error`.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiFailure {
        ApiFailure {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            code: "invalid_request",
        }
    }

    /// 401 for a missing or wrong Bearer key.
    pub(crate) fn unauthorized() -> ApiFailure {
        ApiFailure {
            status: StatusCode::UNAUTHORIZED,
            message: "Missing or wrong API key: send `Authorization: Bearer <API_SERVER_KEY>`."
                .to_string(),
            kind: "invalid_request_error",
            code: "invalid_api_key",
        }
    }

    /// 404 for a session id the store does not know.
    pub(crate) fn unknown_session(id: &str) -> ApiFailure {
        ApiFailure {
            status: StatusCode::NOT_FOUND,
            message: format!("No session with id `{id}`."),
            kind: "invalid_request_error",
            code: "session_not_found",
        }
    }

    /// 409: the session already runs a turn.
    pub(crate) fn session_busy(id: &str) -> ApiFailure {
        ApiFailure {
            status: StatusCode::CONFLICT,
            message: format!(
                "Session `{id}` is already running a turn; wait for it to finish (one turn per \
                 session at a time)."
            ),
            kind: "invalid_request_error",
            code: "session_busy",
        }
    }

    /// 429: the global cap on concurrent turns is reached.
    pub(crate) fn too_many_turns(cap: usize) -> ApiFailure {
        ApiFailure {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!("{cap} turns are already running; retry shortly."),
            kind: "rate_limit_error",
            code: "too_many_concurrent_turns",
        }
    }

    /// 500/502/503 `server_error` with a specific code.
    pub(crate) fn server(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
    ) -> ApiFailure {
        ApiFailure {
            status,
            message: message.into(),
            kind: "server_error",
            code,
        }
    }

    /// The session store failed.
    pub(crate) fn store(e: impl std::fmt::Display) -> ApiFailure {
        ApiFailure::server(
            StatusCode::INTERNAL_SERVER_ERROR,
            "store_error",
            format!("session store: {e}"),
        )
    }

    /// `Retry-After` seconds for answers a client should retry (RFC 9110 §10.2.3): a busy
    /// session (409) or the turn cap (429) 2 s, an unavailable server (503) 5 s.
    pub(crate) fn retry_after(&self) -> Option<&'static str> {
        match self.status {
            StatusCode::CONFLICT if self.code == "session_busy" => Some("2"),
            StatusCode::TOO_MANY_REQUESTS => Some("2"),
            StatusCode::SERVICE_UNAVAILABLE => Some("5"),
            _ => None,
        }
    }

    /// The error object without status (also sent inside an SSE stream).
    pub(crate) fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "code": self.code}})
    }
}

impl IntoResponse for ApiFailure {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        response
    }
}
