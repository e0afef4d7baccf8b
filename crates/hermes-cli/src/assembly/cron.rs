//! Cron runs as headless agents (FEATURES §9): the scheduler with the CLI's model resolution,
//! prompt and tools, and the `cronjob` tool of an interactive session. `hermes cron` and the
//! gateway's ticker both drive this scheduler.

use std::sync::Arc;

use anyhow::{Context, Result};
use hermes_cron::{
    AgentRunner, ClientFactory, CronSettings, CronjobTool, DefaultsResolver, Deliverer,
    HeadlessOptions, InferenceDefaults, JobStore, PlatformSender, Scheduler, SchedulerConfig,
    SystemClock, Tz,
};
use hermes_tools::Tool;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// `config.yaml` `timezone` (UTC when absent).
pub fn timezone(app: &App) -> Result<Tz> {
    Ok(hermes_cron::parse_timezone(app.config.timezone.as_deref())?)
}

/// What an unpinned job of this home resolves to now, for Python's provider/model drift
/// guard (`hermes_cron::drift`): `config.yaml` is read again at each call (a running gateway
/// sees a changed default), the provider is resolved as a chat without flags would resolve it
/// (with the job's base URL, if any; a hosted provider whose key is missing still counts as
/// that provider, as in Python), the model is `model.default`.
pub fn inference_defaults(app: &App) -> DefaultsResolver {
    let (home, env, fallback) = (app.home.clone(), app.env.clone(), app.config.clone());
    let profile = app.profile.clone();
    Arc::new(move |base_url: Option<&str>| {
        let config = hermes_protocol::config::Config::load(&home.config_file())
            .map(|l| l.config)
            .unwrap_or_else(|_| fallback.clone());
        let now = App {
            home: home.clone(),
            config,
            config_warnings: Vec::new(),
            startup_notes: Vec::new(),
            env: env.clone(),
            profile: profile.clone(),
        };
        let args = ChatArgs {
            base_url: base_url.map(str::to_string),
            ..ChatArgs::default()
        };
        let provider = match crate::assembly::runtime::resolve_runtime(&now, &args) {
            Ok(rt) => Some(rt.provider),
            Err(e) => match e.downcast_ref::<hermes_llm::ResolveError>() {
                Some(hermes_llm::ResolveError::MissingApiKey { provider, .. }) => {
                    Some(provider.clone())
                }
                _ => None,
            },
        };
        InferenceDefaults {
            provider,
            model: now
                .config
                .model
                .to_config()
                .default
                .filter(|m| !m.trim().is_empty()),
        }
    })
}

/// The jobs file of `app`'s home, giving new jobs Python's drift-guard snapshots.
pub fn job_store(app: &App) -> JobStore {
    JobStore::new(&app.home).with_defaults(inference_defaults(app))
}

/// A copy of the parts of `app` a run needs, shareable with the client factory.
fn owned(app: &App) -> Arc<App> {
    Arc::new(App {
        home: app.home.clone(),
        config: app.config.clone(),
        config_warnings: Vec::new(),
        startup_notes: Vec::new(),
        env: app.env.clone(),
        profile: app.profile.clone(),
    })
}

/// A scheduler whose runs are headless agents with the CLI's model resolution and prompt,
/// delivering locally and to webhooks (platform targets need the gateway).
pub fn scheduler(app: &App, args: &ChatArgs, tz: Tz) -> Result<Scheduler> {
    scheduler_with(app, args, tz, None)
}

/// [`scheduler`] with platform delivery through `platforms` (the gateway's adapters). Runs
/// are recorded in the home's `state.db`.
pub fn scheduler_with(
    app: &App,
    args: &ChatArgs,
    tz: Tz,
    platforms: Option<Arc<dyn PlatformSender>>,
) -> Result<Scheduler> {
    let settings = CronSettings::from_yaml(app.config.cron.as_ref());
    let app = owned(app);
    let compact = crate::assembly::runtime::resolve_runtime(&app, args)
        .map(|rt| crate::assembly::runtime::prompt_is_compact(&app, args, rt.api_mode))
        .unwrap_or(false);
    let (factory_app, base_args) = (app.clone(), args.clone());
    let clients: ClientFactory = Arc::new(move |choice: &hermes_cron::ModelChoice| {
        let mut args = base_args.clone();
        if let Some(m) = &choice.model {
            args.model = Some(m.clone());
        }
        if let Some(p) = &choice.provider {
            args.provider = Some(p.clone());
        }
        if let Some(u) = &choice.base_url {
            args.base_url = Some(u.clone());
        }
        crate::assembly::runtime::resolve_runtime(&factory_app, &args)
            .and_then(|rt| crate::assembly::runtime::build_client(&factory_app, &rt))
            .map_err(|e| format!("{e:#}"))
    });
    let cwd = match &app.config.terminal.cwd {
        Some(p) => p.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let prompt = crate::assembly::prompt::CliPrompt::new(
        app.home.clone(),
        cwd.clone(),
        compact,
        None,
        vec![hermes_cron::CRON_TOOLSET.name.to_string()],
    );
    let store = app.open_store()?;
    let guard = inference_defaults(&app);
    let runner = AgentRunner::new(HeadlessOptions {
        home: app.home.clone(),
        cwd,
        store: store.clone(),
        prompt: Arc::new(prompt),
        clients,
        max_turns: args.max_turns.unwrap_or(app.config.agent.max_turns),
        api_max_retries: app.config.agent.api_max_retries,
        terminal_timeout_s: app.config.terminal.timeout,
        inactivity: settings.inactivity_timeout,
        extra_tools: crate::assembly::tools::web_tools(&app)?
            .into_iter()
            .chain([crate::assembly::delegation::cron_tool(&app, compact)])
            .collect(),
        sandbox: crate::assembly::sandbox::settings(
            &app,
            hermes_protocol::config::UnsupportedPolicy::Refuse,
        ),
        timezone: tz,
    })
    .with_drift_guard(guard);
    Ok(Scheduler::new(
        job_store(&app),
        store,
        Arc::new(SystemClock),
        Arc::new(runner),
        Deliverer::new(platforms),
        SchedulerConfig {
            tz,
            max_parallel: settings.max_parallel_jobs,
            ..SchedulerConfig::default()
        },
    ))
}

/// The `cronjob` tool of an interactive session (its `run` action runs the job here).
pub fn session_tool(app: &App, args: &ChatArgs) -> Result<Arc<dyn Tool>> {
    let tz = timezone(app)?;
    let sched = scheduler(app, args, tz)?;
    Ok(Arc::new(
        CronjobTool::new(job_store(app), Arc::new(SystemClock), tz, Some(sched), None)
            .allow_private_urls(app.config.web.allow_private_urls),
    ))
}
