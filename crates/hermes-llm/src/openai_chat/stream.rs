//! SSE framing and the event stream (WHATWG HTML "Server-sent events" §9.2 via
//! `eventsource-stream`: comment lines starting with `:` are ignored, `data:` with or without a
//! space is accepted, UTF-8 split across reads is reassembled; case C07).

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::assemble::{ChatAssembler, PromptHint};
use crate::client::{EventStream, StreamEvent};
use crate::error::{ErrorClass, LlmError};

type SseEvents = Pin<
    Box<dyn Stream<Item = Result<eventsource_stream::Event, EventStreamError<LlmError>>> + Send>,
>;

struct State {
    sse: SseEvents,
    asm: ChatAssembler,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    finished: bool,
    cancel: CancellationToken,
}

/// Decodes a Chat Completions SSE body given as a stream of byte chunks (any split) into
/// [`StreamEvent`]s ending with `Completed`, or an `Err` item. Reading stops at `data: [DONE]`.
/// When `cancel` fires the stream ends without further items (the caller knows it interrupted)
/// and the byte source is dropped, which closes the connection.
pub fn decode_sse<S>(bytes: S, hint: PromptHint, cancel: CancellationToken) -> EventStream
where
    S: Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
{
    let state = State {
        sse: Box::pin(bytes.eventsource()),
        asm: ChatAssembler::new(hint),
        queue: VecDeque::new(),
        finished: false,
        cancel,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.finished {
                return None;
            }
            let next = tokio::select! {
                biased;
                _ = st.cancel.cancelled() => return None,
                next = st.sse.next() => next,
            };
            match next {
                None => finish(&mut st),
                Some(Err(e)) => {
                    st.finished = true;
                    st.queue.push_back(Err(map_sse_error(e)));
                }
                Some(Ok(event)) => {
                    let result = if event.event == "error" {
                        Err(error_event(&event.data))
                    } else {
                        st.asm.push_data(&event.data)
                    };
                    match result {
                        Ok(events) => {
                            st.queue.extend(events.into_iter().map(Ok));
                            if st.asm.saw_done() {
                                finish(&mut st);
                            }
                        }
                        Err(e) => {
                            st.finished = true;
                            st.queue.push_back(Err(e));
                        }
                    }
                }
            }
        }
    }))
}

fn finish(st: &mut State) {
    st.finished = true;
    match st.asm.finish() {
        Ok(events) => st.queue.extend(events.into_iter().map(Ok)),
        Err(e) => st.queue.push_back(Err(e)),
    }
}

/// An `event: error` SSE event: its data is classified like an error body.
fn error_event(data: &str) -> LlmError {
    if let Some(e) = serde_json::from_str::<serde_json::Value>(data)
        .ok()
        .and_then(|v| LlmError::from_in_stream(&v))
    {
        return e;
    }
    LlmError::new(
        crate::error::classify(Some(400), data),
        Some(400),
        format!("provider error event inside a 200 stream: {data}"),
    )
}

fn map_sse_error(e: EventStreamError<LlmError>) -> LlmError {
    match e {
        EventStreamError::Transport(e) => e,
        EventStreamError::Utf8(e) => LlmError::new(
            ErrorClass::FormatError,
            None,
            format!("the provider's stream is not valid UTF-8: {e}"),
        ),
        EventStreamError::Parser(e) => LlmError::new(
            ErrorClass::FormatError,
            None,
            format!("the provider's stream is not valid SSE: {e}"),
        ),
    }
}
