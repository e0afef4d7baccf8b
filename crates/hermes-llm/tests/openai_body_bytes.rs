//! The Chat Completions body written straight to bytes (`body_bytes`, issue 6) is byte for
//! byte the serialized `build_body` tree, for any history: what providers receive did not
//! change when the request stopped going through a `serde_json::Value`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use hermes_llm::anthropic::CacheTtl;
use hermes_llm::openai_chat::{ChatWireOptions, body_bytes, build_body};
use hermes_llm::{ChatRequest, ToolChoice};
use hermes_protocol::{ContentPart, Message, Reasoning, Role, ToolCall, ToolSpec};
use proptest::prelude::*;
use serde_json::json;

fn same(request: &ChatRequest, opts: &ChatWireOptions) {
    let tree = serde_json::to_vec(&build_body(request, "default-model", opts)).unwrap();
    let direct = body_bytes(request, "default-model", opts).unwrap();
    assert_eq!(
        String::from_utf8(direct).unwrap(),
        String::from_utf8(tree).unwrap()
    );
}

/// Text with quotes, escapes, control characters, non-ASCII and astral characters.
const TEXTS: [&str; 6] = [
    "",
    "plain",
    "quote \" backslash \\ tab \t newline \n nul \u{0} bell \u{7}",
    "日本語のテキスト",
    "emoji 🦀 and </script>",
    "  spaced  ",
];

fn message() -> impl Strategy<Value = Message> {
    (0u8..6, 0usize..TEXTS.len(), 0usize..TEXTS.len(), 0u8..4).prop_map(|(kind, a, b, n)| {
        let (ta, tb) = (TEXTS[a], TEXTS[b]);
        match kind {
            0 => Message::user(ta),
            1 => {
                let mut m = Message::user(ta);
                m.content.push(ContentPart::Image {
                    url: format!("data:image/png;base64,{tb}"),
                });
                m.content.push(ContentPart::Text { text: tb.into() });
                m
            }
            2 => {
                let mut m = Message::assistant(ta);
                m.tool_calls = (0..n)
                    .map(|k| {
                        ToolCall::new(
                            format!("call_{k}|fc {tb}"),
                            "read_file",
                            format!("{{\"path\":\"{k}\"}}"),
                        )
                    })
                    .collect();
                if n % 2 == 1 {
                    m.reasoning = Some(Reasoning {
                        text: tb.into(),
                        signature: Some("sig".into()),
                    });
                }
                m
            }
            3 => {
                let mut m = Message::tool(format!("call {tb}"), "terminal", ta);
                if n == 0 {
                    m.tool_call_id = None;
                }
                m
            }
            4 => Message::system(ta),
            _ => {
                let mut m = Message::assistant("");
                m.content.push(ContentPart::Text { text: ta.into() });
                m.content.push(ContentPart::Text { text: tb.into() });
                m.role = Role::Assistant;
                m
            }
        }
    })
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file. \"Quoted\" and ünïcödé.".into(),
            parameters: json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string", "description": "a path"},
                "offset": {"type": "integer", "minimum": 1, "default": 1},
                "ratio": {"type": "number", "default": 0.1},
                "flags": {"type": "array", "items": {"enum": ["a", "b", null, true]}}}}),
        },
        ToolSpec {
            name: "empty".into(),
            description: String::new(),
            parameters: json!({}),
        },
    ]
}

proptest! {
    #[test]
    fn direct_bytes_equal_the_serialized_tree(
        history in prop::collection::vec(message(), 0..12),
        system in 0usize..TEXTS.len(),
        with_tools in any::<bool>(),
        none_choice in any::<bool>(),
        max_tokens in prop::option::of(1u32..100_000),
        temperature in prop::option::of(0u8..20),
        echo_reasoning in any::<bool>(),
        cache in any::<bool>(),
        model_empty in any::<bool>(),
    ) {
        let request = ChatRequest {
            model: if model_empty { String::new() } else { "some/model".into() },
            system: TEXTS[system].into(),
            messages: history,
            tools: if with_tools { tools() } else { Vec::new() },
            tool_choice: if none_choice { ToolChoice::None } else { ToolChoice::Auto },
            max_tokens,
            temperature: temperature.map(|t| f32::from(t) / 10.0 + 0.05),
            cancel: Default::default(),
        };
        let opts = ChatWireOptions {
            echo_reasoning,
            cache: cache.then_some(CacheTtl::FiveMinutes),
        };
        same(&request, &opts);
    }
}
