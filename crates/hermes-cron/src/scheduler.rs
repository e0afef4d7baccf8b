//! The scheduler: claims due runs ([`crate::claim`]), executes them through a [`JobRunner`]
//! with at most `max_parallel` at once, saves the output, delivers it and records the run.
//! [`Scheduler::run_forever`] is one task (inside `hermes gateway run`) that sleeps until the
//! next due time, or until [`Scheduler::wake`] says the jobs changed in this process, re-reading
//! the jobs file at least every [`MAX_SLEEP`] to see jobs added by other processes; it leaves a
//! heartbeat in `cron/scheduler.json` ([`SchedulerBeat`]) for `hermes cron status`.
//! [`Scheduler::tick`] is one pass for `hermes cron tick` under system cron. Both claim runs
//! through the same persisted lease in `jobs.json` ([`crate::claim`]), so a gateway scheduler
//! and system-cron ticks on one home never fire one due time twice (C39). Finished runs go to
//! the run history in `state.db` ([`RunLog`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use hermes_store::SessionStore;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::claim::{self, Claim, Finish};
use crate::clock::Clock;
use crate::delivery::{Deliverer, Outgoing, Target};
use crate::history::{RunLog, RunRecord};
use crate::job::Job;
use crate::store::{JobStore, JobStoreError};

/// The longest sleep between two reads of the jobs file.
pub const MAX_SLEEP: Duration = Duration::from_secs(60);
/// Inactivity timeout of a headless run (FEATURES §1: 600 s).
pub const INACTIVITY_TIMEOUT: Duration = Duration::from_secs(600);
/// The exact reply that delivers nothing (FEATURES §1).
pub const SILENT_MARKER: &str = "[SILENT]";

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// `ok`, `failed` or `timeout`.
    pub status: RunStatus,
    /// The final text (the agent's reply, or the script's stdout).
    pub text: String,
    /// Error text when not ok.
    pub error: Option<String>,
    /// The agent session id, if an agent ran.
    pub session_id: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Finished with a reply.
    Ok,
    /// Failed (model error, script error, …).
    Failed,
    /// No activity for the inactivity timeout.
    Timeout,
}

/// Executes one job run (the headless agent in production; a fake in tests).
#[async_trait::async_trait]
pub trait JobRunner: Send + Sync {
    /// Runs `job` once; `cancel` fires when the scheduler stops.
    async fn run(&self, job: &Job, cancel: CancellationToken) -> RunOutput;
}

/// Settings of a scheduler.
#[derive(Clone)]
pub struct SchedulerConfig {
    /// Time zone of cron expressions (`config.yaml` `timezone`).
    pub tz: Tz,
    /// Most runs at once (`cron.max_parallel_jobs`, default 1).
    pub max_parallel: usize,
    /// How long a lease lasts before a run counts as interrupted (default 6 h).
    pub lease_for: chrono::Duration,
    /// This scheduler's identity in leases.
    pub owner: String,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            tz: Tz::UTC,
            max_parallel: 1,
            lease_for: chrono::Duration::hours(6),
            owner: crate::claim::lease_owner(),
        }
    }
}

/// One scheduler over one hermes home's jobs.
#[derive(Clone)]
pub struct Scheduler {
    store: JobStore,
    log: RunLog,
    wake: Arc<tokio::sync::Notify>,
    clock: Arc<dyn Clock>,
    runner: Arc<dyn JobRunner>,
    deliverer: Deliverer,
    config: SchedulerConfig,
}

/// Claim scope of fired due times in the session store ([`Scheduler::tick`]).
pub const FIRE_SCOPE: &str = "cron";

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickReport {
    /// The runs executed, in claim order.
    pub runs: Vec<RunRecord>,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, JobStoreError> + Send + 'static,
) -> Result<T, JobStoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| JobStoreError::Io {
            path: "cron".into(),
            source: std::io::Error::other(e.to_string()),
        })?
}

impl Scheduler {
    /// A scheduler for the jobs of `store` that records runs in `history` (the home's
    /// `state.db`).
    pub fn new(
        store: JobStore,
        history: Arc<SessionStore>,
        clock: Arc<dyn Clock>,
        runner: Arc<dyn JobRunner>,
        deliverer: Deliverer,
        config: SchedulerConfig,
    ) -> Scheduler {
        Scheduler {
            log: RunLog::new(store.clone(), history),
            wake: Arc::new(tokio::sync::Notify::new()),
            store,
            clock,
            runner,
            deliverer,
            config,
        }
    }

    /// Claims and runs every due job (at most `max_parallel` at a time; the rest are
    /// claimed by the following passes of the same tick), and returns what ran.
    pub async fn tick(&self, cancel: &CancellationToken) -> Result<TickReport, JobStoreError> {
        let mut report = TickReport::default();
        loop {
            let now = self.clock.now();
            let (store, tz, owner, lease, limit) = (
                self.store.clone(),
                self.config.tz,
                self.config.owner.clone(),
                self.config.lease_for,
                self.config.max_parallel.max(1),
            );
            let claims =
                blocking(move || claim::claim_due(&store, now, tz, &owner, lease, limit)).await?;
            if claims.is_empty() {
                return Ok(report);
            }
            let claims = self.fire_once(claims).await?;
            let mut set = tokio::task::JoinSet::new();
            for c in claims {
                let me = self.clone();
                let cancel = cancel.clone();
                set.spawn(async move { me.execute(c, cancel).await });
            }
            while let Some(r) = set.join_next().await {
                match r {
                    Ok(Ok(rec)) => report.runs.push(rec),
                    Ok(Err(e)) => return Err(e),
                    Err(e) => tracing::error!(error = %e, "cron run task failed"),
                }
            }
            if cancel.is_cancelled() {
                return Ok(report);
            }
        }
    }

    /// Keeps the claims whose due time no other scheduler on the same session store fired
    /// (issue 21 item 4: replicas with their own `jobs.json` copies still fire each due
    /// time once): each due time is claimed in the store as `cron` /
    /// `<job id>@<due time>`; a due time claimed before is not run here, and its file lease
    /// is given back ([`claim::abandon`]). When the store cannot answer, the run goes ahead
    /// (a missed run is worse than a doubtful one; the file lease still holds on one host).
    async fn fire_once(&self, claims: Vec<Claim>) -> Result<Vec<Claim>, JobStoreError> {
        let mut kept = Vec::with_capacity(claims.len());
        for c in claims {
            let Some(due) = c.due_at else {
                kept.push(c);
                continue;
            };
            let key = format!("{}@{}", c.job.id, due.to_rfc3339());
            let (db, owner) = (self.log.db().clone(), self.config.owner.clone());
            let first = blocking(move || Ok(db.claim(FIRE_SCOPE, &key, &owner, None))).await?;
            match first {
                Ok(true) => kept.push(c),
                Ok(false) => {
                    tracing::info!(job = %c.job.id, due = %due, "due time already fired by another scheduler; skipped");
                    let (store, job_id, run_id) =
                        (self.store.clone(), c.job.id.clone(), c.run_id.clone());
                    blocking(move || claim::abandon(&store, &job_id, &run_id)).await?;
                }
                Err(e) => {
                    tracing::warn!(job = %c.job.id, error = %e, "could not claim the due time in the session store; running it");
                    kept.push(c);
                }
            }
        }
        Ok(kept)
    }

    /// Runs job `key` now (`hermes cron run`), leaving its schedule unchanged (C41). Returns
    /// `None` when a run of that job is already in progress.
    pub async fn run_now(
        &self,
        key: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<RunRecord>, JobStoreError> {
        let now = self.clock.now();
        let (store, key, owner, lease) = (
            self.store.clone(),
            key.to_string(),
            self.config.owner.clone(),
            self.config.lease_for,
        );
        let claim = blocking(move || claim::claim_manual(&store, &key, now, &owner, lease)).await?;
        match claim {
            Some(c) => Ok(Some(self.execute(c, cancel.clone()).await?)),
            None => Ok(None),
        }
    }

    /// The run history this scheduler writes.
    pub fn history(&self) -> &RunLog {
        &self.log
    }

    /// The jobs changed (created, edited, resumed in this process): [`Scheduler::run_forever`]
    /// re-reads them now instead of at the end of its sleep. Shared by clones; a wake that
    /// comes while a tick runs is kept for after it.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Ticks, then sleeps until the earliest `next_run_at` (at most [`MAX_SLEEP`]) or a
    /// [`Scheduler::wake`], until `cancel`. Writes the heartbeat before each sleep.
    pub async fn run_forever(&self, cancel: CancellationToken) {
        let started_at = self.clock.now();
        while !cancel.is_cancelled() {
            if let Err(e) = self.tick(&cancel).await {
                tracing::warn!(error = %e, "cron tick failed");
            }
            let beat = SchedulerBeat {
                owner: self.config.owner.clone(),
                pid: std::process::id(),
                started_at,
                seen_at: self.clock.now(),
            };
            let store = self.store.clone();
            if let Err(e) = blocking(move || beat.write(&store)).await {
                tracing::debug!(error = %e, "cron heartbeat not written");
            }
            let store = self.store.clone();
            let next = blocking(move || store.list()).await.ok().and_then(|jobs| {
                jobs.iter()
                    .filter(|j| j.is_runnable())
                    .filter_map(|j| j.next_run_at)
                    .min()
            });
            let wait = next
                .map(|t| (t - self.clock.now()).to_std().unwrap_or(Duration::ZERO))
                .unwrap_or(MAX_SLEEP)
                .min(MAX_SLEEP);
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
                () = self.wake.notified() => {}
            }
        }
    }

    async fn execute(
        &self,
        c: Claim,
        cancel: CancellationToken,
    ) -> Result<RunRecord, JobStoreError> {
        let started = tokio::time::Instant::now();
        let out = self.runner.run(&c.job, cancel).await;
        let silent = out.status == RunStatus::Ok && out.text.trim() == SILENT_MARKER;
        let status = match (out.status, silent) {
            (RunStatus::Ok, true) => "silent",
            (RunStatus::Ok, false) => "ok",
            (RunStatus::Failed, _) => "failed",
            (RunStatus::Timeout, _) => "timeout",
        };
        hermes_telemetry::metrics().cron_run(status);
        let output_path = self.save_output(&c, status, &out).await;
        let deliveries = if silent {
            Vec::new()
        } else {
            let text = match out.status {
                RunStatus::Ok => out.text.clone(),
                _ => format!(
                    "Cron job \"{}\" {status}: {}",
                    c.job.name,
                    out.error.clone().unwrap_or_default()
                ),
            };
            let targets = Target::parse_list(&c.job.deliver).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "bad delivery target; saving locally");
                vec![Target::Local]
            });
            let outgoing = Outgoing {
                job_id: &c.job.id,
                job_name: &c.job.name,
                run_id: &c.run_id,
                status,
                text: &text,
                output_path: output_path.as_deref(),
                origin: c.job.origin.as_ref(),
            };
            self.deliverer.deliver(&targets, &outgoing).await
        };
        let failed: Vec<String> = deliveries
            .iter()
            .filter(|d| !d.ok)
            .map(|d| format!("{}: {}", d.target, d.detail))
            .collect();
        let record = RunRecord {
            run_id: c.run_id.clone(),
            job_id: c.job.id.clone(),
            job_name: c.job.name.clone(),
            due_at: c.due_at,
            started_at: c.started_at,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            status: status.to_string(),
            error: out.error.clone(),
            output_path,
            deliveries,
            session_id: out.session_id.clone(),
        };
        let finish = Finish {
            status: status.to_string(),
            error: out.error,
            delivery_error: (!failed.is_empty()).then(|| failed.join("; ")),
        };
        let (store, rec) = (self.store.clone(), record.clone());
        let (job_id, run_id) = (c.job.id.clone(), c.run_id.clone());
        let log = self.log.clone();
        blocking(move || {
            claim::finish(&store, &job_id, &run_id, &finish)?;
            log.record(&rec)
        })
        .await?;
        Ok(record)
    }

    /// Writes `cron/output/<job>/<timestamp>.md`; returns its path relative to the home.
    async fn save_output(&self, c: &Claim, status: &str, out: &RunOutput) -> Option<String> {
        let rel = format!(
            "cron/output/{}/{}.md",
            c.job.id,
            c.started_at.format("%Y-%m-%d_%H-%M-%S")
        );
        let path = self.store.dir().join(rel.trim_start_matches("cron/"));
        let text = render_output(&c.job, c.started_at, status, out);
        let res = tokio::task::spawn_blocking(move || {
            // `write` creates the folders (0700) and the file (0600).
            hermes_protocol::private_fs::write(&path, text)
        })
        .await;
        match res {
            Ok(Ok(())) => Some(rel),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not save cron output");
                None
            }
            Err(_) => None,
        }
    }
}

/// The heartbeat of a running [`Scheduler::run_forever`] (`cron/scheduler.json`), rewritten
/// after every pass; read by `hermes cron status` to say whether a scheduler runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerBeat {
    /// The scheduler's lease owner name.
    pub owner: String,
    /// Its process id.
    pub pid: u32,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// The end of its latest pass over the jobs (it passes at least every [`MAX_SLEEP`]
    /// unless a run is in progress).
    pub seen_at: DateTime<Utc>,
}

impl SchedulerBeat {
    /// `HERMES_HOME/cron/scheduler.json`.
    pub fn path(store: &JobStore) -> std::path::PathBuf {
        store.dir().join("scheduler.json")
    }

    /// Writes the heartbeat (a small file replaced in place). Blocking.
    pub fn write(&self, store: &JobStore) -> Result<(), JobStoreError> {
        let path = Self::path(store);
        let text = serde_json::to_string_pretty(self).map_err(|e| JobStoreError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        hermes_protocol::private_fs::create_dir_all(store.dir())
            .and_then(|()| hermes_protocol::private_fs::write(&path, text))
            .map_err(|source| JobStoreError::Io { path, source })
    }

    /// The latest heartbeat, if a scheduler ever ran on this home (an unreadable file counts
    /// as none). Blocking.
    pub fn read(store: &JobStore) -> Option<SchedulerBeat> {
        let text = std::fs::read_to_string(Self::path(store)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

fn render_output(job: &Job, at: DateTime<Utc>, status: &str, out: &RunOutput) -> String {
    let mut s = format!(
        "# {}\n\n- job: `{}`\n- run at: {}\n- status: {status}\n",
        job.name,
        job.id,
        at.to_rfc3339()
    );
    if let Some(e) = &out.error {
        s.push_str(&format!("- error: {e}\n"));
    }
    s.push_str("\n## Prompt\n\n");
    s.push_str(&job.prompt);
    s.push_str("\n\n## Response\n\n");
    s.push_str(&out.text);
    s.push('\n');
    s
}
