//! `hermes sessiondb {migrate,status}` (issue 21; the command of Python Hermes' RFC for
//! pluggable session stores): copy a SQLite `state.db` into PostgreSQL, and show which store
//! this home uses.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use hermes_protocol::config::SESSIONDB_DSN_ENV;
use hermes_store::{PgOptions, PgStore, StoreChoice};

use crate::assembly::app::App;

/// `hermes sessiondb …`
#[derive(Debug, Subcommand)]
pub enum SessionDbCmd {
    /// Copy every session, message, usage row and cron run of a SQLite store into
    /// PostgreSQL, verifying counts and a checksum per session. Resumable: run it again
    /// after an interruption.
    Migrate {
        /// The SQLite store, `sqlite://PATH` (default: this home's state.db).
        #[arg(long)]
        from: Option<String>,
        /// The PostgreSQL database, `postgresql://…` (default: HERMES_SESSIONDB_DSN or
        /// `sessiondb.postgresql.dsn`; prefer those, a DSN on the command line is visible
        /// to other users of the machine).
        #[arg(long)]
        to: Option<String>,
        /// Add to a database that already has sessions (existing ones are kept).
        #[arg(long)]
        merge: bool,
    },
    /// Which session store this home uses.
    Status,
}

/// Runs a sessiondb subcommand; returns the exit code.
pub fn run(profile: Option<&str>, action: &SessionDbCmd) -> Result<i32> {
    let app = App::load(profile)?;
    match action {
        SessionDbCmd::Status => {
            let choice = app.store_choice()?;
            outln!("session store: {}", choice.describe());
            let store = choice
                .open()
                .with_context(|| format!("opening session store {}", choice.describe()))?;
            let stats = store.stats()?;
            outln!(
                "{} sessions, {} messages, schema version {}",
                stats.sessions,
                stats.messages,
                stats.schema_version
            );
            Ok(0)
        }
        SessionDbCmd::Migrate { from, to, merge } => {
            let source = match from {
                Some(url) => sqlite_path(url)?,
                None => app.home.state_db(),
            };
            if !source.exists() {
                bail!("{} does not exist: nothing to migrate", source.display());
            }
            let options = match to {
                Some(dsn) => {
                    if !(dsn.starts_with("postgresql://") || dsn.starts_with("postgres://")) {
                        bail!("--to must be a postgresql:// DSN");
                    }
                    let mut options = PgOptions::new(dsn.clone());
                    if let Ok(StoreChoice::Postgresql(configured)) = app.store_choice() {
                        options.schema = configured.schema;
                    }
                    options
                }
                None => match app.store_choice()? {
                    StoreChoice::Postgresql(options) => options,
                    StoreChoice::Sqlite(_) => bail!(
                        "no PostgreSQL target: pass --to postgresql://…, or set \
                         {SESSIONDB_DSN_ENV} with sessiondb.provider: postgresql"
                    ),
                },
            };
            errln!("migrating {} to {}", source.display(), options.location());
            let target = PgStore::open(&options)
                .with_context(|| format!("opening {}", options.location()))?;
            let report = target.import_sqlite(&source, *merge, &mut |line| errln!("{line}"))?;
            outln!(
                "copied {} sessions ({} skipped: already in the target), {} messages, {} usage \
                 rows, {} cron runs, {} routing entries{}",
                report.sessions_copied,
                report.sessions_skipped,
                report.messages,
                report.usage_rows,
                report.cron_runs,
                report.routes,
                if report.resumed { " (resumed)" } else { "" }
            );
            outln!(
                "verified {} messages; set sessiondb.provider: postgresql to use it",
                report.verified_messages
            );
            Ok(0)
        }
    }
}

/// The path of a `sqlite://PATH` URL (`sqlite:///abs/path`, `sqlite://rel/path`, `~`
/// expanded), or a bare path.
fn sqlite_path(url: &str) -> Result<PathBuf> {
    let path = url.strip_prefix("sqlite://").unwrap_or(url);
    if path.is_empty() {
        bail!("--from sqlite://PATH names no file");
    }
    if let Some(rest) = path.strip_prefix("~/") {
        let home = std::env::var_os("HOME").context("cannot expand ~: HOME is not set")?;
        return Ok(PathBuf::from(home).join(rest));
    }
    Ok(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls() {
        assert_eq!(
            sqlite_path("sqlite:///var/lib/hermes/state.db").ok(),
            Some(PathBuf::from("/var/lib/hermes/state.db"))
        );
        assert_eq!(
            sqlite_path("state.db").ok(),
            Some(PathBuf::from("state.db"))
        );
        assert!(sqlite_path("sqlite://").is_err());
    }
}
