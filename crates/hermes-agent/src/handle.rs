//! The queue-pair handle (CONVENTIONS pattern 1): front ends `submit` [`Op`]s and read
//! [`AgentEvent`]s; the agent runs in its own task.

use std::sync::{Arc, Mutex};

use hermes_llm::ModelClient;
use hermes_protocol::{AgentEvent, Op, TurnOutcome, Usage};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::lease::{LeaseError, TurnLease};

/// Interrupts the running turn of one agent ([`AgentHandle::interrupter`]); cloneable.
#[derive(Clone)]
pub struct Interrupter {
    current: Arc<Mutex<CancellationToken>>,
}

impl Interrupter {
    /// Cancels the running turn, if any (as [`AgentHandle::interrupt`]).
    pub fn interrupt(&self) {
        if let Ok(token) = self.current.lock() {
            token.cancel();
        }
    }
}

/// A running agent. Dropping the handle closes the op queue; the task ends after the
/// current turn.
pub struct AgentHandle {
    ops: UnboundedSender<Op>,
    events: UnboundedReceiver<AgentEvent>,
    current: Arc<Mutex<CancellationToken>>,
    session_id: Arc<Mutex<String>>,
    /// A model client waiting to become the primary before the next op (`/model`).
    next_client: Arc<Mutex<Option<Arc<dyn ModelClient>>>>,
    task: JoinHandle<Agent>,
}

impl AgentHandle {
    /// Moves `agent` into a new task and returns its handle.
    pub fn spawn(agent: Agent) -> AgentHandle {
        let (ops_tx, mut ops_rx) = unbounded_channel::<Op>();
        let (ev_tx, ev_rx) = unbounded_channel::<AgentEvent>();
        let current = Arc::new(Mutex::new(CancellationToken::new()));
        let session_id = Arc::new(Mutex::new(agent.session_id().to_string()));
        let task_current = current.clone();
        let task_session = session_id.clone();
        let next_client: Arc<Mutex<Option<Arc<dyn ModelClient>>>> = Arc::default();
        let task_client = next_client.clone();
        let task = tokio::spawn(async move {
            let mut agent = agent;
            let mut last_lease = (String::new(), 0i64);
            while let Some(op) = ops_rx.recv().await {
                if let Some(client) = task_client.lock().ok().and_then(|mut c| c.take()) {
                    agent.set_client(client);
                }
                let token = CancellationToken::new();
                if let Ok(mut slot) = task_current.lock() {
                    *slot = token.clone();
                }
                // One turn per session across front ends and processes (issue 18 §4).
                let lease = match op {
                    Op::UserInput { .. } | Op::Retry | Op::Undo { .. } | Op::Compress { .. } => {
                        match session_lease(&mut agent, &mut last_lease, &ev_tx, &token).await {
                            Ok(lease) => Some(lease),
                            Err(outcome) => {
                                let _ = ev_tx.send(AgentEvent::TurnFinished {
                                    outcome,
                                    final_text: String::new(),
                                    usage: Usage::default(),
                                });
                                continue;
                            }
                        }
                    }
                    _ => None,
                };
                match op {
                    Op::UserInput { text, images } => {
                        for message in agent.attach_images(&images) {
                            let _ = ev_tx.send(AgentEvent::Status { message });
                        }
                        agent.run_turn(&text, &ev_tx, token).await;
                    }
                    Op::Retry => match agent.undo(1).await {
                        Ok(Some(text)) => {
                            agent.run_turn(&text, &ev_tx, token).await;
                        }
                        Ok(None) => status_and_finish(&ev_tx, "nothing to retry"),
                        Err(e) => status_and_finish(&ev_tx, &format!("retry failed: {e}")),
                    },
                    Op::Undo { count } => match agent.undo(count).await {
                        Ok(Some(_)) => status_and_finish(
                            &ev_tx,
                            &format!("removed the last {} turn(s)", count.max(1)),
                        ),
                        Ok(None) => status_and_finish(&ev_tx, "nothing to undo"),
                        Err(e) => status_and_finish(&ev_tx, &format!("undo failed: {e}")),
                    },
                    Op::NewSession => match close_session(&mut agent, &ev_tx, &token)
                        .await
                        .new_session()
                        .await
                    {
                        Ok(()) => {
                            if let Ok(mut s) = task_session.lock() {
                                *s = agent.session_id().to_string();
                            }
                            status_and_finish(
                                &ev_tx,
                                &format!("new session {}", agent.session_id()),
                            );
                        }
                        Err(e) => status_and_finish(
                            &ev_tx,
                            &format!("could not start a new session: {e}"),
                        ),
                    },
                    // The session left is closed as `/new` closes it (issue 20 item 4).
                    Op::Resume { session } => match close_session(&mut agent, &ev_tx, &token)
                        .await
                        .resume(&session)
                        .await
                    {
                        Ok(()) => {
                            if let Ok(mut s) = task_session.lock() {
                                *s = agent.session_id().to_string();
                            }
                            let turns = agent
                                .history()
                                .iter()
                                .filter(|m| m.role == hermes_protocol::Role::User)
                                .count();
                            status_and_finish(
                                &ev_tx,
                                &format!(
                                    "resumed session {} ({turns} earlier turns)",
                                    agent.session_id()
                                ),
                            );
                        }
                        Err(e) => status_and_finish(&ev_tx, &format!("could not resume: {e}")),
                    },
                    Op::Compress { focus } => {
                        // The compression reports itself through Status events.
                        agent.compress(focus.as_deref(), &ev_tx, &token).await;
                        let _ = ev_tx.send(AgentEvent::TurnFinished {
                            outcome: TurnOutcome::Completed,
                            final_text: String::new(),
                            usage: Usage::default(),
                        });
                    }
                    Op::Interrupt => {}
                    Op::Shutdown => break,
                }
                if let Some(lease) = lease {
                    lease.release().await;
                }
            }
            // A background review still running is not cut off by the shutdown.
            if let Some(report) = agent.wait_for_review().await
                && let Some(notice) = report.notice()
            {
                let _ = ev_tx.send(AgentEvent::Status { message: notice });
            }
            agent
        });
        AgentHandle {
            ops: ops_tx,
            events: ev_rx,
            current,
            session_id,
            next_client,
            task,
        }
    }

    /// Makes `client` the primary model for the ops submitted after this call (`/model`);
    /// a turn already running finishes on its current client. See [`Agent::set_client`].
    pub fn set_client(&self, client: Arc<dyn ModelClient>) {
        if let Ok(mut slot) = self.next_client.lock() {
            *slot = Some(client);
        }
    }

    /// Queues an op. `Op::Interrupt` takes effect at once: it cancels the running turn's
    /// model request and tools.
    pub fn submit(&self, op: Op) {
        if op == Op::Interrupt {
            self.interrupt();
            return;
        }
        let _ = self.ops.send(op);
    }

    /// Cancels the running turn, if any.
    pub fn interrupt(&self) {
        if let Ok(token) = self.current.lock() {
            token.cancel();
        }
    }

    /// A handle that interrupts this agent's running turn from anywhere, while another task
    /// reads the events (ACP's `session/cancel` arrives while the prompt's task holds the
    /// handle).
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            current: self.current.clone(),
        }
    }

    /// The next event, or `None` once the agent task has ended.
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        self.events.recv().await
    }

    /// The current session id (changes after `Op::NewSession`).
    pub fn session_id(&self) -> String {
        self.session_id
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Stops accepting ops and waits for the task, returning the agent.
    pub async fn shutdown(self) -> Option<Agent> {
        let _ = self.ops.send(Op::Shutdown);
        drop(self.ops);
        self.task.await.ok()
    }
}

/// Before `/new` replaces the session: waits for a running background review, then runs the
/// session-end review (FEATURES §8) so the new session's prompt shows what it saved. Silent
/// unless something was saved; an interrupt cancels it.
async fn close_session<'a>(
    agent: &'a mut Agent,
    events: &UnboundedSender<AgentEvent>,
    cancel: &CancellationToken,
) -> &'a mut Agent {
    let notices = agent.close_for_reset(cancel.clone()).await;
    for message in notices {
        let _ = events.send(AgentEvent::Status { message });
    }
    agent
}

/// Control ops answer with a status line and a `TurnFinished` so front ends waiting for the
/// end of an op see one.
fn status_and_finish(events: &UnboundedSender<AgentEvent>, message: &str) {
    let _ = events.send(AgentEvent::Status {
        message: message.to_string(),
    });
    let _ = events.send(AgentEvent::TurnFinished {
        outcome: TurnOutcome::Completed,
        final_text: String::new(),
        usage: Usage::default(),
    });
}

/// Takes the store lease of the agent's session for one op, waiting while another front
/// end or process runs a turn on it (said once, as a status line; Ctrl-C stops waiting).
/// When someone else ran a turn since this agent's last lease of the session (the fencing
/// token is not the next one), the history is reloaded first. Errors: the outcome to report instead of
/// running — `Interrupted` when the wait was cancelled, `Failed` when the store cannot give
/// a lease (the op does not run unguarded).
async fn session_lease(
    agent: &mut Agent,
    last: &mut (String, i64),
    events: &UnboundedSender<AgentEvent>,
    cancel: &CancellationToken,
) -> Result<TurnLease, TurnOutcome> {
    let store = agent.store();
    let sid = agent.session_id().to_string();
    let first = TurnLease::try_acquire(&store, &sid, "cli").await;
    let (lease, waited) = match first {
        Ok(lease) => (lease, false),
        Err(LeaseError::Busy { holder, .. }) => {
            let _ = events.send(AgentEvent::Status {
                message: format!(
                    "this session is running a turn elsewhere ({holder}); waiting for it to end \
                     (Ctrl-C stops waiting)"
                ),
            });
            match TurnLease::acquire_waiting(&store, &sid, "cli", cancel).await {
                Ok((lease, _)) => (lease, true),
                Err(LeaseError::Cancelled(_)) => return Err(TurnOutcome::Interrupted),
                Err(e) => return Err(lease_failed(events, &e)),
            }
        }
        Err(e) => return Err(lease_failed(events, &e)),
    };
    // Tokens of one session only: after `/new` or `/resume` the agent has just loaded it.
    let others_ran = last.0 == sid && lease.others_ran_since(last.1);
    if waited || others_ran {
        // A session not stored yet (no first message) has nothing to reload.
        if let Err(e) = agent.resume(&sid).await {
            tracing::debug!(session = %sid, error = %e, "no stored history to reload");
        }
    }
    *last = (sid, lease.token());
    Ok(lease)
}

fn lease_failed(events: &UnboundedSender<AgentEvent>, e: &LeaseError) -> TurnOutcome {
    let _ = events.send(AgentEvent::Status {
        message: format!("error: the session store cannot guard this turn ({e}); nothing ran"),
    });
    TurnOutcome::Failed
}
