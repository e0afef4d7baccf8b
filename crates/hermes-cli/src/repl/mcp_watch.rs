//! One line when an MCP server of the session is lost and one when it is back (issue 20
//! item 1): the servers' states are compared at safe points — before each prompt and on the
//! turn's ticks — so the line never lands inside the prompt being edited, and each change
//! is told once however many reconnect attempts it takes. The details are in the log files.

use std::collections::HashMap;
use std::sync::Arc;

use hermes_mcp::McpManager;
use hermes_mcp::server::ServerState;

/// The last state told for each server: `true` up, `false` down.
pub struct McpWatch {
    manager: Arc<McpManager>,
    told: HashMap<String, bool>,
}

/// Up (`Some(true)`), down (`Some(false)`) or neither yet (starting, disabled, stopped).
fn up(state: &ServerState) -> Option<bool> {
    match state {
        ServerState::Ready => Some(true),
        ServerState::Failed(_) => Some(false),
        _ => None,
    }
}

impl McpWatch {
    /// Watches `manager`'s servers from their state now (a server that did not start was
    /// reported when the session started).
    pub fn new(manager: Arc<McpManager>) -> McpWatch {
        let told = manager
            .reports()
            .into_iter()
            .filter_map(|r| up(&r.state).map(|u| (r.name, u)))
            .collect();
        McpWatch { manager, told }
    }

    /// The lines to show for what changed since the last call.
    pub fn changes(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        for r in self.manager.reports() {
            let Some(now) = up(&r.state) else { continue };
            let before = self.told.insert(r.name.clone(), now);
            match (before, now, &r.state) {
                (Some(true), false, ServerState::Failed(e)) => lines.push(format!(
                    "MCP server `{}` lost ({}); reconnecting in the background",
                    r.name,
                    crate::assembly::mcp::friendly_reason(e)
                )),
                (None, false, ServerState::Failed(e)) => lines.push(format!(
                    "MCP server `{}` did not start: {} (details: `hermes logs`)",
                    r.name,
                    crate::assembly::mcp::friendly_reason(e)
                )),
                (Some(false), true, _) => lines.push(format!(
                    "MCP server `{}` is back ({} tools)",
                    r.name,
                    crate::assembly::mcp::exposed_tool_count(&self.manager, &r.name)
                )),
                _ => {}
            }
        }
        lines
    }
}
