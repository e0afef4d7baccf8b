//! Scripted responses served by [`crate::MockProvider`].

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

/// How a response body is cut into chunks on the wire (each chunk is sent and flushed
/// separately).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunking {
    /// The whole body in one chunk.
    Whole,
    /// Chunks of these sizes in bytes, repeated cyclically until the body is sent (0 is
    /// treated as 1).
    Sizes(Vec<usize>),
}

impl Chunking {
    /// Splits `body` according to this plan. Cuts may fall inside UTF-8 characters on purpose.
    pub fn split(&self, body: &Bytes) -> Vec<Bytes> {
        match self {
            Chunking::Whole => vec![body.clone()],
            Chunking::Sizes(sizes) if sizes.is_empty() => vec![body.clone()],
            Chunking::Sizes(sizes) => {
                let mut out = Vec::new();
                let mut at = 0;
                let mut k = 0;
                while at < body.len() {
                    let n = sizes[k % sizes.len()].max(1);
                    let end = (at + n).min(body.len());
                    out.push(body.slice(at..end));
                    at = end;
                    k += 1;
                }
                out
            }
        }
    }
}

/// One queued HTTP response.
#[derive(Debug, Clone)]
pub struct MockResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers (name, value); `content-length`/`transfer-encoding` are managed by the
    /// server.
    pub headers: Vec<(String, String)>,
    /// Body bytes exactly as sent.
    pub body: Bytes,
    /// Chunking plan.
    pub chunking: Chunking,
    /// Wait before sending the status line.
    pub delay: Option<Duration>,
    /// Pause between body chunks.
    pub chunk_pause: Option<Duration>,
    /// After the last chunk keep the connection open forever (for interrupt tests).
    pub hang: bool,
}

fn sse_headers() -> Vec<(String, String)> {
    vec![("content-type".to_string(), "text/event-stream".to_string())]
}

fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".to_string(), "application/json".to_string())]
}

fn read(path: &Path) -> Bytes {
    match std::fs::read(path) {
        Ok(b) => Bytes::from(b),
        Err(e) => panic!("cannot read fixture {}: {e}", path.display()),
    }
}

impl MockResponse {
    /// Any status, headers and body.
    pub fn from_bytes(
        status: u16,
        headers: Vec<(String, String)>,
        body: impl Into<Bytes>,
    ) -> MockResponse {
        MockResponse {
            status,
            headers,
            body: body.into(),
            chunking: Chunking::Whole,
            delay: None,
            chunk_pause: None,
            hang: false,
        }
    }

    /// A 200 `text/event-stream` response with `body` as its SSE text, byte for byte.
    pub fn sse(body: impl Into<Bytes>) -> MockResponse {
        MockResponse::from_bytes(200, sse_headers(), body)
    }

    /// The first `n` SSE events of this response's body (each ends in a blank line), for
    /// cutting a streamed answer short: with `n` below the event count there is no
    /// `finish_reason` and no `[DONE]`. A body that is not UTF-8 is read lossily.
    pub fn first_sse_events(&self, n: usize) -> String {
        String::from_utf8_lossy(&self.body)
            .split_inclusive("\n\n")
            .take(n)
            .collect()
    }

    /// A 200 `text/event-stream` response whose body is the file at `path` (panics if
    /// unreadable — test helper).
    pub fn sse_fixture(path: impl AsRef<Path>) -> MockResponse {
        MockResponse::from_bytes(200, sse_headers(), read(path.as_ref()))
    }

    /// An `application/json` response with `status` whose body is the file at `path`.
    pub fn json_fixture(status: u16, path: impl AsRef<Path>) -> MockResponse {
        MockResponse::from_bytes(status, json_headers(), read(path.as_ref()))
    }

    /// A recorded exchange: `headers_txt` holds the raw status line and headers
    /// (`HTTP/1.1 200 OK` then `name: value` lines, as in `llamacpp/*.headers.txt`), `body` the
    /// raw body. Hop-by-hop and length headers are dropped (the server sets its own).
    pub fn from_recording(headers_txt: impl AsRef<Path>, body: impl AsRef<Path>) -> MockResponse {
        let raw = String::from_utf8_lossy(&read(headers_txt.as_ref())).into_owned();
        let mut lines = raw.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("no status line in {}", headers_txt.as_ref().display()));
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "content-length" | "transfer-encoding" | "connection" | "date" | "keep-alive"
                )
            })
            .collect();
        MockResponse::from_bytes(status, headers, read(body.as_ref()))
    }

    /// Sends the body in chunks of these sizes (cyclic).
    pub fn chunked(mut self, sizes: Vec<usize>) -> MockResponse {
        self.chunking = Chunking::Sizes(sizes);
        self
    }

    /// Sends the body in chunks of `n` bytes.
    pub fn split_every(self, n: usize) -> MockResponse {
        self.chunked(vec![n])
    }

    /// Waits `d` before answering.
    pub fn with_delay(mut self, d: Duration) -> MockResponse {
        self.delay = Some(d);
        self
    }

    /// Pauses `d` between body chunks.
    pub fn with_chunk_pause(mut self, d: Duration) -> MockResponse {
        self.chunk_pause = Some(d);
        self
    }

    /// Never ends the body after the last chunk (the connection stays open).
    pub fn hang(mut self) -> MockResponse {
        self.hang = true;
        self
    }

    /// A streamed Chat Completions answer with `text` (sent as a few deltas), finish_reason
    /// `stop`, a usage-only chunk and `[DONE]`.
    pub fn text(text: &str) -> MockResponse {
        let mut chunks = vec![delta(json!({"role": "assistant", "content": ""}), None)];
        for piece in split_text(text) {
            chunks.push(delta(json!({"content": piece}), None));
        }
        chunks.push(delta(json!({}), Some("stop")));
        sse_from_chunks(chunks, text.chars().count() as u64 / 4 + 1)
    }

    /// A streamed Chat Completions answer calling tools: `calls` are (id, name, arguments
    /// JSON text); arguments are split over two deltas; finish_reason `tool_calls`, usage,
    /// `[DONE]`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> MockResponse {
        let mut chunks = vec![delta(json!({"role": "assistant", "content": null}), None)];
        for (i, (id, name, args)) in calls.iter().enumerate() {
            let mut cut = args.len() / 2;
            while !args.is_char_boundary(cut) {
                cut -= 1;
            }
            chunks.push(delta(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": &args[..cut]}}]}),
                None,
            ));
            chunks.push(delta(
                json!({"tool_calls": [{"index": i, "function": {"arguments": &args[cut..]}}]}),
                None,
            ));
        }
        chunks.push(delta(json!({}), Some("tool_calls")));
        sse_from_chunks(chunks, 10)
    }
}

impl MockResponse {
    /// A non-streamed (`"stream": false`) Chat Completions answer with `text`, finish_reason
    /// `stop` and a usage block, as `application/json`.
    pub fn text_json(text: &str) -> MockResponse {
        completion_json(
            json!({"role": "assistant", "content": text}),
            "stop",
            text.chars().count() as u64 / 4 + 1,
        )
    }

    /// A non-streamed Chat Completions answer calling tools: `calls` are (id, name, arguments
    /// JSON text); finish_reason `tool_calls`, usage, as `application/json`.
    pub fn tool_calls_json(calls: &[(&str, &str, &str)]) -> MockResponse {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function",
                    "function": {"name": name, "arguments": args}})
            })
            .collect();
        completion_json(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
            10,
        )
    }
}

fn completion_json(message: Value, finish: &str, completion_tokens: u64) -> MockResponse {
    let body = json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0,
        "model": "mock-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens,
            "total_tokens": 10 + completion_tokens}});
    MockResponse::from_bytes(200, json_headers(), body.to_string())
}

fn split_text(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len().div_ceil(3).max(1);
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn sse_from_chunks(chunks: Vec<Value>, completion_tokens: u64) -> MockResponse {
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    let usage = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
        "model": "mock-model", "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens,
            "total_tokens": 10 + completion_tokens}});
    body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    MockResponse::from_bytes(200, sse_headers(), body)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn chunking_covers_body_in_order() {
        let body = Bytes::from_static("héllo wörld".as_bytes());
        let parts = Chunking::Sizes(vec![1, 2, 0]).split(&body);
        assert_eq!(
            parts.iter().map(|p| p.len()).take(3).collect::<Vec<_>>(),
            vec![1, 2, 1]
        );
        assert_eq!(parts.concat(), body.to_vec());
    }
}
