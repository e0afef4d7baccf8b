//! Getting an agent for a request and running its one turn in a task of its own.
//!
//! Stateless requests get a fresh session whose history is the request's earlier
//! messages; session requests (`X-Hermes-Session-Id`) resume the stored session, or create
//! one under that id on first use.

use hermes_agent::Agent;
use hermes_protocol::{AgentEvent, Message, TurnOutcome};
use hermes_store::{NewSession, SessionStore};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::api::error::ApiFailure;
use crate::api::state::{ApiState, TurnGuards};
use crate::api::wire::Conversation;
use crate::factory::AgentSpec;

/// Session source recorded for sessions the API server starts.
pub const API_SOURCE: &str = "api_server";

/// Longest accepted `X-Hermes-Session-Id`, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Checks a client-supplied session id: 1–128 ASCII letters, digits, `_`, `-`, `.` or `:`.
pub(crate) fn check_session_id(id: &str) -> Result<(), ApiFailure> {
    let ok = !id.is_empty()
        && id.len() <= MAX_SESSION_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    if ok {
        Ok(())
    } else {
        Err(ApiFailure::bad_request(format!(
            "X-Hermes-Session-Id must be 1-{MAX_SESSION_ID_LEN} characters of A-Z, a-z, 0-9, \
             `_`, `-`, `.` or `:`"
        )))
    }
}

/// The session key handed to the agent factory for an API session.
pub(crate) fn session_key(state: &ApiState, session: Option<&str>) -> String {
    let profile = &state.inner.settings.profile;
    match session {
        Some(id) => format!("agent:{profile}:{API_SOURCE}:dm:{id}"),
        None => format!("agent:{profile}:{API_SOURCE}:dm"),
    }
}

/// Runs `f` on the store in a blocking task.
pub(crate) async fn with_store<T, F>(state: &ApiState, f: F) -> Result<T, ApiFailure>
where
    T: Send + 'static,
    F: FnOnce(&SessionStore) -> Result<T, hermes_store::StoreError> + Send + 'static,
{
    let store = state.inner.store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(ApiFailure::store)?
        .map_err(ApiFailure::store)
}

/// An agent ready to run one turn.
pub(crate) struct PreparedTurn {
    pub agent: Agent,
    pub input: String,
    pub session_id: String,
    pub guards: TurnGuards,
}

/// Claims the session and a global permit, then builds the agent.
///
/// Errors: 409 when the session runs a turn (here, in another front end or in another
/// process: the store lease), 429 at the global cap, 503 when the factory
/// cannot build an agent, 500 on store failures.
pub(crate) async fn prepare(
    state: &ApiState,
    conversation: Conversation,
    session: Option<String>,
) -> Result<PreparedTurn, ApiFailure> {
    hermes_telemetry::metrics().inbound_message(API_SOURCE);
    let claim = match &session {
        Some(id) => Some(state.claim_session(id)?),
        None => None,
    };
    let permit = state.turn_permit()?;
    // The in-process claim answers this server's own requests; the store lease also sees
    // other front ends and processes on the same state.db (issue 18 §4).
    let lease = match &session {
        Some(id) => Some(
            crate::lease::TurnLease::try_acquire(&state.inner.store, id, API_SOURCE)
                .await
                .map_err(|e| match e {
                    crate::lease::LeaseError::Busy { .. } => ApiFailure::session_busy(id),
                    other => ApiFailure::store(other),
                })?,
        ),
        None => None,
    };
    let guards = TurnGuards {
        _claim: claim,
        lease,
        _permit: permit,
        _busy: state.activity.busy(),
    };
    let Conversation {
        ephemeral,
        history,
        input,
    } = conversation;
    let spec = |resume: Option<String>| AgentSpec {
        session_key: session_key(state, session.as_deref()),
        resume,
        source: API_SOURCE.to_string(),
        ephemeral_prompt: ephemeral.clone(),
        approver: state.approver.clone(),
        origin: None,
        model: None,
    };
    let agent = match &session {
        Some(id) => {
            let lookup = id.clone();
            let known = with_store(state, move |s| s.get_session(&lookup))
                .await?
                .is_some();
            if known {
                build(state, spec(Some(id.clone()))).await?
            } else {
                let agent = build(state, spec(None)).await?;
                adopt_id(state, agent, id).await?
            }
        }
        None => {
            let agent = build(state, spec(None)).await?;
            if history.is_empty() {
                agent
            } else {
                replay_history(state, agent, history).await?
            }
        }
    };
    Ok(PreparedTurn {
        session_id: agent.session_id().to_string(),
        agent,
        input,
        guards,
    })
}

async fn build(state: &ApiState, spec: AgentSpec) -> Result<Agent, ApiFailure> {
    state.inner.factory.build(spec).await.map_err(|e| {
        ApiFailure::server(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "agent_unavailable",
            format!("The agent could not be started: {e}"),
        )
    })
}

fn agent_error(e: hermes_agent::AgentError) -> ApiFailure {
    ApiFailure::store(e)
}

/// Moves a freshly built agent's new session under the client's id: the stored row is
/// copied (same system prompt, model, source) under `id`, the placeholder removed, and the
/// agent switched to it.
async fn adopt_id(state: &ApiState, mut agent: Agent, id: &str) -> Result<Agent, ApiFailure> {
    let placeholder = agent.session_id().to_string();
    let target = id.to_string();
    let key = session_key(state, Some(id));
    with_store(state, move |s| {
        let Some(rec) = s.get_session(&placeholder)? else {
            return Err(hermes_store::StoreError::SessionNotFound { id: placeholder });
        };
        s.create_session(&NewSession {
            id: target,
            source: rec.source,
            session_key: Some(key),
            title: None,
            model: rec.model,
            provider: rec.provider,
            system_prompt: rec.system_prompt,
            parent_session_id: None,
            cwd: rec.cwd,
        })?;
        s.delete_session(&placeholder)?;
        Ok(())
    })
    .await?;
    agent.resume(id).await.map_err(agent_error)?;
    Ok(agent)
}

/// Stores a stateless request's earlier messages in the agent's new session and reloads
/// it, so the turn sees them as history.
async fn replay_history(
    state: &ApiState,
    mut agent: Agent,
    history: Vec<Message>,
) -> Result<Agent, ApiFailure> {
    let id = agent.session_id().to_string();
    let sid = id.clone();
    with_store(state, move |s| {
        for m in &history {
            s.append_message(&sid, m, None)?;
        }
        Ok(())
    })
    .await?;
    agent.resume(&id).await.map_err(agent_error)?;
    Ok(agent)
}

/// Runs the prepared turn in its own task. The turn stops early when `cancel` fires (client
/// gone, server shutting down). Events arrive on the returned channel, ending with
/// `TurnFinished`, which is held back until the session slot and the permit are released:
/// a client that sends its next request as soon as it sees the answer never finds its
/// session still busy.
pub(crate) fn spawn_turn(
    prepared: PreparedTurn,
    cancel: CancellationToken,
) -> UnboundedReceiver<AgentEvent> {
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        let PreparedTurn {
            mut agent,
            input,
            session_id,
            guards,
        } = prepared;
        // One line per request and per answer in the log, as for chat platforms: the
        // session and sizes, never the text (the user pass of issue 20).
        tracing::info!(platform = "api", session = %session_id, chars = input.chars().count(), "message received");
        let (inner_tx, mut inner_rx) = unbounded_channel();
        let mut finished = None;
        let mut forward = |e: AgentEvent| match e {
            AgentEvent::TurnFinished { .. } => finished = Some(e),
            other => {
                let _ = tx.send(other);
            }
        };
        let outcome = {
            let run = agent.run_turn(&input, &inner_tx, cancel);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    outcome = &mut run => break outcome,
                    Some(e) = inner_rx.recv() => forward(e),
                }
            }
        };
        while let Ok(e) = inner_rx.try_recv() {
            forward(e);
        }
        match outcome {
            TurnOutcome::Interrupted => {
                tracing::info!(session = %session_id, "API turn interrupted");
            }
            other => {
                let chars = match &finished {
                    Some(AgentEvent::TurnFinished { final_text, .. }) => final_text.chars().count(),
                    _ => 0,
                };
                tracing::info!(platform = "api", session = %session_id, outcome = ?other, chars, "reply sent");
            }
        }
        drop(agent);
        guards.release().await;
        if let Some(e) = finished {
            let _ = tx.send(e);
        }
    });
    rx
}
