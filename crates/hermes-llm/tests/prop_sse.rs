//! Property tests of the three SSE decoders (issue 6 part 5; CONVENTIONS "property tests for
//! parsers"): the named-event adapters (Anthropic Messages, OpenAI Responses) give the same
//! result for any byte split of every recorded stream, and no decoder panics, hangs or keeps
//! talking after its last item on corrupted or arbitrary input. The Chat Completions split
//! property lives in `sse_split_props.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use futures::StreamExt;
use hermes_llm::anthropic::AnthropicDecoder;
use hermes_llm::openai_chat::{PromptHint, decode_sse};
use hermes_llm::openai_responses::ResponsesDecoder;
use hermes_llm::sse::decode_named_sse;
use hermes_llm::{EventStream, LlmError, StreamEvent};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

/// Which decoder a body is fed to.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Chat,
    Anthropic,
    Responses,
}

const FIXTURES: &[(Kind, &str)] = &[
    (Kind::Anthropic, "anthropic/stream_text_basic.sse"),
    (Kind::Anthropic, "anthropic/stream_json_tool_with_pings.sse"),
    (Kind::Anthropic, "anthropic/stream_text_then_tool_use.sse"),
    (Kind::Anthropic, "anthropic/stream_thinking_signature.sse"),
    (Kind::Anthropic, "anthropic/stream_tool_use_no_args.sse"),
    (
        Kind::Anthropic,
        "anthropic/stream_tool_use_truncated_max_tokens.sse",
    ),
    (Kind::Anthropic, "anthropic/stream_error_overloaded.sse"),
    (Kind::Anthropic, "anthropic/stream_refusal_sdk_fixture.sse"),
    (Kind::Responses, "openai_responses/stream_text.sse"),
    (
        Kind::Responses,
        "openai_responses/stream_reasoning_then_function_call.sse",
    ),
    (
        Kind::Responses,
        "openai_responses/stream_reasoning_summary_then_text.sse",
    ),
    (
        Kind::Responses,
        "openai_responses/stream_function_call_no_reasoning.sse",
    ),
    (
        Kind::Responses,
        "openai_responses/stream_error_insufficient_quota.sse",
    ),
    (Kind::Chat, "openai_chat/stream_tool_call_single.sse"),
    (Kind::Chat, "openai_chat/stream_finish_length.sse"),
    (Kind::Chat, "llamacpp/stream_finish_length.sse"),
];

fn body(rel: &str) -> Vec<u8> {
    std::fs::read(hermes_testkit::fixture_path(rel)).unwrap()
}

fn stream_for(kind: Kind, chunks: Vec<Vec<u8>>) -> EventStream {
    let source = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<Bytes, LlmError>(Bytes::from(c))),
    );
    let cancel = CancellationToken::new();
    match kind {
        Kind::Chat => decode_sse(source, PromptHint::default(), cancel),
        Kind::Anthropic => decode_named_sse(source, AnthropicDecoder::new(), cancel),
        Kind::Responses => decode_named_sse(source, ResponsesDecoder::new(), cancel),
    }
}

/// What a decode produced: every item rendered (errors by class and message), in order.
/// Panics (failing the property) when anything follows the terminal item or when the stream
/// ends without one.
fn decode(kind: Kind, chunks: Vec<Vec<u8>>) -> Vec<String> {
    let mut stream = stream_for(kind, chunks);
    futures::executor::block_on(async move {
        let mut items = Vec::new();
        let mut terminal = false;
        while let Some(item) = stream.next().await {
            assert!(!terminal, "an item after the terminal one: {item:?}");
            match item {
                Ok(StreamEvent::Completed(m)) => {
                    terminal = true;
                    items.push(format!("completed {m:?}"));
                }
                Ok(other) => items.push(format!("{other:?}")),
                Err(e) => {
                    terminal = true;
                    assert!(!e.message.trim().is_empty(), "an error without a message");
                    items.push(format!("error {:?} {}", e.class, e.message));
                }
            }
        }
        assert!(terminal, "the stream ended without Completed or an error");
        items
    })
}

fn split_at(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts {
        out.push(bytes[at..c].to_vec());
        at = c;
    }
    out.push(bytes[at..].to_vec());
    out
}

/// SSE-looking noise: field lines, blank lines, JSON fragments and random bytes.
fn sse_noise() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"event: ".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b": ping\n\n".to_vec()),
        Just(b"[DONE]".to_vec()),
        Just(b"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}".to_vec()),
        Just(b"{\"type\":\"message_start\",\"message\":{}}".to_vec()),
        Just(b"{\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}".to_vec()),
        Just(b"{\"type\":\"response.output_text.delta\",\"delta\":\"x\"}".to_vec()),
        Just(b"{\"type\":\"response.completed\",\"response\":{}}".to_vec()),
        Just(b"message_stop".to_vec()),
        Just(b"{\"tool_calls\":[{\"index\":7,\"function\":{\"arguments\":\"{\"}}]}".to_vec()),
        proptest::collection::vec(any::<u8>(), 1..8),
        "[a-z{}\":,\\[\\] ]{1,12}".prop_map(|s| s.into_bytes()),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

const KINDS: [Kind; 3] = [Kind::Chat, Kind::Anthropic, Kind::Responses];

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(64)))]

    /// Any byte split of a recorded stream gives the same items as the whole body (SSE
    /// events do not depend on where the bytes were cut, so neither do the deltas).
    #[test]
    fn named_event_fixtures_decode_the_same_in_any_split(
        which in 0..FIXTURES.len(),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let (kind, rel) = FIXTURES[which];
        let raw = body(rel);
        let whole = decode(kind, vec![raw.clone()]);
        let split = decode(kind, split_at(&raw, &cuts));
        prop_assert_eq!(split, whole, "{}", rel);
    }

    /// A recorded stream with a stretch of bytes overwritten (a corrupted chunk) still ends in
    /// exactly one terminal item.
    #[test]
    fn corrupted_fixtures_end_cleanly(
        which in 0..FIXTURES.len(),
        at in any::<usize>(),
        garbage in proptest::collection::vec(any::<u8>(), 1..16),
        truncate in any::<bool>(),
    ) {
        let (kind, rel) = FIXTURES[which];
        let mut raw = body(rel);
        let at = at % raw.len();
        if truncate {
            raw.truncate(at);
        } else {
            for (i, b) in garbage.iter().enumerate() {
                if let Some(slot) = raw.get_mut(at + i) {
                    *slot = *b;
                }
            }
        }
        decode(kind, vec![raw]);
    }

    /// Arbitrary SSE-looking input never panics any decoder and always ends in one terminal
    /// item, whatever the chunking.
    #[test]
    fn arbitrary_input_ends_cleanly(
        noise in sse_noise(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        kind in 0..KINDS.len(),
    ) {
        decode(KINDS[kind], split_at(&noise, &cuts));
    }
}
