//! One MCP server: connecting through rmcp (stdio child or Streamable HTTP), the client
//! handler (roots, list-changed, elicitation), the live tool list, reconnects, the breaker and
//! the guarded `tools/call` (FEATURES §11).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::breaker::{Breaker, BreakerState};
use crate::config::{ServerSpec, Transport};
use crate::handler::Handler;
use crate::mapping::{MappedResult, map_call_result, normalize_schema};
use crate::stdio::{self, StdioChild};
use crate::trace_context::{self, TraceHeaders};

/// The MCP protocol version hermes asks for in `initialize` (spec 2025-11-25).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// A tool as the server lists it (after the `tools:` filter).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    /// The server's own name.
    pub name: String,
    /// Description (empty when none).
    pub description: String,
    /// Normalized input schema.
    pub input_schema: Value,
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Connecting / initializing.
    Starting,
    /// Initialized; tools listed.
    Ready,
    /// The last connect or call failed with this error.
    Failed(String),
    /// `enabled: false`.
    Disabled,
    /// Shut down.
    Stopped,
}

/// Session facts the client side answers with.
#[derive(Clone)]
pub struct SessionFacts {
    /// The session's working directory (cwd of stdio children; never offered as a root).
    pub cwd: PathBuf,
    /// Serves `sampling/createMessage` (the session's model) for servers whose `sampling`
    /// is on; `None` declines sampling everywhere.
    pub sampler: Option<Arc<dyn crate::sampling::Sampler>>,
    /// Answers `elicitation/create` (the REPL asks the user); `None` declines every request
    /// (headless: cron, the gateway, `chat -q` without a terminal).
    pub elicitor: Option<Arc<dyn crate::elicitation::Elicitor>>,
    /// Folder for `mcp-<server>.log` files (stderr and stdout noise); `None` logs to tracing
    /// only.
    pub log_dir: Option<PathBuf>,
    /// Folder of the OAuth token files of `auth: oauth` servers
    /// (`HERMES_HOME/mcp-tokens`); `None` makes such servers fail to start with a message.
    pub token_dir: Option<PathBuf>,
}

impl std::fmt::Debug for SessionFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFacts")
            .field("cwd", &self.cwd)
            .field("log_dir", &self.log_dir)
            .field("token_dir", &self.token_dir)
            .field("sampler", &self.sampler.is_some())
            .field("elicitor", &self.elicitor.is_some())
            .finish()
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    child: Option<StdioChild>,
}

/// One configured server and its live state.
pub struct McpServer {
    spec: ServerSpec,
    facts: SessionFacts,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    tools: RwLock<Vec<RemoteTool>>,
    state: Mutex<ServerState>,
    breaker: Breaker,
    generation: Arc<AtomicU64>,
    sequential: tokio::sync::Mutex<()>,
    ignored_lines: Arc<AtomicU64>,
    stop: CancellationToken,
    sampling_gate: std::sync::OnceLock<Arc<crate::sampling::SamplingGate>>,
    caps: RwLock<Value>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.spec.name)
            .field("state", &self.state())
            .finish()
    }
}

fn fill(template: &str, pairs: &[(&str, String)]) -> String {
    let mut out = template.trim_end().to_string();
    for (k, v) in pairs {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// Installs the `ring` rustls provider once (reqwest is built with `rustls-no-provider`).
pub(crate) fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

impl McpServer {
    /// A server that is not connected yet. `generation` is bumped whenever its tool list
    /// changes (shared by all servers of a manager).
    pub fn new(
        spec: ServerSpec,
        facts: SessionFacts,
        generation: Arc<AtomicU64>,
    ) -> Arc<McpServer> {
        let state = if spec.enabled {
            ServerState::Starting
        } else {
            ServerState::Disabled
        };
        Arc::new(McpServer {
            spec,
            facts,
            conn: tokio::sync::Mutex::new(None),
            tools: RwLock::new(Vec::new()),
            state: Mutex::new(state),
            breaker: Breaker::default(),
            generation,
            sequential: tokio::sync::Mutex::new(()),
            ignored_lines: Arc::new(AtomicU64::new(0)),
            stop: CancellationToken::new(),
            sampling_gate: std::sync::OnceLock::new(),
            caps: RwLock::new(Value::Null),
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The configuration this server runs with.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Current state.
    pub fn state(&self) -> ServerState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_state(&self, s: ServerState) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    /// The breaker's state.
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// The current tool list (after the `tools:` filter).
    pub fn tools(&self) -> Vec<RemoteTool> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// stdout lines of stdio children that were not JSON-RPC (case C29), over all
    /// connections so far.
    pub fn ignored_lines(&self) -> u64 {
        self.ignored_lines.load(Ordering::Relaxed)
    }

    /// `serverInfo` of the live connection, as JSON.
    pub async fn server_info(&self) -> Option<Value> {
        let conn = self.conn.lock().await.clone()?;
        let info = conn.service.peer().peer_info()?;
        serde_json::to_value(info.as_ref())
            .ok()
            .map(|v| v["serverInfo"].clone())
    }

    /// Connects (spawn or HTTP), initializes within `connect_timeout`, lists the tools and
    /// starts the list-changed listener. On failure the state is [`ServerState::Failed`].
    ///
    /// # Errors
    /// A one-line reason (spawn error, initialize error, timeout).
    pub async fn connect(self: &Arc<Self>) -> Result<(), String> {
        if !self.spec.enabled {
            return Err("disabled in config.yaml".to_string());
        }
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref()
            && alive(c)
        {
            return Ok(());
        }
        if let Some(dead) = slot.take() {
            tokio::spawn(close(dead));
        }
        self.set_state(ServerState::Starting);
        // A shutdown does not wait out a server that never answers `initialize` (the user
        // pass of issue 20: `hermes doctor` sat through the whole connect timeout).
        let opened = tokio::select! {
            opened = self.open() => opened,
            () = self.stop.cancelled() => Err("stopped before it answered initialize".to_string()),
        };
        match opened {
            Ok(conn) => {
                let conn = Arc::new(conn);
                if let Some(caps) = conn
                    .service
                    .peer()
                    .peer_info()
                    .and_then(|i| serde_json::to_value(i.as_ref()).ok())
                {
                    *self.caps.write().unwrap_or_else(|p| p.into_inner()) =
                        caps["capabilities"].clone();
                }
                *slot = Some(conn.clone());
                drop(slot);
                if let Err(e) = self.refresh_with(&conn).await {
                    self.set_state(ServerState::Failed(e.clone()));
                    return Err(e);
                }
                self.set_state(ServerState::Ready);
                Ok(())
            }
            Err(e) => {
                tracing::warn!(server = %self.spec.name, error = %e, "MCP server failed to start");
                self.set_state(ServerState::Failed(e.clone()));
                Err(e)
            }
        }
    }

    async fn open(self: &Arc<Self>) -> Result<Connection, String> {
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = Handler {
            server: self.spec.name.clone(),
            roots: self.spec.roots.clone(),
            tools_changed: tx,
            sampler: match (&self.facts.sampler, self.spec.sampling) {
                (Some(s), Some(caps)) => Some(
                    self.sampling_gate
                        .get_or_init(|| {
                            Arc::new(crate::sampling::SamplingGate::new(s.clone(), caps))
                        })
                        .clone(),
                ),
                _ => None,
            },
            elicitor: self.facts.elicitor.clone(),
        };
        let limit = self.spec.connect_timeout;
        let timeout_msg = || format!("initialize timed out after {} s", limit.as_secs());
        let conn = match &self.spec.transport {
            Transport::Stdio { command, args, env } => {
                let log = self.facts.log_dir.as_ref().map(|d| {
                    d.join(format!(
                        "mcp-{}.log",
                        crate::naming::sanitize_part(&self.spec.name)
                    ))
                });
                let (child, out, stdin) =
                    stdio::spawn(&self.spec.name, command, args, env, &self.facts.cwd, log)
                        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                let stats = child.stats.clone();
                let counter = self.ignored_lines.clone();
                let result =
                    tokio::time::timeout(limit, rmcp::serve_client(handler, (out, stdin))).await;
                counter.fetch_add(
                    stats.ignored_lines.swap(0, Ordering::Relaxed) as u64,
                    Ordering::Relaxed,
                );
                let service = result
                    .map_err(|_| timeout_msg())?
                    .map_err(|e| format!("initialize failed: {e}"))?;
                // Keep counting noise after initialize.
                let stop = self.stop.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                        }
                        let n = stats.ignored_lines.swap(0, Ordering::Relaxed) as u64;
                        counter.fetch_add(n, Ordering::Relaxed);
                        if std::sync::Arc::strong_count(&stats) == 1 {
                            break;
                        }
                    }
                });
                Connection {
                    service,
                    child: Some(child),
                }
            }
            Transport::Http {
                url,
                headers,
                oauth,
            } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                ensure_crypto_provider();
                let mut map = std::collections::HashMap::new();
                for (k, v) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| format!("header `{k}`: {e}"))?;
                    let value = reqwest::header::HeaderValue::from_str(v)
                        .map_err(|e| format!("header `{k}`: {e}"))?;
                    map.insert(name, value);
                }
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                let service = match oauth {
                    None => {
                        let transport = StreamableHttpClientTransport::with_client(
                            TraceHeaders(http_client()?),
                            config,
                        );
                        tokio::time::timeout(limit, rmcp::serve_client(handler, transport))
                            .await
                            .map_err(|_| timeout_msg())?
                            .map_err(|e| format!("initialize failed: {e}"))?
                    }
                    Some(settings) => {
                        let dir = self.facts.token_dir.as_ref().ok_or_else(|| {
                            "auth: oauth needs a token folder (HERMES_HOME/mcp-tokens)".to_string()
                        })?;
                        let store = crate::oauth::FileTokenStore::new(crate::oauth::token_path(
                            dir,
                            &self.spec.name,
                        ));
                        let name = self.spec.name.clone();
                        let connect = async move {
                            let client =
                                crate::oauth::authorized_client(&name, url, settings, store)
                                    .await
                                    .map_err(|e| e.to_string())?;
                            let transport = StreamableHttpClientTransport::with_client(
                                TraceHeaders(client),
                                config,
                            );
                            rmcp::serve_client(handler, transport)
                                .await
                                .map_err(|e| format!("initialize failed: {e}"))
                        };
                        tokio::time::timeout(limit, connect)
                            .await
                            .map_err(|_| timeout_msg())??
                    }
                };
                Connection {
                    service,
                    child: None,
                }
            }
        };
        self.spawn_refresher(rx);
        Ok(conn)
    }

    fn spawn_refresher(self: &Arc<Self>, mut rx: mpsc::UnboundedReceiver<()>) {
        let weak = Arc::downgrade(self);
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let got = tokio::select! {
                    _ = stop.cancelled() => None,
                    m = rx.recv() => m,
                };
                if got.is_none() {
                    break;
                }
                // Coalesce a burst (server-everything sends four at start).
                while rx.try_recv().is_ok() {}
                let Some(server) = weak.upgrade() else { break };
                if let Err(e) = server.refresh().await {
                    tracing::warn!(server = %server.spec.name, error = %e, "tools/list after list_changed failed");
                }
            }
        });
    }

    /// Lists the tools again (all pages) and replaces the tool list.
    ///
    /// # Errors
    /// Not connected, or the `tools/list` request failed.
    pub async fn refresh(&self) -> Result<(), String> {
        let conn = self.conn.lock().await.clone();
        let Some(conn) = conn else {
            return Err("not connected".to_string());
        };
        self.refresh_with(&conn).await
    }

    async fn refresh_with(&self, conn: &Connection) -> Result<(), String> {
        let listed = tokio::time::timeout(
            self.spec.connect_timeout,
            conn.service.peer().list_all_tools(),
        )
        .await
        .map_err(|_| "tools/list timed out".to_string())?
        .map_err(|e| format!("tools/list failed: {e}"))?;
        let tools: Vec<RemoteTool> = listed
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .filter_map(|v| {
                let name = v.get("name")?.as_str()?.to_string();
                Some(RemoteTool {
                    description: v
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    input_schema: normalize_schema(v.get("inputSchema").unwrap_or(&Value::Null)),
                    name,
                })
            })
            .filter(|t| self.spec.tools.allows(&t.name))
            .collect();
        let mut current = self.tools.write().unwrap_or_else(|p| p.into_inner());
        if *current != tools {
            *current = tools;
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Calls `tool` (the server's own name) with `args`, guarded by the breaker, the
    /// per-call timeout, `cancel`, and one-at-a-time unless the server allows parallel calls.
    /// Reconnects first when the connection is gone. Never fails: problems become error
    /// results for the model.
    ///
    /// The call is a span (`tools/call {tool}`, OpenTelemetry's MCP client conventions) and
    /// carries the trace context to the server ([`crate::trace_context`]).
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> MappedResult {
        use tracing::Instrument;
        let transport = match self.spec.transport {
            Transport::Stdio { .. } => "pipe",
            Transport::Http { .. } => "tcp",
        };
        let span = tracing::info_span!(
            "mcp.call",
            "otel.name" = %format!("tools/call {tool}"),
            "otel.kind" = "client",
            "mcp.method.name" = "tools/call",
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = tool,
            "hermes.mcp.server" = %self.spec.name,
            "network.transport" = transport,
            "error.type" = tracing::field::Empty,
        );
        let result = self
            .call_untraced(tool, args, cancel)
            .instrument(span.clone())
            .await;
        if result.is_error {
            span.record("error.type", "tool_error");
        }
        result
    }

    async fn call_untraced(
        self: &Arc<Self>,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> MappedResult {
        let name = &self.spec.name;
        if let Err(retry_in) = self.breaker.try_acquire() {
            return MappedResult {
                text: fill(
                    include_str!("../prompts/breaker_open.md"),
                    &[
                        ("server", name.clone()),
                        ("failures", crate::breaker::FAILURE_THRESHOLD.to_string()),
                        ("seconds", retry_in.as_secs().max(1).to_string()),
                    ],
                ),
                is_error: true,
            };
        }
        let _turn = if self.spec.parallel {
            None
        } else {
            Some(self.sequential.lock().await)
        };
        let conn = {
            let c = self.conn.lock().await.clone();
            match c {
                Some(c) if alive(&c) => Ok(c),
                _ => match self.connect().await {
                    Ok(()) => self
                        .conn
                        .lock()
                        .await
                        .clone()
                        .ok_or_else(|| "not connected".to_string()),
                    Err(e) => Err(e),
                },
            }
        };
        let conn = match conn {
            Ok(c) => c,
            Err(e) => return self.failed(e),
        };
        if !self.tools().iter().any(|t| t.name == tool) {
            self.breaker.record_success();
            return MappedResult {
                text: fill(
                    include_str!("../prompts/tool_removed.md"),
                    &[("server", name.clone()), ("tool", tool.to_string())],
                ),
                is_error: true,
            };
        }
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        if let Some(meta) = trace_context::meta() {
            params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(
                meta,
            )));
        }
        let call = conn.service.peer().call_tool(params);
        let outcome = tokio::select! {
            r = tokio::time::timeout(self.spec.call_timeout, call) => r,
            _ = cancel.cancelled() => {
                return MappedResult { text: "interrupted".to_string(), is_error: true };
            }
        };
        match outcome {
            Ok(Ok(result)) => {
                self.breaker.record_success();
                self.set_state(ServerState::Ready);
                match serde_json::to_value(&result) {
                    Ok(v) => map_call_result(&v),
                    Err(e) => MappedResult {
                        text: format!("unreadable result: {e}"),
                        is_error: true,
                    },
                }
            }
            Ok(Err(e)) => {
                let closed = conn.service.is_closed()
                    || matches!(
                        e,
                        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                    );
                if closed {
                    let mut slot = self.conn.lock().await;
                    if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                        *slot = None;
                    }
                }
                self.failed(format!("tools/call `{tool}` failed: {e}"))
            }
            Err(_) => {
                self.breaker.record_failure();
                MappedResult {
                    text: fill(
                        include_str!("../prompts/call_timeout.md"),
                        &[
                            ("server", name.clone()),
                            ("tool", tool.to_string()),
                            ("seconds", self.spec.call_timeout.as_secs().to_string()),
                        ],
                    ),
                    is_error: true,
                }
            }
        }
    }

    fn failed(&self, error: String) -> MappedResult {
        self.breaker.record_failure();
        self.set_state(ServerState::Failed(error.clone()));
        MappedResult {
            text: fill(
                include_str!("../prompts/server_failed.md"),
                &[("server", self.spec.name.clone()), ("error", error)],
            ),
            is_error: true,
        }
    }

    async fn drop_connection(&self) {
        let conn = self.conn.lock().await.take();
        if let Some(conn) = conn {
            close(conn).await;
        }
    }

    async fn live(&self) -> Result<Arc<Connection>, String> {
        match self.conn.lock().await.clone() {
            Some(c) if alive(&c) => Ok(c),
            _ => Err(format!("MCP server `{}` is not connected", self.spec.name)),
        }
    }

    /// The capabilities the server advertised at its last `initialize`, as JSON; `Null`
    /// before the first connection.
    pub fn capabilities(&self) -> Value {
        self.caps.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `resources/list` (all pages) as a JSON array.
    ///
    /// # Errors
    /// Not connected, timeout, or the server's error.
    pub async fn list_resources(&self) -> Result<Value, String> {
        let conn = self.live().await?;
        let r = tokio::time::timeout(
            self.spec.call_timeout,
            conn.service.peer().list_all_resources(),
        )
        .await
        .map_err(|_| "resources/list timed out".to_string())?
        .map_err(|e| format!("resources/list failed: {e}"))?;
        serde_json::to_value(r).map_err(|e| e.to_string())
    }

    /// `resources/read` of `uri`: the result's JSON (`{contents: [...]}`).
    ///
    /// # Errors
    /// Not connected, timeout, or the server's error.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, String> {
        let conn = self.live().await?;
        let params = serde_json::from_value(with_trace_meta(json!({"uri": uri})))
            .map_err(|e| e.to_string())?;
        let r = tokio::time::timeout(
            self.spec.call_timeout,
            conn.service.peer().read_resource(params),
        )
        .await
        .map_err(|_| "resources/read timed out".to_string())?
        .map_err(|e| format!("resources/read failed: {e}"))?;
        serde_json::to_value(r).map_err(|e| e.to_string())
    }

    /// `prompts/list` (all pages) as a JSON array.
    ///
    /// # Errors
    /// Not connected, timeout, or the server's error.
    pub async fn list_prompts(&self) -> Result<Value, String> {
        let conn = self.live().await?;
        let r = tokio::time::timeout(
            self.spec.call_timeout,
            conn.service.peer().list_all_prompts(),
        )
        .await
        .map_err(|_| "prompts/list timed out".to_string())?
        .map_err(|e| format!("prompts/list failed: {e}"))?;
        serde_json::to_value(r).map_err(|e| e.to_string())
    }

    /// `prompts/get` of `name` with string `arguments`: the result's JSON (`{messages}`).
    ///
    /// # Errors
    /// Not connected, timeout, or the server's error.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, String> {
        let conn = self.live().await?;
        let params = serde_json::from_value(with_trace_meta(
            json!({"name": name, "arguments": arguments}),
        ))
        .map_err(|e| e.to_string())?;
        let r = tokio::time::timeout(
            self.spec.call_timeout,
            conn.service.peer().get_prompt(params),
        )
        .await
        .map_err(|_| "prompts/get timed out".to_string())?
        .map_err(|e| format!("prompts/get failed: {e}"))?;
        serde_json::to_value(r).map_err(|e| e.to_string())
    }

    /// Whether the current connection is usable (initialized, transport open).
    pub async fn is_alive(&self) -> bool {
        self.conn.lock().await.as_ref().is_some_and(|c| alive(c))
    }

    /// Drops a connection found dead and marks the server failed; the supervisor
    /// ([`crate::reconnect`]) reconnects it.
    pub(crate) async fn mark_lost(&self) {
        let dead = {
            let mut slot = self.conn.lock().await;
            match slot.as_ref() {
                Some(c) if alive(c) => return,
                _ => slot.take(),
            }
        };
        if !self.stop.is_cancelled() {
            self.set_state(ServerState::Failed("connection lost".to_string()));
        }
        if let Some(dead) = dead {
            close(dead).await;
        }
    }

    /// Cancelled by [`Self::shutdown`].
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Closes the connection: cancels the session, closes stdin, waits up to 2 s for the child
    /// to exit, then kills its process group.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.drop_connection().await;
        self.set_state(ServerState::Stopped);
    }
}

/// Initialized and its transport still open (a stdio child that exited closes it).
fn alive(c: &Connection) -> bool {
    !c.service.is_closed() && !c.service.peer().is_transport_closed()
}

async fn close(conn: Arc<Connection>) {
    match Arc::try_unwrap(conn) {
        Ok(Connection { service, child }) => {
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
            if let Some(child) = child {
                child.shutdown(Duration::from_secs(2)).await;
            }
        }
        // Still used by an in-flight call: dropping the last reference kills the child.
        Err(conn) => drop(conn),
    }
}

/// `params` with the current trace context as its `_meta` (unchanged when not traced).
fn with_trace_meta(mut params: Value) -> Value {
    if let (Some(meta), Value::Object(map)) = (trace_context::meta(), &mut params) {
        map.insert("_meta".to_string(), Value::Object(meta));
    }
    params
}

/// The HTTP client of a Streamable HTTP server without OAuth: rmcp's defaults — no idle
/// connection pool (it stalls on Linux' delayed ACKs when a body was left unread) and only
/// same-origin 307/308 redirects, at most 10, so the POST body survives and custom headers
/// (keys) never reach another host.
fn http_client() -> Result<reqwest::Client, String> {
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_body && attempt.previous().len() <= 10 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(redirects)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}
