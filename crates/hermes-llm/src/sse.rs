//! A provider-neutral SSE driver for the adapters whose events are named (`event: <type>`):
//! Anthropic Messages and OpenAI Responses. It owns the framing (via `eventsource-stream`,
//! WHATWG HTML §9.2: comments ignored, split UTF-8 reassembled), cancellation and the
//! queue of decoded events; each adapter supplies a [`NamedEventDecoder`] for the payloads.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::client::{EventStream, StreamEvent};
use crate::error::{ErrorClass, LlmError};

/// Decodes the payloads of one response's SSE events.
pub trait NamedEventDecoder: Send + 'static {
    /// Feeds one event: its `event:` name (empty when absent) and its `data`. Returns the
    /// events to emit now, or the provider error the stream carried.
    fn push_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError>;

    /// True once the provider's terminal event was seen (reading stops).
    fn done(&self) -> bool;

    /// Ends the response (terminal event seen or the body ended): the last events, ending with
    /// `Completed`, or the error explaining why the response is unusable.
    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError>;
}

type SseEvents = Pin<
    Box<dyn Stream<Item = Result<eventsource_stream::Event, EventStreamError<LlmError>>> + Send>,
>;

struct State<D> {
    sse: SseEvents,
    decoder: D,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    finished: bool,
    cancel: CancellationToken,
}

/// Decodes a byte stream (any chunking) with `decoder` into [`StreamEvent`]s that end with
/// `Completed` or one `Err` item. When `cancel` fires the stream ends without further items
/// and the byte source is dropped (closing the connection).
pub fn decode_named_sse<S, D>(bytes: S, decoder: D, cancel: CancellationToken) -> EventStream
where
    S: Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
    D: NamedEventDecoder,
{
    let state = State {
        sse: Box::pin(bytes.eventsource()),
        decoder,
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
                Some(Ok(event)) => match st.decoder.push_event(&event.event, &event.data) {
                    Ok(events) => {
                        st.queue.extend(events.into_iter().map(Ok));
                        if st.decoder.done() {
                            finish(&mut st);
                        }
                    }
                    Err(e) => {
                        st.finished = true;
                        st.queue.push_back(Err(e));
                    }
                },
            }
        }
    }))
}

fn finish<D: NamedEventDecoder>(st: &mut State<D>) {
    st.finished = true;
    match st.decoder.finish() {
        Ok(events) => st.queue.extend(events.into_iter().map(Ok)),
        Err(e) => st.queue.push_back(Err(e)),
    }
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

/// Parses an event's data as JSON; `None` (skip) for empty data, `Err` text for non-JSON.
pub(crate) fn parse_data(data: &str) -> Result<Option<serde_json::Value>, String> {
    let data = data.trim();
    if data.is_empty() || data == "[DONE]" {
        return Ok(None);
    }
    serde_json::from_str(data).map(Some).map_err(|e| {
        let preview: String = data.chars().take(80).collect();
        format!("skipped an SSE event whose data is not JSON ({e}): {preview}")
    })
}
