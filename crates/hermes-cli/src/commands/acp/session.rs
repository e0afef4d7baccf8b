//! One ACP session: the hermes agent behind it, its mode, and the way back to the client
//! ([`ClientLink`]) that its tools and approvals use.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, SessionId, SessionMode, SessionModeState, SessionNotification,
    SessionUpdate, TerminalId,
};
use agent_client_protocol::{Client, JsonRpcRequest};
use hermes_agent::{AgentHandle, Interrupter};
use hermes_llm::ModelClient;
use hermes_protocol::SecretRedactor;
use tokio::sync::Notify;

/// How long an approval waits for the tool call it is about to be announced to the client
/// before asking anyway.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(2);

/// The session modes (Python Hermes' ACP modes: the edit-approval policy of the session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `default`: ask before every edit.
    Default,
    /// `accept_edits`: edits inside the workspace (and the temp dir) without asking; others
    /// are asked about.
    AcceptEdits,
    /// `dont_ask`: every edit the sandbox allows, without asking.
    DontAsk,
}

impl Mode {
    /// Every mode, in the order clients show them.
    pub const ALL: [Mode; 3] = [Mode::Default, Mode::AcceptEdits, Mode::DontAsk];

    /// The ACP mode id.
    pub fn id(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "accept_edits",
            Mode::DontAsk => "dont_ask",
        }
    }

    /// The mode with ACP id `id`.
    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Mode::Default => ("Default", "Ask before edits."),
            Mode::AcceptEdits => (
                "Accept Edits",
                "Edit files in the workspace and the temp dir without asking; ask for others.",
            ),
            Mode::DontAsk => (
                "Don't Ask",
                "Make every edit the sandbox allows without asking.",
            ),
        }
    }

    /// The `modes` of a `session/new` or `session/load` answer, `current` selected.
    pub fn state(current: Mode) -> SessionModeState {
        SessionModeState::new(
            current.id(),
            Mode::ALL
                .into_iter()
                .map(|m| {
                    let (name, description) = m.describe();
                    SessionMode::new(m.id(), name).description(description.to_string())
                })
                .collect(),
        )
    }
}

/// The way back to the client for one session: notifications, requests, and what the client
/// said it can do.
#[derive(Clone)]
pub struct ClientLink {
    cx: ConnectionTo<Client>,
    /// The ACP session id (the hermes session id).
    pub session_id: SessionId,
    /// What the client offered in `initialize`.
    pub caps: Arc<ClientCapabilities>,
    redactor: Arc<SecretRedactor>,
}

impl ClientLink {
    /// A link for `session_id` over `cx`.
    pub fn new(
        cx: ConnectionTo<Client>,
        session_id: &str,
        caps: Arc<ClientCapabilities>,
        redactor: Arc<SecretRedactor>,
    ) -> ClientLink {
        ClientLink {
            cx,
            session_id: SessionId::new(session_id.to_string()),
            caps,
            redactor,
        }
    }

    /// Sends one `session/update`; a client that is gone is logged, not an error of the turn.
    pub fn notify(&self, update: SessionUpdate) {
        if let Err(e) = self
            .cx
            .send_notification(SessionNotification::new(self.session_id.clone(), update))
        {
            tracing::info!(error = %e, "acp: a session update could not be sent");
        }
    }

    /// Known secrets of the home masked in `text` before it goes to the client.
    pub fn redact(&self, text: String) -> String {
        self.redactor.redact_string(text)
    }

    /// Sends a request to the client and waits for its answer (never from the dispatch loop:
    /// only from a turn's own task).
    pub async fn request<R: JsonRpcRequest>(
        &self,
        request: R,
    ) -> Result<R::Response, agent_client_protocol::Error> {
        self.cx.send_request(request).block_task().await
    }
}

/// Tool calls the client has been told about and that have not ended: an approval names the
/// call it is about, so it waits until that call was announced.
#[derive(Default)]
pub struct Running {
    calls: Mutex<Vec<(String, String)>>,
    changed: Notify,
}

impl Running {
    /// Call `call_id` of tool `name` was announced.
    pub fn started(&self, call_id: &str, name: &str) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((call_id.to_string(), name.to_string()));
        }
        self.changed.notify_waiters();
    }

    /// Call `call_id` ended.
    pub fn finished(&self, call_id: &str) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.retain(|(id, _)| id != call_id);
        }
    }

    /// The newest running call that `pick` accepts (by call id and tool name), waiting up
    /// to [`ANNOUNCE_WAIT`] for one to be announced.
    pub async fn newest(&self, pick: impl Fn(&str, &str) -> bool) -> Option<String> {
        let deadline = tokio::time::Instant::now() + ANNOUNCE_WAIT;
        loop {
            let notified = self.changed.notified();
            if let Some(id) = self.calls.lock().ok().and_then(|calls| {
                calls
                    .iter()
                    .rev()
                    .find(|(id, name)| pick(id, name))
                    .map(|(id, _)| id.clone())
            }) {
                return Some(id);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }
}

/// How much of a call's result its final `tool_call_update` shows (Python Hermes' ACP
/// adapter shows 5,000 characters); the model gets the whole result either way.
pub const SHOWN_RESULT_CHARS: usize = 5_000;

/// What the final `tool_call_update` of a call shows besides its status, kept from the tool
/// until the call's end is reported: its result (the event that reports the end has only a
/// one-line preview) and the editor terminal it ran in (kept in view after the call ends).
#[derive(Default)]
pub struct Outcomes {
    calls: Mutex<HashMap<String, Outcome>>,
}

/// See [`Outcomes`].
#[derive(Default)]
pub struct Outcome {
    /// The call's result, at most [`SHOWN_RESULT_CHARS`] characters.
    pub result: Option<String>,
    /// The editor terminal the call's command ran in.
    pub terminal: Option<TerminalId>,
}

impl Outcomes {
    /// Call `call_id` returned `result`.
    pub fn result(&self, call_id: &str, result: &str) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.entry(call_id.to_string()).or_default().result = Some(clip_result(result));
        }
    }

    /// Call `call_id` runs in editor terminal `id`.
    pub fn terminal(&self, call_id: &str, id: TerminalId) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.entry(call_id.to_string()).or_default().terminal = Some(id);
        }
    }

    /// What was kept about call `call_id` (nothing when its tool never returned).
    pub fn take(&self, call_id: &str) -> Outcome {
        self.calls
            .lock()
            .ok()
            .and_then(|mut calls| calls.remove(call_id))
            .unwrap_or_default()
    }

    /// Forgets every call (a turn ended: calls without a reported end are not shown).
    pub fn clear(&self) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.clear();
        }
    }
}

/// `text` cut to [`SHOWN_RESULT_CHARS`] characters, saying how long it was.
pub fn clip_result(text: &str) -> String {
    let total = text.chars().count();
    if total <= SHOWN_RESULT_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(SHOWN_RESULT_CHARS - 100).collect();
    format!("{kept}\n… ({total} characters in all; the model got every one)")
}

/// What a session's tools, approver and prompt task share.
pub struct Shared {
    /// The way back to the client.
    pub link: ClientLink,
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// The current mode.
    pub mode: Mutex<Mode>,
    /// Edits allowed for the rest of the session ("allow always" on an edit question).
    pub edits_allowed: Mutex<bool>,
    /// Dangerous-command kinds allowed for the rest of the session, by reason.
    pub commands_allowed: Mutex<HashMap<String, bool>>,
    /// Calls announced and not ended.
    pub running: Running,
    /// What the end of each call shows.
    pub outcomes: Outcomes,
}

impl Shared {
    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.mode.lock().map(|m| *m).unwrap_or(Mode::Default)
    }
}

/// A session of this connection.
pub struct AcpSession {
    /// Shared with its tools and approver.
    pub shared: Arc<Shared>,
    /// The agent; a prompt holds it for its turn (prompts of one session run one at a time).
    pub handle: tokio::sync::Mutex<AgentHandle>,
    /// Interrupts the running turn (`session/cancel`) while the prompt holds [`Self::handle`].
    pub interrupter: Interrupter,
    /// `session/cancel`s received so far (a prompt compares it with the count when it
    /// arrived, see [`AcpSession::cancels()`]).
    pub cancels: AtomicU64,
    /// The session's prompts in the order they arrived.
    pub queue: Arc<PromptQueue>,
    /// A model chosen with `session/set_config_option`, used from the next prompt on.
    pub next_client: Mutex<Option<Arc<dyn ModelClient>>>,
    /// The runtime of the session's model (the kit's, or the one chosen with
    /// `session/set_config_option`): shown as the `model` option (`provider:model`), and
    /// what a model name without a provider is resolved against.
    pub runtime: Mutex<hermes_llm::Runtime>,
}

impl AcpSession {
    /// How many `session/cancel`s this session has received.
    pub fn cancels(&self) -> u64 {
        self.cancels.load(Ordering::SeqCst)
    }
}

/// The prompts of one session, run in the order they arrived: each takes a [`Ticket`] when
/// it is read (in the connection's dispatch loop) and runs once the prompts before it are
/// done.
pub struct PromptQueue {
    next: AtomicU64,
    done: tokio::sync::watch::Sender<u64>,
}

impl Default for PromptQueue {
    fn default() -> PromptQueue {
        PromptQueue {
            next: AtomicU64::new(0),
            done: tokio::sync::watch::channel(0).0,
        }
    }
}

impl PromptQueue {
    /// The next place in the queue.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        Ticket {
            queue: self.clone(),
            number: self.next.fetch_add(1, Ordering::SeqCst),
        }
    }
}

/// One prompt's place in its session's [`PromptQueue`]; dropping it lets the next prompt
/// run (so it is dropped only after [`Ticket::turn`]).
pub struct Ticket {
    queue: Arc<PromptQueue>,
    number: u64,
}

impl Ticket {
    /// Waits until every prompt that arrived before this one is done.
    pub async fn turn(&self) {
        let mut done = self.queue.done.subscribe();
        let _ = done.wait_for(|d| *d >= self.number).await;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.queue
            .done
            .send_modify(|d| *d = (*d).max(self.number + 1));
    }
}
