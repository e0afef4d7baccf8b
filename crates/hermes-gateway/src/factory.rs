//! How the gateway gets agents: the front end (the `hermes` binary) knows the configuration,
//! the provider and the tools, and hands the gateway an [`AgentFactory`].

use std::sync::Arc;

use hermes_agent::Agent;
use hermes_llm::{ModelChoice, ModelClient};
use hermes_tools::Approver;

/// What the gateway asks of the factory for one session.
#[derive(Clone)]
pub struct AgentSpec {
    /// The session key the agent serves (`agent:<profile>:<platform>:…`, FEATURES §1 Gateway).
    pub session_key: String,
    /// Stored session to continue; `None` starts a new session.
    pub resume: Option<String>,
    /// Session source recorded in the store (the platform name, or `api_server`).
    pub source: String,
    /// Call-time platform context (who and where); never stored in the system prompt.
    pub ephemeral_prompt: Option<String>,
    /// Decides dangerous commands (in chat: `/approve`, `/deny`, with a timeout).
    pub approver: Arc<dyn Approver>,
    /// The chat this session serves (platform, chat, thread, and the sender of the message
    /// that started the agent); `None` for the API server. Tools use it to answer later in
    /// the same chat (the `cronjob` tool's `origin` delivery, issue 8).
    pub origin: Option<crate::platform::MessageSource>,
    /// The provider and model picked with `/model` for the session being resumed (kept in
    /// the store, so it survives an LRU eviction and a restart); `None`: the configured
    /// model. A factory that cannot resolve it any more builds with the configured model.
    pub model: Option<ModelChoice>,
}

/// Builds agents for gateway sessions.
#[async_trait::async_trait]
pub trait AgentFactory: Send + Sync {
    /// An agent for `spec`, resuming `spec.resume` when given. `Err` says why in words fit
    /// for the chat (no secrets).
    async fn build(&self, spec: AgentSpec) -> Result<Agent, String>;

    /// A digest of the configuration agents are built from (model, provider, toolsets,
    /// prompt settings). Cached agents whose signature differs are rebuilt
    /// (ARCHITECTURE §6: the LRU is keyed by session key + config signature).
    fn config_signature(&self) -> String;

    /// The model client for a chat's `/model` choice (issue 7 item 6): `choice.provider`
    /// `None` keeps the configured provider and its base URL. The same choice must give the
    /// same client later (agents rebuilt after an eviction or a restart get it through
    /// [`AgentSpec::model`]). `Err` says in words fit for the chat why the choice cannot be
    /// used (unknown provider, missing key); nothing changes then.
    ///
    /// The default refuses: switching models needs a front end that resolves providers.
    async fn model_client(&self, choice: &ModelChoice) -> Result<Arc<dyn ModelClient>, String> {
        let _ = choice;
        Err("switching models is not available in this gateway".to_string())
    }
}
