//! Push endpoints: the HTTP listener of a platform that delivers events by POSTing them to
//! us (the generic webhook, Telegram's `setWebhook` mode, Slack's Events API). Every
//! replica of a gateway can run one, so a load balancer in front of them spreads the
//! platform's deliveries (issue 21 item 4); the store's inbound claims then make a message
//! delivered to two replicas run once.
//!
//! [`PushListener::bind`] opens the socket when the adapter is built, so a port in use shows
//! at start and tests learn the real port before the adapter runs; [`PushListener::serve`]
//! puts the surface's routes behind [`crate::serve`]'s limits and [`Guard`]: the `Host` header
//! must name the listener or one of the configured public names (421), browser requests are
//! refused (403), heads, bodies and idle connections time out, bodies are capped (413),
//! connections are capped. Refusals are JSON `{"ok":false,"error":…}`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::sync::Mutex;

use crate::error::PlatformError;
use crate::serve::ServeLimits;
use crate::serve::guard::{BrowserPolicy, Guard, HostPolicy, Refusal};

/// `{"ok":false,"error":message}` with `status`.
pub(crate) fn json_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({ "ok": false, "error": message })),
    )
        .into_response()
}

/// 503 with `Retry-After: 5`: the gateway is not taking messages now (shutting down), so
/// the platform keeps the event and delivers it again — to this replica or another.
#[cfg_attr(
    not(any(
        feature = "slack",
        feature = "telegram",
        feature = "webhook",
        feature = "whatsapp"
    )),
    allow(dead_code)
)]
pub(crate) fn unavailable() -> Response {
    let mut r = json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the gateway is shutting down; retry later",
    );
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("5"),
    );
    r
}

/// The `Host` name of a public URL (`https://bot.example.com/telegram` →
/// `bot.example.com`), for [`PushListener::bind`]'s allowed names. `None` when `url` has no
/// host part.
#[cfg_attr(not(any(feature = "telegram", feature = "sms")), allow(dead_code))]
pub(crate) fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The path of a public URL (`https://x/telegram?a` → `/telegram`), or `default` when it has
/// none.
#[cfg_attr(not(any(feature = "telegram", feature = "sms")), allow(dead_code))]
pub(crate) fn url_path(url: &str, default: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) => {
            let path = rest[i..].split(['?', '#']).next().unwrap_or("/");
            if path == "/" {
                default.to_string()
            } else {
                path.to_string()
            }
        }
        None => default.to_string(),
    }
}

/// One bound listener of a push surface.
#[derive(Debug)]
pub(crate) struct PushListener {
    platform: &'static str,
    listener: Mutex<Option<std::net::TcpListener>>,
    local_addr: SocketAddr,
    hosts: Vec<String>,
    limits: ServeLimits,
}

impl PushListener {
    /// Binds `addr` (port 0 picks one). `hosts`: `Host` names served besides the bound
    /// address (the public name the platform posts to). Errors: `Transport` naming the
    /// address when it cannot be bound.
    pub(crate) fn bind(
        platform: &'static str,
        addr: SocketAddr,
        hosts: Vec<String>,
        limits: ServeLimits,
    ) -> Result<PushListener, PlatformError> {
        let cannot = |e: std::io::Error| {
            PlatformError::transport(platform, format!("cannot listen on {addr}: {e}"))
        };
        let listener = std::net::TcpListener::bind(addr).map_err(cannot)?;
        listener.set_nonblocking(true).map_err(cannot)?;
        let local_addr = listener.local_addr().map_err(cannot)?;
        Ok(PushListener {
            platform,
            listener: Mutex::new(Some(listener)),
            local_addr,
            hosts,
            limits,
        })
    }

    /// The bound address (the real port when bound to port 0).
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves `routes` until `until` completes (requests in flight finish). Errors:
    /// `Unsupported` when called a second time, `Transport` when the listener fails.
    pub(crate) async fn serve(
        &self,
        routes: Router,
        until: impl Future<Output = ()>,
    ) -> Result<(), PlatformError> {
        let platform = self.platform;
        let Some(listener) = self.listener.lock().await.take() else {
            return Err(PlatformError::Unsupported {
                platform: platform.into(),
                what: "running the same push listener twice".into(),
            });
        };
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| PlatformError::transport(platform, format!("listening socket: {e}")))?;
        let guard = Guard {
            hosts: HostPolicy::new(self.local_addr, &self.hosts),
            // Deliveries come from servers; no browser page may post one.
            browsers: BrowserPolicy::default(),
            require_json: false,
            body_timeout: self.limits.body_timeout,
            max_body_bytes: self.limits.max_body_bytes,
            render: Arc::new(|r: Refusal| json_error(r.status, &r.message)),
        };
        let app =
            routes
                .layer(DefaultBodyLimit::disable())
                .layer(axum::middleware::from_fn_with_state(
                    Arc::new(guard),
                    crate::serve::guard::guard,
                ));
        tracing::info!(platform, addr = %self.local_addr, "listening for pushed events");
        crate::serve::serve_router(listener, app, self.limits, until)
            .await
            .map_err(|e| PlatformError::transport(platform, format!("listener stopped: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parts() {
        assert_eq!(
            url_host("https://Bot.Example.com:8443/telegram").as_deref(),
            Some("bot.example.com:8443")
        );
        assert_eq!(
            url_host("https://u:p@h.example/x").as_deref(),
            Some("h.example")
        );
        assert_eq!(url_host("https:///x"), None);
        assert_eq!(url_path("https://h/telegram?x=1", "/d"), "/telegram");
        assert_eq!(url_path("https://h/", "/d"), "/d");
        assert_eq!(url_path("https://h", "/d"), "/d");
        assert_eq!(url_path("https://h/a/b#f", "/d"), "/a/b");
    }
}
