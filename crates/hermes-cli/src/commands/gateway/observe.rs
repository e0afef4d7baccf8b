//! The `/_status` document and the `/metrics` gauges of a `hermes gateway run` process
//! (issue 24 §2–3), and the `observability.metrics` listener settings.
//!
//! The document (JSON): `version`, `uptime_seconds`, `memory` (`rss_bytes`,
//! `peak_rss_bytes`, `heap_bytes`), `agents.live`, `sessions` by lifecycle state
//! (`active`, `idle`, `released`), `queue` (`depth`, `by_platform`), `platforms` (name and
//! adapter state), `mcp_servers` (name, state, tools, breaker), `tools` (the tools with a
//! health check of their own, such as declarative HTTP tools: name, toolset, health, whether
//! a fallback answers; issue 26 item 4), `cron` (scheduler on/off,
//! its heartbeat and the next due job) and `store` (provider, health, size). Counts, names
//! and states only: no message text, prompt, key or error text that could carry one.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use chrono::Utc;
use hermes_gateway::Gateway;
use hermes_gateway::observe::{DEFAULT_OBSERVE_ADDR, ObserveSettings, Observer};
use hermes_mcp::McpManager;
use hermes_protocol::HermesHome;
use hermes_store::SessionStore;
use serde_json::{Value, json};

use crate::assembly::app::App;

/// How long a reading of the store's size and health is reused (counting the messages of a
/// large store is not free; scrapes come every 15 s or so).
const STORE_READING_TTL: Duration = Duration::from_secs(30);

/// What the process knows of itself, for [`Observer`]. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ProcessObserver {
    gateway: Gateway,
    store: Arc<SessionStore>,
    home: HermesHome,
    mcp: Option<Arc<McpManager>>,
    /// The declarative tools and any other with a health check of its own (MCP tools are
    /// under `mcp_servers`).
    checked_tools: Arc<Vec<Arc<dyn hermes_tools::Tool>>>,
    scheduler_on: bool,
    store_reading: Arc<Mutex<Option<(Instant, Value)>>>,
}

impl ProcessObserver {
    /// An observer of `gateway` and the rest of this process.
    pub(crate) fn new(
        gateway: Gateway,
        store: Arc<SessionStore>,
        home: HermesHome,
        mcp: Option<Arc<McpManager>>,
        tools: &[Arc<dyn hermes_tools::Tool>],
        scheduler_on: bool,
    ) -> ProcessObserver {
        let checked_tools = tools
            .iter()
            .filter(|t| {
                !t.toolset().starts_with("mcp-")
                    && (t.toolset() == hermes_tools::DECLARATIVE_TOOLSET
                        || t.health() != hermes_tools::ToolHealth::NoCheck)
            })
            .cloned()
            .collect();
        ProcessObserver {
            gateway,
            store,
            home,
            mcp,
            checked_tools: Arc::new(checked_tools),
            scheduler_on,
            store_reading: Arc::new(Mutex::new(None)),
        }
    }

    /// [`store_status`], cached for [`STORE_READING_TTL`]. Blocking.
    fn store_status(&self) -> Value {
        if let Ok(cached) = self.store_reading.lock()
            && let Some((at, doc)) = cached.as_ref()
            && at.elapsed() < STORE_READING_TTL
        {
            return doc.clone();
        }
        let doc = store_status(&self.store);
        if let Ok(mut cached) = self.store_reading.lock() {
            *cached = Some((Instant::now(), doc.clone()));
        }
        doc
    }

    /// Everything read from the store and files, in one blocking call.
    fn blocking_parts(&self) -> (hermes_gateway::runner::observe::RuntimeStatus, Value, Value) {
        (
            self.gateway.runtime_status(),
            cron_status(&self.home, Some(self.scheduler_on)),
            self.store_status(),
        )
    }

    fn mcp_status(&self) -> Vec<Value> {
        let Some(manager) = &self.mcp else {
            return Vec::new();
        };
        manager
            .reports()
            .into_iter()
            .map(|r| {
                json!({
                    "name": r.name,
                    "state": server_state(&r.state),
                    "tools": r.tools,
                    "breaker_open": r.breaker_open,
                })
            })
            .collect()
    }

    /// The last health reading of each tool with a check of its own (cached: no I/O).
    /// States only, no reason text (it may quote a service's answer).
    fn tools_status(&self) -> Vec<Value> {
        use hermes_tools::ToolHealth;
        self.checked_tools
            .iter()
            .map(|t| {
                let (health, fallback) = match t.health() {
                    ToolHealth::NoCheck => ("no_check", false),
                    ToolHealth::Unknown => ("not_checked", false),
                    ToolHealth::Healthy => ("healthy", false),
                    ToolHealth::Unhealthy { fallback, .. } => ("unhealthy", fallback),
                };
                json!({
                    "name": t.spec().name,
                    "toolset": t.toolset(),
                    "health": health,
                    "answered_by_fallback": fallback,
                })
            })
            .collect()
    }

    fn publish_mcp(&self) {
        let Some(manager) = &self.mcp else {
            return;
        };
        let reports = manager.reports();
        hermes_telemetry::metrics().set_mcp_servers(reports.iter().map(|r| {
            (
                r.name.as_str(),
                matches!(r.state, hermes_mcp::server::ServerState::Ready),
                r.breaker_open,
            )
        }));
    }
}

/// The store's provider, health and size (`/_status`'s `store`). Blocking.
pub(crate) fn store_status(store: &SessionStore) -> Value {
    let provider = store.provider().as_str();
    match store.stats() {
        Ok(stats) => json!({
            "provider": provider,
            "ok": true,
            "bytes": stats.db_bytes,
            "sessions": stats.sessions,
            "messages": stats.messages,
            "schema_version": stats.schema_version,
        }),
        Err(e) => {
            // The reason goes to the log only: a driver's message may name hosts.
            tracing::warn!(error = %e, "status: the session store did not answer");
            json!({"provider": provider, "ok": false})
        }
    }
}

/// The cron scheduler's state (`scheduler_on`: whether this process runs one; `None`: not
/// known here), its heartbeat and the next due job, from `cron/` (`/_status`'s `cron`).
/// Blocking.
pub(crate) fn cron_status(home: &HermesHome, scheduler_on: Option<bool>) -> Value {
    let jobs = hermes_cron::JobStore::new(home);
    let beat = hermes_cron::SchedulerBeat::read(&jobs);
    let listed = jobs.list().unwrap_or_default();
    let next = listed
        .iter()
        .filter(|j| j.is_runnable())
        .filter_map(|j| j.next_run_at.map(|t| (t, j)))
        .min_by_key(|(t, _)| *t)
        .map(|(t, j)| json!({"job": j.id, "at": t.to_rfc3339()}));
    let now = Utc::now();
    json!({
        "scheduler": scheduler_on.map(|on| if on { "on" } else { "off" }),
        "jobs": listed.len(),
        "heartbeat": beat.map(|b| json!({
            "pid": b.pid,
            "seen_at": b.seen_at.to_rfc3339(),
            "age_seconds": (now - b.seen_at).num_milliseconds() as f64 / 1000.0,
        })),
        "next_due": next,
    })
}

/// The state's name, without the error text a failed state carries.
fn server_state(state: &hermes_mcp::server::ServerState) -> &'static str {
    match state {
        hermes_mcp::server::ServerState::Starting => "starting",
        hermes_mcp::server::ServerState::Ready => "ready",
        hermes_mcp::server::ServerState::Failed(_) => "failed",
        hermes_mcp::server::ServerState::Disabled => "disabled",
        hermes_mcp::server::ServerState::Stopped => "stopped",
    }
}

#[async_trait::async_trait]
impl Observer for ProcessObserver {
    async fn status(&self) -> Value {
        let this = self.clone();
        let parts = tokio::task::spawn_blocking(move || this.blocking_parts()).await;
        let (rss, peak) = hermes_telemetry::process::resident_bytes();
        let mut doc = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_seconds": hermes_telemetry::process::uptime_seconds(),
            "memory": {
                "rss_bytes": rss,
                "peak_rss_bytes": peak,
                "heap_bytes": super::process_memory::heap_in_use_bytes(),
            },
            "mcp_servers": self.mcp_status(),
            "tools": self.tools_status(),
        });
        if let Ok((runtime, cron, store)) = parts {
            doc["agents"] = json!({"live": runtime.live_agents});
            doc["sessions"] = json!(runtime.sessions);
            doc["queue"] = json!({
                "depth": runtime.queue_depth.values().sum::<u64>(),
                "by_platform": runtime.queue_depth,
            });
            doc["platforms"] = json!(runtime.platforms);
            doc["cron"] = cron;
            doc["store"] = store;
        }
        doc
    }

    async fn metrics(&self) -> String {
        let this = self.clone();
        let parts = tokio::task::spawn_blocking(move || {
            (this.gateway.runtime_status(), this.store_status())
        })
        .await;
        let metrics = hermes_telemetry::metrics();
        if let Ok((runtime, store)) = parts {
            Gateway::publish_gauges(&runtime);
            if let Some(bytes) = store["bytes"].as_u64() {
                metrics.set_store_bytes(bytes);
            }
        }
        self.publish_mcp();
        metrics.render()
    }
}

/// The `observability.metrics` listener of config.yaml: `{host, port, allowed_hosts}`
/// (`None` when the section is absent or `enabled: false`). The key is `HERMES_METRICS_KEY`,
/// else `API_SERVER_KEY`.
///
/// Errors: a value of the wrong type or an address that does not parse, naming the key.
pub(crate) fn observe_settings(app: &App) -> Result<Option<ObserveSettings>> {
    let file = app.home.config_file();
    let Some(section) = app
        .config
        .observability
        .as_ref()
        .and_then(|o| o.get("metrics"))
    else {
        return Ok(None);
    };
    if section.is_null() {
        return Ok(None);
    }
    let Some(map) = section.as_mapping() else {
        bail!(
            "{}: observability.metrics must be a mapping like {{host: 127.0.0.1, port: 9464}}",
            file.display()
        );
    };
    let get = |k: &str| map.get(yaml_serde::Value::String(k.to_string()));
    if let Some(enabled) = get("enabled") {
        match enabled.as_bool() {
            Some(false) => return Ok(None),
            Some(true) => {}
            None => bail!(
                "{}: observability.metrics.enabled must be true or false",
                file.display()
            ),
        }
    }
    let default: SocketAddr = DEFAULT_OBSERVE_ADDR
        .parse()
        .map_err(|e| anyhow!("default metrics address: {e}"))?;
    let host = match get("host") {
        None => default.ip().to_string(),
        Some(v) => v.as_str().map(str::to_string).ok_or_else(|| {
            anyhow!(
                "{}: observability.metrics.host must be text",
                file.display()
            )
        })?,
    };
    let port = match get("port") {
        None => default.port(),
        Some(v) => v
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| {
                anyhow!(
                    "{}: observability.metrics.port must be a port number (0–65535)",
                    file.display()
                )
            })?,
    };
    let addr: SocketAddr = format!("{host}:{port}")
        .parse()
        .or_else(|_| format!("[{host}]:{port}").parse())
        .map_err(|_| {
            anyhow!(
                "{}: observability.metrics.host `{host}` is not an IP address",
                file.display()
            )
        })?;
    let allowed_hosts = match get("allowed_hosts") {
        None => Vec::new(),
        Some(v) => v
            .as_sequence()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect()
            })
            .ok_or_else(|| {
                anyhow!(
                    "{}: observability.metrics.allowed_hosts must be a list of host names",
                    file.display()
                )
            })?,
    };
    let key = ["HERMES_METRICS_KEY", "API_SERVER_KEY"]
        .iter()
        .find_map(|k| app.env.get(*k).filter(|v| !v.trim().is_empty()))
        .map(|v| v.trim().to_string());
    Ok(Some(ObserveSettings {
        addr,
        key,
        allowed_hosts,
        limits: hermes_gateway::serve::ServeLimits::default(),
    }))
}

/// Where a running gateway of this home answers `/_status`: the `observability.metrics`
/// listener, then the API server (when enabled), each with its key. A wildcard bind address
/// is reached on loopback.
pub(crate) fn status_endpoints(
    app: &App,
    profile: Option<&str>,
) -> Vec<(SocketAddr, Option<String>)> {
    let mut out = Vec::new();
    if let Ok(Some(s)) = observe_settings(app) {
        out.push((reachable(s.addr), s.key));
    }
    #[cfg(feature = "api-server")]
    if let Ok(Some(s)) = super::api_settings(app, profile) {
        out.push((reachable(s.addr()), s.key.clone()));
    }
    #[cfg(not(feature = "api-server"))]
    let _ = profile;
    out
}

/// `addr` with an unspecified IP (`0.0.0.0`, `::`) replaced by loopback.
fn reachable(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        let ip = if addr.is_ipv4() {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
        };
        SocketAddr::new(ip, addr.port())
    } else {
        addr
    }
}

/// How long `hermes status --json` waits for a running gateway's answer.
const STATUS_FETCH_TIMEOUT: Duration = Duration::from_secs(3);

/// Largest `/_status` document `hermes status --json` reads (a gateway's is a few KiB).
const MAX_STATUS_BYTES: usize = 1024 * 1024;

/// The JSON of `response`, read up to [`MAX_STATUS_BYTES`]: `None` when longer, cut off or
/// not JSON. Whatever answers on the port is read only that far (an endless body otherwise
/// grows the process's memory for as long as the fetch timeout lets it).
async fn read_status(mut response: reqwest::Response) -> Option<Value> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_STATUS_BYTES as u64)
    {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_STATUS_BYTES {
            tracing::info!(url = %response.url(), "status endpoint answered more than 1 MiB");
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).ok()
}

/// `hermes status --json`: the running gateway's `/_status` when one of
/// [`status_endpoints`] answers (with `"source"` naming it), else what this process can
/// tell without one: the version, `"gateway": {"running": false}`, the cron scheduler's
/// heartbeat and the store.
pub(crate) async fn status_document(app: &App, profile: Option<&str>) -> Value {
    hermes_llm::init_tls();
    let client = reqwest::Client::builder()
        .timeout(STATUS_FETCH_TIMEOUT)
        .no_proxy()
        .build();
    if let Ok(client) = client {
        for (addr, key) in status_endpoints(app, profile) {
            let url = format!("http://{addr}/_status");
            let mut request = client.get(&url);
            if let Some(key) = &key {
                request = request.bearer_auth(key);
            }
            match request.send().await {
                Ok(r) if r.status().is_success() => {
                    if let Some(mut doc) = read_status(r).await
                        && doc.is_object()
                    {
                        doc["source"] = json!(url);
                        return doc;
                    }
                }
                Ok(r) => tracing::info!(%url, status = %r.status(), "status endpoint refused"),
                Err(e) => tracing::debug!(%url, error = %e, "no gateway status endpoint"),
            }
        }
    }
    let home = app.home.clone();
    let store = app.open_store().ok();
    let local = tokio::task::spawn_blocking(move || {
        (cron_status(&home, None), store.map(|s| store_status(&s)))
    })
    .await;
    let (cron, store) = local.unwrap_or((Value::Null, None));
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "gateway": {"running": false},
        "cron": cron,
        "store": store.unwrap_or_else(|| json!({"ok": false})),
    })
}
