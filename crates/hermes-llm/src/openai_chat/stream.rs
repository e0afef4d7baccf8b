//! SSE framing and the event stream (WHATWG HTML "Server-sent events" §9.2 via
//! `eventsource-stream`: comment lines starting with `:` are ignored, `data:` with or without a
//! space is accepted, UTF-8 split across reads is reassembled; case C07).

use bytes::Bytes;
use futures::Stream;
use tokio_util::sync::CancellationToken;

use super::assemble::{ChatAssembler, PromptHint};
use crate::client::{EventStream, StreamEvent};
use crate::error::LlmError;
use crate::sse::{NamedEventDecoder, decode_named_sse};

/// Chat Completions payloads through the shared SSE driver: unnamed `data:` events go to the
/// [`ChatAssembler`]; an `event: error` event is a provider error.
struct ChatDecoder(ChatAssembler);

impl NamedEventDecoder for ChatDecoder {
    fn push_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        if event == "error" {
            return Err(error_event(data));
        }
        self.0.push_data(data)
    }

    fn done(&self) -> bool {
        self.0.saw_done()
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        self.0.finish()
    }
}

/// Decodes a Chat Completions SSE body given as a stream of byte chunks (any split) into
/// [`StreamEvent`]s ending with `Completed`, or an `Err` item. Reading stops at `data: [DONE]`.
/// When `cancel` fires the stream ends without further items (the caller knows it interrupted)
/// and the byte source is dropped, which closes the connection.
pub fn decode_sse<S>(bytes: S, hint: PromptHint, cancel: CancellationToken) -> EventStream
where
    S: Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
{
    decode_named_sse(bytes, ChatDecoder(ChatAssembler::new(hint)), cancel)
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
