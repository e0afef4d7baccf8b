//! `POST /v1/chat/completions`: one agent turn per request, answered as one JSON body or as
//! server-sent events in OpenAI's chunk format.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
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
    let known = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|id| check_session_id(id).is_ok());
    match run(state, headers, body).await {
        Ok(r) => r,
        Err(f) => {
            let mut response = f.into_response();
            if let Some(v) = known.and_then(|id| HeaderValue::from_str(&id).ok()) {
                response
                    .headers_mut()
                    .insert(HeaderName::from_static(SESSION_HEADER), v);
            }
            response
        }
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
        // Comments while the turn runs (a model thinking, a tool working) keep proxies and
        // clients from timing the stream out.
        let keep_alive = KeepAlive::new()
            .interval(state.settings().sse_keepalive)
            .text("keepalive");
        Sse::new(stream).keep_alive(keep_alive).into_response()
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
        // The answer exists but could not be saved (issue 17: a lost write fails loudly):
        // the server's own fault, not the model's.
        _ if text.starts_with(hermes_agent::STORE_FAILED_PREFIX) => ApiFailure::server(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage_failed",
            text.to_string(),
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
    /// Answer text already sent for the current model call (since the last tool start).
    call_text: String,
    /// After a `stream_restarted`: bytes of `call_text` the retried attempt has repeated
    /// so far; those are not sent again.
    replay: Option<usize>,
    /// The retried attempt's text differed from what was already sent: nothing more is
    /// sent, and the stream ends with a `stream_restarted` error.
    diverged: bool,
}

/// The error a stream ends with when a retried model call's answer differs from the text
/// already sent (SSE chunks cannot be taken back): the client must not use the content.
fn diverged_failure() -> ApiFailure {
    ApiFailure::server(
        StatusCode::BAD_GATEWAY,
        "stream_restarted",
        "The model stream failed partway and was retried, and the retried answer differs \
         from the text already streamed, so the streamed content is not a valid answer. \
         The complete answer is stored in the session named by the X-Hermes-Session-Id \
         header; send the request again or use \"stream\": false.",
    )
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
            AgentEvent::TextDelta { text } if !text.is_empty() => self.text(&text),
            AgentEvent::StreamRestarted { .. } if !self.diverged => self.replay = Some(0),
            AgentEvent::ToolStarted {
                name, args_preview, ..
            } => {
                self.end_replay();
                self.call_text.clear();
                let line = one_line(&format!("tool {name} {args_preview}"));
                self.pending.push_back(Event::default().comment(line));
            }
            AgentEvent::TurnFinished {
                outcome,
                final_text,
                usage,
            } => {
                self.end_replay();
                self.finish(&outcome, &final_text, &usage);
            }
            _ => {}
        }
    }

    /// Sends answer text, except what a retried attempt repeats of the text already sent
    /// (`replay`): while the retry matches that prefix nothing is sent, past its end the
    /// rest is sent as usual; a mismatch marks the stream diverged.
    fn text(&mut self, text: &str) {
        if self.diverged {
            return;
        }
        let mut text = text;
        if let Some(matched) = self.replay {
            let expected = &self.call_text[matched..];
            if expected.starts_with(text) {
                self.replay = Some(matched + text.len());
                return;
            }
            if !text.starts_with(expected) {
                self.diverged = true;
                return;
            }
            text = &text[expected.len()..];
            self.replay = None;
        }
        self.call_text.push_str(text);
        let c = chunk_json(&self.id, self.created, ChunkBody::Content(text));
        self.pending.push_back(data(&c));
    }

    /// The model call ended (tools start or the turn ends): a retry that repeated less than
    /// what was already sent diverged too.
    fn end_replay(&mut self) {
        if let Some(matched) = self.replay.take()
            && matched < self.call_text.len()
        {
            self.diverged = true;
        }
    }

    fn finish(&mut self, outcome: &TurnOutcome, text: &str, usage: &Usage) {
        match outcome {
            _ if self.diverged => self.pending.push_back(data(&diverged_failure().body())),
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
///
/// A model call retried after its stream failed partway (`stream_restarted`) streams its
/// answer again from the start, but sent chunks cannot be taken back. So the retried text is
/// compared with what this call already sent: the repeated part is swallowed and only the
/// text beyond it is sent, which keeps the client's content exact when the retry repeats
/// the same words. When it differs, nothing more of the turn is sent (the turn still runs
/// to its end and is stored) and the stream ends with the error object `stream_restarted`
/// instead of the finish chunk — never a silently garbled answer.
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
        call_text: String::new(),
        replay: None,
        diverged: false,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_that_could_not_be_saved_is_a_500_storage_failure() {
        let text = format!(
            "{} (state.db: disk I/O error)",
            hermes_agent::STORE_FAILED_PREFIX
        );
        let saved = failure_for(&TurnOutcome::Failed, &text);
        let model = failure_for(&TurnOutcome::Failed, "provider said no");
        assert_eq!(saved.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(saved.code, "storage_failed");
        assert_eq!(model.status, StatusCode::BAD_GATEWAY);
    }
}
