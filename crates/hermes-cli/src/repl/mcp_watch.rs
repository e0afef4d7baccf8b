//! One line when an MCP server of the session is lost and one when it is back (issue 20
//! item 1): the servers' states are compared at safe points — before each prompt and on the
//! turn's ticks — so the line never lands inside the prompt being edited, and each change
//! is told once however many reconnect attempts it takes. The details are in the log files.
//!
//! The comparison itself is [`diff`], a pure function of the last states told and the states
//! now; [`McpWatch`] feeds it the manager's reports.

use std::collections::HashMap;
use std::sync::Arc;

use hermes_mcp::McpManager;
use hermes_mcp::server::ServerState;

/// The last state told for each server: `true` up, `false` down.
pub type Told = HashMap<String, bool>;

/// The last state told for each server, and the manager whose reports it watches.
pub struct McpWatch {
    manager: Arc<McpManager>,
    told: Told,
}

/// A change of one server worth one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Was up, now failed with this error.
    Lost {
        /// Server name.
        name: String,
        /// The error of its failed state.
        error: String,
    },
    /// Never told up or down before, and failed.
    DidNotStart {
        /// Server name.
        name: String,
        /// The error of its failed state.
        error: String,
    },
    /// Was down, now ready.
    Back {
        /// Server name.
        name: String,
    },
    /// Never told up or down before (still starting when the session began), now ready.
    Ready {
        /// Server name.
        name: String,
    },
}

impl Change {
    /// The line shown for this change; `tools` counts the tools a server exposes now.
    pub fn line(&self, tools: impl Fn(&str) -> usize) -> String {
        let reason = crate::assembly::mcp::friendly_reason;
        match self {
            Change::Lost { name, error } => format!(
                "MCP server `{name}` lost ({}); reconnecting in the background",
                reason(error)
            ),
            Change::DidNotStart { name, error } => format!(
                "MCP server `{name}` did not start: {} (details: `hermes logs`)",
                reason(error)
            ),
            Change::Back { name } => {
                format!("MCP server `{name}` is back ({} tools)", tools(name))
            }
            Change::Ready { name } => {
                format!("MCP server `{name}` is ready ({} tools)", tools(name))
            }
        }
    }
}

/// Up (`Some(true)`), down (`Some(false)`) or neither yet (starting, disabled, stopped).
fn up(state: &ServerState) -> Option<bool> {
    match state {
        ServerState::Ready => Some(true),
        ServerState::Failed(_) => Some(false),
        _ => None,
    }
}

/// The changes between what was `told` and the servers' `states` now, updating `told`:
/// up → failed is [`Change::Lost`], unknown → failed [`Change::DidNotStart`], down → ready
/// [`Change::Back`], unknown → ready [`Change::Ready`]; a state that stays the same (however often it is seen) and the
/// in-between states (starting, disabled, stopped) are no change.
pub fn diff<'a>(
    told: &mut Told,
    states: impl IntoIterator<Item = (&'a str, &'a ServerState)>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for (name, state) in states {
        let Some(now) = up(state) else { continue };
        let before = told.insert(name.to_string(), now);
        let name = name.to_string();
        match (before, state) {
            (Some(true), ServerState::Failed(e)) => changes.push(Change::Lost {
                name,
                error: e.clone(),
            }),
            (None, ServerState::Failed(e)) => changes.push(Change::DidNotStart {
                name,
                error: e.clone(),
            }),
            (Some(false), ServerState::Ready) => changes.push(Change::Back { name }),
            (None, ServerState::Ready) => changes.push(Change::Ready { name }),
            _ => {}
        }
    }
    changes
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
        let reports = self.manager.reports();
        let states = reports.iter().map(|r| (r.name.as_str(), &r.state));
        diff(&mut self.told, states)
            .iter()
            .map(|c| c.line(|name| crate::assembly::mcp::exposed_tool_count(&self.manager, name)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(told: &mut Told, state: &ServerState) -> Vec<String> {
        diff(told, [("files", state)])
            .iter()
            .map(|c| c.line(|_| 3))
            .collect()
    }

    #[test]
    fn ready_failed_failed_ready_tells_lost_then_back_once_each() {
        let mut told = Told::new();
        let failed = ServerState::Failed("connection refused".into());
        let mut lines = Vec::new();
        for state in [
            ServerState::Ready,
            failed.clone(),
            failed.clone(),
            ServerState::Starting,
            failed,
            ServerState::Ready,
        ] {
            lines.extend(step(&mut told, &state));
        }
        assert_eq!(
            lines,
            vec![
                "MCP server `files` is ready (3 tools)".to_string(),
                "MCP server `files` lost (connection refused); reconnecting in the background"
                    .to_string(),
                "MCP server `files` is back (3 tools)".to_string(),
            ]
        );
    }

    #[test]
    fn a_server_that_never_came_up_is_told_once() {
        let mut told = Told::new();
        let failed = ServerState::Failed("exit status 3".into());
        let first = step(&mut told, &failed);
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(first[0].contains("did not start"), "{first:?}");
        assert!(step(&mut told, &failed).is_empty());
        assert!(step(&mut told, &ServerState::Disabled).is_empty());
    }

    #[test]
    fn a_server_still_starting_at_the_start_is_told_ready_once() {
        let mut told = Told::new();
        assert!(step(&mut told, &ServerState::Starting).is_empty());
        assert_eq!(
            step(&mut told, &ServerState::Ready),
            vec!["MCP server `files` is ready (3 tools)".to_string()]
        );
        assert!(step(&mut told, &ServerState::Ready).is_empty());
    }
}
