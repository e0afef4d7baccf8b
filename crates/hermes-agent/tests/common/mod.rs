//! Shared harness for agent scenario tests: a mock provider, a temp home and cwd, a store,
//! and an agent wired to the real OpenAI-compatible client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_agent::{Agent, AgentDeps, AgentOptions};
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::{AgentEvent, ToolSpec, TurnOutcome};
use hermes_store::SessionStore;
use hermes_testkit::{MockProvider, TempHome};
use hermes_tools::{Approval, FixedApprover, Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

pub const SYSTEM_PROMPT: &str = "You are a test agent.";

/// A tool with no required parameters that counts its calls (case C04).
#[derive(Default)]
pub struct CountingTool {
    pub calls: Arc<AtomicUsize>,
    pub last_args: Arc<Mutex<Option<Value>>>,
}

impl CountingTool {
    pub fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Tool for CountingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skills_list".into(),
            description: "Lists skills.".into(),
            parameters: json!({"type": "object", "properties": {"category": {"type": "string"}}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "skills"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.last_args.lock().unwrap() = Some(args);
        ToolOutput::ok("no skills installed")
    }
}

/// Shares one CountingTool between the harness and the registry.
pub struct SharedTool(pub Arc<CountingTool>);

#[async_trait::async_trait]
impl Tool for SharedTool {
    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }
    fn toolset(&self) -> &'static str {
        self.0.toolset()
    }
    fn parallelism(&self) -> Parallelism {
        self.0.parallelism()
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        self.0.call(args, ctx).await
    }
}

pub struct Harness {
    pub mock: MockProvider,
    pub home: TempHome,
    pub cwd: tempfile::TempDir,
    pub store: Arc<SessionStore>,
    pub deps: AgentDeps,
    pub opts: AgentOptions,
    pub counting: Arc<CountingTool>,
}

impl Harness {
    /// Built-in `hermes-cli` tools plus a `skills_list` counting tool.
    pub async fn new() -> Harness {
        let mock = MockProvider::start().await;
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let store = Arc::new(SessionStore::open(home.home().state_db()).unwrap());
        let client =
            OpenAiChatClient::new(OpenAiChatConfig::new(mock.base_url(), "mock-model")).unwrap();
        let registry = hermes_tools::Registry::builtin();
        let mut tools: Vec<Arc<dyn Tool>> = registry
            .select(&hermes_tools::ToolsetSelection::default())
            .unwrap()
            .tools()
            .to_vec();
        let counting = Arc::new(CountingTool::default());
        tools.push(Arc::new(SharedTool(counting.clone())));
        let prompt = |_m: &str, _p: &str, _t: &[String]| SYSTEM_PROMPT.to_string();
        let deps = AgentDeps {
            client: Arc::new(client),
            tools,
            store: store.clone(),
            approver: Arc::new(FixedApprover(Approval::Deny)),
            prompt: Arc::new(prompt),
            home: home.home().clone(),
        };
        let opts = AgentOptions {
            cwd: cwd.path().to_path_buf(),
            retry_base: Duration::from_millis(1),
            retry_max: Duration::from_millis(5),
            // These tests are not about the sandbox (tests/sandbox_*.rs are).
            sandbox: std::sync::Arc::new(hermes_tools::SandboxSettings::off()),
            ..AgentOptions::default()
        };
        Harness {
            mock,
            home,
            cwd,
            store,
            deps,
            opts,
            counting,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.cwd.path().join(rel)
    }

    pub async fn agent(&self) -> Agent {
        Agent::start(self.deps.clone(), self.opts.clone(), None)
            .await
            .unwrap()
    }

    /// Runs one turn to the end and returns the outcome with every event.
    pub async fn turn(&self, agent: &mut Agent, input: &str) -> (TurnOutcome, Vec<AgentEvent>) {
        let (tx, mut rx) = unbounded_channel();
        let outcome = tokio::time::timeout(
            Duration::from_secs(60),
            agent.run_turn(input, &tx, CancellationToken::new()),
        )
        .await
        .expect("turn hung");
        drop(tx);
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        (outcome, events)
    }

    /// Every request the mock received, checked against the request invariants.
    pub fn checked_requests(&self) -> Vec<Value> {
        let requests = self.mock.requests();
        hermes_testkit::assert_request_invariants(&requests);
        requests
    }
}

pub fn final_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TurnFinished { final_text, .. } => Some(final_text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

pub fn tool_results(events: &[AgentEvent]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { call_id, ok, .. } => Some((call_id.clone(), *ok)),
            _ => None,
        })
        .collect()
}

/// The `tool` messages of a captured request body, as (tool_call_id, content).
pub fn tool_messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The roles of the messages of a captured request body.
pub fn roles(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("").to_string())
        .collect()
}
