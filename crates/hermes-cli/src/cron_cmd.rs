//! `hermes cron …` (FEATURES §1 Cron): manage `HERMES_HOME/cron/jobs.json`, run due jobs once
//! (`tick`, for system cron) or one job by hand (`run`, which never moves `next_run_at`, C41),
//! and show run history. Also builds the `cronjob` tool of interactive sessions. The model of
//! a run comes from the same resolution as chat (`session::resolve_runtime`/`build_client`);
//! the job's own model, when set, replaces the model name.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Subcommand;
use hermes_cron::{
    AgentRunner, ClientFactory, CronSettings, CronjobTool, Deliverer, HeadlessOptions, JobPatch,
    JobStore, NewJob, PlatformSender, RunLog, Scheduler, SchedulerConfig, SystemClock, Target, Tz,
};
use hermes_tools::Tool;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::args::ChatArgs;

/// `hermes cron …`
#[derive(Debug, Subcommand)]
pub enum CronCmd {
    /// Every job with its state and next run.
    List,
    /// Creates a job: `hermes cron create "every 2h" "check the build"` (`-m` sets its model).
    Create {
        /// `every 30m|2h|1d`, a 5-field cron expression, an ISO time, or a delay like `45m`.
        schedule: String,
        /// The task for the agent (may be empty with `--script … --no-agent`).
        #[arg(default_value = "")]
        prompt: String,
        /// Display name (default: the start of the prompt).
        #[arg(long)]
        name: Option<String>,
        /// Delivery targets, comma-separated: local, origin, <platform>[:<chat>[:<thread>]], URL.
        #[arg(long)]
        deliver: Option<String>,
        /// A skill whose SKILL.md the run loads; repeatable.
        #[arg(long = "skill")]
        skills: Vec<String>,
        /// Stop after this many runs.
        #[arg(long)]
        repeat: Option<u32>,
        /// A script under HERMES_HOME/scripts/ (.sh/.bash run with bash, others with
        /// python3) whose output is given to the agent as context.
        #[arg(long)]
        script: Option<String>,
        /// Deliver the script's output only; no agent runs.
        #[arg(long, requires = "script")]
        no_agent: bool,
        /// Absolute directory the job runs in (its tools' and scripts' working directory).
        #[arg(long)]
        workdir: Option<String>,
    },
    /// Changes a job (`-m` sets its model).
    Edit {
        /// Job id, name or unique id prefix.
        job: String,
        /// New schedule (recomputes the next run).
        #[arg(long)]
        schedule: Option<String>,
        /// New prompt.
        #[arg(long)]
        prompt: Option<String>,
        /// New name.
        #[arg(long)]
        name: Option<String>,
        /// New delivery targets.
        #[arg(long)]
        deliver: Option<String>,
        /// Replace the skills with these; repeatable.
        #[arg(long = "skill")]
        skills: Vec<String>,
        /// New run limit.
        #[arg(long)]
        repeat: Option<u32>,
        /// New script (a file under HERMES_HOME/scripts/).
        #[arg(long)]
        script: Option<String>,
        /// New working directory (absolute; an empty value clears it).
        #[arg(long)]
        workdir: Option<String>,
    },
    /// Stops a job from running until resumed.
    Pause {
        /// Job id, name or unique id prefix.
        job: String,
    },
    /// Resumes a paused job (no catch-up for the paused time).
    Resume {
        /// Job id, name or unique id prefix.
        job: String,
    },
    /// Runs a job now; its schedule stays as it was.
    Run {
        /// Job id, name or unique id prefix.
        job: String,
    },
    /// Deletes a job.
    Remove {
        /// Job id, name or unique id prefix.
        job: String,
    },
    /// Recent runs, newest first.
    Runs {
        /// Only this job.
        job: Option<String>,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
    },
    /// Job counts, the next due job, failing jobs and how jobs get run.
    Status,
    /// Runs every due job once and exits (call it from system cron, e.g. every minute).
    Tick,
}

/// Runs `hermes cron <action>`; returns the exit code.
pub async fn run(profile: Option<&str>, args: &ChatArgs, action: &CronCmd) -> Result<i32> {
    let app = App::load(profile)?;
    app.warn_config();
    let tz = timezone(&app)?;
    let store = JobStore::new(&app.home);
    let now = chrono::Utc::now();
    let blocking = |f: Box<dyn FnOnce() -> Result<String> + Send>| async move {
        tokio::task::spawn_blocking(f)
            .await
            .context("jobs file task")?
    };
    let s = store.clone();
    let text = match action {
        CronCmd::List => blocking(Box::new(move || {
            Ok(hermes_cron::jobs_table(&s.list()?, tz))
        })),
        CronCmd::Create {
            schedule,
            prompt,
            name,
            deliver,
            skills,
            repeat,
            script,
            no_agent,
            workdir,
        } => {
            if let Some(d) = deliver {
                Target::parse_list(d)?;
            }
            let new = NewJob {
                name: name.clone(),
                prompt: prompt.clone(),
                schedule: schedule.clone(),
                skills: skills.clone(),
                model: args.model.clone(),
                deliver: deliver.clone(),
                repeat: *repeat,
                origin: None,
                script: script.clone(),
                no_agent: *no_agent,
                provider: args.provider.clone(),
                base_url: args.base_url.clone(),
                workdir: workdir.clone(),
                ..NewJob::default()
            };
            blocking(Box::new(move || {
                let job = s.create(new, now, tz)?;
                Ok(format!(
                    "created job {} \"{}\" ({}); next run {}",
                    job.id,
                    job.name,
                    job.schedule.display(tz),
                    when(job.next_run_at, tz)
                ))
            }))
        }
        CronCmd::Edit {
            job,
            schedule,
            prompt,
            name,
            deliver,
            skills,
            repeat,
            script,
            workdir,
        } => {
            if let Some(d) = deliver {
                Target::parse_list(d)?;
            }
            let patch = JobPatch {
                name: name.clone(),
                prompt: prompt.clone(),
                schedule: schedule.clone(),
                skills: (!skills.is_empty()).then(|| skills.clone()),
                model: args.model.clone().map(Some),
                deliver: deliver.clone(),
                repeat: repeat.map(Some),
                script: script.clone().map(Some),
                provider: args.provider.clone().map(Some),
                base_url: args.base_url.clone().map(Some),
                workdir: workdir
                    .clone()
                    .map(|w| Some(w).filter(|w| !w.trim().is_empty())),
                ..JobPatch::default()
            };
            let key = job.clone();
            blocking(Box::new(move || {
                let job = s.edit(&key, patch, now, tz)?;
                Ok(format!(
                    "updated job {} \"{}\"; next run {}",
                    job.id,
                    job.name,
                    when(job.next_run_at, tz)
                ))
            }))
        }
        CronCmd::Pause { job } => {
            let key = job.clone();
            blocking(Box::new(move || {
                let job = s.pause(&key, None, now)?;
                Ok(format!("paused job {} \"{}\"", job.id, job.name))
            }))
        }
        CronCmd::Resume { job } => {
            let key = job.clone();
            blocking(Box::new(move || {
                let job = s.resume(&key, now, tz)?;
                Ok(format!(
                    "resumed job {} \"{}\"; next run {}",
                    job.id,
                    job.name,
                    when(job.next_run_at, tz)
                ))
            }))
        }
        CronCmd::Remove { job } => {
            let key = job.clone();
            blocking(Box::new(move || {
                let job = s.remove(&key)?;
                Ok(format!("removed job {} \"{}\"", job.id, job.name))
            }))
        }
        CronCmd::Runs { job, limit } => {
            let (key, limit) = (job.clone(), *limit);
            let log = RunLog::new(s.clone(), app.open_store()?);
            blocking(Box::new(move || {
                // A removed job's runs stay in the history: an unknown key is taken as a
                // job id.
                let id = key.map(|k| s.get(&k).map(|j| j.id).unwrap_or(k));
                let runs = log.list(id.as_deref(), limit)?;
                Ok(hermes_cron::runs_table(&runs, tz))
            }))
        }
        CronCmd::Status => {
            let log = RunLog::new(s.clone(), app.open_store()?);
            blocking(Box::new(move || {
                let jobs = s.list()?;
                let latest = log.latest_per_job()?;
                let beat = hermes_cron::SchedulerBeat::read(&s);
                Ok(hermes_cron::status_text(
                    &jobs,
                    &latest,
                    beat.as_ref(),
                    tz,
                    chrono::Utc::now(),
                ))
            }))
        }
        CronCmd::Tick => return tick(app, args, tz).await,
        CronCmd::Run { job } => return run_one(app, args, tz, job).await,
    };
    outln!("{}", text.await?);
    Ok(0)
}

fn when(t: Option<chrono::DateTime<chrono::Utc>>, tz: Tz) -> String {
    t.map(|t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z").to_string())
        .unwrap_or_else(|| "none (finished)".to_string())
}

/// `config.yaml` `timezone` (UTC when absent).
fn timezone(app: &App) -> Result<Tz> {
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
    let compact = crate::session::resolve_runtime(&app, args)
        .map(|rt| crate::session::prompt_is_compact(&app, args, rt.api_mode))
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
        crate::session::resolve_runtime(&factory_app, &args)
            .and_then(|rt| crate::session::build_client(&factory_app, &rt))
            .map_err(|e| format!("{e:#}"))
    });
    let cwd = match &app.config.terminal.cwd {
        Some(p) => p.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let prompt = crate::prompt::CliPrompt::new(
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
        extra_tools: crate::tools_cmd::web_tools(&app)?
            .into_iter()
            .chain([crate::delegation::cron_tool(&app, compact)])
            .collect(),
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

/// Cancels `token` on Ctrl-C.
fn cancel_on_ctrl_c() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            t.cancel();
        }
    });
    token
}

fn print_run(rec: &hermes_cron::RunRecord) {
    let path = rec.output_path.as_deref().unwrap_or("(output not saved)");
    outln!(
        "{} {} \"{}\": {} — {path}",
        rec.run_id,
        rec.job_id,
        rec.job_name,
        rec.status
    );
    if let Some(e) = &rec.error {
        eprintln!("  error: {e}");
    }
    for d in &rec.deliveries {
        if !d.ok {
            eprintln!("  not delivered to {}: {}", d.target, d.detail);
        }
    }
}

async fn tick(app: App, args: &ChatArgs, tz: Tz) -> Result<i32> {
    let sched = scheduler(&app, args, tz)?;
    let report = sched.tick(&cancel_on_ctrl_c()).await?;
    for rec in &report.runs {
        print_run(rec);
    }
    if report.runs.is_empty() {
        eprintln!("no jobs due");
    }
    Ok(0)
}

async fn run_one(app: App, args: &ChatArgs, tz: Tz, key: &str) -> Result<i32> {
    let store = JobStore::new(&app.home);
    let k = key.to_string();
    let job = tokio::task::spawn_blocking(move || store.get(&k))
        .await
        .context("jobs file task")??;
    let sched = scheduler(&app, args, tz)?;
    match sched.run_now(&job.id, &cancel_on_ctrl_c()).await? {
        Some(rec) => {
            print_run(&rec);
            Ok(if matches!(rec.status.as_str(), "ok" | "silent") {
                0
            } else {
                1
            })
        }
        None => {
            eprintln!("job {} is already running", job.id);
            Ok(1)
        }
    }
}

/// `/cron` in the REPL: the jobs table of `app`'s home.
pub fn jobs_text(home: &hermes_protocol::HermesHome, timezone: Option<&str>) -> String {
    let tz = hermes_cron::parse_timezone(timezone).unwrap_or(Tz::UTC);
    match JobStore::new(home).list() {
        Ok(jobs) => hermes_cron::jobs_table(&jobs, tz),
        Err(e) => format!("could not read cron jobs: {e}"),
    }
}
