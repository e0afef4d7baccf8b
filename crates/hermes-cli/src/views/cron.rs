//! The cron jobs table (`/cron`).

use hermes_cron::{JobStore, Tz};

/// `/cron` in the REPL: the jobs table of `app`'s home.
pub fn jobs_text(home: &hermes_protocol::HermesHome, timezone: Option<&str>) -> String {
    let tz = hermes_cron::parse_timezone(timezone).unwrap_or(Tz::UTC);
    match JobStore::new(home).list() {
        Ok(jobs) => hermes_cron::jobs_table(&jobs, tz),
        Err(e) => format!("could not read cron jobs: {e}"),
    }
}
