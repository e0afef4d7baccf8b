//! The `cronjob` agent tool (FEATURES §1 Cron): lets the agent create, list, update, pause,
//! resume, remove and run scheduled jobs from a conversation. It belongs to toolset
//! `cronjob`, which front ends add to interactive sessions only — headless runs use
//! [`crate::CRON_TOOLSET`], which never contains it, so a job cannot schedule more jobs.

use std::sync::Arc;

use chrono_tz::Tz;
use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::clock::Clock;
use crate::job::{Job, JobPatch, NewJob, Origin};
use crate::scheduler::Scheduler;
use crate::store::{JobStore, JobStoreError};

/// The tool's description for the model (`prompts/cronjob_tool.md`).
pub const CRONJOB_TOOL_PROMPT: &str = include_str!("../prompts/cronjob_tool.md");

/// Name of the tool and of its toolset.
pub const CRONJOB_TOOLSET: &str = "cronjob";

/// The `cronjob` tool over one jobs file.
#[derive(Clone)]
pub struct CronjobTool {
    store: JobStore,
    clock: Arc<dyn Clock>,
    tz: Tz,
    scheduler: Option<Scheduler>,
    origin: Option<Origin>,
    allow_private_urls: bool,
}

impl CronjobTool {
    /// A tool editing `store`, reading "now" from `clock` and cron expressions in `tz`.
    /// `scheduler` executes the `run` action (without one, `run` answers that runs are not
    /// available here). `origin` is the chat new jobs remember for `origin` delivery.
    pub fn new(
        store: JobStore,
        clock: Arc<dyn Clock>,
        tz: Tz,
        scheduler: Option<Scheduler>,
        origin: Option<Origin>,
    ) -> CronjobTool {
        CronjobTool {
            store,
            clock,
            tz,
            scheduler,
            origin,
            allow_private_urls: false,
        }
    }

    /// The same tool letting jobs deliver to loopback, private and link-local URLs
    /// (`web.allow_private_urls`, as for `web_extract`).
    pub fn allow_private_urls(self, allow: bool) -> CronjobTool {
        CronjobTool {
            allow_private_urls: allow,
            ..self
        }
    }

    /// Checks the `deliver` targets the model asked for: a URL target is a POST that hermes
    /// makes itself, outside the sandbox, with what the run wrote, so it obeys the rules
    /// of the session's own network access: none when commands have no network, and the
    /// address policy of `web_extract` (no loopback, private, link-local or cloud metadata
    /// addresses unless `web.allow_private_urls`; the attack pass of issue 18). The user's
    /// own `hermes cron create/edit --deliver` is not limited.
    async fn check_deliver(&self, ctx: &ToolContext, deliver: &str) -> Result<(), String> {
        let targets = crate::delivery::Target::parse_list(deliver).map_err(|e| e.to_string())?;
        for target in targets {
            let crate::delivery::Target::Webhook { url } = target else {
                continue;
            };
            if !ctx.sandbox.network {
                return Err(format!(
                    "delivery to {url} is not allowed: this session has no network \
                     (terminal.sandbox.network: false)"
                ));
            }
            if self.allow_private_urls {
                continue;
            }
            let parsed = reqwest::Url::parse(&url).map_err(|e| format!("{url}: {e}"))?;
            hermes_tools::web::ssrf::check_url(&parsed, false)
                .map_err(|e| format!("delivery to {url} is not allowed: {e}"))?;
            if let Some(host) = parsed.host_str() {
                let port = parsed.port_or_known_default().unwrap_or(443);
                let host = host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string();
                let addrs = tokio::net::lookup_host((host.as_str(), port))
                    .await
                    .map_err(|e| format!("delivery URL {url}: cannot resolve {host}: {e}"))?;
                for addr in addrs {
                    if let Some(reason) = hermes_tools::web::ssrf::forbidden_reason(addr.ip()) {
                        return Err(format!(
                            "delivery to {url} is not allowed: {host} is {} ({reason}); the \
                             user can allow private addresses with web.allow_private_urls",
                            addr.ip()
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The same tool for a session in the chat `origin` (a gateway session): jobs it creates
    /// remember that chat and deliver there by default.
    pub fn with_origin(&self, origin: Option<Origin>) -> CronjobTool {
        CronjobTool {
            origin,
            ..self.clone()
        }
    }

    /// The chat new jobs remember, if any.
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }

    /// Tells the scheduler (if this tool has one) that the jobs changed.
    fn wake(&self) {
        if let Some(s) = &self.scheduler {
            s.wake();
        }
    }

    fn job_json(&self, job: &Job) -> Value {
        json!({
            "id": job.id,
            "name": job.name,
            "schedule": job.schedule_label(),
            "schedule_meaning": job.schedule.display(self.tz),
            "state": job.state(),
            "deliver": job.deliver,
            "next_run_at": job.next_run_at.map(|t| t.with_timezone(&self.tz).to_rfc3339()),
            "last_run_at": job.last_run_at.map(|t| t.with_timezone(&self.tz).to_rfc3339()),
            "last_status": job.last_status,
            "last_error": job.last_error,
            "repeat": {"times": job.repeat.times, "completed": job.repeat.completed},
            "prompt": job.prompt,
            "skills": job.skills,
            "model": job.model,
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(JobStore, chrono::DateTime<chrono::Utc>, Tz) -> Result<T, JobStoreError>
        + Send
        + 'static,
    ) -> Result<T, String> {
        let (store, now, tz) = (self.store.clone(), self.clock.now(), self.tz);
        match tokio::task::spawn_blocking(move || f(store, now, tz)).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(e) => Err(format!("the jobs file task failed: {e}")),
        }
    }

    async fn dispatch(&self, args: &Value, ctx: &ToolContext) -> Result<Value, String> {
        let action = str_arg(args, "action").ok_or("`action` is required")?;
        let job_key = || str_arg(args, "job_id").ok_or(format!("`{action}` needs `job_id`"));
        match action.as_str() {
            "create" => {
                let new = NewJob {
                    name: str_arg(args, "name"),
                    prompt: str_arg(args, "prompt").ok_or("`create` needs `prompt`")?,
                    schedule: str_arg(args, "schedule").ok_or("`create` needs `schedule`")?,
                    skills: list_arg(args, "skills").unwrap_or_default(),
                    model: str_arg(args, "model"),
                    // From a chat, results go back to that chat unless told otherwise.
                    deliver: str_arg(args, "deliver")
                        .or_else(|| self.origin.as_ref().map(|_| "origin".to_string())),
                    repeat: u32_arg(args, "repeat"),
                    origin: self.origin.clone(),
                    script: None,
                    no_agent: false,
                    enabled_toolsets: granted_toolsets(ctx, list_arg(args, "enabled_toolsets"))?,
                    workdir: job_workdir(ctx, str_arg(args, "workdir"))?,
                    context_from: list_arg(args, "context_from"),
                    ..NewJob::default()
                };
                if let Some(d) = &new.deliver {
                    self.check_deliver(ctx, d).await?;
                }
                let job = self
                    .blocking(move |s, now, tz| s.create(new, now, tz))
                    .await?;
                self.wake();
                Ok(json!({"created": self.job_json(&job)}))
            }
            "list" => {
                let jobs = self.blocking(|s, _, _| s.list()).await?;
                let list: Vec<Value> = jobs.iter().map(|j| self.job_json(j)).collect();
                Ok(json!({"jobs": list, "time_zone": self.tz.name()}))
            }
            "update" => {
                let key = job_key()?;
                let mut patch = JobPatch {
                    name: str_arg(args, "name"),
                    prompt: str_arg(args, "prompt"),
                    schedule: str_arg(args, "schedule"),
                    skills: list_arg(args, "skills"),
                    model: str_arg(args, "model").map(|m| Some(m).filter(|m| !m.is_empty())),
                    deliver: str_arg(args, "deliver"),
                    repeat: u32_arg(args, "repeat").map(Some),
                    enabled_toolsets: None,
                    workdir: str_arg(args, "workdir").map(|w| Some(w).filter(|w| !w.is_empty())),
                    context_from: list_arg(args, "context_from").map(Some),
                    ..JobPatch::default()
                };
                let toolsets = list_arg(args, "enabled_toolsets");
                if patch == JobPatch::default() && toolsets.is_none() {
                    return Err("`update` needs at least one field to change".into());
                }
                // What the job has now, read once, when the checks below need it.
                let job = if toolsets.is_some() || patch.prompt.is_some() || patch.workdir.is_some()
                {
                    let key = key.clone();
                    Some(self.blocking(move |s, _, _| s.get(&key)).await?)
                } else {
                    None
                };
                if let Some(job) = job {
                    // A job re-prompted or re-tooled from here gets at most this session's
                    // toolsets, whatever it had (a job the user made with a terminal must
                    // not run the model's prompt with it).
                    if toolsets.is_some() || patch.prompt.is_some() {
                        let current = match toolsets {
                            Some(t) if !t.is_empty() => Some(t),
                            _ => job
                                .enabled_toolsets
                                .map(|sets| narrowed_toolsets(ctx, sets)),
                        };
                        patch.enabled_toolsets = Some(granted_toolsets(ctx, current)?);
                    }
                    // A new prompt or folder runs under the job's folder: it must lie where
                    // this session may write (a job without one gets the session's).
                    if patch.prompt.is_some() || patch.workdir.is_some() {
                        let current = patch.workdir.clone().unwrap_or(job.workdir);
                        patch.workdir = Some(job_workdir(ctx, current)?);
                    }
                }
                if let Some(d) = &patch.deliver {
                    self.check_deliver(ctx, d).await?;
                }
                let job = self
                    .blocking(move |s, now, tz| s.edit(&key, patch, now, tz))
                    .await?;
                self.wake();
                Ok(json!({"updated": self.job_json(&job)}))
            }
            "pause" => {
                let key = job_key()?;
                let reason = str_arg(args, "reason");
                let job = self
                    .blocking(move |s, now, _| s.pause(&key, reason, now))
                    .await?;
                Ok(json!({"paused": self.job_json(&job)}))
            }
            "resume" => {
                let key = job_key()?;
                let job = self
                    .blocking(move |s, now, tz| s.resume(&key, now, tz))
                    .await?;
                self.wake();
                Ok(json!({"resumed": self.job_json(&job)}))
            }
            "remove" => {
                let key = job_key()?;
                let job = self.blocking(move |s, _, _| s.remove(&key)).await?;
                Ok(json!({"removed": {"id": job.id, "name": job.name}}))
            }
            "run" => {
                let key = job_key()?;
                let scheduler = self
                    .scheduler
                    .as_ref()
                    .ok_or("running a job from here is not available; it runs on its schedule")?;
                let job = self.blocking(move |s, _, _| s.get(&key)).await?;
                match scheduler.run_now(&job.id, &ctx.cancel).await {
                    Ok(Some(rec)) => {
                        let text = rec
                            .output_path
                            .as_ref()
                            .and_then(|p| std::fs::read_to_string(ctx.home.root().join(p)).ok());
                        Ok(json!({"ran": {
                            "job_id": rec.job_id,
                            "status": rec.status,
                            "error": rec.error,
                            "output_file": rec.output_path,
                            "output": text.map(|t| truncate(&t, 4000)),
                            "deliveries": rec.deliveries,
                        }}))
                    }
                    Ok(None) => Err(format!(
                        "job {} is already running; wait for that run to finish",
                        job.id
                    )),
                    Err(e) => Err(e.to_string()),
                }
            }
            other => Err(format!(
                "unknown action `{other}`; use create, list, update, pause, resume, remove or run"
            )),
        }
    }
}

/// The folder a job the agent creates or re-prompts works in (issue 18): the runs of a job
/// are sandboxed with that folder as their workspace, so it must lie where the calling
/// session may write now — its working directory or one of its writable folders — or the
/// agent could widen its own sandbox by scheduling itself elsewhere (`/`, `~`). Without
/// one, the job gets the session's working directory rather than the scheduler's. With the
/// sandbox `off` the folder is taken as given.
///
/// # Errors
/// For the model: the folder does not exist, or lies outside the session's sandbox.
fn job_workdir(ctx: &ToolContext, given: Option<String>) -> Result<Option<String>, String> {
    let policy = ctx.policy();
    if policy.mode == hermes_protocol::config::SandboxMode::Off {
        return Ok(given);
    }
    let cwd = std::fs::canonicalize(&ctx.cwd).unwrap_or_else(|_| ctx.cwd.clone());
    let Some(given) = given else {
        return Ok(Some(cwd.display().to_string()));
    };
    let dir = std::fs::canonicalize(ctx.resolve_path(&given))
        .map_err(|e| format!("workdir `{given}` cannot be used: {e}"))?;
    if !dir.is_dir() {
        return Err(format!("workdir `{given}` is not a folder"));
    }
    let allowed: Vec<&std::path::Path> = std::iter::once(cwd.as_path())
        .chain(policy.writable.iter().map(std::path::PathBuf::as_path))
        .collect();
    if allowed
        .iter()
        .any(|a| hermes_tools::sandbox::tree::is_within(&dir, a))
    {
        return Ok(Some(dir.display().to_string()));
    }
    Err(format!(
        "workdir `{given}` is outside this session's sandbox: a job may work only where this \
         session may write ({}); the user can choose another folder with `hermes cron edit \
         --workdir`",
        allowed
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// This session's toolsets (`None` when the context does not say, in tests).
fn session_toolsets(ctx: &ToolContext) -> Option<Vec<String>> {
    ctx.session_toolsets.as_ref().map(|sets| sets.to_vec())
}

/// Of `sets`, those a headless run can have at all ([`crate::CRON_TOOLSET`]'s).
fn runnable(sets: &[String]) -> Vec<String> {
    sets.iter()
        .filter(|s| crate::CRON_TOOLSET.includes.contains(&s.as_str()))
        .cloned()
        .collect()
}

/// `sets` without the toolsets this session does not have.
fn narrowed_toolsets(ctx: &ToolContext, sets: Vec<String>) -> Vec<String> {
    match session_toolsets(ctx) {
        Some(own) => sets.into_iter().filter(|s| own.contains(s)).collect(),
        None => sets,
    }
}

/// The toolsets a job the agent creates or changes runs with (the attack pass of issue 18,
/// as `delegate_task` does for subagents): the `requested` ones when this session has each
/// of them, else all of this session's. Never the cron default, which may hold more (a
/// session limited to `file` and `cronjob` must not schedule a run with a terminal).
///
/// # Errors
/// For the model: a requested toolset is not one of this session's, or the session has
/// no toolset a job could use.
fn granted_toolsets(
    ctx: &ToolContext,
    requested: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, String> {
    let Some(own) = session_toolsets(ctx) else {
        return Ok(requested);
    };
    match requested.filter(|r| !r.is_empty()) {
        Some(r) => {
            if let Some(missing) = r.iter().find(|t| !own.contains(t)) {
                return Err(format!(
                    "toolset `{missing}` is not one of this session's, and a job gets only \
                     toolsets the session that makes it has: {}",
                    own.join(", ")
                ));
            }
            Ok(Some(r))
        }
        None => {
            let runnable = runnable(&own);
            if runnable.is_empty() {
                return Err(format!(
                    "none of this session's toolsets ({}) is one a scheduled run can have \
                     ({}); the user can make the job with `hermes cron create`",
                    own.join(", "),
                    crate::CRON_TOOLSET.includes.join(", ")
                ));
            }
            Ok(Some(runnable))
        }
    }
}

fn str_arg(args: &Value, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn u32_arg(args: &Value, key: &str) -> Option<u32> {
    args.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

fn list_arg(args: &Value, key: &str) -> Option<Vec<String>> {
    match args.get(key)? {
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Value::String(s) => Some(
            s.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        _ => None,
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max_chars).collect();
    s.push_str("\n[… truncated; read the output file for the rest]");
    s
}

#[async_trait::async_trait]
impl Tool for CronjobTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CRONJOB_TOOLSET.to_string(),
            description: CRONJOB_TOOL_PROMPT.trim().to_string(),
            parameters: json!({"type": "object", "properties": {
                "action": {"type": "string", "enum": ["create", "list", "update", "pause", "resume", "remove", "run"]},
                "job_id": {"type": "string", "description": "Job id (or exact name) for update, pause, resume, remove and run."},
                "prompt": {"type": "string", "description": "The complete task for the scheduled run (create, update)."},
                "schedule": {"type": "string", "description": "When it runs: `every 2h`, `0 9 * * *`, `2026-03-04T09:00` or `45m`."},
                "name": {"type": "string", "description": "A short name for the job."},
                "deliver": {"type": "string", "description": "Where the result goes; default `local`."},
                "skills": {"type": "array", "items": {"type": "string"}, "description": "Skills the run loads."},
                "model": {"type": "string", "description": "A different model for this job's runs."},
                "repeat": {"type": "integer", "minimum": 1, "description": "Stop after this many runs."},
                "enabled_toolsets": {"type": "array", "items": {"type": "string"}, "description": "Only these toolsets in the run (for example `web`, `file`)."},
                "workdir": {"type": "string", "description": "Absolute directory the run works in."},
                "context_from": {"type": "array", "items": {"type": "string"}, "description": "Job ids whose latest output is given to the run first."},
                "reason": {"type": "string", "description": "Why the job is paused (pause)."}
            }, "required": ["action"]}),
        }
    }

    fn toolset(&self) -> &'static str {
        CRONJOB_TOOLSET
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        match self.dispatch(&args, ctx).await {
            Ok(v) => ToolOutput::ok(v.to_string()),
            Err(e) => ToolOutput::error(e),
        }
    }
}
