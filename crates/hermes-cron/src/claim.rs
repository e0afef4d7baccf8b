//! Claiming due runs exactly once (FEATURES §1 Cron; cases C39, C41).
//!
//! A due run is claimed under the jobs-file lock by writing, in one atomic replacement, the
//! job's advanced `next_run_at` and a [`Lease`]. A second scheduler (another tick, another
//! process) that takes the lock afterwards sees the job as not due — or leased — and skips it
//! without running or advancing anything. The lease is held for the whole run, so a long run
//! never overlaps its own next occurrence; it lapses at `until` so a crashed run cannot block
//! the job forever, and a lapsed lease is recorded as an `interrupted` run.
//!
//! Missed runs: a recurring job found due after downtime fires once, and its next time is the
//! first schedule time after *now* (not a burst of catch-up runs). A manual run takes a lease
//! but never touches `next_run_at` (C41).
//!
//! Repeat limits: a scheduled run counts toward `repeat.times` when it is claimed; when the
//! run that reached the limit finishes (or its lease lapses), the job is removed from
//! `jobs.json`, as Python Hermes' `mark_job_run` removes it ("Remove the job (limit
//! reached)"), so both programs agree that a job with `repeat: {times: N}` runs N times and
//! is then gone.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use crate::job::{Job, Lease};
use crate::store::{JobStore, JobStoreError, find};

/// A run this scheduler (or a manual run) now owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The job as it was claimed (lease set, `next_run_at` advanced).
    pub job: Job,
    /// Run id (also the lease's id).
    pub run_id: String,
    /// The due time this run is for (`None` for a manual run).
    pub due_at: Option<DateTime<Utc>>,
    /// When the run was claimed.
    pub started_at: DateTime<Utc>,
}

/// How a run ended, as recorded on the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    /// `ok`, `silent`, `failed`, `timeout`.
    pub status: String,
    /// Error text of a failed run.
    pub error: Option<String>,
    /// Delivery failures (`target: reason`), if any.
    pub delivery_error: Option<String>,
}

/// Claims every enabled job due at `now` (at most `limit`), as described in the module docs.
/// `lease_for` is how long a run may take before its lease lapses. Lapsed leases found on the
/// way are cleared and recorded as `interrupted`.
pub fn claim_due(
    store: &JobStore,
    now: DateTime<Utc>,
    tz: Tz,
    owner: &str,
    lease_for: Duration,
    limit: usize,
) -> Result<Vec<Claim>, JobStoreError> {
    store.update(|jobs| {
        let mut changed = release_lapsed(jobs, now);
        let mut claims = Vec::new();
        for job in jobs.iter_mut() {
            if claims.len() >= limit {
                break;
            }
            let Some(due) = job.next_run_at else { continue };
            if !job.is_runnable() || due > now || job.python_claim_active(now) {
                continue;
            }
            let run_id = crate::new_id();
            job.repeat.completed = job.repeat.completed.saturating_add(1);
            let exhausted = job.repeat.times.is_some_and(|t| job.repeat.completed >= t);
            job.next_run_at = if exhausted {
                None
            } else {
                // From the schedule after now: one run for any number of missed slots.
                next_slot(&job.schedule, due, now, tz)
            };
            job.lease = Some(Lease {
                run_id: run_id.clone(),
                owner: owner.to_string(),
                started_at: now,
                until: now + lease_for,
            });
            job.last_run_at = Some(now);
            changed = true;
            claims.push(Claim {
                job: job.clone(),
                run_id,
                due_at: Some(due),
                started_at: now,
            });
        }
        Ok((changed, claims))
    })
}

/// The first schedule time after `now` for a run that was due at `due`. Intervals keep their
/// anchor (`due + k·interval`, so a late tick does not make the job drift); cron expressions
/// take their next wall-clock match.
pub fn next_slot(
    schedule: &crate::Schedule,
    due: DateTime<Utc>,
    now: DateTime<Utc>,
    tz: Tz,
) -> Option<DateTime<Utc>> {
    match schedule {
        crate::Schedule::Interval { minutes } => {
            let step = Duration::try_minutes(i64::try_from(*minutes).ok()?)?;
            let behind = (now - due).num_milliseconds().max(0);
            let steps = behind / step.num_milliseconds().max(1) + 1;
            Some(due + step * i32::try_from(steps).ok()?)
        }
        _ => schedule.next_after(now.max(due), tz),
    }
}

/// Claims job `key` for a manual run (`hermes cron run`) at `now`, whatever its schedule or
/// pause state. `next_run_at` and the repeat count are left alone (C41). Returns `None` when a
/// run of this job is already in progress.
pub fn claim_manual(
    store: &JobStore,
    key: &str,
    now: DateTime<Utc>,
    owner: &str,
    lease_for: Duration,
) -> Result<Option<Claim>, JobStoreError> {
    store.update(|jobs| {
        let changed = release_lapsed(jobs, now);
        let i = find(jobs, key).ok_or_else(|| JobStoreError::NotFound(key.to_string()))?;
        let job = &mut jobs[i];
        if job.lease.is_some() {
            return Ok((changed, None));
        }
        let run_id = crate::new_id();
        job.lease = Some(Lease {
            run_id: run_id.clone(),
            owner: owner.to_string(),
            started_at: now,
            until: now + lease_for,
        });
        job.last_run_at = Some(now);
        Ok((
            true,
            Some(Claim {
                job: job.clone(),
                run_id,
                due_at: None,
                started_at: now,
            }),
        ))
    })
}

/// Records the end of run `run_id` on its job and releases the lease. Does nothing when the
/// job was removed meanwhile or the lease belongs to another run.
pub fn finish(
    store: &JobStore,
    job_id: &str,
    run_id: &str,
    result: &Finish,
) -> Result<(), JobStoreError> {
    store.update(|jobs| {
        let Some(i) = jobs.iter().position(|j| j.id == job_id) else {
            return Ok((false, ()));
        };
        let job = &mut jobs[i];
        if job.lease.as_ref().is_none_or(|l| l.run_id != run_id) {
            return Ok((false, ()));
        }
        job.lease = None;
        job.last_status = Some(result.status.clone());
        job.last_error = result.error.clone();
        job.last_delivery_error = result.delivery_error.clone();
        if job.repeat_exhausted() {
            tracing::info!(job = %job.id, name = %job.name, "repeat limit reached; job removed");
            jobs.remove(i);
        }
        Ok((true, ()))
    })
}

/// Gives back the lease of run `run_id` without recording a run (its due time was fired by
/// another scheduler): the job keeps its last status; one whose repeat limit that due time
/// reached is removed, as [`finish`] removes it. Does nothing when the lease belongs to
/// another run.
pub fn abandon(store: &JobStore, job_id: &str, run_id: &str) -> Result<(), JobStoreError> {
    store.update(|jobs| {
        let Some(i) = jobs.iter().position(|j| j.id == job_id) else {
            return Ok((false, ()));
        };
        if jobs[i].lease.as_ref().is_none_or(|l| l.run_id != run_id) {
            return Ok((false, ()));
        }
        jobs[i].lease = None;
        if jobs[i].repeat_exhausted() {
            jobs.remove(i);
        }
        Ok((true, ()))
    })
}

/// This process's identity in leases: `<host>:pid<N>:<random>`
/// ([`hermes_protocol::owner`]).
pub fn lease_owner() -> String {
    format!(
        "{}:{}",
        hermes_protocol::owner::this_process(),
        crate::new_id()
    )
}

/// Clears leases that lapsed before `now` or whose owner process is gone, recording the run
/// as interrupted; a job whose
/// lapsed run was the last its repeat limit allows is removed (the run counted when it was
/// claimed, as in [`finish`]).
fn release_lapsed(jobs: &mut Vec<Job>, now: DateTime<Utc>) -> bool {
    // An owner process of this machine that no longer runs (killed with `kill -9` mid-run)
    // holds nothing: its lease is as good as lapsed, rather than blocking until `until`.
    let lapsed = |l: &Lease| l.until <= now || hermes_protocol::owner::owner_is_gone(&l.owner);
    let before = jobs.len();
    jobs.retain(|j| !(j.lease.as_ref().is_some_and(lapsed) && j.repeat_exhausted()));
    let mut changed = jobs.len() != before;
    for job in jobs.iter_mut() {
        if job.lease.as_ref().is_some_and(lapsed) {
            job.lease = None;
            job.last_status = Some("interrupted".to_string());
            job.last_error = Some(
                "the run did not finish before its lease lapsed (the process may have stopped)"
                    .to_string(),
            );
            changed = true;
        }
    }
    changed
}
