#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `delegate_task` (FEATURES §3, §4; issue 4 item 8): a subagent with its own budget and
//! session, restricted tools, its summary as the parent's tool result, batches in task
//! order, budget exhaustion, the parent's interrupt, and toolsets outside the parent's.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Harness, SYSTEM_PROMPT, final_text, tool_messages};
use hermes_agent::{Agent, DelegateTool, DelegationSettings, MAX_TASKS, validate_tool_pairs};
use hermes_protocol::{AgentEvent, Message, ToolSpec, TurnOutcome};
use hermes_store::SUBAGENT_SOURCE;
use hermes_testkit::MockResponse;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

/// A stand-in for the `memory` tool: subagents must never be offered it.
struct FakeMemory;

#[async_trait::async_trait]
impl Tool for FakeMemory {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "memory".into(),
            description: "Saves a note.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "memory"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::ok("saved")
    }
}

/// A tool that takes an hour unless cancelled.
struct SlowProbe;

#[async_trait::async_trait]
impl Tool for SlowProbe {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "slow_probe".into(),
            description: "Probes slowly.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "probe"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        ToolOutput::ok("probed")
    }
}

fn settings(max_iterations: u32) -> DelegationSettings {
    DelegationSettings {
        max_iterations,
        ..DelegationSettings::default()
    }
}

/// The harness with `memory`, `slow_probe` and `delegate_task` added to the parent's tools.
async fn harness(max_iterations: u32) -> Harness {
    let mut h = Harness::new().await;
    h.deps.tools.push(Arc::new(FakeMemory));
    h.deps.tools.push(Arc::new(SlowProbe));
    h.deps
        .tools
        .push(Arc::new(DelegateTool::new(settings(max_iterations))));
    h
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn system_text(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Requests grouped by session (one system prompt per session), each group checked against
/// the request invariants.
fn checked_by_session(requests: &[Value]) -> Vec<Vec<Value>> {
    let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
    for r in requests {
        let system = system_text(r);
        match groups.iter_mut().find(|(s, _)| *s == system) {
            Some((_, group)) => group.push(r.clone()),
            None => groups.push((system, vec![r.clone()])),
        }
    }
    groups
        .into_iter()
        .map(|(_, group)| {
            hermes_testkit::assert_request_invariants(&group);
            group
        })
        .collect()
}

/// The JSON result of the parent's `delegate_task` call `id`, from the request that carries it.
fn delegate_result(requests: &[Value], id: &str) -> Value {
    let content = requests
        .iter()
        .flat_map(tool_messages)
        .find(|(call, _)| call == id)
        .map(|(_, content)| content)
        .expect("delegate_task result sent to the model");
    serde_json::from_str(&content).unwrap()
}

fn stored(h: &Harness, session: &str) -> Vec<Message> {
    h.store
        .load_messages(session)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

#[tokio::test]
async fn single_delegation_returns_the_summary_and_links_the_child_session() {
    let h = harness(50).await;
    let args = json!({"goal": "Count the TODO markers", "context": "The code is in ./src; only .rs files matter."});
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        &args.to_string(),
    )]));
    h.mock
        .push(MockResponse::tool_calls(&[("c1", "skills_list", "{}")]));
    h.mock.push(MockResponse::text(
        "Found 3 TODO markers, all in src/lib.rs.",
    ));
    h.mock.push(MockResponse::text("There are 3 TODO markers."));
    let mut agent: Agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "How many TODOs are there?").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "There are 3 TODO markers.");

    let requests = h.mock.requests();
    assert_eq!(requests.len(), 4);
    let sessions = checked_by_session(&requests);
    assert_eq!(sessions.len(), 2, "one parent and one child session");

    // The child's first request: the goal and context, and only the allowed tools.
    let child = &requests[1];
    let system = system_text(child);
    assert_ne!(system, SYSTEM_PROMPT);
    assert!(system.contains("Count the TODO markers"), "{system}");
    assert!(system.contains("only .rs files matter"), "{system}");
    let messages = child["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "the child sees none of the parent's history"
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"], "Count the TODO markers");
    let names = tool_names(child);
    for blocked in ["delegate_task", "clarify", "memory"] {
        assert!(
            !names.contains(&blocked.to_string()),
            "{blocked} in {names:?}"
        );
    }
    for kept in ["read_file", "terminal", "todo", "skills_list", "slow_probe"] {
        assert!(names.contains(&kept.to_string()), "{kept} not in {names:?}");
    }
    assert!(tool_names(&requests[0]).contains(&"delegate_task".to_string()));
    assert_eq!(h.counting.count(), 1, "the child ran its tool");

    // The summary comes back as the parent's tool result.
    let result = delegate_result(&requests[3..], "d1");
    let entry = &result["results"][0];
    assert_eq!(entry["status"], "completed", "{result}");
    assert_eq!(entry["summary"], "Found 3 TODO markers, all in src/lib.rs.");
    assert_eq!(entry["iterations"], 2);
    assert!(entry["duration_ms"].is_u64());
    let child_id = entry["session_id"].as_str().unwrap().to_string();

    // The child's transcript is its own session, linked to the parent's.
    let parent_id = agent.session_id().to_string();
    let record = h.store.get_session(&child_id).unwrap().unwrap();
    assert_eq!(record.source, SUBAGENT_SOURCE);
    assert_eq!(
        record.parent_session_id.as_deref(),
        Some(parent_id.as_str())
    );
    assert_eq!(record.end_reason.as_deref(), Some("subagent completed"));
    let transcript = stored(&h, &child_id);
    assert_eq!(transcript.len(), 4, "{transcript:?}");
    assert_eq!(transcript[0].text(), "Count the TODO markers");
    validate_tool_pairs(&transcript).unwrap();
    validate_tool_pairs(&stored(&h, &parent_id)).unwrap();
    assert_eq!(h.store.latest_session(None).unwrap().unwrap().id, parent_id);
    assert_eq!(
        h.store.latest_session(Some("cli")).unwrap().unwrap().id,
        parent_id
    );
    let listed: Vec<String> = h
        .store
        .list_sessions(10, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec![parent_id.clone()]);

    // The child's tokens are part of the parent's session and of the turn's usage.
    let child_tokens = record.input_tokens + record.output_tokens;
    assert!(child_tokens > 0);
    let parent = h.store.get_session(&parent_id).unwrap().unwrap();
    let turn_usage = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TurnFinished { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert_eq!(parent.input_tokens, turn_usage.input_tokens);
    assert_eq!(parent.output_tokens, turn_usage.output_tokens);
    assert!(parent.input_tokens + parent.output_tokens > child_tokens);
    assert_eq!(agent.session_usage(), turn_usage);

    // The parent's observers saw the child's tool call, marked as the subagent's.
    assert!(
        events.iter().any(|e| matches!(e,
            AgentEvent::ToolStarted { call_id, name, args_preview, .. }
                if call_id == "subagent1:c1" && name == "skills_list"
                    && args_preview.starts_with("[subagent 1]"))),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e,
            AgentEvent::ToolFinished { call_id, ok: true, .. } if call_id == "subagent1:c1")),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e,
            AgentEvent::Status { message } if message == "[subagent 1] completed after 2 step(s)")),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_batch_of_three_returns_results_in_task_order() {
    let h = harness(50).await;
    let args = json!({
        "goal": "Survey the three services",
        "context": "All services log to /var/log/svc.",
        "tasks": [
            {"goal": "Check service A", "context": "needle-alpha"},
            {"goal": "Check service B", "context": "needle-bravo"},
            {"goal": "Check service C", "context": "needle-charlie", "toolsets": ["file"]}
        ]
    });
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        &args.to_string(),
    )]));
    // Children run concurrently: each is answered by its own context, whatever the order.
    h.mock
        .push_matching("needle-charlie", MockResponse::text("C is down"));
    h.mock
        .push_matching("needle-alpha", MockResponse::text("A is healthy"));
    h.mock
        .push_matching("needle-bravo", MockResponse::text("B is slow"));
    h.mock.push(MockResponse::text("A ok, B slow, C down."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "Survey our services").await;
    assert_eq!(outcome, TurnOutcome::Completed, "{events:?}");

    let requests = h.mock.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(checked_by_session(&requests).len(), 4);
    let result = delegate_result(&requests, "d1");
    let results = result["results"].as_array().unwrap();
    let summaries: Vec<&str> = results
        .iter()
        .map(|r| r["summary"].as_str().unwrap())
        .collect();
    assert_eq!(summaries, ["A is healthy", "B is slow", "C is down"]);
    let tasks: Vec<u64> = results
        .iter()
        .map(|r| r["task"].as_u64().unwrap())
        .collect();
    assert_eq!(tasks, [1, 2, 3]);
    assert!(results.iter().all(|r| r["status"] == "completed"));

    // Every child knows it is one part of the whole job; C got only the file tools.
    for r in &requests[1..4] {
        let system = system_text(r);
        assert!(system.contains("Survey the three services"), "{system}");
        assert!(
            system.contains("All services log to /var/log/svc."),
            "{system}"
        );
        if system.contains("needle-charlie") {
            let names = tool_names(r);
            assert!(names.contains(&"read_file".to_string()), "{names:?}");
            assert!(!names.contains(&"terminal".to_string()), "{names:?}");
        }
    }
    let children = h.store.child_sessions(agent.session_id()).unwrap();
    assert_eq!(children.len(), 3);
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    for child in &children {
        assert!(ids.contains(&child.id.as_str()));
    }
}

#[tokio::test]
async fn a_child_out_of_budget_returns_its_summary() {
    let h = harness(2).await;
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "Search every skill category"}"#,
    )]));
    h.mock.push(MockResponse::tool_calls(&[(
        "c1",
        "skills_list",
        r#"{"category": "one"}"#,
    )]));
    h.mock.push(MockResponse::tool_calls(&[(
        "c2",
        "skills_list",
        r#"{"category": "two"}"#,
    )]));
    h.mock.push(MockResponse::text(
        "Checked categories one and two; three and four are left.",
    ));
    h.mock.push(MockResponse::text("Half done."));
    let mut agent = h.agent().await;
    let (outcome, _) = h.turn(&mut agent, "search the skills").await;
    assert_eq!(outcome, TurnOutcome::Completed);

    let requests = h.mock.requests();
    assert_eq!(requests.len(), 5);
    checked_by_session(&requests);
    assert_eq!(
        requests[3]["tool_choice"], "none",
        "the summary call is tool-less"
    );
    let result = delegate_result(&requests, "d1");
    let entry = &result["results"][0];
    assert_eq!(entry["status"], "budget_exhausted", "{result}");
    assert_eq!(
        entry["summary"],
        "Checked categories one and two; three and four are left."
    );
    assert_eq!(entry["iterations"], 2);
    assert_eq!(h.counting.count(), 2);
}

#[tokio::test]
async fn the_parents_interrupt_stops_a_child_in_a_slow_tool() {
    let h = harness(50).await;
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "Probe the cluster", "toolsets": ["probe"]}"#,
    )]));
    h.mock
        .push(MockResponse::tool_calls(&[("c1", "slow_probe", "{}")]));
    let mut agent = h.agent().await;
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watcher = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            if matches!(&e, AgentEvent::ToolStarted { name, args_preview, .. }
                if name == "slow_probe" && args_preview.starts_with("[subagent 1]"))
            {
                trigger.cancel();
            }
            events.push(e);
        }
        events
    });
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        agent.run_turn("probe it", &tx, cancel),
    )
    .await
    .expect("the interrupted turn hung");
    drop(tx);
    let events = watcher.await.unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted, "{events:?}");
    assert_eq!(
        h.mock.requests().len(),
        2,
        "nothing is sent after the interrupt"
    );

    // The parent's transcript: the call and its `interrupted` result, pairs valid.
    let parent = stored(&h, agent.session_id());
    validate_tool_pairs(&parent).unwrap();
    let result_msg = parent
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("d1"))
        .expect("the delegate_task call has its result");
    let result: Value = serde_json::from_str(&result_msg.text()).unwrap();
    let entry = &result["results"][0];
    assert_eq!(entry["status"], "interrupted", "{result}");

    // The child's transcript: its slow call was answered as cancelled.
    let child_id = entry["session_id"].as_str().unwrap();
    let child = stored(&h, child_id);
    validate_tool_pairs(&child).unwrap();
    let cancelled = child
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c1"))
        .expect("the slow call has a result");
    assert!(
        cancelled.text().contains("cancelled"),
        "{}",
        cancelled.text()
    );
    let record = h.store.get_session(child_id).unwrap().unwrap();
    assert_eq!(record.end_reason.as_deref(), Some("subagent interrupted"));
}

#[tokio::test]
async fn toolsets_outside_the_parents_are_refused_with_the_choice() {
    let mut h = Harness::new().await;
    // The parent has only the file tools and delegate_task.
    h.deps.tools = hermes_tools::file::tools();
    h.deps
        .tools
        .push(Arc::new(DelegateTool::new(DelegationSettings::default())));
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "Run the tests", "toolsets": ["terminal"]}"#,
    )]));
    h.mock.push(MockResponse::tool_calls(&[(
        "d2",
        "delegate_task",
        r#"{"goal": "Remember this", "toolsets": ["memory"]}"#,
    )]));
    h.mock
        .push(MockResponse::tool_calls(&[("d3", "delegate_task", "{}")]));
    let eleven: Vec<Value> = (0..=MAX_TASKS)
        .map(|i| json!({"goal": format!("part {i}")}))
        .collect();
    let too_many = json!({"goal": "Split the work", "tasks": eleven}).to_string();
    h.mock.push(MockResponse::tool_calls(&[(
        "d4",
        "delegate_task",
        &too_many,
    )]));
    h.mock.push(MockResponse::text("I cannot run tests here."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "run the tests").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 5, "no subagent was started");
    let results: Vec<(String, String)> = tool_messages(&requests[4]);
    assert!(
        results[0]
            .1
            .contains("toolset `terminal` is not one of yours")
            && results[0].1.contains("pass on are: file"),
        "{}",
        results[0].1
    );
    assert!(
        results[1]
            .1
            .contains("`memory` is never given to a subagent"),
        "{}",
        results[1].1
    );
    // A missing `goal` and too many tasks break the schema itself: the one error of the
    // tool contract, naming the field (issue 26 item 4).
    assert!(
        results[2].1.contains("- /goal: required, but missing"),
        "{}",
        results[2].1
    );
    assert!(
        results[3]
            .1
            .contains("- /tasks: the value has more than 10 items"),
        "{}",
        results[3].1
    );
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::ToolFinished { .. }))
            .all(|e| matches!(e, AgentEvent::ToolFinished { ok: false, .. }))
    );
    assert!(
        h.store
            .child_sessions(agent.session_id())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn presets_give_the_intersection_and_blocked_tools_never_pass() {
    let mut parent: Vec<Arc<dyn Tool>> = hermes_tools::file::tools();
    parent.push(Arc::new(FakeMemory));
    parent.push(Arc::new(DelegateTool::new(DelegationSettings::default())));
    let names = |tools: Vec<Arc<dyn Tool>>| -> Vec<String> {
        tools.iter().map(|t| t.spec().name).collect()
    };
    let files: Vec<String> = hermes_tools::file::tools()
        .iter()
        .map(|t| t.spec().name)
        .collect();
    // Default: everything the parent may pass on.
    assert_eq!(
        names(hermes_agent::child_tools(&parent, None).unwrap()),
        files
    );
    // A preset the parent covers only partly: the intersection.
    let preset = vec!["hermes-cli".to_string()];
    assert_eq!(
        names(hermes_agent::child_tools(&parent, Some(&preset)).unwrap()),
        files
    );
    let safe = vec!["safe".to_string()];
    assert_eq!(
        names(hermes_agent::child_tools(&parent, Some(&safe)).unwrap()),
        ["read_file", "search_files"]
    );
    let Err(err) = hermes_agent::child_tools(&parent, Some(&["web".to_string()])) else {
        panic!("an unknown toolset was accepted");
    };
    assert!(err.contains("`web` is not one of yours"), "{err}");
}

#[tokio::test]
async fn outside_a_turn_the_tool_refuses() {
    let home = hermes_testkit::TempHome::new().unwrap();
    let tool = DelegateTool::new(DelegationSettings::default());
    let out = tool
        .call(
            json!({"goal": "anything"}),
            &ToolContext::for_tests(home.path(), home.home().clone()),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("inside an agent's turn"),
        "{}",
        out.content
    );
    assert!(tool.handles_cancel());
    let spec = tool.spec();
    assert_eq!(spec.parameters["required"], json!(["goal"]));
    assert!(spec.parameters["properties"]["tasks"]["items"]["properties"]["goal"].is_object());
}

#[tokio::test]
async fn tasks_waiting_for_a_slot_are_not_started_after_an_interrupt() {
    let mut h = Harness::new().await;
    h.deps.tools.push(Arc::new(SlowProbe));
    h.deps
        .tools
        .push(Arc::new(DelegateTool::new(DelegationSettings {
            max_concurrent_children: 1,
            ..DelegationSettings::default()
        })));
    let args = json!({
        "goal": "Probe two clusters",
        "tasks": [
            {"goal": "Probe cluster one", "toolsets": ["probe"]},
            {"goal": "Probe cluster two", "toolsets": ["probe"]}
        ]
    });
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        &args.to_string(),
    )]));
    h.mock
        .push(MockResponse::tool_calls(&[("c1", "slow_probe", "{}")]));
    let mut agent = h.agent().await;
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watcher = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            if matches!(&e, AgentEvent::ToolStarted { name, .. } if name == "slow_probe") {
                trigger.cancel();
            }
        }
    });
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        agent.run_turn("probe both", &tx, cancel),
    )
    .await
    .expect("the interrupted turn hung");
    drop(tx);
    watcher.await.unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    assert_eq!(h.mock.requests().len(), 2, "the second task made no call");
    let parent = stored(&h, agent.session_id());
    let result_msg = parent
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("d1"))
        .unwrap();
    let result: Value = serde_json::from_str(&result_msg.text()).unwrap();
    let statuses: Vec<&str> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["interrupted", "interrupted"]);
    assert!(result["results"][1]["session_id"].is_null(), "{result}");
    assert_eq!(h.store.child_sessions(agent.session_id()).unwrap().len(), 1);
}

#[tokio::test]
async fn a_child_whose_model_fails_is_reported_failed_with_the_reason() {
    let mut h = harness(50).await;
    h.opts.api_max_retries = 0;
    h.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "Ask the broken model"}"#,
    )]));
    // The child's call finds no queued response (HTTP 500); the parent's next call is
    // recognised by the result it carries.
    h.mock.push_matching(
        r#""tool_call_id":"d1""#,
        MockResponse::text("The subagent failed."),
    );
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "try it").await;
    assert_eq!(outcome, TurnOutcome::Completed, "{events:?}");
    assert_eq!(final_text(&events), "The subagent failed.");
    let requests = h.mock.requests();
    let result = delegate_result(&requests, "d1");
    let entry = &result["results"][0];
    assert_eq!(entry["status"], "failed", "{result}");
    assert_eq!(entry["summary"], "");
    assert!(
        entry["error"]
            .as_str()
            .unwrap()
            .contains("model call failed"),
        "{result}"
    );
    assert!(
        events.iter().any(|e| matches!(e,
            AgentEvent::ToolFinished { call_id, ok: false, .. } if call_id == "d1")),
        "{events:?}"
    );
    let child = h
        .store
        .get_session(entry["session_id"].as_str().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(child.end_reason.as_deref(), Some("subagent failed"));
}
