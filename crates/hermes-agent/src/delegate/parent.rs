//! What a running `delegate_task` call knows about the agent that called it.
//!
//! A tool only receives its arguments and a [`hermes_tools::ToolContext`]; a subagent also
//! needs the caller's session id (its parent link), model client, tool list, store and
//! options. The agent provides them for the duration of each tool batch through a tokio
//! task-local ([`with_parent`]); the tool reads them when it starts ([`current_parent`]).
//! Tool futures are polled inside the batch (never spawned), so the value is always there
//! for a call made by the turn loop, and absent for a call from anywhere else.

use std::sync::{Arc, Mutex};

use hermes_llm::ModelClient;
use hermes_protocol::{AgentEvent, SessionId, Usage};
use hermes_store::SessionStore;
use hermes_tools::Tool;
use tokio::sync::mpsc::UnboundedSender;

use crate::agent::{Agent, AgentOptions};

/// The calling agent, as a subagent inherits it.
#[derive(Clone)]
pub(crate) struct ParentTurn {
    /// The session that delegates; children record it as their parent.
    pub(crate) session_id: SessionId,
    /// The model client of the running turn (the primary, or the fallback in use): children
    /// share it, and with it the credential pool and rate limits (seeds 001 §18.5.3).
    pub(crate) client: Arc<dyn ModelClient>,
    /// `fallback_providers` of the parent, in order.
    pub(crate) fallbacks: Vec<Arc<dyn ModelClient>>,
    /// The tools the parent is offered now (built-ins and MCP tools).
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// The session store.
    pub(crate) store: Arc<SessionStore>,
    /// The parent's options (retries, output cap, context window, compression).
    pub(crate) opts: AgentOptions,
    /// Tokens the children used during this batch; the turn adds them to its own usage.
    pub(crate) child_usage: Arc<Mutex<Usage>>,
    /// The parent turn's observers: children's tool calls are shown there.
    pub(crate) events: UnboundedSender<AgentEvent>,
}

impl ParentTurn {
    /// Adds a child's usage to the batch's total.
    pub(crate) fn add_child_usage(&self, usage: &Usage) {
        match self.child_usage.lock() {
            Ok(mut total) => total.add(usage),
            Err(poisoned) => poisoned.into_inner().add(usage),
        }
    }

    /// The children's usage so far, leaving zero behind.
    pub(crate) fn take_child_usage(&self) -> Usage {
        match self.child_usage.lock() {
            Ok(mut total) => std::mem::take(&mut *total),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

tokio::task_local! {
    static PARENT: ParentTurn;
}

/// Runs `fut` (a tool batch) with `parent` visible to the `delegate_task` calls in it.
pub(crate) async fn with_parent<F: std::future::Future>(parent: ParentTurn, fut: F) -> F::Output {
    PARENT.scope(parent, fut).await
}

/// The agent whose tool batch is running, or `None` outside a batch.
pub(crate) fn current_parent() -> Option<ParentTurn> {
    PARENT.try_with(Clone::clone).ok()
}

impl Agent {
    /// The parent context of this agent's next tool batch, whose observers get `events`.
    pub(crate) fn parent_turn(&self, events: &UnboundedSender<AgentEvent>) -> ParentTurn {
        ParentTurn {
            session_id: self.session_id.clone(),
            client: self.active.clone(),
            fallbacks: self.fallbacks.clone(),
            tools: self.tools.clone(),
            store: self.deps.store.clone(),
            opts: self.opts.clone(),
            child_usage: Arc::new(Mutex::new(Usage::default())),
            events: events.clone(),
        }
    }
}
