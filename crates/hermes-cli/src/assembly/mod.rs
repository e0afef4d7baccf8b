//! Agent assembly, shared by every entry point (the REPL, `chat -q`, cron runs, the gateway's
//! agent factory, `hermes doctor`): config → runtime → client → tools → MCP → prompt → agent.
//!
//! [`AgentKit::prepare`] does it once per invocation from the loaded home ([`app::App`]) and
//! the flags ([`args::ChatArgs`]); [`AgentKit::agent`] makes agents from the kit, and
//! [`build_agent`] adds the CLI's session choice (new, `-r`, `-c`). The parts:
//! - [`app`]: `HERMES_HOME`, `.env`, `config.yaml`, the store;
//! - [`args`]: the flags that choose model, provider, toolsets, session and budget;
//! - [`runtime`]: runtime resolution (ARCHITECTURE §5), context window, model client,
//!   prompt profile, the local model file;
//! - [`tools`]: the built-in tool registry and the enabled toolsets;
//! - [`mcp`]: the session's MCP servers, with [`mcp_sampler`] (sampling served by the
//!   session's model) and [`mcp_scan`] (injection scan of MCP tool descriptions);
//! - [`prompt`]: the system prompt source; [`delegation`]: `delegate_task` settings;
//! - [`cron`]: the scheduler whose runs are headless agents, and the `cronjob` tool;
//! - [`model_switch`]: `/model` and `hermes model set` (another runtime mid-session);
//! - [`sandbox`]: the OS sandbox settings of the agents, the launcher, its warnings.
//!
//! Depends only on `config_edit` among the CLI's modules: front ends (`commands`, `repl`,
//! `setup`) build on it, never the other way round.

pub mod app;
pub mod args;
pub mod cron;
pub mod delegation;
pub mod mcp;
pub mod mcp_sampler;
pub mod mcp_scan;
pub mod model_switch;
pub mod prompt;
pub mod runtime;
pub mod sandbox;
pub mod tools;

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hermes_agent::{Agent, AgentDeps, AgentOptions, LearningOptions};
use hermes_llm::{ModelClient, ResolveInputs, Runtime};
use hermes_store::SessionStore;
use hermes_tools::{Approver, ToolsetSelection};

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::runtime::{
    SKILLS_PLATFORM, build_client, prompt_is_compact, resolve_context_window, resolve_runtime,
};

/// The platform name of `hermes acp`: its sessions' source and its `platform_toolsets` key.
pub const ACP_PLATFORM: &str = "acp";

/// `compression:` settings over the compressor's defaults.
fn compression_config(
    settings: &hermes_protocol::config::CompressionSettings,
) -> hermes_context::compress::CompressionConfig {
    let mut config = hermes_context::compress::CompressionConfig::default();
    if let Some(n) = settings.protect_first_n {
        config.protect_first_n = n;
    }
    if let Some(n) = settings.protect_last_n {
        config.protect_last_n = n;
    }
    // An unusable value was reported among the config warnings; the default stays.
    if let Ok(Some(ratio)) = settings.threshold_ratio() {
        config.threshold_ratio = ratio;
    }
    config
}

/// Clients for `fallback_providers:` (FEATURES §2), in order. An entry that cannot be
/// resolved (unknown provider, missing key) is reported and skipped.
fn fallback_clients(app: &App) -> Vec<Arc<dyn ModelClient>> {
    let mut out = Vec::new();
    for entry in &app.config.fallback_providers {
        let inputs = ResolveInputs {
            provider: entry.provider.clone(),
            model: entry.default.clone(),
            base_url: entry.base_url.clone(),
            config: entry.clone(),
            env: app.env.clone(),
            local_model_available: None,
            file: Some(app.config.clone()),
            pool_keys: hermes_llm::runtime::pool_keys(&app.home.auth_file()),
        };
        let built = hermes_llm::resolve(&inputs)
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                hermes_llm::build_client_with(&rt, &app.client_options(entry))
                    .map_err(|e| e.to_string())
            });
        match built {
            Ok(client) => out.push(client),
            Err(e) => errln!(
                "warning: fallback provider {} skipped: {e}",
                entry.provider.as_deref().unwrap_or("(none)")
            ),
        }
    }
    out
}

/// What every agent of one invocation shares: the resolved model client, tools, store,
/// prompt source, options and MCP servers. Built once; the REPL, one-shot chat and the
/// gateway's agent factory assemble agents from it.
#[derive(Clone)]
pub struct AgentKit {
    /// The resolved runtime (provider, model, base URL).
    pub runtime: Runtime,
    /// The model client.
    pub client: Arc<dyn ModelClient>,
    /// Built-in tools offered to the model.
    pub tools: Vec<Arc<dyn hermes_tools::Tool>>,
    /// The session store.
    pub store: Arc<SessionStore>,
    /// The system prompt source.
    pub prompt: Arc<crate::assembly::prompt::CliPrompt>,
    /// Agent options from flags and config (source `cli`).
    pub opts: AgentOptions,
    /// MCP tools (shared by every agent of the kit; servers stop when the last one drops).
    pub mcp: Option<Arc<dyn hermes_tools::ToolSource>>,
    /// The MCP servers behind [`AgentKit::mcp`] (their states, for the lost/back lines).
    pub mcp_servers: Option<Arc<hermes_mcp::McpManager>>,
    /// Enabled toolsets.
    pub toolsets: Vec<String>,
    /// `fallback_providers:` clients, in order.
    pub fallbacks: Vec<Arc<dyn ModelClient>>,
}

impl AgentKit {
    /// Resolves the runtime, connects, selects tools, starts MCP servers for the gateway
    /// (and the cron jobs it runs): headless, MCP elicitation requests are declined; the
    /// toolsets are [`crate::assembly::tools::base_toolsets`], each platform's
    /// `platform_toolsets` narrowing them per chat.
    pub async fn prepare(app: &App, args: &ChatArgs) -> Result<AgentKit> {
        let (toolsets, _) = crate::assembly::tools::base_toolsets(app, args);
        AgentKit::prepare_with(app, args, toolsets, None).await
    }

    /// The kit of `hermes acp`: the toolsets of `platform_toolsets.acp` (else those every
    /// surface starts from, [`crate::assembly::tools::base_toolsets`]), MCP elicitations
    /// declined, and no `clarify` tool (ACP has no question prompt; Python Hermes'
    /// `hermes-acp` toolset leaves it out too). Agents made from it have source `acp`.
    pub async fn prepare_acp(app: &App, args: &ChatArgs) -> Result<AgentKit> {
        let configured = args
            .toolsets
            .is_none()
            .then(|| crate::assembly::tools::platform_toolsets(app, ACP_PLATFORM))
            .flatten();
        let toolsets = match configured {
            Some(list) => list,
            None => crate::assembly::tools::base_toolsets(app, args).0,
        };
        let mut kit = AgentKit::prepare_with(app, args, toolsets, None).await?;
        kit.tools.retain(|t| t.spec().name != "clarify");
        kit.opts.source = ACP_PLATFORM.to_string();
        Ok(kit)
    }

    /// [`Self::prepare`] for `toolsets`, with the front end's answerer of MCP elicitation
    /// requests (the REPL's user; `None` declines them); MCP sampling requests are served by
    /// the session's model.
    async fn prepare_with(
        app: &App,
        args: &ChatArgs,
        toolsets: Vec<String>,
        elicitor: Option<Arc<dyn hermes_mcp::elicitation::Elicitor>>,
    ) -> Result<AgentKit> {
        let mut runtime = resolve_runtime(app, args)?;
        resolve_context_window(app, &mut runtime).await;
        tracing::info!(trace = ?runtime.trace, "runtime resolved");
        let client = build_client(app, &runtime)?;
        let store = app.open_store()?;
        let registry = crate::assembly::tools::build_registry(app, args, Some(store.clone()))?;
        let selection = registry
            .select(&ToolsetSelection::new(
                toolsets.clone(),
                app.config.agent.disabled_toolsets.clone(),
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        for (name, reason) in selection.unavailable() {
            tracing::info!(tool = %name, %reason, "tool hidden: not available here");
        }
        let tools = selection.tools().to_vec();
        // A front end with a user at a terminal (it answers MCP elicitations) runs commands
        // unsandboxed with a warning on a kernel without Landlock; headless ones refuse.
        let sandbox = sandbox::settings(
            app,
            if elicitor.is_some() {
                hermes_protocol::config::UnsupportedPolicy::Warn
            } else {
                hermes_protocol::config::UnsupportedPolicy::Refuse
            },
        );
        let cwd = match &app.config.terminal.cwd {
            Some(p) => p.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        // MCP tools go after the built-ins (never shadowing them); the agent re-reads them
        // whenever a server's list changes.
        let requests = crate::assembly::mcp::ServerRequests {
            sampler: Some(Arc::new(crate::assembly::mcp_sampler::ModelSampler::new(
                client.clone(),
            ))),
            elicitor,
        };
        let mcp_servers = crate::assembly::mcp::start_for_session(app, &cwd, &tools, requests)
            .await
            .map(Arc::new);
        let mcp = mcp_servers.clone().map(|m| {
            Arc::new(crate::assembly::mcp_scan::ScannedSource::new(m))
                as Arc<dyn hermes_tools::ToolSource>
        });
        let compact = prompt_is_compact(app, args, runtime.api_mode);
        let mut tools = tools;
        crate::assembly::delegation::configure(app, compact, &mut tools);
        let prompt = crate::assembly::prompt::CliPrompt::new(
            app.home.clone(),
            cwd.clone(),
            compact,
            client.context_window(),
            toolsets.clone(),
        )
        .with_memory(app.config.memory.clone())
        .with_disabled_skills(app.config.skills.disabled_for(Some(SKILLS_PLATFORM)))
        .with_tool_use_enforcement(app.config.agent.tool_use_enforcement_setting());
        let opts = AgentOptions {
            max_turns: args.max_turns.unwrap_or(app.config.agent.max_turns),
            api_max_retries: app.config.agent.api_max_retries,
            yolo: args.yolo,
            cwd,
            terminal_timeout_s: app.config.terminal.timeout,
            source: "cli".to_string(),
            sandbox,
            max_tokens: app.config.model.to_config().max_tokens,
            context_window: app.config.model.to_config().context_length,
            compression_enabled: app.config.compression.enabled,
            compression: compression_config(&app.config.compression),
            send_images: sends_images(app, &runtime),
            learning: LearningOptions {
                memory_interval: app.config.memory.nudge_interval,
                skill_interval: app.config.skills.creation_nudge_interval,
                memory: app.config.memory.clone(),
                ..LearningOptions::default()
            },
            ..AgentOptions::default()
        };
        Ok(AgentKit {
            runtime,
            client,
            tools,
            store,
            prompt: Arc::new(prompt),
            opts,
            mcp,
            mcp_servers,
            toolsets,
            fallbacks: fallback_clients(app),
        })
    }

    /// An agent from this kit with `approver` and `opts`, resuming `resume` when given.
    pub async fn agent(
        &self,
        approver: Arc<dyn Approver>,
        opts: AgentOptions,
        resume: Option<&str>,
        home: &hermes_protocol::HermesHome,
    ) -> Result<Agent> {
        let deps = AgentDeps {
            client: self.client.clone(),
            tools: self.tools.clone(),
            store: self.store.clone(),
            approver,
            prompt: self.prompt.clone(),
            home: home.clone(),
        };
        let mut agent = Agent::start(deps, opts, resume).await?;
        if let Some(m) = &self.mcp {
            agent.add_tool_source(m.clone());
        }
        agent.set_fallbacks(self.fallbacks.clone());
        Ok(agent)
    }
}

/// Builds an agent for the CLI, with the kit it was assembled from (front ends read the
/// model, store and runtime from it): new session, `-r` resume, or `-c` continue. `elicitor`
/// answers MCP elicitation requests (`None`: declined, for runs without a terminal);
/// `clarifier` answers the `clarify` tool (`None`: it stays headless and tells the model to
/// proceed on its own judgement).
pub async fn build_agent(
    app: &App,
    args: &ChatArgs,
    approver: Arc<dyn Approver>,
    elicitor: Option<Arc<dyn hermes_mcp::elicitation::Elicitor>>,
    clarifier: Option<Arc<dyn hermes_tools::Clarifier>>,
) -> Result<(Agent, AgentKit)> {
    let (toolsets, _) = crate::assembly::tools::enabled_toolsets(app, args);
    let mut kit = AgentKit::prepare_with(app, args, toolsets, elicitor).await?;
    sandbox::warn_at_start(&kit.opts.sandbox, &kit.opts.cwd, &kit.tools);
    if let Some(clarifier) = clarifier {
        for tool in &mut kit.tools {
            if tool.spec().name == "clarify" {
                *tool = Arc::new(hermes_tools::ClarifyTool::new(clarifier.clone()));
            }
        }
    }
    let store = &kit.store;
    let resume = match (&args.resume, args.continue_last) {
        (Some(key), _) => Some(key.clone()),
        (None, true) => match store.latest_session(Some("cli"))? {
            Some(s) => Some(s.id),
            None => bail!("no earlier CLI session to continue"),
        },
        (None, false) => None,
    };
    // A REPL opened and closed, or a `/new` never used, leaves no empty session behind
    // (issue 20 item 6): the session's row is written with its first message.
    let mut opts = kit.opts.clone();
    opts.defer_session_creation = true;
    let agent = kit
        .agent(approver, opts, resume.as_deref(), &app.home)
        .await?;
    Ok((agent, kit))
}

/// Whether sessions on `runtime` get attached images as images (issue 26 item 2):
/// `agent.image_input_mode`, `model.supports_vision`, the model's family (hermes-llm
/// `vision`). A bad mode is logged and read as `auto`.
pub fn sends_images(app: &App, runtime: &hermes_llm::Runtime) -> bool {
    use hermes_llm::vision::{ImageInputMode, sends_images};
    let mode =
        ImageInputMode::parse(app.config.agent.image_input_mode.as_deref()).unwrap_or_else(|e| {
            tracing::warn!("{e}");
            ImageInputMode::Auto
        });
    let flag = app.config.model.to_config().supports_vision;
    sends_images(mode, flag, runtime.api_mode, &runtime.model)
}
