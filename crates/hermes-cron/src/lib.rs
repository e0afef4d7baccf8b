//! # hermes-cron
//!
//! Owns scheduled work (FEATURES §1 Cron): schedule parsing and next-run computation in an
//! IANA time zone ([`Schedule`]), the jobs file `HERMES_HOME/cron/jobs.json` under a
//! cross-process lock ([`JobStore`]), exactly-once claiming of due runs with a persisted lease
//! and the missed-run policy ([`claim`]), the scheduler task ([`Scheduler`]), headless agent
//! runs ([`AgentRunner`]), output files, delivery ([`Deliverer`]) and run history in
//! `state.db` ([`RunLog`]).
//!
//! Must not: talk to messaging platforms itself (the gateway supplies a [`PlatformSender`]),
//! render terminal output, or resolve which model to use (the front end passes a factory).

pub mod claim;
mod clock;
mod delivery;
pub mod drift;
pub mod executions;
mod headless;
mod history;
mod job;
mod listing;
mod record;
mod schedule;
mod scheduler;
mod store;
mod tool;

pub use chrono_tz::Tz;
pub use claim::{Claim, Finish, claim_due, claim_manual, finish, next_slot};
pub use clock::{Clock, SystemClock, TokioClock};
pub use delivery::{
    BadTarget, Deliverer, DeliveryResult, NO_GATEWAY, Outgoing, PlatformMessage, PlatformSender,
    Target,
};
pub use drift::{DefaultsResolver, InferenceDefaults};
pub use headless::{
    AgentRunner, CONTEXT_FROM_MAX_CHARS, CRON_PREAMBLE, CRON_TOOLSET, ClientFactory,
    HeadlessOptions, ModelChoice,
};
pub use history::{IMPORTED_RUNS_FILE, ImportReport, PENDING_RUNS_FILE, RunLog, RunRecord};
pub use job::{Job, JobPatch, Lease, NewJob, Origin, PYTHON_RUN_CLAIM_TTL, Repeat};
pub use listing::{jobs_table, runs_table, status_text};
pub use schedule::{
    JobSchedule, ONE_SHOT_PAST_GRACE, Schedule, ScheduleError, parse_duration_minutes,
    parse_timezone,
};
pub use scheduler::{
    INACTIVITY_TIMEOUT, JobRunner, MAX_SLEEP, RunOutput, RunStatus, SILENT_MARKER, Scheduler,
    SchedulerBeat, SchedulerConfig, TickReport,
};
pub use store::{JOBS_LOCK_FILE, JobStore, JobStoreError, JobsFile, parse_jobs_file};
pub use tool::{CRONJOB_TOOL_PROMPT, CRONJOB_TOOLSET, CronjobTool};

/// A new 12-hex-char id (job ids, run ids).
pub(crate) fn new_id() -> String {
    format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// `cron.max_parallel_jobs`, `cron.inactivity_timeout` (and [`CronSettings::scheduler_enabled`]) from `config.yaml`'s free-form `cron:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSettings {
    /// Most runs at once (default 1).
    pub max_parallel_jobs: usize,
    /// `cron.inactivity_timeout` in seconds: a run with no agent activity for this long is
    /// stopped (default [`INACTIVITY_TIMEOUT`], 600 s, FEATURES §1).
    pub inactivity_timeout: std::time::Duration,
}

impl CronSettings {
    /// Reads the `cron:` section (`None`: defaults). Unknown keys are ignored.
    pub fn from_yaml(section: Option<&yaml_serde::Value>) -> CronSettings {
        let n = section
            .and_then(|v| v.get("max_parallel_jobs"))
            .and_then(yaml_serde::Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(1);
        let inactivity_timeout = section
            .and_then(|v| v.get("inactivity_timeout"))
            .and_then(yaml_serde::Value::as_u64)
            .filter(|s| *s > 0)
            .map_or(INACTIVITY_TIMEOUT, std::time::Duration::from_secs);
        CronSettings {
            max_parallel_jobs: n,
            inactivity_timeout,
        }
    }

    /// `cron.enabled` (default true): whether `hermes gateway run` runs its own scheduler.
    /// `false` leaves due jobs to `hermes cron tick` (for example from the system's crontab).
    /// Accepts a YAML boolean or one of `true/false/yes/no/on/off/1/0` as text.
    ///
    /// Errors: any other value, as `cron.enabled: …` naming what was found.
    pub fn scheduler_enabled(section: Option<&yaml_serde::Value>) -> Result<bool, String> {
        let Some(value) = section.and_then(|v| v.get("enabled")) else {
            return Ok(true);
        };
        if let Some(b) = value.as_bool() {
            return Ok(b);
        }
        let text = value
            .as_str()
            .map(|s| s.trim().to_ascii_lowercase())
            .or_else(|| value.as_u64().map(|n| n.to_string()));
        match text.as_deref() {
            Some("true" | "yes" | "on" | "1") => Ok(true),
            Some("false" | "no" | "off" | "0") => Ok(false),
            _ => Err(format!(
                "cron.enabled: expected true or false, got {}",
                yaml_serde::to_string(value)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| "a value that is not a boolean".to_string())
            )),
        }
    }
}
