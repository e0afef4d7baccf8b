//! Multi-turn scenarios against the mock provider (CONVENTIONS pattern 4): every test also
//! checks the request invariants — no orphan tool call or result, a stable system prompt and
//! a stable tool list within the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Harness, SYSTEM_PROMPT, final_text, roles, tool_messages, tool_results};
use hermes_agent::{Agent, AgentHandle, validate_tool_pairs};
use hermes_protocol::{AgentEvent, Op, Role, TurnOutcome};
use hermes_testkit::MockResponse;

#[tokio::test]
async fn plain_text_answer_is_streamed_and_persisted() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("Hello there, friend."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "hi").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "Hello there, friend.");
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Hello there, friend.");
    assert!(matches!(events[0], AgentEvent::TurnStarted { .. }));
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    let stored_roles: Vec<Role> = stored.iter().map(|m| m.message.role).collect();
    assert_eq!(stored_roles, vec![Role::User, Role::Assistant]);
    let session = h.store.get_session(agent.session_id()).unwrap().unwrap();
    assert_eq!(session.system_prompt, SYSTEM_PROMPT);
    assert!(session.output_tokens > 0, "usage recorded");
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["messages"][0]["content"], SYSTEM_PROMPT);
}

#[tokio::test]
async fn one_tool_call_then_answer() {
    let h = Harness::new().await;
    std::fs::write(h.path("notes.txt"), "buy milk\n").unwrap();
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "read_file",
        r#"{"path":"notes.txt"}"#,
    )]));
    h.mock.push(MockResponse::text("Your note says: buy milk."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "what is in notes.txt?").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(tool_results(&events), vec![("call_1".to_string(), true)]);
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 2);
    let results = tool_messages(&requests[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].1.contains("buy milk"), "{results:?}");
    let stored_roles: Vec<Role> = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .iter()
        .map(|m| m.message.role)
        .collect();
    assert_eq!(
        stored_roles,
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_answer_in_call_order() {
    let h = Harness::new().await;
    std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
    std::fs::write(h.path("b.txt"), "beta\n").unwrap();
    h.mock.push(MockResponse::tool_calls(&[
        ("call_a", "read_file", r#"{"path":"a.txt"}"#),
        ("call_b", "read_file", r#"{"path":"b.txt"}"#),
    ]));
    h.mock.push(MockResponse::text("alpha and beta"));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "read both").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let requests = h.checked_requests();
    let results = tool_messages(&requests[1]);
    assert_eq!(results[0].0, "call_a");
    assert!(results[0].1.contains("alpha"));
    assert_eq!(results[1].0, "call_b");
    assert!(results[1].1.contains("beta"));
    assert_eq!(tool_results(&events).len(), 2);
}

#[tokio::test]
async fn failing_tool_is_reported_to_the_model_and_the_turn_goes_on() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "read_file",
        r#"{"path":"missing.txt"}"#,
    )]));
    h.mock.push(MockResponse::text("That file does not exist."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "read missing.txt").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(tool_results(&events), vec![("call_1".to_string(), false)]);
    let requests = h.checked_requests();
    let results = tool_messages(&requests[1]);
    assert!(
        results[0].1.to_lowercase().contains("missing.txt"),
        "{results:?}"
    );
}

#[tokio::test]
async fn invalid_tool_json_is_not_executed() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "write_file",
        r#"{"path":"out.txt","content":"x""#,
    )]));
    h.mock.push(MockResponse::text("I will retry."));
    let mut agent = h.agent().await;
    let (outcome, _events) = h.turn(&mut agent, "write it").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert!(!h.path("out.txt").exists(), "the tool must not run");
    let requests = h.checked_requests();
    let results = tool_messages(&requests[1]);
    assert!(results[0].1.contains("not valid JSON"), "{results:?}");
    // The stored call keeps the model's text verbatim.
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert_eq!(
        stored[1].message.tool_calls[0].arguments,
        r#"{"path":"out.txt","content":"x""#
    );
}

#[tokio::test]
async fn unknown_tool_gets_close_matches() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "read_fil",
        r#"{"path":"a"}"#,
    )]));
    h.mock.push(MockResponse::text("ok"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "go").await;
    let requests = h.checked_requests();
    let results = tool_messages(&requests[1]);
    assert!(results[0].1.contains("Unknown tool"), "{results:?}");
    assert!(results[0].1.contains("read_file"), "{results:?}");
}

#[tokio::test]
async fn arguments_are_coerced_by_schema_for_execution_only() {
    let h = Harness::new().await;
    let lines: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(h.path("long.txt"), lines).unwrap();
    let args = r#"{"path":"long.txt","offset":"10","limit":"2"}"#;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "read_file", args)]));
    h.mock.push(MockResponse::text("done"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "read lines 10-11").await;
    let requests = h.checked_requests();
    let result = &tool_messages(&requests[1])[0].1;
    assert!(
        result.contains("line 10") && result.contains("line 11"),
        "{result}"
    );
    assert!(!result.contains("line 12"), "{result}");
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert_eq!(
        stored[1].message.tool_calls[0].arguments, args,
        "stored call keeps the model's text"
    );
}

#[tokio::test]
async fn identical_calls_in_one_batch_run_once() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::tool_calls(&[
        ("call_1", "skills_list", "{}"),
        ("call_2", "skills_list", "{}"),
    ]));
    h.mock.push(MockResponse::text("none"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "list skills").await;
    assert_eq!(h.counting.count(), 1);
    let requests = h.checked_requests();
    assert_eq!(tool_messages(&requests[1]).len(), 2);
}

#[tokio::test]
async fn budget_exhaustion_ends_with_one_toolless_summary_call() {
    let mut h = Harness::new().await;
    h.opts.max_turns = 2;
    for i in 0..2 {
        let id = format!("call_{i}");
        h.mock.push(MockResponse::tool_calls(&[(
            id.as_str(),
            "skills_list",
            "{}",
        )]));
    }
    h.mock
        .push(MockResponse::text("Summary: I listed skills twice."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "keep going").await;
    assert_eq!(outcome, TurnOutcome::BudgetExhausted);
    assert_eq!(final_text(&events), "Summary: I listed skills twice.");
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 3);
    let last = &requests[2];
    assert_eq!(
        last["tool_choice"], "none",
        "the summary call must not allow tools"
    );
    assert_eq!(roles(last).last().map(String::as_str), Some("user"));
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    let last_stored = stored.last().unwrap();
    assert_eq!(last_stored.message.role, Role::Assistant);
    assert_eq!(
        last_stored.message.text(),
        "Summary: I listed skills twice."
    );
    assert!(
        stored
            .iter()
            .all(|m| !m.message.text().contains("every step this turn allows")),
        "the summary instruction is not stored"
    );
}

#[tokio::test]
async fn budget_exhaustion_with_failing_summary_gives_a_fallback_naming_the_limit() {
    let mut h = Harness::new().await;
    h.opts.max_turns = 1;
    h.opts.api_max_retries = 0;
    h.mock
        .push(MockResponse::tool_calls(&[("call_0", "skills_list", "{}")]));
    h.mock.push(MockResponse::from_bytes(
        500,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"Internal server error","type":"server_error"}}"#,
    ));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "go").await;
    assert_eq!(outcome, TurnOutcome::BudgetExhausted);
    assert!(
        final_text(&events).contains("limit of 1 steps"),
        "{}",
        final_text(&events)
    );
    h.checked_requests();
}

#[tokio::test]
async fn retryable_errors_are_retried_with_a_status_event() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::from_bytes(
        503,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"Service overloaded"}}"#,
    ));
    h.mock.push(MockResponse::text("recovered"));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "hi").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "recovered");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Status { message } if message.starts_with("provider overloaded, retrying in") && message.ends_with("(1/3)")))
    );
    assert_eq!(h.checked_requests().len(), 2);
}

#[tokio::test]
async fn non_retryable_errors_fail_the_turn_with_the_reason() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::from_bytes(
        401,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"Invalid API key","type":"invalid_request_error"}}"#,
    ));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "hi").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    assert!(final_text(&events).contains("Invalid API key"));
    assert_eq!(h.mock.requests().len(), 1, "auth errors are not retried");
    // The user message is kept even though the turn failed.
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert_eq!(stored.len(), 1);
}

#[tokio::test]
async fn interrupt_mid_tool_leaves_every_call_paired() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::tool_calls(&[
        ("call_slow", "terminal", r#"{"command":"sleep 30"}"#),
        ("call_next", "skills_list", "{}"),
    ]));
    let agent = h.agent().await;
    let session_id = agent.session_id().to_string();
    let mut handle = AgentHandle::spawn(agent);
    handle.submit(Op::user("run it"));
    let mut outcome = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while outcome.is_none() {
        let ev = tokio::time::timeout_at(deadline, handle.next_event())
            .await
            .expect("no hang")
            .expect("agent alive");
        match ev {
            AgentEvent::ToolStarted { call_id, .. } if call_id == "call_slow" => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                handle.submit(Op::Interrupt);
            }
            AgentEvent::TurnFinished { outcome: o, .. } => outcome = Some(o),
            _ => {}
        }
    }
    assert_eq!(outcome, Some(TurnOutcome::Interrupted));
    assert_eq!(
        h.counting.count(),
        0,
        "calls after the interrupt are not run"
    );
    let stored: Vec<_> = h
        .store
        .load_messages(&session_id)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    validate_tool_pairs(&stored).unwrap();
    assert_eq!(stored.len(), 4, "user, assistant, two results");
    assert!(stored[2].text().contains("cancelled"));
    assert!(stored[3].text().contains("cancelled"));

    // The session goes on, and the next request is valid.
    h.mock.push(MockResponse::text("ok, stopped"));
    handle.submit(Op::user("never mind"));
    loop {
        let ev = tokio::time::timeout_at(deadline, handle.next_event())
            .await
            .expect("no hang")
            .expect("agent alive");
        if let AgentEvent::TurnFinished { outcome, .. } = ev {
            assert_eq!(outcome, TurnOutcome::Completed);
            break;
        }
    }
    h.checked_requests();
    handle.shutdown().await;
}

#[tokio::test]
async fn interrupt_during_a_hanging_model_request() {
    let h = Harness::new().await;
    // One delta, then the connection stays open with no end of stream.
    h.mock.push(
        MockResponse::from_bytes(
            200,
            vec![("content-type".into(), "text/event-stream".into())],
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking\"}}]}\n\n",
        )
        .hang(),
    );
    let agent = h.agent().await;
    let mut handle = AgentHandle::spawn(agent);
    handle.submit(Op::user("hi"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut interrupted = false;
    loop {
        let ev = tokio::time::timeout_at(deadline, handle.next_event())
            .await
            .expect("no hang")
            .expect("agent alive");
        match ev {
            AgentEvent::TurnStarted { .. } if !interrupted => {
                tokio::time::sleep(Duration::from_millis(300)).await;
                handle.interrupt();
                interrupted = true;
            }
            AgentEvent::TurnFinished { outcome, .. } => {
                assert_eq!(outcome, TurnOutcome::Interrupted);
                break;
            }
            _ => {}
        }
    }
    handle.shutdown().await;
}

#[tokio::test]
async fn resume_reuses_the_stored_prompt_byte_for_byte() {
    let h = Harness::new().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "skills_list", "{}")]));
    h.mock.push(MockResponse::text("first answer"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "first").await;
    let session_id = agent.session_id().to_string();
    drop(agent);

    // A new process would build a different prompt; resume must not use it.
    let mut deps = h.deps.clone();
    let changed = |_m: &str, _p: &str, _t: &[String]| "A DIFFERENT PROMPT".to_string();
    deps.prompt = std::sync::Arc::new(changed);
    let mut resumed = Agent::start(deps, h.opts.clone(), Some(&session_id))
        .await
        .unwrap();
    assert_eq!(resumed.session_id(), session_id);
    assert_eq!(resumed.system_prompt(), SYSTEM_PROMPT);
    assert_eq!(resumed.history().len(), 4);
    h.mock.push(MockResponse::text("second answer"));
    let (outcome, _) = h.turn(&mut resumed, "second").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        roles(&requests[2]),
        vec!["system", "user", "assistant", "tool", "assistant", "user"]
    );
}

#[tokio::test]
async fn resume_by_title_and_unknown_session_error() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("hello"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "Plan the garden party").await;
    let resumed = Agent::start(
        h.deps.clone(),
        h.opts.clone(),
        Some("Plan the garden party"),
    )
    .await
    .unwrap();
    assert_eq!(resumed.session_id(), agent.session_id());
    let err = Agent::start(h.deps.clone(), h.opts.clone(), Some("no-such-session"))
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("no session matches"));
}

#[tokio::test]
async fn undo_and_retry_change_the_active_history() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("one"));
    h.mock.push(MockResponse::text("two"));
    let agent = h.agent().await;
    let session_id = agent.session_id().to_string();
    let mut handle = AgentHandle::spawn(agent);
    for text in ["first", "second"] {
        handle.submit(Op::user(text));
        wait_finished(&mut handle).await;
    }
    handle.submit(Op::Undo { count: 1 });
    wait_finished(&mut handle).await;
    let active = h.store.load_messages(&session_id).unwrap();
    assert_eq!(active.len(), 2);
    assert_eq!(active[0].message.text(), "first");

    h.mock.push(MockResponse::text("one again"));
    handle.submit(Op::Retry);
    wait_finished(&mut handle).await;
    let active = h.store.load_messages(&session_id).unwrap();
    let texts: Vec<String> = active.iter().map(|m| m.message.text()).collect();
    assert_eq!(texts, vec!["first", "one again"]);
    let requests = h.checked_requests();
    assert_eq!(roles(requests.last().unwrap()), vec!["system", "user"]);
    handle.shutdown().await;
}

#[tokio::test]
async fn new_session_gets_a_new_id() {
    let h = Harness::new().await;
    let agent = h.agent().await;
    let first = agent.session_id().to_string();
    let mut handle = AgentHandle::spawn(agent);
    handle.submit(Op::NewSession);
    wait_finished(&mut handle).await;
    assert_ne!(handle.session_id(), first);
    assert!(h.store.get_session(&handle.session_id()).unwrap().is_some());
    handle.shutdown().await;
}

#[tokio::test]
async fn dangerous_command_denied_in_one_shot_mode() {
    let h = Harness::new().await;
    std::fs::create_dir(h.path("build")).unwrap();
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "terminal",
        r#"{"command":"rm -r build/"}"#,
    )]));
    h.mock.push(MockResponse::text("ok"));
    let mut agent = h.agent().await;
    let (_, events) = h.turn(&mut agent, "clean").await;
    assert_eq!(tool_results(&events), vec![("call_1".to_string(), false)]);
    assert!(h.path("build").exists(), "the command must not run");
    let requests = h.checked_requests();
    assert!(
        tool_messages(&requests[1])[0]
            .1
            .to_lowercase()
            .contains("not approved")
    );
}

async fn wait_finished(handle: &mut AgentHandle) {
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), handle.next_event())
            .await
            .expect("no hang")
            .expect("agent alive");
        if matches!(ev, AgentEvent::TurnFinished { .. }) {
            return;
        }
    }
}

#[tokio::test]
async fn resume_op_switches_to_a_stored_session() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("first session answer"));
    let mut first = h.agent().await;
    h.turn(&mut first, "remember the blue door").await;
    let first_id = first.session_id().to_string();
    let agent = h.agent().await;
    let mut handle = AgentHandle::spawn(agent);
    assert_ne!(handle.session_id(), first_id);
    handle.submit(Op::Resume {
        session: first_id.clone(),
    });
    wait_finished(&mut handle).await;
    assert_eq!(handle.session_id(), first_id);
    h.mock.push(MockResponse::text("the blue door"));
    handle.submit(Op::user("what did I ask you to remember?"));
    wait_finished(&mut handle).await;
    let requests = h.checked_requests();
    assert_eq!(
        roles(requests.last().unwrap()),
        vec!["system", "user", "assistant", "user"]
    );
    handle.shutdown().await;
}
