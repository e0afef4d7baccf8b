//! `hermes cron …` (FEATURES §1 Cron): manage `HERMES_HOME/cron/jobs.json`, run due jobs once
//! (`tick`, for system cron) or one job by hand (`run`, which never moves `next_run_at`, C41),
//! and show run history. Runs go through the scheduler of `crate::assembly::cron` (the
//! same model resolution as chat; the job's own model, when set, replaces the model name).

use anyhow::{Context, Result};
use clap::Subcommand;
use hermes_cron::{JobPatch, NewJob, RunLog, Target, Tz};
use hermes_llm::runtime::stored_provider_name;
use tokio_util::sync::CancellationToken;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::cron::{scheduler, timezone};

/// `hermes cron …`
#[derive(Debug, Subcommand)]
pub enum CronCmd {
    /// Every job with its state and next run.
    List,
    /// Creates a job: `hermes cron create "every 2h" "check the build"` (`-m` sets its model).
    #[command(visible_alias = "add")]
    Create {
        /// The job's own model, provider and base URL (default: the configured model).
        #[command(flatten)]
        model: crate::assembly::args::ModelFlags,
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
        /// A new model, provider or base URL for the job.
        #[command(flatten)]
        model: crate::assembly::args::ModelFlags,
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
        /// Add a skill to the job's; repeatable (Python Hermes' flag).
        #[arg(long = "add-skill", conflicts_with = "skills")]
        add_skills: Vec<String>,
        /// Remove a skill from the job's; repeatable.
        #[arg(long = "remove-skill", conflicts_with = "skills")]
        remove_skills: Vec<String>,
        /// Remove every skill of the job.
        #[arg(long, conflicts_with_all = ["skills", "add_skills", "remove_skills"])]
        clear_skills: bool,
        /// New run limit.
        #[arg(long)]
        repeat: Option<u32>,
        /// New script (a file under HERMES_HOME/scripts/).
        #[arg(long)]
        script: Option<String>,
        /// Run only the script, with no model call.
        #[arg(long, conflicts_with = "agent")]
        no_agent: bool,
        /// Give the script's output to the model again (undoes `--no-agent`).
        #[arg(long)]
        agent: bool,
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
    #[command(visible_alias = "rm", alias = "delete")]
    Remove {
        /// Job id, name or unique id prefix.
        job: String,
    },
    /// Recent runs, newest first.
    #[command(alias = "history")]
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
    let store = crate::assembly::cron::job_store(&app);
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
            model: flags,
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
                model: flags.model.clone(),
                deliver: deliver.clone(),
                repeat: *repeat,
                origin: None,
                script: script.clone(),
                no_agent: *no_agent,
                provider: flags.provider.as_deref().map(stored_provider_name),
                base_url: flags.base_url.clone(),
                workdir: workdir.as_deref().map(real_workdir).transpose()?,
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
            model: flags,
            job,
            schedule,
            prompt,
            name,
            deliver,
            skills,
            add_skills,
            remove_skills,
            clear_skills,
            repeat,
            script,
            no_agent,
            agent,
            workdir,
        } => {
            if let Some(d) = deliver {
                Target::parse_list(d)?;
            }
            let mut patch = JobPatch {
                name: name.clone(),
                prompt: prompt.clone(),
                schedule: schedule.clone(),
                skills: if *clear_skills {
                    Some(Vec::new())
                } else {
                    (!skills.is_empty()).then(|| skills.clone())
                },
                no_agent: (*no_agent || *agent).then_some(*no_agent),
                model: flags.model.clone().map(Some),
                deliver: deliver.clone(),
                repeat: repeat.map(Some),
                script: script.clone().map(Some),
                provider: flags
                    .provider
                    .as_deref()
                    .map(stored_provider_name)
                    .map(Some),
                base_url: flags.base_url.clone().map(Some),
                workdir: match workdir.as_deref().map(str::trim) {
                    None => None,
                    Some("") => Some(None),
                    Some(w) => Some(Some(real_workdir(w)?)),
                },
                ..JobPatch::default()
            };
            let key = job.clone();
            let (add, remove) = (add_skills.clone(), remove_skills.clone());
            blocking(Box::new(move || {
                if !add.is_empty() || !remove.is_empty() {
                    let mut list = s.get(&key)?.skills;
                    list.retain(|k| !remove.contains(k));
                    for k in add {
                        if !list.contains(&k) {
                            list.push(k);
                        }
                    }
                    patch.skills = Some(list);
                }
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
                // A removed job's runs stay in the history (a job with a repeat limit is
                // removed after its last run): an unknown key is looked up by the name the
                // job had when it last ran, else taken as a job id.
                let id = key.map(|k| match s.get(&k) {
                    Ok(j) => j.id,
                    Err(_) => log
                        .latest_per_job()
                        .ok()
                        .and_then(|runs| runs.into_iter().find(|r| r.job_name == k))
                        .map(|r| r.job_id)
                        .unwrap_or(k),
                });
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
        errln!("  error: {e}");
    }
    for d in &rec.deliveries {
        if !d.ok {
            errln!("  not delivered to {}: {}", d.target, d.detail);
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
        errln!("no jobs due");
    }
    Ok(0)
}

async fn run_one(app: App, args: &ChatArgs, tz: Tz, key: &str) -> Result<i32> {
    let store = crate::assembly::cron::job_store(&app);
    let k = key.to_string();
    let job = tokio::task::spawn_blocking(move || store.get(&k))
        .await
        .context("jobs file task")??;
    let sched = scheduler(&app, args, tz)?;
    match sched.run_now(&job.id, &cancel_on_ctrl_c()).await? {
        Some(rec) => {
            print_run(&rec);
            // The answer itself, as `chat -q` prints it (issue 20 item 10).
            // The recorded path is relative to HERMES_HOME, not to the working directory.
            if let Some(answer) = rec
                .output_path
                .as_deref()
                .and_then(|p| std::fs::read_to_string(app.home.root().join(p)).ok())
                .and_then(|text| {
                    text.split_once("\n## Response\n\n")
                        .map(|(_, answer)| answer.trim_end().to_string())
                })
                .filter(|a| !a.is_empty())
            {
                outln!();
                outln!("{answer}");
            }
            Ok(if matches!(rec.status.as_str(), "ok" | "silent") {
                0
            } else {
                1
            })
        }
        None => {
            errln!("job {} is already running", job.id);
            Ok(1)
        }
    }
}

/// A `--workdir` as stored: the folder's real path (symlinks resolved). A cron run refuses a
/// workdir that no longer resolves to itself, so a folder swapped for a symlink cannot move a
/// job's sandbox (issue 18).
///
/// A relative path is passed on as given, for the job store to refuse.
///
/// # Errors
/// The folder does not exist or is not a folder.
fn real_workdir(given: &str) -> Result<String> {
    if !std::path::Path::new(given).is_absolute() {
        return Ok(given.to_string());
    }
    let dir =
        std::fs::canonicalize(given).map_err(|e| anyhow::anyhow!("--workdir {given}: {e}"))?;
    if !dir.is_dir() {
        anyhow::bail!("--workdir {given}: not a folder");
    }
    Ok(dir.display().to_string())
}
