//! Shared harness for gateway tests: the fake platform of `hermes_gateway::testing`, a gate tool that holds a
//! turn open until the test releases it, and an agent factory wired to the mock provider.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::type_complexity
)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_agent::{Agent, AgentDeps, AgentOptions};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::{AgentFactory, AgentSpec, ChatType, Gateway, InboundMessage, PlatformAdapter};
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::ToolSpec;
use hermes_store::SessionStore;
use hermes_testkit::{MockProvider, TempHome};
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

pub const SYSTEM_PROMPT: &str = "You are a test agent.";

pub use hermes_gateway::testing::{FakeAdapter, message};

/// A tool that blocks until the test opens the gate (or the turn is cancelled).
#[derive(Clone)]
pub struct Gate {
    pub entered: Arc<Semaphore>,
    pub release: Arc<Semaphore>,
}

impl Gate {
    pub fn new() -> Gate {
        Gate {
            entered: Arc::new(Semaphore::new(0)),
            release: Arc::new(Semaphore::new(0)),
        }
    }

    /// Waits until a turn is inside the gate tool.
    pub async fn wait_entered(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.entered.acquire())
            .await
            .expect("no turn reached the gate")
            .unwrap()
            .forget();
    }

    pub fn open(&self) {
        self.release.add_permits(1);
    }
}

#[async_trait::async_trait]
impl Tool for Gate {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "wait_gate".into(),
            description: "Waits for the gate.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "test"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> ToolOutput {
        self.entered.add_permits(1);
        tokio::select! {
            p = self.release.acquire() => {
                if let Ok(p) = p { p.forget(); }
                ToolOutput::ok("gate opened")
            }
            () = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
        }
    }
}

/// Builds agents against the mock provider with the gate and the built-in tools.
pub struct TestFactory {
    pub base_url: String,
    pub store: Arc<SessionStore>,
    pub home: hermes_protocol::HermesHome,
    pub cwd: std::path::PathBuf,
    pub gate: Gate,
    pub builds: AtomicUsize,
    pub specs: Mutex<Vec<(String, Option<String>, Option<String>)>>,
    pub signature: Mutex<String>,
    /// Memory review interval of the agents built next (0: learning loop off, no memory tool).
    pub memory_interval: AtomicU64,
    /// Whether the agents built next send attached pictures as images.
    pub send_images: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl AgentFactory for TestFactory {
    async fn build(&self, spec: AgentSpec) -> Result<Agent, String> {
        self.builds.fetch_add(1, Ordering::SeqCst);
        self.specs.lock().unwrap().push((
            spec.session_key.clone(),
            spec.resume.clone(),
            spec.ephemeral_prompt.clone(),
        ));
        let client = match &spec.model {
            Some(choice) => self.model_client(choice).await?,
            None => Arc::new(
                OpenAiChatClient::new(OpenAiChatConfig::new(&self.base_url, "mock-model"))
                    .map_err(|e| e.to_string())?,
            ),
        };
        let mut tools: Vec<Arc<dyn Tool>> = hermes_tools::Registry::builtin()
            .select(&hermes_tools::ToolsetSelection::new(
                ["terminal"],
                Vec::<String>::new(),
            ))
            .map_err(|e| e.to_string())?
            .tools()
            .to_vec();
        tools.push(Arc::new(self.gate.clone()));
        let memory_interval = self.memory_interval.load(Ordering::SeqCst) as u32;
        if memory_interval > 0 {
            tools.extend(
                hermes_context::learning_tools(&self.home, Some(self.store.clone()))
                    .into_iter()
                    .filter(|t| t.spec().name == "memory"),
            );
        }
        let prompt = |_m: &str, _p: &str, _t: &[String]| SYSTEM_PROMPT.to_string();
        let deps = AgentDeps {
            client,
            tools,
            store: self.store.clone(),
            approver: spec.approver,
            prompt: Arc::new(prompt),
            home: self.home.clone(),
        };
        let opts = AgentOptions {
            cwd: self.cwd.clone(),
            retry_base: Duration::from_millis(1),
            retry_max: Duration::from_millis(5),
            source: spec.source,
            ephemeral_prompt: spec.ephemeral_prompt,
            session_key: Some(spec.session_key),
            learning: hermes_agent::LearningOptions {
                memory_interval,
                ..Default::default()
            },
            // These tests are not about the sandbox.
            sandbox: std::sync::Arc::new(hermes_tools::SandboxSettings::off()),
            send_images: self.send_images.load(Ordering::SeqCst),
            ..AgentOptions::default()
        };
        Agent::start(deps, opts, spec.resume.as_deref())
            .await
            .map_err(|e| e.to_string())
    }

    fn config_signature(&self) -> String {
        self.signature.lock().unwrap().clone()
    }

    /// Resolves like the CLI's factory: `custom` at the mock is configured, other providers
    /// need their keys (none are set).
    async fn model_client(
        &self,
        choice: &hermes_llm::ModelChoice,
    ) -> Result<Arc<dyn hermes_llm::ModelClient>, String> {
        let ctx = hermes_llm::ChoiceContext {
            configured: hermes_protocol::config::ModelConfig {
                provider: Some("custom".into()),
                base_url: Some(self.base_url.clone()),
                default: Some("mock-model".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let current = hermes_llm::resolve(&hermes_llm::ResolveInputs {
            config: ctx.configured.clone(),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
        let rt = hermes_llm::resolve_choice(&ctx, &current, choice).map_err(|e| e.to_string())?;
        let mut config = OpenAiChatConfig::new(&rt.base_url, &rt.model);
        config.provider_id = rt.provider.clone();
        Ok(Arc::new(
            OpenAiChatClient::new(config).map_err(|e| e.to_string())?,
        ))
    }
}

pub struct Harness {
    pub mock: MockProvider,
    pub home: TempHome,
    pub cwd: tempfile::TempDir,
    pub store: Arc<SessionStore>,
    pub factory: Arc<TestFactory>,
}

impl Harness {
    pub async fn new() -> Harness {
        let mock = MockProvider::start().await;
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let store = Arc::new(SessionStore::open(home.home().state_db()).unwrap());
        let factory = Arc::new(TestFactory {
            base_url: mock.base_url(),
            store: store.clone(),
            home: home.home().clone(),
            cwd: cwd.path().to_path_buf(),
            gate: Gate::new(),
            builds: AtomicUsize::new(0),
            specs: Mutex::new(Vec::new()),
            signature: Mutex::new("sig-1".into()),
            memory_interval: AtomicU64::new(0),
            send_images: Default::default(),
        });
        Harness {
            mock,
            home,
            cwd,
            store,
            factory,
        }
    }

    pub fn gateway(&self, config: GatewayConfig, adapter: Arc<FakeAdapter>) -> Gateway {
        Gateway::new(
            config,
            vec![adapter as Arc<dyn PlatformAdapter>],
            self.factory.clone(),
            self.store.clone(),
            self.home.home().clone(),
        )
    }

    pub fn gate(&self) -> &Gate {
        &self.factory.gate
    }

    pub fn builds(&self) -> usize {
        self.factory.builds.load(Ordering::SeqCst)
    }

    /// User texts of the active stored history of the session `key` routes to.
    pub fn user_texts(&self, key: &str) -> Vec<String> {
        let Some(s) = self.store.latest_session_for_key(key).unwrap() else {
            return Vec::new();
        };
        self.store
            .load_messages(&s.id)
            .unwrap()
            .into_iter()
            .filter(|m| m.message.role == hermes_protocol::Role::User)
            .map(|m| m.message.text())
            .collect()
    }
}

/// Config allowing everyone on `platform`.
pub fn open_config(platform: &str) -> GatewayConfig {
    let mut config = GatewayConfig::default();
    config.access.insert(
        platform.to_string(),
        hermes_gateway::config::PlatformAccess {
            allowed_users: vec![],
            allow_all: true,
        },
    );
    config
}

pub fn dm(user: &str, text: &str) -> InboundMessage {
    message("telegram", ChatType::Dm, user, user, text)
}

/// Polls `cond` until it holds (30 s bound).
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `wait_idle` with a hang bound.
pub async fn idle(gw: &Gateway) {
    tokio::time::timeout(Duration::from_secs(30), gw.wait_idle())
        .await
        .expect("gateway did not become idle");
}

/// The roles and texts of the messages of a captured request.
pub fn request_users(req: &Value) -> Vec<String> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}
