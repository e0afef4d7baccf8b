//! The job record of `HERMES_HOME/cron/jobs.json` (FEATURES §1 Cron field names) and the
//! options used to create one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::record;
use crate::schedule::JobSchedule;

/// How many times a job runs: `times = None` means forever; `completed` counts claimed runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    /// Total runs wanted (`None`: no limit).
    #[serde(default)]
    pub times: Option<u32>,
    /// Runs started so far by the scheduler (manual runs do not count).
    #[serde(default)]
    pub completed: u32,
}

/// Where a job was created from, for `origin` delivery (a gateway chat).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Platform name (`telegram`, `discord`, …).
    pub platform: String,
    /// Chat id on that platform.
    pub chat_id: String,
    /// Thread/topic id, when the chat has threads (written as `null` otherwise, as Python does).
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Other keys Python stores (`chat_name`, `user_id`, …), kept as they are.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A run in progress: claimed by one scheduler (or a manual run) until `until`.
/// A lease that expired without being released marks an interrupted run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Run id of the claimed run.
    pub run_id: String,
    /// Who claimed it (`<host>:<pid>:<random>`).
    pub owner: String,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// When the lease lapses if the run never finishes (start + timeout + margin).
    pub until: DateTime<Utc>,
}

/// One scheduled job, in the record shape Python Hermes 0.19.0 uses (`cron/jobs.py`
/// `create_job`), so both programs read and run each other's jobs. Keys hermes does not know
/// are kept in [`Job::extra`] and written back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Short unique id (12 hex chars).
    pub id: String,
    /// Display name (defaults to the start of the prompt).
    #[serde(default, deserialize_with = "record::null_default")]
    pub name: String,
    /// What the headless agent is asked to do.
    #[serde(default, deserialize_with = "record::null_default")]
    pub prompt: String,
    /// When it runs (`{"kind": "interval", "minutes": 30, "display": "every 30m"}`, …).
    pub schedule: JobSchedule,
    /// The schedule as Python shows it (`every 120m`, `0 9 * * *`, `once at …`); written by
    /// hermes for Python's `hermes cron list`.
    #[serde(default)]
    pub schedule_display: Option<String>,
    /// The schedule as the user wrote it to hermes (hermes only; Python keeps it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub schedule_text: String,
    /// Skills whose SKILL.md is given to the agent, in order.
    #[serde(default, deserialize_with = "record::names")]
    pub skills: Vec<String>,
    /// Python's legacy single skill: always the first of [`Job::skills`] when written.
    #[serde(default)]
    pub skill: Option<String>,
    /// Model override for this job.
    #[serde(default)]
    pub model: Option<String>,
    /// Provider override for this job (a provider id, `custom`, `custom:<name>`).
    #[serde(default)]
    pub provider: Option<String>,
    /// Base URL override for this job (OpenAI-compatible endpoint).
    #[serde(default)]
    pub base_url: Option<String>,
    /// What an unpinned provider resolved to when the job was made (Python's drift guard,
    /// [`crate::drift`]); `None` when pinned, for script-only jobs and in older files.
    #[serde(default)]
    pub provider_snapshot: Option<String>,
    /// The default model an unpinned job would have used when it was made (same guard).
    #[serde(default)]
    pub model_snapshot: Option<String>,
    /// A script under `HERMES_HOME/scripts/` (`.sh`/`.bash` run with bash, anything else with
    /// Python) whose stdout is added as context, or is the whole output with `no_agent`.
    /// Older hermes jobs may hold a shell command line instead (see the runner).
    #[serde(default)]
    pub script: Option<String>,
    /// Run only `script`, no agent.
    #[serde(default, deserialize_with = "record::null_default")]
    pub no_agent: bool,
    /// Jobs whose latest output is given to this job's run as context.
    #[serde(default, deserialize_with = "record::opt_names")]
    pub context_from: Option<Vec<String>>,
    /// Toolsets the run is restricted to (`None`: the cron default).
    #[serde(default, deserialize_with = "record::opt_names")]
    pub enabled_toolsets: Option<Vec<String>>,
    /// Absolute directory the run works in (tools and scripts); `None`: the scheduler's.
    #[serde(default)]
    pub workdir: Option<String>,
    /// Delivery targets, comma-separated (`local`, `origin`, `telegram:123`, a URL).
    #[serde(default = "default_deliver", deserialize_with = "record::deliver")]
    pub deliver: String,
    /// Paused jobs have `enabled = false` (and `state = "paused"`).
    #[serde(default = "default_true", deserialize_with = "record::enabled")]
    pub enabled: bool,
    /// Python's state word: `scheduled`, `paused`, `completed`, `error`.
    #[serde(default)]
    pub state: Option<String>,
    /// When the job was paused.
    #[serde(default, with = "record::opt_time")]
    pub paused_at: Option<DateTime<Utc>>,
    /// Why it was paused, if a reason was given.
    #[serde(default)]
    pub paused_reason: Option<String>,
    /// Run count limit.
    #[serde(default, deserialize_with = "record::null_default")]
    pub repeat: Repeat,
    /// Next due time; `None` when nothing is left to run.
    #[serde(default, with = "record::opt_time")]
    pub next_run_at: Option<DateTime<Utc>>,
    /// Start time of the latest run (scheduled or manual).
    #[serde(default, with = "record::opt_time")]
    pub last_run_at: Option<DateTime<Utc>>,
    /// Status of the latest finished run: hermes writes `ok`, `silent`, `failed`, `timeout`,
    /// `interrupted`; Python writes `ok` or `error`.
    #[serde(default)]
    pub last_status: Option<String>,
    /// Error of the latest run, if it failed.
    #[serde(default)]
    pub last_error: Option<String>,
    /// Delivery failures of the latest run (`target: reason`, `; `-joined).
    #[serde(default)]
    pub last_delivery_error: Option<String>,
    /// Creation time.
    #[serde(with = "record::time")]
    pub created_at: DateTime<Utc>,
    /// Chat the job was created from (for `origin`).
    #[serde(default)]
    pub origin: Option<Origin>,
    /// The run in progress, if any (hermes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// Every other key of the record (Python's `run_claim`, `attach_to_session`, …),
    /// written back as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Job {
    /// Whether the job used up its repeat limit (`repeat.times` > 0 and `completed` reached
    /// it; Python treats a missing, zero or negative `times` as no limit).
    pub fn repeat_exhausted(&self) -> bool {
        self.repeat
            .times
            .is_some_and(|t| t > 0 && self.repeat.completed >= t)
    }
}

/// How long a Python `run_claim` keeps a one-shot from being started again (Python's
/// `ONESHOT_RUN_CLAIM_TTL_SECONDS` floor with the default inactivity timeout: 3 × 600 s).
pub const PYTHON_RUN_CLAIM_TTL: chrono::Duration = chrono::Duration::seconds(1800);

fn default_deliver() -> String {
    "local".to_string()
}

fn default_true() -> bool {
    true
}

/// What a user gives to create a job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewJob {
    /// Name (`None`: from the prompt).
    pub name: Option<String>,
    /// The task.
    pub prompt: String,
    /// Schedule text (see [`Schedule::parse`]).
    pub schedule: String,
    /// Skills to load.
    pub skills: Vec<String>,
    /// Model override.
    pub model: Option<String>,
    /// Delivery targets (`None`: `local`).
    pub deliver: Option<String>,
    /// Run count limit (`None`: once for one-shots, forever otherwise).
    pub repeat: Option<u32>,
    /// Chat of origin.
    pub origin: Option<Origin>,
    /// Script command.
    pub script: Option<String>,
    /// Run the script only.
    pub no_agent: bool,
    /// Provider override.
    pub provider: Option<String>,
    /// Base URL override.
    pub base_url: Option<String>,
    /// Toolsets to restrict the run to.
    pub enabled_toolsets: Option<Vec<String>>,
    /// Absolute working directory of the run.
    pub workdir: Option<String>,
    /// Jobs whose latest output is given as context.
    pub context_from: Option<Vec<String>>,
}

/// Changes to an existing job (`hermes cron edit`, the `cronjob` tool's `update`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobPatch {
    /// New name.
    pub name: Option<String>,
    /// New prompt.
    pub prompt: Option<String>,
    /// New schedule text (recomputes `next_run_at`).
    pub schedule: Option<String>,
    /// New skills list.
    pub skills: Option<Vec<String>>,
    /// New model (`Some(None)` clears it).
    pub model: Option<Option<String>>,
    /// New delivery targets.
    pub deliver: Option<String>,
    /// New run limit (`Some(None)` removes it).
    pub repeat: Option<Option<u32>>,
    /// New script (`Some(None)` clears it).
    pub script: Option<Option<String>>,
    /// New `no_agent`.
    pub no_agent: Option<bool>,
    /// New provider (`Some(None)` clears it).
    pub provider: Option<Option<String>>,
    /// New base URL (`Some(None)` clears it).
    pub base_url: Option<Option<String>>,
    /// New toolset restriction (`Some(None)` clears it).
    pub enabled_toolsets: Option<Option<Vec<String>>>,
    /// New working directory (`Some(None)` clears it).
    pub workdir: Option<Option<String>>,
    /// New context sources (`Some(None)` clears them).
    pub context_from: Option<Option<Vec<String>>>,
}

impl Job {
    /// Status word for listings: `running`, `paused`, `done`, `error`, `scheduled`. Python's
    /// `state` counts: `paused` and `completed` (done) stop a job as `enabled = false` does.
    pub fn state(&self) -> &'static str {
        if self.lease.is_some() {
            "running"
        } else if self.is_paused() {
            "paused"
        } else if self.next_run_at.is_none() || self.state.as_deref() == Some("completed") {
            "done"
        } else if self.state.as_deref() == Some("error") {
            "error"
        } else {
            "scheduled"
        }
    }

    /// Paused by either program: `enabled = false` or `state = "paused"`.
    pub fn is_paused(&self) -> bool {
        !self.enabled || self.state.as_deref() == Some("paused")
    }

    /// Whether the scheduler may start this job on its schedule: not paused, not completed,
    /// no run in progress.
    pub fn is_runnable(&self) -> bool {
        !self.is_paused() && self.state.as_deref() != Some("completed") && self.lease.is_none()
    }

    /// Whether Python Hermes is running this job now: a `run_claim` (`{"at": <ISO time>,
    /// "by": <machine>}`, stamped by Python's `get_due_jobs` on a one-shot it dispatches and
    /// cleared by its `mark_job_run`) younger than Python's default stale-claim TTL,
    /// [`PYTHON_RUN_CLAIM_TTL`] (1,800 s).
    pub fn python_claim_active(&self, now: DateTime<Utc>) -> bool {
        let Some(claim) = self
            .extra
            .get("run_claim")
            .and_then(serde_json::Value::as_object)
        else {
            return false;
        };
        match claim
            .get("at")
            .and_then(serde_json::Value::as_str)
            .and_then(record::parse_time)
        {
            Some(at) => now - at < PYTHON_RUN_CLAIM_TTL,
            // A claim without a readable time: treat as live rather than risk a double run.
            None => true,
        }
    }

    /// The schedule text for listings: what the user wrote to hermes, else Python's
    /// `schedule_display`, else the schedule's own `display`.
    pub fn schedule_label(&self) -> String {
        // hermes' own text, while it still says what the job does: Python keeps the key but
        // does not update it when it edits the schedule (issue 17 switch pass of stop 31).
        if !self.schedule_text.is_empty()
            && crate::schedule::Schedule::parse(
                &self.schedule_text,
                chrono::Utc::now(),
                chrono_tz::Tz::UTC,
            )
            .is_ok_and(|s| s == *self.schedule.schedule())
        {
            return self.schedule_text.clone();
        }
        if let Some(d) = self
            .schedule_display
            .as_deref()
            .filter(|d| !d.trim().is_empty())
        {
            return d.to_string();
        }
        self.schedule
            .extra()
            .get("display")
            .and_then(serde_json::Value::as_str)
            .map_or_else(
                || self.schedule.python_display(chrono_tz::Tz::UTC),
                str::to_string,
            )
    }

    /// Sets the fields Python derives on every write: `skill` = the first skill, and
    /// `state` matching `enabled` and `next_run_at`.
    pub(crate) fn align_python_fields(&mut self) {
        self.skill = self.skills.first().cloned();
        let state = if !self.enabled || self.state.as_deref() == Some("paused") {
            "paused"
        } else if self.next_run_at.is_none() && !self.schedule.is_recurring() {
            "completed"
        } else if self.state.as_deref() == Some("error") && self.next_run_at.is_none() {
            "error"
        } else {
            "scheduled"
        };
        self.state = Some(state.to_string());
    }
}

/// Name from the first line of a prompt, at most 40 chars.
pub(crate) fn name_from_prompt(prompt: &str) -> String {
    let first = prompt.lines().next().unwrap_or("").trim();
    let mut name: String = first.chars().take(40).collect();
    if first.chars().count() > 40 {
        name.push('…');
    }
    if name.is_empty() {
        "job".to_string()
    } else {
        name
    }
}
