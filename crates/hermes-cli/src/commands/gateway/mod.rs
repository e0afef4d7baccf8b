//! `hermes gateway {run,status}` (FEATURES §1 Gateway) and the agent factory the gateway uses
//! (agents from an `assembly::AgentKit`). [`cron`] ticks the scheduler inside the gateway and
//! delivers to its platforms; [`process_memory`] returns idle memory to the system.

mod adapters;
pub mod cron;
#[cfg(test)]
mod cron_e2e;
pub(crate) mod observe;
pub mod process_memory;
pub mod service;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use anyhow::{Result, anyhow};
use clap::Subcommand;
use hermes_agent::Agent;
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::{AgentFactory, AgentSpec, Gateway, PlatformAdapter};
use hermes_protocol::HermesHome;
use tokio_util::sync::CancellationToken;

use crate::assembly::AgentKit;
use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::commands::gateway::cron::GatewayCron;
use adapters::{build_adapters, credential};

/// `hermes gateway …`
#[derive(Debug, Subcommand)]
pub enum GatewayCmd {
    /// Serve every configured messaging platform until Ctrl-C or SIGTERM.
    Run,
    /// Configured platforms, credentials present, access rules, pairing, routed sessions and
    /// the service's state.
    Status,
    /// Install the gateway as a systemd user service and start it.
    Install,
    /// Stop the service and remove its unit.
    Uninstall,
    /// Start the installed service.
    Start,
    /// Stop the service.
    Stop,
    /// Restart the service.
    Restart,
    /// A Python Hermes `gateway` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Builds gateway agents from the CLI's model resolution, tools and prompt.
pub struct CliAgentFactory {
    kit: AgentKit,
    home: HermesHome,
    signature: String,
    cron: Option<GatewayCron>,
    /// Resolves chats' `/model` choices against the kit's runtime (never switched itself).
    models: crate::assembly::model_switch::ModelSwitcher,
    /// `platform_toolsets:` — the tools a platform's chats may use (`hermes tools
    /// enable|disable --platform P`); platforms without an entry get every kit tool.
    platform_tools: std::collections::HashMap<String, std::collections::HashSet<String>>,
}

impl CliAgentFactory {
    /// A factory over `kit` (built from `app`); the signature digests the settings agents are
    /// built from.
    pub fn new(app: &App, kit: AgentKit) -> CliAgentFactory {
        let mut h = DefaultHasher::new();
        kit.runtime.provider.hash(&mut h);
        kit.runtime.model.hash(&mut h);
        kit.runtime.base_url.hash(&mut h);
        kit.toolsets.hash(&mut h);
        kit.opts.max_turns.hash(&mut h);
        kit.opts.yolo.hash(&mut h);
        let signature = format!("{:016x}", h.finish());
        CliAgentFactory {
            models: crate::assembly::model_switch::ModelSwitcher::new(app, kit.runtime.clone()),
            platform_tools: crate::commands::tools::platform_tool_names(app),
            kit,
            home: app.home.clone(),
            signature,
            cron: None,
        }
    }

    /// Gives every agent the `cronjob` tool of `cron` (bound to the gateway's scheduler and
    /// to the session's chat) in place of the kit's own.
    pub fn with_cron(mut self, cron: GatewayCron) -> CliAgentFactory {
        self.cron = Some(cron);
        self
    }
}

#[async_trait::async_trait]
impl AgentFactory for CliAgentFactory {
    async fn build(&self, spec: AgentSpec) -> Result<Agent, String> {
        let mut opts = self.kit.opts.clone();
        opts.source = spec.source;
        opts.ephemeral_prompt = spec.ephemeral_prompt;
        opts.session_key = Some(spec.session_key);
        // The chat's `/model` choice; one that no longer resolves (a key removed since) falls
        // back to the configured model rather than locking the chat out.
        let chosen = match &spec.model {
            Some(choice) => match self.models.connect(choice).await {
                Ok((client, _)) => Some(client),
                Err(e) => {
                    tracing::warn!(error = %hermes_llm::redact_secrets(&format!("{e:#}")), "the chat's /model choice is unavailable; using the configured model");
                    None
                }
            },
            None => None,
        };
        let allowed = self.platform_tools.get(&opts.source);
        let kit = if self.cron.is_some() || chosen.is_some() || allowed.is_some() {
            let mut kit = self.kit.clone();
            if let Some(allowed) = allowed {
                kit.tools.retain(|t| allowed.contains(&t.spec().name));
            }
            if let Some(cron) = &self.cron {
                for tool in kit.tools.iter_mut() {
                    if tool.toolset() == hermes_cron::CRONJOB_TOOLSET {
                        *tool = cron.tool_for(spec.origin.as_ref());
                    }
                }
            }
            if let Some(client) = chosen {
                kit.client = client;
            }
            std::borrow::Cow::Owned(kit)
        } else {
            std::borrow::Cow::Borrowed(&self.kit)
        };
        kit.agent(spec.approver, opts, spec.resume.as_deref(), &self.home)
            .await
            .map_err(|e| hermes_llm::redact_secrets(&format!("{e:#}")))
    }

    fn config_signature(&self) -> String {
        self.signature.clone()
    }

    async fn model_client(
        &self,
        choice: &hermes_llm::ModelChoice,
    ) -> Result<Arc<dyn hermes_llm::ModelClient>, String> {
        self.models
            .connect(choice)
            .await
            .map(|(client, _)| client)
            .map_err(|e| hermes_llm::redact_secrets(&format!("{e:#}")))
    }
}

fn gateway_config(app: &App, profile: Option<&str>) -> Result<GatewayConfig> {
    let (config, warnings) = GatewayConfig::from_config(&app.config, &app.env, profile)
        .map_err(|e| anyhow!("{}: {e}", app.home.config_file().display()))?;
    for w in warnings {
        errln!("warning: {}: {w}", app.home.config_file().display());
    }
    Ok(config)
}

/// The API server's settings when `API_SERVER_ENABLED` is true (`None` otherwise).
#[cfg(feature = "api-server")]
pub(crate) fn api_settings(
    app: &App,
    profile: Option<&str>,
) -> Result<Option<hermes_gateway::api::ApiSettings>> {
    let mut settings = hermes_gateway::api::ApiSettings::from_env(|k| credential(app, k))?;
    settings.profile = profile.unwrap_or("main").to_string();
    if !settings.enabled {
        return Ok(None);
    }
    // Fail closed before anything starts or says it is listening (issue 20 item 8).
    settings.check_exposure()?;
    Ok(Some(settings))
}

/// Serves the API server beside the gateway with the same factory and store; a failure to
/// start (bind, exposure rule) cancels the whole gateway and is returned.
#[cfg(feature = "api-server")]
fn spawn_api(
    settings: Option<hermes_gateway::api::ApiSettings>,
    factory: Arc<CliAgentFactory>,
    store: Arc<hermes_store::SessionStore>,
    activity: hermes_gateway::Activity,
    observer: Arc<observe::ProcessObserver>,
    cancel: &CancellationToken,
) -> Option<tokio::task::JoinHandle<Result<()>>> {
    let settings = settings?;
    let addr = settings.addr();
    let state = hermes_gateway::api::ApiState::new(factory, store, settings)
        .with_activity(activity)
        .with_observer(observer);
    let cancel = cancel.clone();
    Some(tokio::spawn(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| anyhow!("API server: cannot listen on {addr}: {source}"));
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                cancel.cancel();
                return Err(e);
            }
        };
        let shown = listener.local_addr().unwrap_or(addr);
        errln!("API server listening on http://{shown}");
        let result = hermes_gateway::api::serve_on(listener, state, cancel.clone()).await;
        if result.is_err() {
            cancel.cancel();
        }
        result.map_err(|e| anyhow!("API server: {e}"))
    }))
}

/// Binds the `observability.metrics` listener (a failure is returned before the gateway
/// starts) and serves `/metrics` and `/_status` on it until `cancel`.
///
/// Errors: the exposure rule (no key off loopback), the address is taken.
async fn spawn_observe(
    settings: hermes_gateway::observe::ObserveSettings,
    observer: Arc<observe::ProcessObserver>,
    cancel: &CancellationToken,
) -> Result<tokio::task::JoinHandle<Result<(), hermes_gateway::observe::ObserveError>>> {
    let addr = settings.addr;
    if settings.key.is_none() && !addr.ip().is_loopback() {
        return Err(hermes_gateway::observe::ObserveError::UnprotectedBind { addr }.into());
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| anyhow!("/metrics listener: cannot listen on {addr}: {source}"))?;
    let shown = listener.local_addr().unwrap_or(addr);
    errln!("metrics and status listening on http://{shown} (/metrics, /_status)");
    let cancel = cancel.clone();
    Ok(tokio::spawn(async move {
        hermes_gateway::observe::serve_observe(listener, observer, settings, cancel).await
    }))
}

/// Runs `hermes gateway …`.
pub async fn run(profile: Option<&str>, args: &ChatArgs, action: &GatewayCmd) -> Result<i32> {
    let app = App::load(profile)?;
    app.warn_config();
    let home = app.home.root().to_path_buf();
    match action {
        GatewayCmd::Install => return service::install(profile, &home),
        GatewayCmd::Uninstall => return service::uninstall(profile, &home),
        GatewayCmd::Start => return service::control(profile, &home, "start"),
        GatewayCmd::Stop => return service::control(profile, &home, "stop"),
        GatewayCmd::Restart => return service::control(profile, &home, "restart"),
        GatewayCmd::Other(words) => {
            return Ok(crate::commands::redirect::answer::<GatewayCmd>(
                &["gateway"],
                words,
            ));
        }
        GatewayCmd::Status | GatewayCmd::Run => {}
    }
    let config = gateway_config(&app, profile)?;
    match action {
        GatewayCmd::Status => {
            let store = app.open_store()?;
            let (text, _) = crate::views::platforms::status_text(
                &app.home,
                &app.config,
                &app.env,
                profile,
                &store,
            )?;
            println!("{text}");
            println!("{}", service::status_line(profile));
            Ok(0)
        }
        GatewayCmd::Run => {
            // The API server's settings (and its key rule) are checked before any adapter
            // binds a port or connects.
            #[cfg(feature = "api-server")]
            api_settings(&app, profile)?;
            let adapters = build_adapters(&app, true).await?;
            for adapter in &adapters {
                if adapter.name() != "webhook" {
                    errln!("{}: connecting", adapter.name());
                }
            }
            let cancel = CancellationToken::new();
            tokio::spawn(stop_on_signal(cancel.clone()));
            serve(&app, profile, args, config, adapters, cancel).await?;
            errln!("gateway stopped");
            Ok(0)
        }
        // Answered above.
        GatewayCmd::Install
        | GatewayCmd::Uninstall
        | GatewayCmd::Start
        | GatewayCmd::Stop
        | GatewayCmd::Restart
        | GatewayCmd::Other(_) => Ok(2),
    }
}

/// Serves `adapters` (and the API server when enabled) with the cron scheduler beside them
/// until `cancel`: builds the agent kit, loads hooks, starts the scheduler task whose platform
/// deliveries go through these adapters (unless `cron.enabled: false`), runs the gateway, then waits for the scheduler and
/// the API server to stop.
///
/// Errors: no adapter and no API server ([`hermes_gateway::GatewayError::NoPlatforms`]),
/// model or tool setup failures, a gateway or API server failure.
pub(crate) async fn serve(
    app: &App,
    profile: Option<&str>,
    args: &ChatArgs,
    config: GatewayConfig,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    cancel: CancellationToken,
) -> Result<()> {
    #[cfg(feature = "api-server")]
    let api = api_settings(app, profile)?;
    #[cfg(feature = "api-server")]
    let api_enabled = api.is_some();
    #[cfg(not(feature = "api-server"))]
    let api_enabled = {
        let _ = profile;
        false
    };
    if adapters.is_empty() && !api_enabled {
        return Err(hermes_gateway::GatewayError::NoPlatforms.into());
    }
    let observe = observe::observe_settings(app)?;
    let mut kit = AgentKit::prepare(app, args).await?;
    let mcp = kit.mcp_servers.clone();
    crate::assembly::sandbox::warn_at_start(&kit.opts.sandbox, &kit.opts.cwd, &kit.tools);
    // FEATURES §12: the gateway and its agents fire the hooks of HERMES_HOME/hooks.
    let (hooks, hook_errors) = hermes_agent::Hooks::discover(&app.home);
    for e in hook_errors {
        errln!("warning: hook {} skipped: {}", e.path.display(), e.reason);
    }
    kit.opts.hooks = hooks.clone();
    let store = kit.store.clone();
    // Issue 8: one scheduler per gateway; results reach chats through these adapters.
    let outbox = hermes_gateway::Outbox::new(
        &adapters,
        hermes_gateway::outbox::home_channels_from_env(&app.env),
    )
    .with_sethome(hermes_gateway::status::HomeChannels::for_store(
        &app.home, &store,
    ));
    // `cron.enabled: false` keeps the scheduler off; the sessions' `cronjob` tool still
    // records each job's chat, and `hermes cron tick` runs due jobs.
    let scheduler_on = cron_scheduler_enabled(app)?;
    let cron = GatewayCron::prepare(app, args, outbox)?;
    let tools = kit.tools.clone();
    let factory = Arc::new(CliAgentFactory::new(app, kit).with_cron(cron.clone()));
    let cron_task = if scheduler_on {
        errln!("cron scheduler: on (`hermes cron list` shows the jobs)");
        Some(cron.spawn(cancel.clone()))
    } else {
        errln!("cron scheduler: off (cron.enabled: false); `hermes cron tick` runs due jobs");
        None
    };
    // Also with the API server alone: `gateway:startup` fires whenever the gateway starts.
    let gateway = Gateway::new(
        config,
        adapters,
        factory.clone(),
        store.clone(),
        app.home.clone(),
    );
    gateway.set_hooks(hooks);
    // Issue 7 "Memory": once idle, the process gives back free heap and code pages.
    gateway.set_memory_release(Arc::new(
        crate::commands::gateway::process_memory::ProcessMemory,
    ));
    let observer = Arc::new(observe::ProcessObserver::new(
        gateway.clone(),
        store.clone(),
        app.home.clone(),
        mcp,
        &tools,
        scheduler_on,
    ));
    let observe_task = match observe {
        Some(settings) => Some(spawn_observe(settings, observer.clone(), &cancel).await?),
        None => None,
    };
    #[cfg(feature = "api-server")]
    let api_task = spawn_api(api, factory, store, gateway.activity(), observer, &cancel);
    if api_enabled {
        gateway.set_front_ends(vec!["api_server".to_string()]);
    }
    let served = gateway.run(cancel.clone()).await;
    cancel.cancel();
    if let Some(Err(e)) = match cron_task {
        Some(task) => Some(task.await),
        None => None,
    } {
        tracing::error!(error = %e, "cron scheduler task failed");
    }
    if let Some(task) = observe_task
        && let Ok(Err(e)) = task.await
    {
        tracing::error!(error = %e, "metrics listener failed");
    }
    #[cfg(feature = "api-server")]
    if let Some(task) = api_task {
        task.await.map_err(|e| anyhow!("API server task: {e}"))??;
    }
    served?;
    Ok(())
}

/// `cron.enabled` of config.yaml (default true): whether `gateway run` runs its scheduler.
///
/// Errors: a value that is not a boolean, naming the key and the file.
fn cron_scheduler_enabled(app: &App) -> Result<bool> {
    hermes_cron::CronSettings::scheduler_enabled(app.config.cron.as_ref())
        .map_err(|e| anyhow!("{}: {e}", app.home.config_file().display()))
}

/// Cancels on Ctrl-C (SIGINT) or SIGTERM.
async fn stop_on_signal(cancel: CancellationToken) {
    signalled().await;
    errln!("stopping: interrupting running turns…");
    cancel.cancel();
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
pub(crate) async fn signalled() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Send-only adapters of the platforms in `.env` ([`build_adapters`] without listeners,
/// so a running gateway keeps its ports), for `hermes mcp serve`'s `messages_send`.
///
/// Errors: a platform's credentials or settings are unusable.
pub(crate) async fn send_adapters(app: &App) -> Result<Vec<Arc<dyn PlatformAdapter>>> {
    build_adapters(app, false).await
}
