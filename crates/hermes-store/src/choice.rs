//! Which store a process opens (`sessiondb:` in `config.yaml`, issue 21): the SQLite file of
//! the home (default) or a PostgreSQL database, whose DSN comes from
//! `HERMES_SESSIONDB_DSN` or `sessiondb.postgresql.dsn`. The CLI, the gateway and cron open
//! their store through [`StoreChoice`], so they always agree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_protocol::config::{SESSIONDB_DSN_ENV, SessionDbConfig};

use crate::error::StoreError;
use crate::handle::SessionStore;
use crate::postgres::{PgOptions, PgStore};

/// The store to open.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreChoice {
    /// The SQLite file (`HERMES_HOME/state.db`).
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgresql(PgOptions),
}

impl StoreChoice {
    /// The choice `config` (the `sessiondb:` section, if any) makes for a home whose SQLite
    /// file is `state_db`; `env_dsn` is the value of [`SESSIONDB_DSN_ENV`], which wins over
    /// `sessiondb.postgresql.dsn`.
    ///
    /// Errors: [`StoreError::Config`] for an unknown provider, `postgresql` without a DSN,
    /// or an unusable number.
    pub fn from_config(
        config: Option<&SessionDbConfig>,
        state_db: &Path,
        env_dsn: Option<String>,
    ) -> Result<StoreChoice, StoreError> {
        let provider = config
            .and_then(|c| c.provider.as_deref())
            .map(str::trim)
            .unwrap_or("sqlite");
        match provider.to_ascii_lowercase().as_str() {
            "sqlite" | "" => Ok(StoreChoice::Sqlite(state_db.to_path_buf())),
            "postgresql" | "postgres" => {
                let pg = config.map(|c| c.postgresql.clone()).unwrap_or_default();
                let dsn = env_dsn
                    .filter(|d| !d.trim().is_empty())
                    .or(pg.dsn.filter(|d| !d.trim().is_empty()))
                    .ok_or_else(|| StoreError::Config {
                        detail: format!(
                            "sessiondb.provider is postgresql but no DSN is set: set \
                             {SESSIONDB_DSN_ENV} (for example in HERMES_HOME/.env) or \
                             sessiondb.postgresql.dsn"
                        ),
                    })?;
                let mut options = PgOptions::new(dsn);
                options.schema = pg.schema.filter(|s| !s.is_empty());
                let pool = pg.pool_size.unwrap_or(10) + pg.max_overflow.unwrap_or(0);
                options.pool_size = usize::try_from(pool.max(1)).unwrap_or(10);
                if let Some(secs) = pg.statement_timeout {
                    options.statement_timeout = seconds("statement_timeout", secs)?;
                }
                if let Some(secs) = pg.connect_timeout {
                    options.connect_timeout = seconds("connect_timeout", secs)?;
                }
                options.ssl_root_cert = pg
                    .sslrootcert
                    .filter(|p| !p.trim().is_empty())
                    .or_else(|| {
                        std::env::var("PGSSLROOTCERT")
                            .ok()
                            .filter(|p| !p.is_empty())
                    })
                    .map(std::path::PathBuf::from);
                // Parse now so a bad DSN is reported before anything starts.
                options.driver_config()?;
                Ok(StoreChoice::Postgresql(options))
            }
            other => Err(StoreError::Config {
                detail: format!(
                    "sessiondb.provider: `{other}` is not a session store hermes has (sqlite, \
                     postgresql)"
                ),
            }),
        }
    }

    /// Opens the chosen store.
    ///
    /// Errors: as [`SessionStore::open`] or [`PgStore::open`].
    pub fn open(&self) -> Result<SessionStore, StoreError> {
        match self {
            StoreChoice::Sqlite(path) => SessionStore::open(path),
            StoreChoice::Postgresql(options) => {
                Ok(SessionStore::from_backend(PgStore::open(options)?))
            }
        }
    }

    /// `sqlite PATH` or `postgresql postgresql://host:port/db` (never a password).
    pub fn describe(&self) -> String {
        match self {
            StoreChoice::Sqlite(path) => format!("sqlite {}", path.display()),
            StoreChoice::Postgresql(options) => format!("postgresql {}", options.location()),
        }
    }
}

fn seconds(key: &str, secs: f64) -> Result<Duration, StoreError> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| StoreError::Config {
            detail: format!(
                "sessiondb.postgresql.{key}: {secs} is not a positive number of seconds"
            ),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use hermes_protocol::config::PostgresqlConfig;

    fn pg(dsn: Option<&str>) -> SessionDbConfig {
        SessionDbConfig {
            provider: Some("postgresql".into()),
            postgresql: PostgresqlConfig {
                dsn: dsn.map(String::from),
                pool_size: Some(4),
                max_overflow: Some(2),
                ..PostgresqlConfig::default()
            },
        }
    }

    #[test]
    fn sqlite_is_the_default_and_postgresql_needs_a_dsn() {
        let db = Path::new("/srv/hermes/state.db");
        assert_eq!(
            StoreChoice::from_config(None, db, Some("postgresql://h/d".into())).unwrap(),
            StoreChoice::Sqlite(db.to_path_buf())
        );
        let err = StoreChoice::from_config(Some(&pg(None)), db, None).unwrap_err();
        assert!(err.to_string().contains("HERMES_SESSIONDB_DSN"), "{err}");
        let choice = StoreChoice::from_config(
            Some(&pg(Some("postgresql://u:pw@cfg:5432/a"))),
            db,
            Some("postgresql://u:pw@env:5432/b".into()),
        )
        .unwrap();
        let StoreChoice::Postgresql(options) = &choice else {
            panic!("{choice:?}");
        };
        assert_eq!(options.pool_size, 6);
        assert_eq!(choice.describe(), "postgresql postgresql://env:5432/b");
        assert!(!format!("{choice:?}").contains("pw"));
        let mut bad = pg(Some("postgresql://h/d"));
        bad.provider = Some("mysql".into());
        let err = StoreChoice::from_config(Some(&bad), db, None).unwrap_err();
        assert!(err.to_string().starts_with("sessiondb.provider:"), "{err}");
    }
}
