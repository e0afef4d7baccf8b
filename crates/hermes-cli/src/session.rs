//! Builds a ready [`Agent`] from flags, config and environment: runtime resolution
//! (ARCHITECTURE §5), tools, the system prompt source, the store, and the session to resume.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hermes_agent::{Agent, AgentDeps, AgentOptions, LearningOptions};
use hermes_llm::ModelClient;
use hermes_llm::{ApiMode, ResolveInputs, Runtime};
use hermes_store::SessionStore;
use hermes_tools::{Approver, ToolsetSelection};

use crate::app::App;
use crate::args::{ChatArgs, PromptProfileArg};

/// What the REPL shows about the running session.
pub struct SessionInfo {
    /// Model name.
    pub model: String,
    /// Provider id.
    pub provider: String,
    /// REPL input history file.
    pub history_file: PathBuf,
    /// The store (for `/usage`, `/sessions`).
    pub store: Arc<SessionStore>,
    /// The hermes home (for `/cron`).
    pub home: hermes_protocol::HermesHome,
    /// `config.yaml` `timezone` (for `/cron`).
    pub timezone: Option<String>,
    /// Memory and skills for `/memory`, `/skills`, `/<skill>` and `-s`.
    pub learning: crate::memory_cmd::LearningInfo,
    /// `/model`: the runtime in use and how to resolve another.
    pub models: crate::model_switch::ModelSwitcher,
    /// `config.yaml` `display:` (skin, tool progress, reasoning, status line).
    pub display: hermes_protocol::config::DisplayConfig,
    /// The model's context window in tokens, when known (for the status line).
    pub context_window: Option<u64>,
    /// What Tab completion offers (commands, skills, model names, paths).
    pub completion: crate::complete::Sources,
}

impl SessionInfo {
    /// `/usage`: token totals of a session as stored.
    pub fn usage_now(&self, session_id: &str) -> String {
        match self.store.get_session(session_id) {
            Ok(Some(s)) => format!(
                "session {}: {} input, {} output, {} cache read, {} cache write, {} reasoning tokens; {} messages; cost {}",
                s.id,
                s.input_tokens,
                s.output_tokens,
                s.cache_read_tokens,
                s.cache_write_tokens,
                s.reasoning_tokens,
                s.message_count,
                hermes_llm::pricing::format_cost(s.cost_usd)
            ),
            Ok(None) => format!("session {session_id}: no usage recorded yet"),
            Err(e) => format!("could not read usage: {e}"),
        }
    }

    /// `/model [WORDS]`: without words prints the model in use; with words switches the
    /// agent behind `handle` to the resolved model for the following turns, or prints why not.
    pub async fn model_command(&mut self, words: &str, handle: &hermes_agent::AgentHandle) {
        if words.trim().is_empty() {
            println!("{}", self.models.describe());
            return;
        }
        match self.models.switch(words).await {
            Ok(client) => {
                self.model = client.model().to_string();
                self.provider = client.provider().to_string();
                self.context_window = client.context_window();
                handle.set_client(client);
                println!(
                    "switched to {} for the next turns of this session",
                    self.models.describe()
                );
            }
            Err(e) => eprintln!("/model: {e:#}"),
        }
    }

    /// `/cron`: the scheduled jobs.
    pub fn cron_jobs(&self) -> String {
        crate::cron_cmd::jobs_text(&self.home, self.timezone.as_deref())
    }

    /// `/sessions`: the ten newest sessions.
    pub fn recent_sessions(&self) -> String {
        crate::sessions_cmd::recent_sessions_text(&self.store, 10)
            .unwrap_or_else(|e| format!("could not list sessions: {e}"))
    }
}

/// The platform name under which `skills.platform_disabled` lists skills for sessions built
/// here (Python Hermes calls the terminal `cli`).
pub const SKILLS_PLATFORM: &str = "cli";

/// Where the local model file would be: `local.model_path` (relative to `models/`), else the
/// default model file in `HERMES_HOME/models/`. Returns it only when the file exists.
pub fn local_model_path(app: &App) -> Option<PathBuf> {
    let models = app.home.models_dir();
    let candidate = match &app.config.local.model_path {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => models.join(p),
        None => models.join(hermes_llm::DEFAULT_LOCAL_MODEL_FILE),
    };
    candidate.is_file().then_some(candidate)
}

/// Resolves which provider/model/key to use (flags → config → env keys → local model).
pub fn resolve_runtime(app: &App, args: &ChatArgs) -> Result<Runtime> {
    let inputs = ResolveInputs {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        config: app.config.model.to_config(),
        env: app.env.clone(),
        local_model_available: local_model_path(app),
        file: Some(app.config.clone()),
    };
    Ok(hermes_llm::resolve(&inputs)?)
}

/// Fills `rt.context_window` by the context-length chain (config → provider metadata, cached
/// a day in `HERMES_HOME/cache/context_lengths.json` → built-in table → 128k; FEATURES §2).
/// The embedded model reports its own window.
pub async fn resolve_context_window(app: &App, rt: &mut Runtime) {
    if rt.api_mode == ApiMode::Local {
        return;
    }
    let cache = app.home.cache_dir().join("context_lengths.json");
    let now = chrono::Utc::now().timestamp().max(0) as u64;
    let found = hermes_llm::context_length::resolve_context_length(rt, Some(&cache), now).await;
    rt.trace.push(format!(
        "context window {} tokens ({:?})",
        found.tokens, found.source
    ));
    rt.context_window = Some(found.tokens);
}

/// Connects to the resolved model.
pub fn build_client(app: &App, rt: &Runtime) -> Result<Arc<dyn ModelClient>> {
    if rt.api_mode == ApiMode::Local {
        return build_local_client(app, rt);
    }
    let mut section = app.config.model.to_config();
    // `model.api_keys` belong to the configured provider, not to one chosen by a flag.
    if section
        .provider
        .as_deref()
        .is_some_and(|p| crate::auth_cmd::provider_id(p).as_deref() != Some(rt.provider.as_str()))
    {
        section.api_keys.clear();
    }
    Ok(hermes_llm::build_client_with(
        rt,
        &app.client_options(&section),
    )?)
}

#[cfg(feature = "local")]
fn build_local_client(app: &App, rt: &Runtime) -> Result<Arc<dyn ModelClient>> {
    let path = if rt.model.is_empty() {
        local_model_path(app).context("the local model file is missing; run `hermes model pull`")?
    } else {
        PathBuf::from(&rt.model)
    };
    let mut config = hermes_llm::local::LocalConfig::new(&path);
    config.n_ctx = app.config.local.context_length;
    config.threads = app.config.local.threads.map(|t| t as usize);
    config.default_max_tokens = app.config.local.max_tokens;
    let client = tokio::task::block_in_place(|| hermes_llm::local::LocalClient::load(&config))
        .with_context(|| format!("loading local model {}", path.display()))?;
    Ok(Arc::new(client))
}

#[cfg(not(feature = "local"))]
fn build_local_client(_app: &App, _rt: &Runtime) -> Result<Arc<dyn ModelClient>> {
    bail!("this hermes was built without the `local` feature; configure a provider (see README)")
}

/// Whether the compact prompt profile applies: `--prompt-profile`, then config
/// `agent.prompt_profile`, else compact for the embedded local model only.
pub fn prompt_is_compact(app: &App, args: &ChatArgs, api_mode: ApiMode) -> bool {
    match args.prompt_profile {
        Some(PromptProfileArg::Compact) => true,
        Some(PromptProfileArg::Full) => false,
        None => match app.config.agent.prompt_profile.as_deref() {
            Some("compact") => true,
            Some("full") => false,
            _ => api_mode == ApiMode::Local,
        },
    }
}

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
        };
        let built = hermes_llm::resolve(&inputs)
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                hermes_llm::build_client_with(&rt, &app.client_options(entry))
                    .map_err(|e| e.to_string())
            });
        match built {
            Ok(client) => out.push(client),
            Err(e) => eprintln!(
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
    pub prompt: Arc<crate::prompt::CliPrompt>,
    /// Agent options from flags and config (source `cli`).
    pub opts: AgentOptions,
    /// MCP tools (shared by every agent of the kit; servers stop when the last one drops).
    pub mcp: Option<Arc<dyn hermes_tools::ToolSource>>,
    /// Enabled toolsets.
    pub toolsets: Vec<String>,
    /// `fallback_providers:` clients, in order.
    pub fallbacks: Vec<Arc<dyn ModelClient>>,
}

impl AgentKit {
    /// Resolves the runtime, connects, selects tools, starts MCP servers; headless: MCP
    /// elicitation requests are declined (cron, the gateway).
    pub async fn prepare(app: &App, args: &ChatArgs) -> Result<AgentKit> {
        AgentKit::prepare_with(app, args, None).await
    }

    /// [`Self::prepare`] with the front end's answerer of MCP elicitation requests (the
    /// REPL's user); MCP sampling requests are served by the session's model.
    pub async fn prepare_with(
        app: &App,
        args: &ChatArgs,
        elicitor: Option<Arc<dyn hermes_mcp::elicitation::Elicitor>>,
    ) -> Result<AgentKit> {
        let mut runtime = resolve_runtime(app, args)?;
        resolve_context_window(app, &mut runtime).await;
        tracing::info!(trace = ?runtime.trace, "runtime resolved");
        let client = build_client(app, &runtime)?;
        let (toolsets, _) = crate::tools_cmd::enabled_toolsets(app, args);
        let store = app.open_store()?;
        let registry = crate::tools_cmd::build_registry(app, args, Some(store.clone()))?;
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
        let cwd = match &app.config.terminal.cwd {
            Some(p) => p.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        // MCP tools go after the built-ins (never shadowing them); the agent re-reads them
        // whenever a server's list changes.
        let requests = crate::mcp_cmd::ServerRequests {
            sampler: Some(Arc::new(crate::mcp_sampler::ModelSampler::new(
                client.clone(),
            ))),
            elicitor,
        };
        let mcp = crate::mcp_cmd::start_for_session(app, &cwd, &tools, requests)
            .await
            .map(|m| {
                Arc::new(crate::mcp_scan::ScannedSource::new(Arc::new(m)))
                    as Arc<dyn hermes_tools::ToolSource>
            });
        let compact = prompt_is_compact(app, args, runtime.api_mode);
        let mut tools = tools;
        crate::delegation::configure(app, compact, &mut tools);
        let prompt = crate::prompt::CliPrompt::new(
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
            max_tokens: app.config.model.to_config().max_tokens,
            context_window: app.config.model.to_config().context_length,
            compression_enabled: app.config.compression.enabled,
            compression: compression_config(&app.config.compression),
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

/// Builds an agent for the CLI: new session, `-r` resume, or `-c` continue. `elicitor`
/// answers MCP elicitation requests (`None`: declined, for runs without a terminal);
/// `clarifier` answers the `clarify` tool (`None`: it stays headless and tells the model to
/// proceed on its own judgement).
pub async fn build_agent(
    app: &App,
    args: &ChatArgs,
    approver: Arc<dyn Approver>,
    elicitor: Option<Arc<dyn hermes_mcp::elicitation::Elicitor>>,
    clarifier: Option<Arc<dyn hermes_tools::Clarifier>>,
) -> Result<(Agent, SessionInfo)> {
    let mut kit = AgentKit::prepare_with(app, args, elicitor).await?;
    if let Some(clarifier) = clarifier {
        for tool in &mut kit.tools {
            if tool.spec().name == "clarify" {
                *tool = Arc::new(hermes_tools::ClarifyTool::new(clarifier.clone()));
            }
        }
    }
    let store = kit.store.clone();
    let resume = match (&args.resume, args.continue_last) {
        (Some(key), _) => Some(key.clone()),
        (None, true) => match store.latest_session(Some("cli"))? {
            Some(s) => Some(s.id),
            None => bail!("no earlier CLI session to continue"),
        },
        (None, false) => None,
    };
    let agent = kit
        .agent(approver, kit.opts.clone(), resume.as_deref(), &app.home)
        .await?;
    let info = SessionInfo {
        model: kit.client.model().to_string(),
        provider: kit.client.provider().to_string(),
        history_file: app.home.history_file(),
        store,
        home: app.home.clone(),
        timezone: app.config.timezone.clone(),
        learning: crate::memory_cmd::LearningInfo::new(app, args),
        models: crate::model_switch::ModelSwitcher::new(app, kit.runtime.clone()),
        display: app.config.display.clone(),
        context_window: kit.client.context_window(),
        completion: completion_sources(app, &kit),
    };
    Ok((agent, info))
}

/// Tab completion sources of a REPL session: the slash commands, the skills folder, the
/// model names this session knows, and the provider to ask for more when it lists models on
/// the OpenAI-compatible `/models` route.
fn completion_sources(app: &App, kit: &AgentKit) -> crate::complete::Sources {
    let rt = &kit.runtime;
    let mut models = vec![kit.client.model().to_string()];
    models.extend(app.config.model.to_config().default);
    models.extend(
        app.config
            .fallback_providers
            .iter()
            .filter_map(|f| f.default.clone()),
    );
    let lists = matches!(
        rt.api_mode,
        ApiMode::ChatCompletions | ApiMode::OpenAiResponses
    );
    crate::complete::Sources {
        commands: crate::slash::command_names(),
        skills_dir: Some(app.home.skills_dir()),
        models,
        list_models_from: lists.then(|| (rt.base_url.clone(), rt.api_key.clone())),
        cwd: kit.opts.cwd.clone(),
    }
}
