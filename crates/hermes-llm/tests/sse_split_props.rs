//! Property tests: decoding a Chat Completions SSE body split at arbitrary byte boundaries
//! (inside UTF-8 characters, inside `data:` and inside `\n\n`) gives the same result as the
//! unsplit body.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use futures::StreamExt;
use hermes_llm::openai_chat::{PromptHint, decode_sse};
use hermes_llm::{LlmError, StreamEvent};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

const FIXTURES: &[&str] = &[
    "openai_chat/stream_text_with_usage.sse",
    "openai_chat/stream_tool_calls_parallel.sse",
    "openai_chat/stream_refusal.sse",
    "openai_chat/stream_multiple_choices_n3.sse",
    "openai_chat/stream_text_gpt41_obfuscation.sse",
    "llamacpp/stream_text.sse",
    "llamacpp/fc_stream_tool_choice_forced.sse",
];

fn body(rel: &str) -> Vec<u8> {
    std::fs::read(hermes_testkit::fixture_path(rel)).unwrap()
}

/// Decodes `chunks` and returns (final result, concatenated text deltas).
fn decode(chunks: Vec<Vec<u8>>) -> (Result<hermes_protocol::AssistantMessage, String>, String) {
    let source = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<Bytes, LlmError>(Bytes::from(c))),
    );
    let mut stream = decode_sse(source, PromptHint::default(), CancellationToken::new());
    futures::executor::block_on(async move {
        let mut text = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::TextDelta(t)) => text.push_str(&t),
                Ok(StreamEvent::Completed(m)) => return (Ok(m), text),
                Ok(_) => {}
                Err(e) => return (Err(e.message), text),
            }
        }
        (Err("ended without Completed".into()), text)
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

#[test]
fn multibyte_character_split_inside_is_reassembled() {
    let text = "héllo — 世界 🎉";
    let chunk = serde_json::json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":"stop"}]});
    let raw = format!(": keep-alive\n\ndata:{chunk}\n\ndata: [DONE]\n\n").into_bytes();
    for cut in 0..=raw.len() {
        let (got, streamed) = decode(split_at(&raw, &[cut]));
        let m = got.unwrap();
        assert_eq!(m.text, text, "cut at {cut}");
        assert_eq!(streamed, text);
    }
    // Every byte its own chunk.
    let (got, _) = decode(raw.iter().map(|b| vec![*b]).collect());
    assert_eq!(got.unwrap().text, text);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn split_fixture_decodes_like_whole(which in 0..FIXTURES.len(), cuts in proptest::collection::vec(any::<usize>(), 0..40)) {
        let raw = body(FIXTURES[which]);
        let whole = decode(vec![raw.clone()]);
        prop_assert!(whole.0.is_ok(), "{}: {:?}", FIXTURES[which], whole.0);
        let split = decode(split_at(&raw, &cuts));
        prop_assert_eq!(split, whole);
    }
}
