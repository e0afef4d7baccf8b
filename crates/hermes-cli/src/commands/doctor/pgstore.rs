//! `hermes doctor` for a PostgreSQL session store (`sessiondb.provider: postgresql`): the
//! server is reachable, the schema is this build's, a message can be written (rolled back),
//! and no message lost its session.

use hermes_store::{PgOptions, PgStore, SessionBackend};

use super::{Level, Report};

/// Checks the PostgreSQL store `options` names.
pub(crate) fn check(options: &PgOptions, report: &mut Report) {
    let at = options.location();
    let store = match PgStore::open(options) {
        Ok(store) => store,
        Err(e) => {
            report.add(
                Level::Broken,
                format!("session store {at} cannot be used: {e}"),
            );
            return;
        }
    };
    match store.schema_check() {
        Ok(s) if s.is_current() => report.add(
            Level::Ok,
            format!(
                "session store {at}: PostgreSQL schema version {}",
                s.supported
            ),
        ),
        Ok(s) => report.add(
            Level::Warn,
            format!(
                "session store {at}: schema version {} differs from the {} this hermes \
                 writes; missing: {}",
                s.found
                    .map_or_else(|| "none".to_string(), |v| v.to_string()),
                s.supported,
                s.missing.join(", ")
            ),
        ),
        Err(e) => report.add(Level::Broken, format!("session store {at}: {e}")),
    }
    match store.integrity_check() {
        Ok(r) if r == "ok" => report.add(Level::Ok, format!("session store {at}: integrity ok")),
        Ok(r) => report.add(Level::Broken, format!("session store {at}: {r}")),
        Err(e) => report.add(Level::Broken, format!("session store {at}: {e}")),
    }
    match store.write_probe() {
        Ok(()) => report.add(
            Level::Ok,
            format!("session store {at} accepts writes (probe rolled back)"),
        ),
        Err(e) => report.add(
            Level::Broken,
            format!("session store {at} cannot store messages: {e}; every turn would fail"),
        ),
    }
    if let Ok(stats) = store.stats() {
        report.add(
            Level::Ok,
            format!(
                "session store {at}: {} sessions, {} messages",
                stats.sessions, stats.messages
            ),
        );
    }
}
