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

/// Whether serde_json keeps insertion order (its `preserve_order` feature, on in workspace
/// builds through the ACP crate): then a tree writes its keys as inserted, while the direct
/// writer's structs list theirs alphabetically.
fn preserve_order() -> bool {
    serde_json::to_string(&json!({"b": 0, "a": 0})).unwrap() == r#"{"b":0,"a":0}"#
}

/// JSON equality, key order aside, with floats equal to within a few units in the last place
/// (serde_json parses floats fast, not round-trip exact, without its `float_roundtrip`).
fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w))
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= f64::EPSILON * 4.0 * x.abs().max(1.0),
                _ => false,
            }
        }
        _ => a == b,
    }
}

/// Byte for byte without `preserve_order` (the order the direct writer is built for); with
/// it, the same JSON value (key order aside).
fn same(request: &ChatRequest, opts: &ChatWireOptions) {
    let tree = build_body(request, "default-model", opts);
    let direct = body_bytes(request, "default-model", opts).unwrap();
    if preserve_order() {
        let parsed: serde_json::Value = serde_json::from_slice(&direct).unwrap();
        assert!(same_value(&parsed, &tree), "{parsed}\n{tree}");
    } else {
        assert_eq!(
            String::from_utf8(direct).unwrap(),
            String::from_utf8(serde_json::to_vec(&tree).unwrap()).unwrap()
        );
    }
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
