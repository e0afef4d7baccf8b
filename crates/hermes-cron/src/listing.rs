//! Plain-text views of jobs and runs shared by `hermes cron list/runs/status` and the REPL's
//! `/cron`: one line per item, times in the configured zone, no colours.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::history::RunRecord;
use crate::job::Job;

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
            j.schedule_text,
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
