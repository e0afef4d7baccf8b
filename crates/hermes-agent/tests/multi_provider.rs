//! The multi-provider scenario (issue 3, "How it is checked"): the same three-turn
//! conversation with a tool call runs unchanged against the OpenAI Chat Completions, Anthropic
//! Messages and OpenAI Responses mocks, and the stored history (hermes-store rows) is the same
//! for all three apart from provider metadata (the session's model/provider columns, token
//! counts, and replay state kept in `reasoning`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Harness, final_text};
use hermes_llm::{
    AnthropicClient, AnthropicConfig, ModelClient, OpenAiChatClient, OpenAiChatConfig,
    ResponsesClient, ResponsesConfig,
};
use hermes_protocol::{Message, TurnOutcome};
use hermes_testkit::MockResponse;
use serde_json::{Value, json};

/// One answer of the scripted conversation, in provider-neutral form.
enum Answer {
    Text(&'static str),
    /// (call id, tool name, arguments JSON)
    Call(&'static str, &'static str, &'static str),
}

/// The conversation: user inputs, and the model's answers for each turn.
const TURNS: [(&str, &[Answer]); 3] = [
    (
        "Which skills do I have?",
        &[
            Answer::Call("call_skills_1", "skills_list", r#"{"category":"devops"}"#),
            Answer::Text("You have no skills installed yet."),
        ],
    ),
    ("Thanks. What is 2 + 2?", &[Answer::Text("2 + 2 = 4.")]),
    ("Bye!", &[Answer::Text("Goodbye — see you soon.")]),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dialect {
    Chat,
    Anthropic,
    Responses,
}

fn sse(events: &[(&str, Value)]) -> MockResponse {
    let mut body = String::new();
    for (name, data) in events {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        body,
    )
}

/// A streamed Anthropic Messages answer: one text block, or one tool_use block whose input
/// arrives as two `input_json_delta`s.
fn anthropic(answer: &Answer) -> MockResponse {
    let mut ev = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message",
                "role": "assistant", "model": "claude-mock", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    let stop = match answer {
        Answer::Text(text) => {
            ev.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            ));
            let (a, b) = text.split_at(text.len() / 2);
            for piece in [a, b] {
                ev.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            "end_turn"
        }
        Answer::Call(id, name, args) => {
            ev.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ));
            let (a, b) = args.split_at(args.len() / 2);
            for piece in [a, b] {
                ev.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                ));
            }
            "tool_use"
        }
    };
    ev.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    ev.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop},
            "usage": {"output_tokens": 7}}),
    ));
    ev.push(("message_stop", json!({"type": "message_stop"})));
    sse(&ev)
}

/// A streamed OpenAI Responses answer: one message item or one function_call item.
fn responses(answer: &Answer) -> MockResponse {
    let mut ev = vec![(
        "response.created",
        json!({"type": "response.created",
            "response": {"id": "resp_mock", "status": "in_progress", "output": []}}),
    )];
    let done_item = match answer {
        Answer::Text(text) => {
            ev.push((
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"id": "msg_mock", "type": "message", "status": "in_progress",
                        "role": "assistant", "content": []}}),
            ));
            let (a, b) = text.split_at(text.len() / 2);
            for piece in [a, b] {
                ev.push((
                    "response.output_text.delta",
                    json!({"type": "response.output_text.delta", "output_index": 0,
                        "content_index": 0, "item_id": "msg_mock", "delta": piece}),
                ));
            }
            json!({"id": "msg_mock", "type": "message", "status": "completed",
                "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        }
        Answer::Call(id, name, args) => {
            ev.push((
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"id": "fc_mock", "type": "function_call", "status": "in_progress",
                        "call_id": id, "name": name, "arguments": ""}}),
            ));
            let (a, b) = args.split_at(args.len() / 2);
            for piece in [a, b] {
                ev.push((
                    "response.function_call_arguments.delta",
                    json!({"type": "response.function_call_arguments.delta",
                        "output_index": 0, "item_id": "fc_mock", "delta": piece}),
                ));
            }
            json!({"id": "fc_mock", "type": "function_call", "status": "completed",
                "call_id": id, "name": name, "arguments": args})
        }
    };
    ev.push((
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": done_item}),
    ));
    ev.push((
        "response.completed",
        json!({"type": "response.completed", "response": {"id": "resp_mock",
            "status": "completed", "output": [done_item],
            "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}}}),
    ));
    sse(&ev)
}

fn chat(answer: &Answer) -> MockResponse {
    match answer {
        Answer::Text(text) => MockResponse::text(text),
        Answer::Call(id, name, args) => MockResponse::tool_calls(&[(id, name, args)]),
    }
}

fn client(dialect: Dialect, base_url: String) -> Arc<dyn ModelClient> {
    match dialect {
        Dialect::Chat => {
            Arc::new(OpenAiChatClient::new(OpenAiChatConfig::new(base_url, "gpt-4o-mini")).unwrap())
        }
        Dialect::Anthropic => {
            let mut config = AnthropicConfig::new(base_url, "claude-sonnet-4");
            config.api_key = Some("sk-ant-test".into());
            Arc::new(AnthropicClient::new(config).unwrap())
        }
        Dialect::Responses => {
            Arc::new(ResponsesClient::new(ResponsesConfig::new(base_url, "gpt-5")).unwrap())
        }
    }
}

/// Runs the conversation on `dialect`; returns the stored messages and the request bodies.
async fn run(dialect: Dialect) -> (Vec<Message>, Vec<Value>, Harness) {
    let mut h = Harness::new().await;
    h.deps.client = client(dialect, h.mock.base_url());
    let mut agent = h.agent().await;
    for (input, answers) in TURNS {
        for a in answers {
            h.mock.push(match dialect {
                Dialect::Chat => chat(a),
                Dialect::Anthropic => anthropic(a),
                Dialect::Responses => responses(a),
            });
        }
        let (outcome, events) = h.turn(&mut agent, input).await;
        assert_eq!(outcome, TurnOutcome::Completed, "{dialect:?}: {events:?}");
        let Some(Answer::Text(last)) = answers.last() else {
            unreachable!()
        };
        assert_eq!(final_text(&events), *last, "{dialect:?}");
    }
    assert_eq!(h.mock.pending(), 0);
    let stored = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    let session = h.store.get_session(agent.session_id()).unwrap().unwrap();
    assert_eq!(session.provider, agent.client().provider());
    assert!(session.input_tokens > 0, "{dialect:?}: usage recorded");
    let bodies = h.mock.captured().into_iter().map(|c| c.body).collect();
    (stored, bodies, h)
}

/// The stored history without provider metadata (reasoning replay state).
fn neutral(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .cloned()
        .map(|mut m| {
            m.reasoning = None;
            m
        })
        .collect()
}

#[tokio::test]
async fn three_turns_with_a_tool_call_store_the_same_history_on_every_api() {
    let (chat_msgs, chat_bodies, chat_h) = run(Dialect::Chat).await;
    let (anth_msgs, anth_bodies, _anth_h) = run(Dialect::Anthropic).await;
    let (resp_msgs, resp_bodies, _resp_h) = run(Dialect::Responses).await;

    // user, assistant(call), tool, assistant, user, assistant, user, assistant
    assert_eq!(chat_msgs.len(), 8, "{chat_msgs:#?}");
    assert_eq!(neutral(&anth_msgs), neutral(&chat_msgs));
    assert_eq!(neutral(&resp_msgs), neutral(&chat_msgs));
    let call = &chat_msgs[1].tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_skills_1", "skills_list")
    );
    assert_eq!(chat_msgs[2].tool_call_id.as_deref(), Some("call_skills_1"));
    assert_eq!(chat_msgs[2].text(), "no skills installed");
    assert_eq!(
        chat_h.counting.last_args.lock().unwrap().clone(),
        Some(json!({"category": "devops"}))
    );

    // Every request of every dialect carried the call and its result, paired.
    assert_eq!(chat_bodies.len(), 4);
    hermes_testkit::assert_request_invariants(&chat_bodies);
    assert_eq!(anth_bodies.len(), 4);
    let last = &anth_bodies[3]["messages"];
    assert_eq!(last[1]["content"][0]["type"], "tool_use");
    assert_eq!(last[1]["content"][0]["id"], "call_skills_1");
    assert_eq!(last[2]["content"][0]["type"], "tool_result");
    assert_eq!(last[2]["content"][0]["tool_use_id"], "call_skills_1");
    assert_eq!(resp_bodies.len(), 4);
    let items = resp_bodies[3]["input"].as_array().unwrap();
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|i| i["type"].as_str())
        .filter(|t| t.starts_with("function_call"))
        .collect();
    assert_eq!(kinds, ["function_call", "function_call_output"]);
    assert!(
        items
            .iter()
            .filter(|i| i["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("function_call")))
            .all(|i| i["call_id"] == "call_skills_1")
    );
}
