//! The job record of `HERMES_HOME/cron/jobs.json` (FEATURES §1 Cron field names) and the
//! options used to create one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::schedule::Schedule;

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Platform name (`telegram`, `discord`, …).
    pub platform: String,
    /// Chat id on that platform.
    pub chat_id: String,
    /// Thread/topic id, when the chat has threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
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

/// One scheduled job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Short unique id (12 hex chars).
    pub id: String,
    /// Display name (defaults to the start of the prompt).
    pub name: String,
    /// What the headless agent is asked to do.
    pub prompt: String,
    /// When it runs.
    pub schedule: Schedule,
    /// The schedule as the user wrote it (shown by `hermes cron list`).
    #[serde(default)]
    pub schedule_text: String,
    /// Skills whose SKILL.md is given to the agent.
    #[serde(default)]
    pub skills: Vec<String>,
    /// Model override for this job.
    #[serde(default)]
    pub model: Option<String>,
    /// Delivery targets, comma-separated (`local`, `origin`, `telegram:123`, a URL).
    #[serde(default = "default_deliver")]
    pub deliver: String,
    /// Paused jobs have `enabled = false`.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Run count limit.
    #[serde(default)]
    pub repeat: Repeat,
    /// Next due time; `None` when nothing is left to run.
    #[serde(default)]
    pub next_run_at: Option<DateTime<Utc>>,
    /// Start time of the latest run (scheduled or manual).
    #[serde(default)]
    pub last_run_at: Option<DateTime<Utc>>,
    /// Status of the latest finished run: `ok`, `silent`, `failed`, `timeout`, `interrupted`.
    #[serde(default)]
    pub last_status: Option<String>,
    /// Error of the latest run, if it failed.
    #[serde(default)]
    pub last_error: Option<String>,
    /// Delivery failures of the latest run (`target: reason`, `; `-joined).
    #[serde(default)]
    pub last_delivery_error: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Chat the job was created from (for `origin`).
    #[serde(default)]
    pub origin: Option<Origin>,
    /// Shell command whose stdout is added as context (or is the whole output with
    /// `no_agent`).
    #[serde(default)]
    pub script: Option<String>,
    /// Run only `script`, no agent.
    #[serde(default)]
    pub no_agent: bool,
    /// The run in progress, if any.
    #[serde(default)]
    pub lease: Option<Lease>,
}

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
}

impl Job {
    /// Status word for listings: `paused`, `running`, `done`, `scheduled`.
    pub fn state(&self) -> &'static str {
        if self.lease.is_some() {
            "running"
        } else if !self.enabled {
            "paused"
        } else if self.next_run_at.is_none() {
            "done"
        } else {
            "scheduled"
        }
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
