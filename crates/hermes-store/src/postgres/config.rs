//! What the PostgreSQL store connects with (`sessiondb.postgresql` in `config.yaml`, the
//! names of Python Hermes' RFC for pluggable session stores), and the one safe way to show
//! where it connects ([`masked_location`]): the DSN may hold a password, so it is never
//! logged or shown whole.

use std::time::Duration;

use crate::error::StoreError;

/// Connection settings of the PostgreSQL store.
#[derive(Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// libpq connection string, as a URL (`postgresql://user:pass@host:5432/db`) or as
    /// `key=value` pairs. A secret: never logged (the `Debug` form masks it).
    pub dsn: String,
    /// Schema holding hermes' tables (`search_path`); `None` for the server's default
    /// (`public`). Letters, digits and `_` only. Lets several hermes homes share one database.
    pub schema: Option<String>,
    /// Most connections the pool opens (Python's RFC: `pool_size` + `max_overflow`).
    pub pool_size: usize,
    /// `statement_timeout` of every connection: a statement running longer is cancelled
    /// (and the write retried or reported).
    pub statement_timeout: Duration,
    /// How long opening one connection may take.
    pub connect_timeout: Duration,
    /// How long a call keeps retrying an unreachable or failing-over server
    /// ([`crate::WRITE_RETRY_BUDGET`] by default; [`crate::SessionStore::with_retry_budget`]
    /// changes it later).
    pub retry_budget: Duration,
    /// The CA certificates (PEM) the server's certificate must chain to with
    /// `sslmode=require` (`sessiondb.postgresql.sslrootcert`, else `PGSSLROOTCERT`); the
    /// DSN's own `sslrootcert` wins. `None`: the system's roots. See the `tls` module.
    pub ssl_root_cert: Option<std::path::PathBuf>,
}

impl PgOptions {
    /// Settings for `dsn` with the defaults: default schema, 10 connections, 30 s statement
    /// timeout, 10 s connect timeout, 30 s retry budget.
    pub fn new(dsn: impl Into<String>) -> PgOptions {
        PgOptions {
            dsn: dsn.into(),
            schema: None,
            pool_size: 10,
            statement_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            retry_budget: crate::store::WRITE_RETRY_BUDGET,
            ssl_root_cert: None,
        }
    }

    /// The same settings with hermes' tables in `schema`.
    pub fn with_schema(mut self, schema: impl Into<String>) -> PgOptions {
        self.schema = Some(schema.into());
        self
    }

    /// Where this connects, without user or password ([`masked_location`]).
    pub fn location(&self) -> String {
        masked_location(&self.dsn)
    }

    /// The CA file TLS trusts: the DSN's `sslrootcert`, else [`PgOptions::ssl_root_cert`].
    pub(crate) fn tls_root(&self) -> Option<std::path::PathBuf> {
        super::tls::driver_dsn(&self.dsn)
            .1
            .or_else(|| self.ssl_root_cert.clone())
    }

    /// The driver's configuration: the DSN with the timeouts and the schema added, and TLS
    /// only with `sslmode=require` (the `tls` module).
    pub(crate) fn driver_config(&self) -> Result<tokio_postgres::Config, StoreError> {
        let (dsn, _) = super::tls::driver_dsn(&self.dsn);
        let mut config: tokio_postgres::Config =
            dsn.parse()
                .map_err(|e: tokio_postgres::Error| StoreError::Config {
                    // The driver's parse errors name the bad option, never its value.
                    detail: format!("sessiondb.postgresql.dsn: the DSN cannot be parsed: {e}"),
                })?;
        if config.get_hosts().is_empty() {
            return Err(StoreError::Config {
                detail: "sessiondb.postgresql.dsn: the DSN names no host".into(),
            });
        }
        let mut options = config.get_options().unwrap_or_default().to_string();
        let timeout_ms = self.statement_timeout.as_millis().max(1);
        options.push_str(&format!(" -c statement_timeout={timeout_ms}"));
        if let Some(schema) = &self.schema {
            check_schema_name(schema)?;
            options.push_str(&format!(" -c search_path={schema},public"));
        }
        config.options(options.trim());
        if config.get_ssl_mode() != tokio_postgres::config::SslMode::Require {
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        }
        config.connect_timeout(self.connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("hermes");
        }
        Ok(config)
    }
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("dsn", &self.location())
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("statement_timeout", &self.statement_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("retry_budget", &self.retry_budget)
            .field("ssl_root_cert", &self.ssl_root_cert)
            .finish()
    }
}

/// A schema name hermes can put in `search_path` unquoted: `[A-Za-z_][A-Za-z0-9_]*`, at most
/// 63 bytes.
fn check_schema_name(schema: &str) -> Result<(), StoreError> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && schema
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Config {
            detail: format!(
                "sessiondb.postgresql.schema: `{schema}` must be letters, digits and `_` (not starting with a digit)"
            ),
        })
    }
}

/// `postgresql://host:port/dbname` for a DSN, with user and password left out; hosts and
/// ports as the DSN lists them. A DSN that does not parse shows as `postgresql://(invalid
/// DSN)`: even its text is not shown, since it may hold a password.
pub fn masked_location(dsn: &str) -> String {
    let Ok(config) = dsn.parse::<tokio_postgres::Config>() else {
        return "postgresql://(invalid DSN)".to_string();
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    format!(
        "postgresql://{}/{}",
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_location_never_shows_user_or_password() {
        for dsn in [
            "postgresql://alice:s3cret@db.example:5433/hermes",
            "host=db.example port=5433 user=alice password=s3cret dbname=hermes",
        ] {
            let shown = masked_location(dsn);
            assert_eq!(shown, "postgresql://db.example:5433/hermes");
            assert!(!shown.contains("s3cret") && !shown.contains("alice"));
            let debug = format!("{:?}", PgOptions::new(dsn));
            assert!(!debug.contains("s3cret"), "{debug}");
        }
        assert_eq!(
            masked_location("postgresql://u:s3cret@[bad"),
            "postgresql://(invalid DSN)"
        );
    }

    #[test]
    fn schema_names_are_checked() {
        let opts = PgOptions::new("postgresql://h/db").with_schema("bad;name");
        assert!(matches!(
            opts.driver_config(),
            Err(StoreError::Config { .. })
        ));
        let opts = PgOptions::new("postgresql://h/db").with_schema("team_a");
        let config = opts.driver_config().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            config
                .get_options()
                .is_some_and(|o| o.contains("search_path=team_a,public"))
        );
    }
}
