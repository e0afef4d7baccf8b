//! `HERMES_HOME/cron/jobs.json`: read-modify-write under a cross-process lock with atomic
//! replacement (a temp file in the same directory renamed over the old one), so a crash never
//! leaves half a file and two processes never lose each other's changes (FEATURES §1 Cron;
//! case C39).
//!
//! The file is shared with Python Hermes 0.19.0 (`cron/jobs.py`): the lock is the same one
//! Python takes, an exclusive `flock(2)` on `cron/.jobs.lock` (Python's
//! `fcntl.flock(fd, LOCK_EX)`; fd-lock calls the same system call), so the two programs
//! serialise their updates; keys either program does not know are kept, per job and at the
//! top level; Python's `updated_at` is refreshed on every write. A file that cannot be read as
//! jobs is reported with the file and the entry and is never rewritten.
//!
//! Blocking: every call takes the lock and does file I/O — call it from `spawn_blocking`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use fd_lock::RwLock;
use hermes_protocol::HermesHome;
use serde::{Deserialize, Serialize};

use crate::drift::{DefaultsResolver, take_snapshots};
use crate::job::{Job, JobPatch, NewJob, Repeat, name_from_prompt};
use crate::schedule::{JobSchedule, Schedule, ScheduleError};

/// A failure of the jobs file.
#[derive(Debug, thiserror::Error)]
pub enum JobStoreError {
    /// Reading, writing or locking failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of the expected shape; it is left untouched.
    #[error("{path} is damaged ({source}); fix or move it — it was not changed")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// One job record cannot be read; the file is left untouched.
    #[error(
        "{path}: job #{index} ({id}) cannot be read: {detail}; fix or remove that entry — the file was not changed"
    )]
    BadEntry {
        /// The file.
        path: PathBuf,
        /// Position in `jobs` (1-based).
        index: usize,
        /// The entry's `id` (or `no id`).
        id: String,
        /// What is wrong.
        detail: String,
    },
    /// No job has this id (or name).
    #[error("no cron job `{0}` (see `hermes cron list`)")]
    NotFound(String),
    /// The schedule text is invalid.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The run history in `state.db` could not be read or written.
    #[error("cron run history: {0}")]
    History(#[from] hermes_store::StoreError),
    /// A job's working directory is unusable.
    #[error("cron workdir: {0}")]
    BadWorkdir(String),
    /// A job with an empty prompt and no script has nothing to do.
    #[error("a job needs a prompt (or a script with no_agent)")]
    EmptyPrompt,
}

/// The file's top-level shape: `{"jobs": [...], "updated_at": "<ISO time>"}` plus any other
/// keys, kept.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct JobsFile {
    /// All jobs in creation order.
    #[serde(default)]
    pub jobs: Vec<Job>,
    /// Time of the latest write (Python writes it; hermes refreshes it).
    #[serde(default, with = "crate::record::opt_time")]
    pub updated_at: Option<DateTime<Utc>>,
    /// Other top-level keys.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The lock file both programs `flock` around a read-modify-write of `jobs.json`.
pub const JOBS_LOCK_FILE: &str = ".jobs.lock";

/// The jobs file of one hermes home.
#[derive(Clone)]
pub struct JobStore {
    dir: PathBuf,
    /// Resolves the home's default provider and model for the drift-guard snapshots of new
    /// and re-pinned jobs ([`crate::drift`]); without one, jobs get no snapshots.
    defaults: Option<DefaultsResolver>,
}

impl std::fmt::Debug for JobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStore")
            .field("dir", &self.dir)
            .field("defaults", &self.defaults.is_some())
            .finish()
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> JobStoreError + '_ {
    move |source| JobStoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl JobStore {
    /// The store of `home` (`HERMES_HOME/cron/`); nothing is created until first write.
    pub fn new(home: &HermesHome) -> JobStore {
        JobStore {
            dir: home.root().join("cron"),
            defaults: None,
        }
    }

    /// The same store, giving new jobs (and jobs whose provider, model, base URL or
    /// `no_agent` change) Python's `provider_snapshot` / `model_snapshot` from `resolve`.
    pub fn with_defaults(self, resolve: DefaultsResolver) -> JobStore {
        JobStore {
            defaults: Some(resolve),
            ..self
        }
    }

    /// `HERMES_HOME/cron/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `HERMES_HOME/cron/jobs.json`.
    pub fn jobs_path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    /// Runs `f` on the jobs under the exclusive lock and writes them back atomically when
    /// `f` returns `(true, _)`. Returns `f`'s value. Other processes wait for the lock.
    pub fn update<T>(
        &self,
        f: impl FnOnce(&mut Vec<Job>) -> Result<(bool, T), JobStoreError>,
    ) -> Result<T, JobStoreError> {
        hermes_protocol::private_fs::create_dir_all(&self.dir).map_err(io_err(&self.dir))?;
        let lock_path = self.dir.join(JOBS_LOCK_FILE);
        let lock_file =
            hermes_protocol::private_fs::open_append(&lock_path).map_err(io_err(&lock_path))?;
        let mut lock = RwLock::new(lock_file);
        let _guard = lock.write().map_err(io_err(&lock_path))?;
        let mut file = self.read_unlocked()?;
        let (changed, out) = f(&mut file.jobs)?;
        if changed {
            for job in &mut file.jobs {
                job.align_python_fields();
            }
            file.updated_at = Some(Utc::now());
            self.write_unlocked(&file)?;
        }
        Ok(out)
    }

    /// All jobs (a consistent snapshot taken under the lock).
    pub fn list(&self) -> Result<Vec<Job>, JobStoreError> {
        self.update(|jobs| Ok((false, jobs.clone())))
    }

    /// The job whose id (or exact name, or unique id prefix) is `key`.
    pub fn get(&self, key: &str) -> Result<Job, JobStoreError> {
        self.update(|jobs| Ok((false, find(jobs, key).map(|i| jobs[i].clone()))))?
            .ok_or_else(|| JobStoreError::NotFound(key.to_string()))
    }

    /// Creates a job at `now` in zone `tz` and returns it.
    pub fn create(&self, new: NewJob, now: DateTime<Utc>, tz: Tz) -> Result<Job, JobStoreError> {
        let schedule = Schedule::parse(&new.schedule, now, tz)?;
        if new.prompt.trim().is_empty() && !(new.no_agent && new.script.is_some()) {
            return Err(JobStoreError::EmptyPrompt);
        }
        let times = match (&schedule, new.repeat) {
            (_, Some(n)) => Some(n.max(1)),
            (Schedule::Once { .. }, None) => Some(1),
            _ => None,
        };
        let workdir = match new.workdir {
            Some(w) => Some(check_workdir(&w)?),
            None => None,
        };
        let mut job = Job {
            id: crate::new_id(),
            name: new
                .name
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| {
                    if new.prompt.trim().is_empty() {
                        new.script.clone().unwrap_or_default()
                    } else {
                        name_from_prompt(&new.prompt)
                    }
                }),
            prompt: new.prompt,
            next_run_at: schedule.first_run(now, tz),
            schedule_display: Some(schedule.python_display(tz)),
            schedule: JobSchedule::new(schedule, tz),
            schedule_text: new.schedule.trim().to_string(),
            skill: new.skills.first().cloned(),
            skills: new.skills,
            model: new.model,
            provider: new.provider,
            base_url: new.base_url.map(|u| u.trim_end_matches('/').to_string()),
            provider_snapshot: None,
            model_snapshot: None,
            context_from: new.context_from.filter(|v| !v.is_empty()),
            enabled_toolsets: new.enabled_toolsets.filter(|v| !v.is_empty()),
            workdir,
            state: Some("scheduled".to_string()),
            paused_at: None,
            paused_reason: None,
            extra: serde_json::Map::new(),
            deliver: new.deliver.unwrap_or_else(|| "local".to_string()),
            enabled: true,
            repeat: Repeat {
                times,
                completed: 0,
            },
            last_run_at: None,
            last_status: None,
            last_error: None,
            last_delivery_error: None,
            created_at: now,
            origin: new.origin,
            script: new.script,
            no_agent: new.no_agent,
            lease: None,
        };
        if let Some(resolve) = &self.defaults {
            take_snapshots(&mut job, resolve);
        }
        let out = job.clone();
        self.update(move |jobs| {
            jobs.push(job);
            Ok((true, ()))
        })?;
        Ok(out)
    }

    /// Applies `patch` to job `key`; a new schedule recomputes `next_run_at` from `now`.
    pub fn edit(
        &self,
        key: &str,
        patch: JobPatch,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Job, JobStoreError> {
        let schedule = match &patch.schedule {
            Some(text) => Some((Schedule::parse(text, now, tz)?, text.trim().to_string())),
            None => None,
        };
        let workdir = match &patch.workdir {
            Some(Some(w)) => Some(Some(check_workdir(w)?)),
            Some(None) => Some(None),
            None => None,
        };
        let defaults = self.defaults.clone();
        self.modify(key, move |job| {
            let axes = |j: &Job| {
                let norm = |v: &Option<String>| {
                    v.as_deref()
                        .map(|t| t.trim().trim_end_matches('/').to_string())
                        .filter(|t| !t.is_empty())
                };
                (
                    norm(&j.provider),
                    norm(&j.model),
                    norm(&j.base_url),
                    j.no_agent,
                )
            };
            let before = axes(job);
            if let Some((s, text)) = schedule {
                job.next_run_at = s.first_run(now, tz);
                job.schedule_display = Some(s.python_display(tz));
                job.schedule = JobSchedule::new(s, tz);
                job.schedule_text = text;
            }
            if let Some(v) = patch.provider {
                job.provider = v;
            }
            if let Some(v) = patch.base_url {
                job.base_url = v.map(|u| u.trim_end_matches('/').to_string());
            }
            if let Some(v) = patch.enabled_toolsets {
                job.enabled_toolsets = v.filter(|v| !v.is_empty());
            }
            if let Some(v) = workdir {
                job.workdir = v;
            }
            if let Some(v) = patch.context_from {
                job.context_from = v.filter(|v| !v.is_empty());
            }
            if let Some(v) = patch.name {
                job.name = v;
            }
            if let Some(v) = patch.prompt {
                job.prompt = v;
            }
            if let Some(v) = patch.skills {
                job.skills = v;
            }
            if let Some(v) = patch.model {
                job.model = v;
            }
            if let Some(v) = patch.deliver {
                job.deliver = v;
            }
            if let Some(v) = patch.repeat {
                job.repeat.times = v;
            }
            if let Some(v) = patch.script {
                job.script = v;
            }
            if let Some(v) = patch.no_agent {
                job.no_agent = v;
            }
            // As Python's `update_job`: new snapshots when the inference settings changed.
            if let Some(resolve) = &defaults
                && axes(job) != before
            {
                take_snapshots(job, resolve);
            }
        })
    }

    /// Pauses job `key` (it keeps its `next_run_at`) the way Python does: `enabled = false`,
    /// `state = "paused"`, `paused_at = now`, `paused_reason = reason`.
    pub fn pause(
        &self,
        key: &str,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Job, JobStoreError> {
        self.modify(key, move |job| {
            job.enabled = false;
            job.state = Some("paused".to_string());
            job.paused_at = Some(now);
            job.paused_reason = reason;
        })
    }

    /// Resumes job `key` (`enabled`, `state = "scheduled"`, the pause fields cleared). A
    /// recurring job whose due time passed while paused gets its next time from the schedule
    /// after `now` (no catch-up run for the paused period).
    pub fn resume(&self, key: &str, now: DateTime<Utc>, tz: Tz) -> Result<Job, JobStoreError> {
        self.modify(key, move |job| {
            job.enabled = true;
            job.state = Some("scheduled".to_string());
            job.paused_at = None;
            job.paused_reason = None;
            if job.schedule.is_recurring() && job.next_run_at.is_none_or(|t| t < now) {
                job.next_run_at = job.schedule.next_after(now, tz);
            }
        })
    }

    /// Removes job `key`; returns it.
    pub fn remove(&self, key: &str) -> Result<Job, JobStoreError> {
        self.update(|jobs| match find(jobs, key) {
            Some(i) => Ok((true, jobs.remove(i))),
            None => Err(JobStoreError::NotFound(key.to_string())),
        })
    }

    /// Applies `f` to job `key` under the lock and returns the changed job.
    pub fn modify(&self, key: &str, f: impl FnOnce(&mut Job)) -> Result<Job, JobStoreError> {
        self.update(|jobs| match find(jobs, key) {
            Some(i) => {
                f(&mut jobs[i]);
                Ok((true, jobs[i].clone()))
            }
            None => Err(JobStoreError::NotFound(key.to_string())),
        })
    }

    fn read_unlocked(&self) -> Result<JobsFile, JobStoreError> {
        let path = self.jobs_path();
        match std::fs::read(&path) {
            Ok(bytes) => parse_jobs_file(&path, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(JobsFile::default()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    fn write_unlocked(&self, file: &JobsFile) -> Result<(), JobStoreError> {
        let path = self.jobs_path();
        let mut text = serde_json::to_vec_pretty(file).map_err(|e| JobStoreError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push(b'\n');
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(io_err(&self.dir))?;
        tmp.write_all(&text).map_err(io_err(&path))?;
        tmp.as_file().sync_all().map_err(io_err(&path))?;
        tmp.persist(&path)
            .map_err(|e| io_err(&path)(e.error))
            .map(|_: File| ())
    }
}

/// Parses the bytes of `jobs.json` at `path`: `{"jobs": [...], …}` (a UTF-8 byte-order mark
/// is skipped, as Python's `utf-8-sig` does; a bare list of jobs is read as the jobs, as
/// Python does). Each job is read on its own so an error names the entry.
///
/// # Errors
/// [`JobStoreError::Corrupt`] when the text is not JSON of that shape,
/// [`JobStoreError::BadEntry`] naming the first job record that cannot be read.
pub fn parse_jobs_file(path: &Path, bytes: &[u8]) -> Result<JobsFile, JobStoreError> {
    let bytes = bytes
        .strip_prefix(b"\xef\xbb\xbf".as_slice())
        .unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(JobsFile::default());
    }
    let corrupt = |source| JobStoreError::Corrupt {
        path: path.to_path_buf(),
        source,
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(corrupt)?;
    let (entries, mut top) = match value {
        serde_json::Value::Array(list) => (list, serde_json::Map::new()),
        serde_json::Value::Object(mut map) => match map.remove("jobs") {
            Some(serde_json::Value::Array(list)) => (list, map),
            None | Some(serde_json::Value::Null) => (Vec::new(), map),
            Some(other) => {
                return Err(corrupt(serde::de::Error::custom(format!(
                    "`jobs` is {}, not a list",
                    json_kind(&other)
                ))));
            }
        },
        other => {
            return Err(corrupt(serde::de::Error::custom(format!(
                "expected {{\"jobs\": [...]}}, found {}",
                json_kind(&other)
            ))));
        }
    };
    let mut jobs = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let id = entry
            .get("id")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| "no id".to_string(), |s| format!("id {s}"));
        let job = serde_json::from_value::<Job>(entry).map_err(|e| JobStoreError::BadEntry {
            path: path.to_path_buf(),
            index: i + 1,
            id,
            detail: e.to_string(),
        })?;
        jobs.push(job);
    }
    let updated_at = match top.remove("updated_at") {
        Some(serde_json::Value::String(s)) => crate::record::parse_time(&s),
        _ => None,
    };
    Ok(JobsFile {
        jobs,
        updated_at,
        extra: top,
    })
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Checks a job's working directory as Python does (`_normalize_workdir`): `~` expanded,
/// absolute, an existing directory. Returns the canonical path.
fn check_workdir(raw: &str) -> Result<String, JobStoreError> {
    let raw = raw.trim();
    let expanded = match raw.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(raw)),
        None => PathBuf::from(raw),
    };
    if !expanded.is_absolute() {
        return Err(JobStoreError::BadWorkdir(format!(
            "`{raw}` is not an absolute path (cron jobs run detached from any shell directory)"
        )));
    }
    match std::fs::canonicalize(&expanded) {
        Ok(p) if p.is_dir() => Ok(p.to_string_lossy().into_owned()),
        Ok(p) => Err(JobStoreError::BadWorkdir(format!(
            "{} is not a directory",
            p.display()
        ))),
        Err(_) => Err(JobStoreError::BadWorkdir(format!(
            "{} does not exist",
            expanded.display()
        ))),
    }
}

/// Index of the job matching `key`: exact id, exact name, then a unique id prefix.
pub(crate) fn find(jobs: &[Job], key: &str) -> Option<usize> {
    if let Some(i) = jobs.iter().position(|j| j.id == key) {
        return Some(i);
    }
    if let Some(i) = jobs.iter().position(|j| j.name == key) {
        return Some(i);
    }
    let mut prefixed = jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| !key.is_empty() && j.id.starts_with(key));
    match (prefixed.next(), prefixed.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}
