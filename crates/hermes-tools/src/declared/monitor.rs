//! The health state of one declarative tool ([`crate::health`]).
//!
//! With a `health_endpoint`, a background task (started the first time the agent asks for
//! the tool's health, on the tokio runtime of the session) GETs it every `health_interval_ms`
//! (30 s by default), each probe bounded by the tool's `timeout_ms`: healthy on a 2xx answer
//! whose JSON `status` field, when it has one, is `ok`, `healthy`, `up` or `pass`. A failed call
//! of the endpoint (no connection, a timeout, a 5xx or 429 answer) marks the tool unhealthy at
//! once; it becomes healthy again only when a probe passes. Without a `health_endpoint`, a
//! failed call marks it unhealthy for one interval; after that the next call tries the
//! endpoint again. The task ends when the tool is dropped. A turn never waits for a probe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::time::Instant;

use crate::health::ToolHealth;

/// Most bytes of a health answer that are read.
const MAX_HEALTH_BODY_BYTES: usize = 64 * 1024;

/// The `status` values of a health answer that mean healthy (case-insensitive).
const HEALTHY_STATUS: &[&str] = &["ok", "healthy", "up", "pass", "green"];

/// How a health endpoint is asked.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    /// The health URL (`${NAME}`s resolved).
    pub(crate) url: reqwest::Url,
    /// Headers sent with it (the endpoint's, when the health URL has the same origin).
    pub(crate) headers: HeaderMap,
    /// The tool's client (timeouts, address policy).
    pub(crate) client: reqwest::Client,
}

#[derive(Debug, Clone)]
enum Last {
    Unknown,
    Healthy,
    Unhealthy(String),
}

#[derive(Debug)]
struct State {
    last: Last,
    at: Option<Instant>,
}

/// The health of one tool.
#[derive(Debug)]
pub(crate) struct HealthMonitor {
    probe: Option<Probe>,
    interval: Duration,
    has_fallback: bool,
    state: Mutex<State>,
    started: AtomicBool,
}

impl HealthMonitor {
    /// A monitor; `probe` is `None` without a `health_endpoint`.
    pub(crate) fn new(probe: Option<Probe>, interval: Duration, has_fallback: bool) -> Self {
        HealthMonitor {
            probe,
            interval,
            has_fallback,
            state: Mutex::new(State {
                last: Last::Unknown,
                at: None,
            }),
            started: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current health (no I/O).
    pub(crate) fn status(&self) -> ToolHealth {
        let state = self.lock();
        match &state.last {
            Last::Unknown if self.probe.is_none() => ToolHealth::NoCheck,
            Last::Unknown => ToolHealth::Unknown,
            Last::Healthy => ToolHealth::Healthy,
            Last::Unhealthy(reason) => {
                // Without a probe, an unhealthy mark lasts one interval; then calls try again.
                let expired = self.probe.is_none()
                    && state.at.is_some_and(|at| at.elapsed() >= self.interval);
                if expired {
                    ToolHealth::NoCheck
                } else {
                    ToolHealth::Unhealthy {
                        reason: reason.clone(),
                        fallback: self.has_fallback,
                    }
                }
            }
        }
    }

    /// Marks the tool unhealthy (a failed call): `reason` must hold no secret.
    pub(crate) fn record_failure(&self, reason: &str) {
        let mut state = self.lock();
        state.last = Last::Unhealthy(reason.to_string());
        state.at = Some(Instant::now());
    }

    /// A call succeeded: the endpoint answers.
    pub(crate) fn record_success(&self) {
        let mut state = self.lock();
        if !matches!(state.last, Last::Healthy) {
            state.last = Last::Healthy;
            state.at = Some(Instant::now());
        }
    }

    /// Probes the health endpoint now (bounded by the client's timeout) and returns the
    /// new health; without a probe, the current one.
    pub(crate) async fn check_now(&self) -> ToolHealth {
        let Some(probe) = &self.probe else {
            return self.status();
        };
        let result = probe_once(probe).await;
        {
            let mut state = self.lock();
            state.last = match result {
                Ok(()) => Last::Healthy,
                Err(reason) => Last::Unhealthy(reason),
            };
            state.at = Some(Instant::now());
        }
        self.status()
    }

    /// Starts the periodic probe on the current tokio runtime, once; does nothing without a
    /// probe or outside a runtime.
    pub(crate) fn ensure_background(self: &Arc<Self>) {
        if self.probe.is_none() || self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.started.store(false, Ordering::SeqCst);
            return;
        };
        let weak: Weak<HealthMonitor> = Arc::downgrade(self);
        handle.spawn(async move {
            loop {
                let Some(monitor) = weak.upgrade() else {
                    return;
                };
                let interval = monitor.interval;
                monitor.check_now().await;
                drop(monitor);
                tokio::time::sleep(interval).await;
            }
        });
    }
}

/// One GET of the health endpoint.
///
/// # Errors
/// Why it is unhealthy, without secrets: the status, the body's `status`, or the transport
/// failure's kind.
async fn probe_once(probe: &Probe) -> Result<(), String> {
    let mut resp = probe
        .client
        .get(probe.url.clone())
        .headers(probe.headers.clone())
        .send()
        .await
        .map_err(|e| format!("health endpoint: {}", super::tool::transport_reason(&e)))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("health endpoint answered HTTP {}", status.as_u16()));
    }
    let mut body = Vec::new();
    // A body that stops coming (the timeout ends it) is a failed probe, not a short answer.
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("health endpoint: {}", super::tool::transport_reason(&e)))?
    {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_HEALTH_BODY_BYTES {
            break;
        }
    }
    let said = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("status").and_then(|s| s.as_str()).map(str::to_string));
    match said {
        Some(s) if !HEALTHY_STATUS.contains(&s.to_ascii_lowercase().as_str()) => {
            let shown: String = s.chars().take(40).collect();
            Err(format!("health endpoint says status {shown:?}"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn without_a_probe_a_failure_lasts_one_interval() {
        let m = HealthMonitor::new(None, Duration::from_secs(30), false);
        assert_eq!(m.status(), ToolHealth::NoCheck);
        m.record_failure("HTTP 503");
        assert!(m.status().hides_tool());
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(m.status().hides_tool());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            m.status(),
            ToolHealth::NoCheck,
            "calls try the endpoint again"
        );
        m.record_success();
        assert_eq!(m.status(), ToolHealth::Healthy);
        let with_fallback = HealthMonitor::new(None, Duration::from_secs(30), true);
        with_fallback.record_failure("timed out");
        assert_eq!(
            with_fallback.status(),
            ToolHealth::Unhealthy {
                reason: "timed out".into(),
                fallback: true
            }
        );
    }
}
