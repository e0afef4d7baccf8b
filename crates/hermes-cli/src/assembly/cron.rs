//! Cron runs as headless agents (FEATURES §9): the scheduler with the CLI's model resolution,
//! prompt and tools, and the `cronjob` tool of an interactive session. `hermes cron` and the
//! gateway's ticker both drive this scheduler.

use std::sync::Arc;

use anyhow::{Context, Result};
use hermes_cron::{
    AgentRunner, ClientFactory, CronSettings, CronjobTool, Deliverer, HeadlessOptions, JobStore,
    PlatformSender, Scheduler, SchedulerConfig, SystemClock, Tz,
};
use hermes_tools::Tool;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// `config.yaml` `timezone` (UTC when absent).
pub fn timezone(app: &App) -> Result<Tz> {
    Ok(hermes_cron::parse_timezone(app.config.timezone.as_deref())?)
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
    });
    Ok(Scheduler::new(
        JobStore::new(&app.home),
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
    Ok(Arc::new(CronjobTool::new(
        JobStore::new(&app.home),
        Arc::new(SystemClock),
        tz,
        Some(sched),
        None,
    )))
}
