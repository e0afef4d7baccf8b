//! `sessiondb:` — which session store hermes uses (issue 21), with the key names of Python
//! Hermes' RFC for pluggable session stores (`sessiondb: {provider: postgresql, postgresql:
//! {dsn, pool_size, max_overflow}}`):
//!
//! ```yaml
//! sessiondb:
//!   provider: postgresql          # sqlite (default: HERMES_HOME/state.db) | postgresql
//!   postgresql:
//!     dsn: postgresql://hermes@db.internal:5432/hermes   # or HERMES_SESSIONDB_DSN
//!     schema: team_a              # optional: the schema of hermes' tables
//!     pool_size: 10
//!     max_overflow: 5
//!     statement_timeout: 30       # seconds
//! ```
//!
//! The DSN may hold a password: its `Debug` is redacted, `hermes config show` masks it, and
//! the environment variable [`SESSIONDB_DSN_ENV`] (for example in `HERMES_HOME/.env`) is the
//! better place for it.

use serde::{Deserialize, Serialize};

/// The environment variable that gives the PostgreSQL DSN (it wins over
/// `sessiondb.postgresql.dsn`).
pub const SESSIONDB_DSN_ENV: &str = "HERMES_SESSIONDB_DSN";

/// The `sessiondb:` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionDbConfig {
    /// `sqlite` or `postgresql`; `None` = `sqlite`.
    pub provider: Option<String>,
    /// `postgresql:` settings, read when `provider` is `postgresql`.
    pub postgresql: PostgresqlConfig,
}

/// `sessiondb.postgresql:`.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PostgresqlConfig {
    /// libpq connection string (URL or `key=value` form). A secret.
    pub dsn: Option<String>,
    /// Schema of hermes' tables (default: the server's, `public`).
    pub schema: Option<String>,
    /// Connections kept in the pool (default 10).
    pub pool_size: Option<u32>,
    /// Further connections allowed under load (default 0); the pool opens at most
    /// `pool_size + max_overflow`.
    pub max_overflow: Option<u32>,
    /// `statement_timeout` in seconds (default 30).
    pub statement_timeout: Option<f64>,
    /// Seconds allowed to open one connection (default 10).
    pub connect_timeout: Option<f64>,
    /// CA certificates (PEM file) the server must prove itself with when the DSN says
    /// `sslmode=require` (libpq's name; default: the system's roots).
    pub sslrootcert: Option<String>,
}

crate::debug_redacted!(PostgresqlConfig {
    secret: [dsn],
    shown: [
        schema,
        pool_size,
        max_overflow,
        statement_timeout,
        connect_timeout,
        sslrootcert
    ],
});
