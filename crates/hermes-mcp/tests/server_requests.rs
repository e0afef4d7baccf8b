//! What the client does when a server asks something of it, and how it keeps servers alive
//! and children accounted for, against the scripted stdio server
//! (tests/fixtures/scripted_server.py): sampling with caps and off by config, elicitation
//! answered by a front end or declined headless, background reconnect after a crash, no
//! orphaned child after shutdown or drop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::*;
use hermes_mcp::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor, defaults_of};
use hermes_mcp::sampling::{Sampler, SamplingCaps};
use hermes_mcp::server::ServerState;
use hermes_mcp::{McpManager, StartOptions};
use serde_json::{Value, json};

fn skip_without_python() -> bool {
    if !have("python3") {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return true;
    }
    false
}

/// Records every request and answers with a fixed text.
#[derive(Default)]
struct RecordingSampler {
    seen: Mutex<Vec<Value>>,
}

#[async_trait::async_trait]
impl Sampler for RecordingSampler {
    async fn sample(&self, request: Value) -> Result<Value, String> {
        self.seen.lock().unwrap().push(request);
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "forty-two"},
                  "model": "session-model", "stopReason": "endTurn"}),
        )
    }
}

/// Plays the user at a terminal: records the question and answers the name "Ada" on top of
/// the schema's defaults.
#[derive(Default)]
struct TypingUser {
    asked: Mutex<Vec<ElicitationRequest>>,
}

#[async_trait::async_trait]
impl Elicitor for TypingUser {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let mut answer = defaults_of(&request.schema);
        answer.insert("name".into(), json!("Ada"));
        self.asked.lock().unwrap().push(request);
        ElicitationAnswer::Accept(answer)
    }
}

async fn call(m: &McpManager, tool: &str, args: Value, cwd: &Path) -> hermes_tools::ToolOutput {
    let t = m
        .tools()
        .into_iter()
        .find(|t| t.spec().name == tool)
        .unwrap_or_else(|| panic!("{tool} missing"));
    t.call(args, &ctx(cwd)).await
}

fn with(opts: impl FnOnce(&mut StartOptions), cwd: &Path) -> StartOptions {
    let mut o = options(cwd);
    opts(&mut o);
    o
}

#[tokio::test]
async fn sampling_is_served_by_the_session_sampler_with_the_token_cap() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sampler = Arc::new(RecordingSampler::default());
    let mut spec = scripted("demo", &[]);
    spec.sampling = Some(SamplingCaps {
        max_tokens_cap: 256,
        max_rpm: 1,
    });
    let s2 = sampler.clone();
    let m = McpManager::start(vec![spec], with(|o| o.facts.sampler = Some(s2), dir.path())).await;
    let caps = call(&m, "mcp__demo__client_caps", json!({}), dir.path()).await;
    assert!(caps.content.contains("\"sampling\""), "{}", caps.content);
    let out = call(&m, "mcp__demo__sample", json!({"text": "6*7?"}), dir.path()).await;
    assert_eq!(out.content, "sampled: forty-two");
    let seen = sampler.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["maxTokens"], 256, "100000 asked, capped to 256");
    assert_eq!(seen[0]["messages"][0]["content"]["text"], "6*7?");
    // max_rpm 1: the second request within the minute is refused, the model is not called.
    let second = call(
        &m,
        "mcp__demo__sample",
        json!({"text": "again"}),
        dir.path(),
    )
    .await;
    assert!(
        second.content.starts_with("sampling error:") && second.content.contains("rate limit"),
        "{}",
        second.content
    );
    assert_eq!(sampler.seen.lock().unwrap().len(), 1);
    m.shutdown().await;
}

#[tokio::test]
async fn sampling_off_by_config_is_not_declared_and_is_refused() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sampler = Arc::new(RecordingSampler::default());
    let mut spec = scripted("demo", &[]);
    spec.sampling = None;
    let s2 = sampler.clone();
    let m = McpManager::start(vec![spec], with(|o| o.facts.sampler = Some(s2), dir.path())).await;
    let caps = call(&m, "mcp__demo__client_caps", json!({}), dir.path()).await;
    assert!(!caps.content.contains("\"sampling\""), "{}", caps.content);
    let out = call(&m, "mcp__demo__sample", json!({"text": "x"}), dir.path()).await;
    assert!(
        out.content.starts_with("sampling error:") && out.content.contains("turned off"),
        "{}",
        out.content
    );
    assert!(sampler.seen.lock().unwrap().is_empty());
    m.shutdown().await;
}

#[tokio::test]
async fn elicitation_is_answered_by_the_front_end() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let user = Arc::new(TypingUser::default());
    let u2 = user.clone();
    let m = McpManager::start(
        vec![scripted("demo", &[])],
        with(|o| o.facts.elicitor = Some(u2), dir.path()),
    )
    .await;
    let caps = call(&m, "mcp__demo__client_caps", json!({}), dir.path()).await;
    assert!(caps.content.contains("\"elicitation\""), "{}", caps.content);
    let out = call(&m, "mcp__demo__ask_user", json!({}), dir.path()).await;
    let result: Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(
        result,
        json!({"action": "accept", "content": {"name": "Ada", "age": 30}})
    );
    let asked = user.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "demo");
    assert_eq!(asked[0].message, "Who are you?");
    assert_eq!(asked[0].schema["required"], json!(["name"]));
    m.shutdown().await;
}

#[tokio::test]
async fn elicitation_is_declined_headless() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for elicitor in [
        None,
        Some(Arc::new(hermes_mcp::elicitation::DeclineAll) as Arc<dyn Elicitor>),
    ] {
        let m = McpManager::start(
            vec![scripted("demo", &[])],
            with(|o| o.facts.elicitor = elicitor, dir.path()),
        )
        .await;
        let out = call(&m, "mcp__demo__ask_user", json!({}), dir.path()).await;
        let result: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(result, json!({"action": "decline"}));
        m.shutdown().await;
    }
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Running and not a zombie.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_crashed_server_is_reconnected_in_the_background() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let p = pidfile.display().to_string();
    let m = start(vec![scripted("demo", &["--pidfile", &p])], dir.path()).await;
    let s = m.server("demo").unwrap();
    assert_eq!(s.state(), ServerState::Ready);
    let crashed = call(&m, "mcp__demo__crash", json!({}), dir.path()).await;
    assert!(crashed.is_error);
    // No further call: the supervisor notices and starts a new child on its own.
    assert!(
        eventually(|| pids(&pidfile).len() == 2 && s.state() == ServerState::Ready).await,
        "pids {:?}, state {:?}",
        pids(&pidfile),
        s.state()
    );
    let echo = call(&m, "mcp__demo__echo", json!({"text": "back"}), dir.path()).await;
    assert_eq!(echo.content, "echo:back");
    m.shutdown().await;
}

#[tokio::test]
async fn a_child_that_ignores_stdin_eof_is_killed_on_shutdown_and_on_drop() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let p = pidfile.display().to_string();
    let m = start(
        vec![scripted("demo", &["--linger", "--pidfile", &p])],
        dir.path(),
    )
    .await;
    let first = pids(&pidfile)[0];
    assert!(running(first));
    m.shutdown().await;
    assert!(eventually(|| !running(first)).await, "{first} still runs");

    let m = start(
        vec![scripted("demo", &["--linger", "--pidfile", &p])],
        dir.path(),
    )
    .await;
    let second = pids(&pidfile)[1];
    assert!(running(second));
    drop(m);
    assert!(
        eventually(|| !running(second)).await,
        "{second} outlived its manager"
    );
}
