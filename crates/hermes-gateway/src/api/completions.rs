//! `POST /v1/chat/completions`: one agent turn per request, answered as one JSON body or as
//! server-sent events in OpenAI's chunk format.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use hermes_protocol::{AgentEvent, TurnOutcome, Usage};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::DropGuard;

use crate::api::error::ApiFailure;
use crate::api::state::ApiState;
use crate::api::turn::{check_session_id, prepare, spawn_turn};
use crate::api::wire::{ChunkBody, CompletionRequest, Conversation, chunk_json, completion_json};

/// The session continuity header (issue 7 §1): names the session a request continues;
/// every response carries the session it used.
pub const SESSION_HEADER: &str = "x-hermes-session-id";

/// Response header explaining request fields the server ignored.
pub const NOTICE_HEADER: &str = "x-hermes-notice";

const TOOLS_IGNORED: &str = "client tools are ignored: hermes runs its own tools on the server and returns the final answer";

pub(crate) async fn chat_completions(
    State(state): State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match run(state, headers, body).await {
        Ok(r) => r,
        Err(f) => f.into_response(),
    }
}

async fn run(state: ApiState, headers: HeaderMap, body: Bytes) -> Result<Response, ApiFailure> {
    let request: CompletionRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiFailure::bad_request(format!(
            "request body is not a valid chat completion request: {e}"
        ))
    })?;
    let conversation = Conversation::from_messages(&request.messages)?;
    let session = match headers.get(SESSION_HEADER) {
        Some(v) => {
            let id = v
                .to_str()
                .map_err(|_| ApiFailure::bad_request("X-Hermes-Session-Id is not ASCII"))?
                .trim()
                .to_string();
            check_session_id(&id)?;
            Some(id)
        }
        None => None,
    };
    let tools_ignored = request
        .tools
        .as_ref()
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()));
    if tools_ignored {
        tracing::info!("{TOOLS_IGNORED}");
    }
    let prepared = prepare(&state, conversation, session).await?;
    let session_id = prepared.session_id.clone();
    let cancel = state.inner.shutdown.child_token();
    // Dropping the guard (client gone: axum drops the handler future or the SSE body)
    // interrupts the turn.
    let guard = cancel.clone().drop_guard();
    let events = spawn_turn(prepared, cancel);
    let completion_id = format!("chatcmpl-{}", hermes_protocol::new_session_id());
    let created = chrono::Utc::now().timestamp();

    let mut response = if request.stream {
        let include_usage = request
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage);
        let stream = sse_stream(events, guard, completion_id, created, include_usage);
        Sse::new(stream).into_response()
    } else {
        let (outcome, text, usage) = collect(events).await;
        drop(guard);
        match outcome {
            TurnOutcome::Completed | TurnOutcome::BudgetExhausted => {
                let finish = finish_reason(&outcome);
                let body = completion_json(&completion_id, created, &text, finish, &usage);
                (StatusCode::OK, axum::Json(body)).into_response()
            }
            other => failure_for(&other, &text).into_response(),
        }
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&session_id) {
        h.insert(HeaderName::from_static(SESSION_HEADER), v);
    }
    if tools_ignored {
        h.insert(
            HeaderName::from_static(NOTICE_HEADER),
            HeaderValue::from_static(TOOLS_IGNORED),
        );
    }
    Ok(response)
}

/// OpenAI `finish_reason` for a turn outcome: a spent iteration budget reads as `length`.
fn finish_reason(outcome: &TurnOutcome) -> &'static str {
    match outcome {
        TurnOutcome::BudgetExhausted => "length",
        _ => "stop",
    }
}

/// The error for a turn that gave no answer.
fn failure_for(outcome: &TurnOutcome, text: &str) -> ApiFailure {
    match outcome {
        TurnOutcome::Interrupted => ApiFailure::server(
            StatusCode::SERVICE_UNAVAILABLE,
            "turn_interrupted",
            "The turn was interrupted (the server is shutting down).",
        ),
        _ => ApiFailure::server(
            StatusCode::BAD_GATEWAY,
            "turn_failed",
            if text.is_empty() {
                "The turn failed.".to_string()
            } else {
                text.to_string()
            },
        ),
    }
}

/// Waits for `TurnFinished`; a task that ended without one counts as failed.
async fn collect(mut events: UnboundedReceiver<AgentEvent>) -> (TurnOutcome, String, Usage) {
    while let Some(e) = events.recv().await {
        if let AgentEvent::TurnFinished {
            outcome,
            final_text,
            usage,
        } = e
        {
            return (outcome, final_text, usage);
        }
    }
    (
        TurnOutcome::Failed,
        "The turn ended without an answer.".to_string(),
        Usage::default(),
    )
}

struct StreamState {
    events: UnboundedReceiver<AgentEvent>,
    _guard: DropGuard,
    id: String,
    created: i64,
    include_usage: bool,
    /// Events queued for output, oldest first.
    pending: std::collections::VecDeque<Event>,
    done: bool,
}

fn data(v: &serde_json::Value) -> Event {
    Event::default().data(v.to_string())
}

/// One line fit for an SSE comment (no line breaks).
fn one_line(s: &str) -> String {
    s.split(['\r', '\n']).collect::<Vec<_>>().join(" ")
}

impl StreamState {
    fn on_event(&mut self, e: AgentEvent) {
        match e {
            AgentEvent::TextDelta { text } if !text.is_empty() => {
                let c = chunk_json(&self.id, self.created, ChunkBody::Content(&text));
                self.pending.push_back(data(&c));
            }
            AgentEvent::ToolStarted {
                name, args_preview, ..
            } => {
                let line = one_line(&format!("tool {name} {args_preview}"));
                self.pending.push_back(Event::default().comment(line));
            }
            AgentEvent::TurnFinished {
                outcome,
                final_text,
                usage,
            } => {
                self.finish(&outcome, &final_text, &usage);
            }
            _ => {}
        }
    }

    fn finish(&mut self, outcome: &TurnOutcome, text: &str, usage: &Usage) {
        match outcome {
            TurnOutcome::Completed | TurnOutcome::BudgetExhausted => {
                let c = chunk_json(
                    &self.id,
                    self.created,
                    ChunkBody::Finish(finish_reason(outcome)),
                );
                self.pending.push_back(data(&c));
            }
            other => self
                .pending
                .push_back(data(&failure_for(other, text).body())),
        }
        if self.include_usage {
            let c = chunk_json(&self.id, self.created, ChunkBody::Usage(usage));
            self.pending.push_back(data(&c));
        }
        self.pending.push_back(Event::default().data("[DONE]"));
        self.done = true;
    }
}

/// The SSE body: a role chunk, one chunk per text delta, tool starts as comments, the finish
/// chunk (or an error object), the optional usage chunk, then `[DONE]`.
fn sse_stream(
    events: UnboundedReceiver<AgentEvent>,
    guard: DropGuard,
    id: String,
    created: i64,
    include_usage: bool,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let first = data(&chunk_json(&id, created, ChunkBody::Role));
    let state = StreamState {
        events,
        _guard: guard,
        id,
        created,
        include_usage,
        pending: std::collections::VecDeque::from([first]),
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(e) = st.pending.pop_front() {
                return Some((Ok(e), st));
            }
            if st.done {
                return None;
            }
            match st.events.recv().await {
                Some(e) => st.on_event(e),
                None => {
                    let usage = Usage::default();
                    st.finish(
                        &TurnOutcome::Failed,
                        "The turn ended without an answer.",
                        &usage,
                    );
                }
            }
        }
    })
}
