//! Plain-text views of jobs and runs shared by `hermes cron list/runs/status` and the REPL's
//! `/cron`: one line per item, times in the configured zone, no colours.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::history::RunRecord;
use crate::job::Job;
use crate::scheduler::{MAX_SLEEP, SchedulerBeat};

fn when(t: Option<DateTime<Utc>>, tz: Tz) -> String {
    t.map(|t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z").to_string())
        .unwrap_or_else(|| "-".to_string())
}

/// One line per job: id, state, next run, last status, schedule and name; a hint when empty.
pub fn jobs_table(jobs: &[Job], tz: Tz) -> String {
    if jobs.is_empty() {
        return "No cron jobs. Create one with `hermes cron create \"every 1h\" \"<task>\"`."
            .to_string();
    }
    let mut out = format!(
        "{:<12}  {:<9}  {:<20}  {:<11}  {:<16}  name\n",
        "id", "state", "next run", "last", "schedule"
    );
    for j in jobs {
        out.push_str(&format!(
            "{:<12}  {:<9}  {:<20}  {:<11}  {:<16}  {}\n",
            j.id,
            j.state(),
            when(j.next_run_at, tz),
            j.last_status.as_deref().unwrap_or("-"),
            j.schedule_label(),
            j.name
        ));
    }
    out.trim_end().to_string()
}

/// One line per run, newest first: start time, status, duration, job, output file, and the
/// error or failed deliveries underneath.
pub fn runs_table(runs: &[RunRecord], tz: Tz) -> String {
    if runs.is_empty() {
        return "No runs recorded yet.".to_string();
    }
    let mut out = String::new();
    for r in runs {
        let kind = if r.due_at.is_some() { "" } else { " (manual)" };
        out.push_str(&format!(
            "{}  {:<8}  {:>7.1}s  {} {}{kind}  {}\n",
            when(Some(r.started_at), tz),
            r.status,
            r.duration_ms as f64 / 1000.0,
            r.job_id,
            r.job_name,
            r.output_path.as_deref().unwrap_or("-"),
        ));
        if let Some(e) = &r.error {
            out.push_str(&format!("    error: {e}\n"));
        }
        for d in r.deliveries.iter().filter(|d| !d.ok) {
            out.push_str(&format!(
                "    not delivered to {}: {}\n",
                d.target, d.detail
            ));
        }
    }
    out.trim_end().to_string()
}

/// `hermes cron status`: job counts, the next due job, whether a scheduler runs (from its
/// heartbeat `beat` and the jobs' leases), and every problem of the latest run of each job —
/// run failures and failed deliveries from `latest` (the run history in `state.db`), plus
/// runs cut short (`interrupted`, recorded on the job only). `now` decides whether the
/// heartbeat is fresh (at most three [`MAX_SLEEP`]s old, or a run of that scheduler is in
/// progress).
pub fn status_text(
    jobs: &[Job],
    latest: &[RunRecord],
    beat: Option<&SchedulerBeat>,
    tz: Tz,
    now: DateTime<Utc>,
) -> String {
    let count = |state: &str| jobs.iter().filter(|j| j.state() == state).count();
    let mut out = format!(
        "{} jobs: {} scheduled, {} paused, {} running, {} finished\n",
        jobs.len(),
        count("scheduled"),
        count("paused"),
        count("running"),
        count("done")
    );
    let next = jobs
        .iter()
        .filter(|j| j.is_runnable())
        .filter_map(|j| j.next_run_at.map(|t| (t, j)))
        .min_by_key(|(t, _)| *t);
    if let Some((t, j)) = next {
        out.push_str(&format!(
            "next: {} \"{}\" at {}\n",
            j.id,
            j.name,
            when(Some(t), tz)
        ));
    }
    let fresh = chrono::Duration::from_std(MAX_SLEEP * 3).unwrap_or(chrono::Duration::MAX);
    match beat {
        Some(b)
            if now - b.seen_at <= fresh
                || jobs
                    .iter()
                    .any(|j| j.lease.as_ref().is_some_and(|l| l.owner == b.owner)) =>
        {
            out.push_str(&format!(
                "scheduler: running (process {}, `hermes gateway run`, since {}; last pass {})\n",
                b.pid,
                when(Some(b.started_at), tz),
                when(Some(b.seen_at), tz)
            ));
        }
        Some(b) => out.push_str(&format!(
            "scheduler: not running (last seen {} in process {}); jobs run while `hermes gateway run` is up or when `hermes cron tick` is called\n",
            when(Some(b.seen_at), tz),
            b.pid
        )),
        None => out.push_str(
            "scheduler: none seen; jobs run while `hermes gateway run` is up, or add `* * * * * hermes cron tick` to your crontab\n",
        ),
    }
    let mut problems = String::new();
    for run in latest {
        let name = jobs
            .iter()
            .find(|j| j.id == run.job_id)
            .map_or(run.job_name.as_str(), |j| j.name.as_str());
        let head = format!(
            "  {} \"{}\" at {}:",
            run.job_id,
            name,
            when(Some(run.started_at), tz)
        );
        if run.is_failure() {
            problems.push_str(&format!(
                "{head} {} — {}\n",
                run.status,
                run.error.as_deref().unwrap_or("no error text")
            ));
        }
        let failed: Vec<_> = run.failed_deliveries().collect();
        if !failed.is_empty() && !run.is_failure() {
            problems.push_str(&format!("{head} {}\n", run.status));
        }
        for d in failed {
            problems.push_str(&format!(
                "    not delivered to {}: {}\n",
                d.target, d.detail
            ));
        }
    }
    for j in jobs
        .iter()
        .filter(|j| j.last_status.as_deref() == Some("interrupted"))
    {
        problems.push_str(&format!(
            "  {} \"{}\" at {}: interrupted — {}\n",
            j.id,
            j.name,
            when(j.last_run_at, tz),
            j.last_error.as_deref().unwrap_or("the run did not finish")
        ));
    }
    if problems.is_empty() {
        if !latest.is_empty() {
            out.push_str("latest runs: no problems\n");
        }
    } else {
        out.push_str("problems in the latest runs:\n");
        out.push_str(&problems);
    }
    out.trim_end().to_string()
}
