//! Harness for the API server tests: a mock model, a store in a temp home, an agent factory
//! over them, and the server on a loopback port.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_agent::{Agent, AgentDeps, AgentOptions};
use hermes_gateway::api::{ApiSettings, ApiState, serve_on};
use hermes_gateway::{AgentFactory, AgentSpec};
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::ToolSpec;
use hermes_store::SessionStore;
use hermes_testkit::{MockProvider, MockResponse, TempHome};
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub const SYSTEM_PROMPT: &str = "You are the API test agent.";

/// A tool that tells the time (always noon).
pub struct ClockTool;

#[async_trait::async_trait]
impl Tool for ClockTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "clock".into(),
            description: "Tells the time.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "clock"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::ok("12:00")
    }
}

/// What the factory was asked for.
#[derive(Debug, Clone)]
pub struct SpecSeen {
    pub resume: Option<String>,
    pub source: String,
    pub ephemeral: Option<String>,
}

/// Builds agents on the mock model and records every spec it was asked for.
pub struct MockFactory {
    pub base_url: String,
    pub store: Arc<SessionStore>,
    pub home: hermes_protocol::HermesHome,
    pub cwd: std::path::PathBuf,
    pub specs: Mutex<Vec<SpecSeen>>,
    /// `api_max_retries` of the agents built from now on (0 unless a test raises it).
    pub max_retries: std::sync::atomic::AtomicU32,
    /// Agents built from now on also get the `terminal` tool (sandbox off).
    pub terminal: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl AgentFactory for MockFactory {
    async fn build(&self, spec: AgentSpec) -> Result<Agent, String> {
        self.specs.lock().unwrap().push(SpecSeen {
            resume: spec.resume.clone(),
            source: spec.source.clone(),
            ephemeral: spec.ephemeral_prompt.clone(),
        });
        let client = OpenAiChatClient::new(OpenAiChatConfig::new(&self.base_url, "mock-model"))
            .map_err(|e| e.to_string())?;
        let prompt = |_m: &str, _p: &str, _t: &[String]| SYSTEM_PROMPT.to_string();
        let deps = AgentDeps {
            client: Arc::new(client),
            tools: {
                let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ClockTool)];
                if self.terminal.load(std::sync::atomic::Ordering::SeqCst) {
                    tools.extend(hermes_tools::terminal::tools().into_iter().take(1));
                }
                tools
            },
            store: self.store.clone(),
            approver: spec.approver,
            prompt: Arc::new(prompt),
            home: self.home.clone(),
        };
        let opts = AgentOptions {
            cwd: self.cwd.clone(),
            source: spec.source,
            ephemeral_prompt: spec.ephemeral_prompt,
            retry_base: Duration::from_millis(1),
            retry_max: Duration::from_millis(5),
            api_max_retries: self.max_retries.load(std::sync::atomic::Ordering::SeqCst),
            // These tests are not about the sandbox (tests/sandbox_*.rs are).
            sandbox: std::sync::Arc::new(hermes_tools::SandboxSettings::off()),
            ..AgentOptions::default()
        };
        Agent::start(deps, opts, spec.resume.as_deref())
            .await
            .map_err(|e| e.to_string())
    }

    fn config_signature(&self) -> String {
        "mock".to_string()
    }
}

pub struct Server {
    pub base: String,
    pub mock: MockProvider,
    pub store: Arc<SessionStore>,
    pub factory: Arc<MockFactory>,
    pub http: reqwest::Client,
    pub cancel: CancellationToken,
    pub key: Option<String>,
    pub task: tokio::task::JoinHandle<Result<(), hermes_gateway::api::ApiError>>,
    _home: TempHome,
    _cwd: tempfile::TempDir,
}

impl Server {
    pub async fn start(key: Option<&str>) -> Server {
        Server::start_with(key, 8).await
    }

    pub async fn start_with(key: Option<&str>, max_turns: usize) -> Server {
        Server::start_tuned(key, |s| s.max_concurrent_turns = max_turns).await
    }

    /// A server whose settings `tune` adjusts (key already set).
    pub async fn start_tuned(key: Option<&str>, tune: impl FnOnce(&mut ApiSettings)) -> Server {
        hermes_llm::init_tls();
        let mock = MockProvider::start().await;
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let store = Arc::new(SessionStore::open(home.home().state_db()).unwrap());
        let factory = Arc::new(MockFactory {
            base_url: mock.base_url(),
            store: store.clone(),
            home: home.home().clone(),
            cwd: cwd.path().to_path_buf(),
            specs: Mutex::new(Vec::new()),
            max_retries: std::sync::atomic::AtomicU32::new(0),
            terminal: std::sync::atomic::AtomicBool::new(false),
        });
        let mut settings = ApiSettings {
            key: key.map(str::to_string),
            ..ApiSettings::default()
        };
        tune(&mut settings);
        let state = ApiState::new(factory.clone(), store.clone(), settings);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve_on(listener, state, cancel.clone()));
        Server {
            base,
            mock,
            store,
            factory,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            cancel,
            key: key.map(str::to_string),
            task,
            _home: home,
            _cwd: cwd,
        }
    }

    /// The server's HERMES_HOME.
    pub fn home(&self) -> &hermes_protocol::HermesHome {
        self._home.home()
    }

    /// The agents' working directory.
    pub fn cwd(&self) -> &std::path::Path {
        self._cwd.path()
    }

    /// The state.db file the server's store uses (open a second handle = another process).
    pub fn store_path(&self) -> std::path::PathBuf {
        self._home.home().state_db()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with the right key (when one is set).
    pub fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, self.url(path));
        match &self.key {
            Some(k) => r.bearer_auth(k),
            None => r,
        }
    }

    pub fn chat(&self, body: Value, session: Option<&str>) -> reqwest::RequestBuilder {
        let r = self
            .req(reqwest::Method::POST, "/v1/chat/completions")
            .json(&body);
        match session {
            Some(s) => r.header("X-Hermes-Session-Id", s),
            None => r,
        }
    }

    /// Waits (bounded) until the mock model has received `n` requests.
    pub async fn wait_model_requests(&self, n: usize) {
        for _ in 0..1000 {
            if self.mock.captured().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the model never received request #{n}");
    }

    /// Stops the server and starts a new one on the same store, model and factory (a
    /// gateway restart).
    pub async fn restart(mut self) -> Server {
        self.cancel.cancel();
        let task = std::mem::replace(&mut self.task, tokio::spawn(async { Ok(()) }));
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("server did not shut down")
            .unwrap()
            .unwrap();
        let settings = ApiSettings {
            key: self.key.clone(),
            ..ApiSettings::default()
        };
        let state = ApiState::new(self.factory.clone(), self.store.clone(), settings);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        self.base = format!("http://{}", listener.local_addr().unwrap());
        self.cancel = CancellationToken::new();
        self.task = tokio::spawn(serve_on(listener, state, self.cancel.clone()));
        self
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        let result = tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("server did not shut down");
        result.unwrap().unwrap();
    }
}

/// A stream that sends `text` as one delta and then stalls forever (no finish, no [DONE]).
pub fn stalling_answer(text: &str) -> MockResponse {
    let chunk = json!({"id": "stall", "object": "chat.completion.chunk", "created": 1,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
            "finish_reason": null}]});
    MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        format!("data: {chunk}\n\n"),
    )
    .hang()
}

/// The `data:` payloads of an SSE body, in order (comments skipped).
pub fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .flat_map(|event| event.lines())
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.trim_start().to_string())
        .collect()
}

/// The role/content pairs of a captured model request's `messages`.
pub fn roles_and_texts(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}
