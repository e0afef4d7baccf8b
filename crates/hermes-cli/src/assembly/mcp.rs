//! A session's MCP servers (FEATURES §11): the configured servers start concurrently at
//! session start and their tools are appended after the built-ins. `hermes mcp` and
//! `hermes doctor` use the same resolution and start options.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use hermes_mcp::config::{ServerSpec, resolve_section};
use hermes_mcp::server::{ServerState, SessionFacts};
use hermes_mcp::{McpManager, StartOptions};
use hermes_tools::Tool;

use crate::assembly::app::App;

/// How long a session start waits for MCP servers before the first prompt; slower servers
/// keep starting and are used once ready (reconnect on first call).
pub const DISCOVERY_WAIT: Duration = Duration::from_secs(5);

/// How long a session start waits for MCP servers before saying it is waiting.
const SLOW_START_NOTICE: Duration = Duration::from_secs(1);

fn lookup(app: &App) -> impl Fn(&str) -> Option<String> + '_ {
    move |k: &str| app.env.get(k).cloned()
}

/// The configured servers, resolved; bad entries are reported on stderr once.
pub fn configured(app: &App) -> Vec<ServerSpec> {
    let look = lookup(app);
    let (specs, errors) = resolve_section(app.config.mcp_servers.as_ref(), &look);
    for e in errors {
        errln!("warning: {e}");
    }
    specs
}

/// Who answers the requests MCP servers make of a session.
#[derive(Clone, Default)]
pub struct ServerRequests {
    /// Serves `sampling/createMessage` (the session's model); `None` declines.
    pub sampler: Option<Arc<dyn hermes_mcp::sampling::Sampler>>,
    /// Answers `elicitation/create` (the user at a terminal); `None` declines (headless).
    pub elicitor: Option<Arc<dyn hermes_mcp::elicitation::Elicitor>>,
}

/// Starts the enabled servers of `config.yaml` for a session (waiting at most
/// [`DISCOVERY_WAIT`]); `None` when none are configured. Failures are reported once on stderr.
pub async fn start_for_session(
    app: &App,
    cwd: &std::path::Path,
    builtin: &[Arc<dyn Tool>],
    requests: ServerRequests,
) -> Option<McpManager> {
    let specs: Vec<ServerSpec> = configured(app).into_iter().filter(|s| s.enabled).collect();
    if specs.is_empty() {
        return None;
    }
    let mut opts = options(app, cwd, builtin, DISCOVERY_WAIT);
    opts.facts.sampler = requests.sampler;
    opts.facts.elicitor = requests.elicitor;
    // A start that takes more than a moment says why nothing happens yet (the user pass of
    // issue 20: the REPL showed nothing for the 5 s of a silent server).
    let notice = tokio::spawn(async {
        tokio::time::sleep(SLOW_START_NOTICE).await;
        errln!(
            "waiting up to {} s for MCP servers to start…",
            DISCOVERY_WAIT.as_secs()
        );
    });
    let manager = McpManager::start(specs, opts).await;
    notice.abort();
    for r in manager.reports() {
        match &r.state {
            ServerState::Failed(e) => {
                tracing::warn!(server = %r.name, error = %e, "MCP server did not start");
                errln!(
                    "warning: MCP server `{}` did not start: {} (details: `hermes logs`)",
                    r.name,
                    friendly_reason(&e.to_string())
                );
            }
            // Still connecting or not answering `initialize`: the session does not wait
            // longer, and says so once (issue 20); the REPL tells when it is ready.
            ServerState::Starting => {
                tracing::warn!(server = %r.name, wait_s = DISCOVERY_WAIT.as_secs(), "MCP server still starting");
                errln!(
                    "warning: MCP server `{}` has not answered within {} s; going on without it, its tools join when it is ready",
                    r.name,
                    DISCOVERY_WAIT.as_secs()
                );
            }
            _ => {}
        }
    }
    Some(manager)
}

/// How many tools the model gets from server `name` — its tools plus the resource and
/// prompt helpers it advertises, as `hermes mcp test` lists them (issue 20 item 10: `doctor`
/// and `mcp test` give the same count).
pub fn exposed_tool_count(manager: &McpManager, name: &str) -> usize {
    let toolset = format!("mcp-{name}");
    manager
        .tools()
        .iter()
        .filter(|t| t.toolset() == toolset)
        .count()
}

/// A one-line reason for the terminal from an MCP start error: Rust type names in brackets
/// (`[rmcp::transport::…<…>]`) removed, whitespace collapsed, at most 160 characters. The
/// whole error goes to the log file.
pub fn friendly_reason(error: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in error.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    let out = crate::masking::mask(&out.split_whitespace().collect::<Vec<_>>().join(" "));
    if out.chars().count() > 160 {
        let cut: String = out.chars().take(159).collect();
        return format!("{cut}…");
    }
    out
}

/// Start options for servers of `app` in `cwd`: log and token folders in the home, the
/// built-in tool names MCP tools may not shadow, and how long to wait for discovery.
pub fn options(
    app: &App,
    cwd: &std::path::Path,
    builtin: &[Arc<dyn Tool>],
    wait: Duration,
) -> StartOptions {
    StartOptions {
        facts: SessionFacts {
            cwd: cwd.to_path_buf(),
            log_dir: Some(app.home.root().join("logs")),
            token_dir: Some(app.home.root().join("mcp-tokens")),
            sampler: None,
            elicitor: None,
        },
        builtin_names: builtin
            .iter()
            .map(|t| t.spec().name)
            .collect::<HashSet<_>>(),
        discovery_wait: wait,
    }
}

#[cfg(test)]
mod friendly_tests {
    #[test]
    fn friendly_reason_drops_type_names() {
        let e = "initialize failed: Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: Client error: error sending request";
        let r = super::friendly_reason(e);
        assert_eq!(
            r,
            "initialize failed: Send message error Transport error: Client error: error sending request"
        );
    }
}
