//! The set of servers of one session and the bridge into the tool registry: concurrent start
//! with a short discovery wait, the combined live tool list (`mcp__<server>__<tool>`, never
//! shadowing built-ins), status reports and shutdown (FEATURES §11).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolHealth, ToolOutput};
use serde_json::Value;

use crate::breaker::BreakerState;
use crate::config::ServerSpec;
use crate::naming::assign_names;
use crate::server::{McpServer, ServerState, SessionFacts};

/// How a session starts its servers.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// Working directory and log folder.
    pub facts: SessionFacts,
    /// Names of the built-in tools; MCP tools never take these names.
    pub builtin_names: HashSet<String>,
    /// How long [`McpManager::start`] waits for servers before returning; slower servers
    /// keep starting in the background and their tools appear when ready.
    pub discovery_wait: Duration,
}

/// One line of `hermes mcp list` / `hermes doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// Server name.
    pub name: String,
    /// Its state.
    pub state: ServerState,
    /// Number of exposed tools.
    pub tools: usize,
    /// The breaker is open or half-open.
    pub breaker_open: bool,
}

/// The MCP servers of one session.
#[derive(Debug, Clone)]
pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
    builtin_names: HashSet<String>,
    generation: Arc<AtomicU64>,
}

impl McpManager {
    /// Starts every enabled server concurrently and waits at most
    /// `opts.discovery_wait` for them; a server that fails is logged once and left in
    /// [`ServerState::Failed`] (its tools reconnect on first use), the others keep working.
    pub async fn start(specs: Vec<ServerSpec>, opts: StartOptions) -> McpManager {
        let generation = Arc::new(AtomicU64::new(0));
        let servers: Vec<Arc<McpServer>> = specs
            .into_iter()
            .map(|s| McpServer::new(s, opts.facts.clone(), generation.clone()))
            .collect();
        let mut tasks = Vec::new();
        for server in servers.iter().filter(|s| s.spec().enabled) {
            let server = server.clone();
            tasks.push(tokio::spawn(async move {
                let _ = server.connect().await;
                crate::reconnect::spawn_supervisor(&server);
            }));
        }
        let all = futures::future::join_all(tasks);
        let _ = tokio::time::timeout(opts.discovery_wait, all).await;
        McpManager {
            servers,
            builtin_names: opts.builtin_names,
            generation,
        }
    }

    /// The servers, in configuration order.
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<Arc<McpServer>> {
        self.servers.iter().find(|s| s.name() == name).cloned()
    }

    /// Bumped whenever any server's tool list changes: a caller that cached [`Self::tools`]
    /// rebuilds when this differs (case C32).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Every server's current tools as [`Tool`]s, servers in configuration order; per server
    /// the resource/prompt utility tools (when advertised) then the server's tools in listing
    /// order. Names are unique and never one of the built-ins.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut taken = self.builtin_names.clone();
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            let remote = server.tools();
            // Utility tools first so a server tool of the same name gets the suffix.
            let kinds = crate::utility::Kind::for_capabilities(&server.capabilities());
            let utility_names =
                assign_names(server.name(), kinds.iter().map(|k| k.suffix()), &taken);
            for kind in &kinds {
                let Some((exposed, _)) = utility_names.iter().find(|(_, o)| *o == kind.suffix())
                else {
                    continue;
                };
                taken.insert(exposed.clone());
                out.push(Arc::new(crate::utility::UtilityTool {
                    server: server.clone(),
                    kind: *kind,
                    name: exposed.clone(),
                    toolset: toolset_name(server.name()),
                }));
            }
            let names = assign_names(
                server.name(),
                remote.iter().map(|t| t.name.as_str()),
                &taken,
            );
            let by_original: BTreeMap<&str, &str> = names
                .iter()
                .map(|(e, o)| (o.as_str(), e.as_str()))
                .collect();
            for t in &remote {
                let Some(exposed) = by_original.get(t.name.as_str()) else {
                    continue;
                };
                taken.insert((*exposed).to_string());
                out.push(Arc::new(McpTool {
                    server: server.clone(),
                    spec: ToolSpec {
                        name: (*exposed).to_string(),
                        description: t.description.clone(),
                        parameters: t.input_schema.clone(),
                    },
                    original: t.name.clone(),
                    toolset: toolset_name(server.name()),
                }));
            }
        }
        out
    }

    /// One report per server.
    pub fn reports(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|s| ServerReport {
                name: s.name().to_string(),
                state: s.state(),
                tools: s.tools().len(),
                breaker_open: !matches!(s.breaker_state(), BreakerState::Closed),
            })
            .collect()
    }

    /// Shuts every server down (children exit or are killed with their process group).
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

/// The toolset of a server's tools: `mcp-<server>`. Leaked once per server name (a handful
/// per process) because [`Tool::toolset`] returns `&'static str`.
fn toolset_name(server: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let wanted = format!("mcp-{server}");
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.iter().find(|n| **n == wanted) {
        return n;
    }
    let leaked: &'static str = Box::leak(wanted.into_boxed_str());
    names.push(leaked);
    leaked
}

/// One server tool exposed to the model as `mcp__<server>__<tool>`; calls dispatch to the
/// server's original tool name (case C31).
pub struct McpTool {
    server: Arc<McpServer>,
    spec: ToolSpec,
    original: String,
    toolset: &'static str,
}

impl McpTool {
    /// The tool's name on its server.
    pub fn original_name(&self) -> &str {
        &self.original
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn toolset(&self) -> &'static str {
        self.toolset
    }

    /// Sequential unless the server is configured `supports_parallel_tool_calls: true`.
    fn parallelism(&self) -> Parallelism {
        if self.server.spec().parallel {
            Parallelism::Safe
        } else {
            Parallelism::Never
        }
    }

    /// The server's state and circuit breaker as the tool's health (seed 004 §3, reusing
    /// FEATURES §11's breaker rather than a second check): while the breaker is open or the
    /// server is down, calls are answered at once with the breaker's message — its fallback —
    /// so the tool stays offered and comes back with the breaker's half-open probe.
    fn health(&self) -> ToolHealth {
        server_health(&self.server)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let r = self.server.call(&self.original, args, &ctx.cancel).await;
        ToolOutput {
            content: r.text,
            is_error: r.is_error,
        }
    }
}

/// The health of a server's tools: its breaker first, then its connection state.
pub(crate) fn server_health(server: &McpServer) -> ToolHealth {
    let down = |reason: String| ToolHealth::Unhealthy {
        reason,
        fallback: true,
    };
    match server.breaker_state() {
        BreakerState::Open { retry_in } if !retry_in.is_zero() => {
            return down(format!(
                "circuit breaker open after {} failed calls; next try in {} s",
                crate::breaker::FAILURE_THRESHOLD,
                retry_in.as_secs().max(1)
            ));
        }
        BreakerState::HalfOpen => {
            return down("circuit breaker half-open: one probe call in flight".to_string());
        }
        _ => {}
    }
    match server.state() {
        ServerState::Ready => ToolHealth::Healthy,
        ServerState::Starting => ToolHealth::Unknown,
        ServerState::Failed(e) => down(format!(
            "server failed: {}",
            e.chars().take(200).collect::<String>()
        )),
        ServerState::Disabled | ServerState::Stopped => down("server stopped".to_string()),
    }
}

/// The agent re-reads MCP tools before every model call when a server's list changed
/// (`notifications/tools/list_changed`, case C32).
impl hermes_tools::ToolSource for McpManager {
    fn generation(&self) -> u64 {
        McpManager::generation(self)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        McpManager::tools(self)
    }
}
