//! [`SessionStore`]: the cheap, cloneable handle every caller holds, over whichever
//! implementation `sessiondb.provider` chose ([`crate::SessionBackend`]).

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::SessionBackend;
use crate::cron_runs::CronRun;
use crate::error::StoreError;
use crate::store::SqliteStore;

/// The session store, as callers hold it: a handle over an `Arc<dyn SessionBackend>`.
///
/// Cloning is cheap (one reference count) and every clone is the same store. All of
/// [`SessionBackend`]'s methods are called on it directly (`store.append_message(…)`,
/// through `Deref`); the constructors pick the implementation: [`SessionStore::open`] and
/// [`SessionStore::open_in_memory`] for SQLite, [`SessionStore::from_backend`] for any other
/// (`crate::PgStore`, chosen by `sessiondb.provider: postgresql`).
#[derive(Clone)]
pub struct SessionStore {
    backend: Arc<dyn SessionBackend>,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("provider", &self.backend.provider().as_str())
            .field("location", &self.backend.location())
            .finish()
    }
}

impl Deref for SessionStore {
    type Target = dyn SessionBackend;

    fn deref(&self) -> &Self::Target {
        &*self.backend
    }
}

/// How many times [`SessionStore::update_document`] re-applies a change that lost the race.
const DOCUMENT_TRIES: usize = 64;

impl SessionStore {
    /// The SQLite store at `path` ([`SqliteStore::open`]: created with the shared schema when
    /// new, migrated from hermes' earlier schema, refused when it is not a session store).
    ///
    /// Errors: as [`SqliteStore::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<SessionStore, StoreError> {
        Ok(SessionStore::from_backend(SqliteStore::open(path)?))
    }

    /// An in-memory SQLite store (tests, `--no-persist` runs).
    pub fn open_in_memory() -> Result<SessionStore, StoreError> {
        Ok(SessionStore::from_backend(SqliteStore::open_in_memory()?))
    }

    /// A handle over `backend`.
    pub fn from_backend(backend: impl SessionBackend + 'static) -> SessionStore {
        SessionStore {
            backend: Arc::new(backend),
        }
    }

    /// Replaces the write retry budget (default [`crate::WRITE_RETRY_BUDGET`]) of this store
    /// (and of its clones). A short budget suits interactive callers that prefer an early
    /// [`StoreError::Busy`] over waiting; the store stays usable after a `Busy` error.
    pub fn with_retry_budget(self, budget: Duration) -> SessionStore {
        self.backend.set_retry_budget(budget);
        self
    }

    /// Read, change, compare-and-replace of the shared document `name` of `scope`
    /// ([`SessionBackend::document`], [`SessionBackend::put_document`]): `change` gets the
    /// current text (`None` when there is none yet) and returns its result with the new text,
    /// or `None` to leave the document as it is. When another process replaced the document
    /// between the read and the write, `change` runs again on the fresh text, so no update
    /// is lost; it may therefore run more than once.
    ///
    /// # Errors
    /// `change`'s error; the store's; [`StoreError::Unavailable`] when the document kept
    /// changing under 64 tries.
    pub fn update_document<R, E: From<StoreError>>(
        &self,
        scope: &str,
        name: &str,
        mut change: impl FnMut(Option<&str>) -> Result<(R, Option<String>), E>,
    ) -> Result<R, E> {
        let start = std::time::Instant::now();
        for _ in 0..DOCUMENT_TRIES {
            let current = self.backend.document(scope, name)?;
            let (out, body) = change(current.as_ref().map(|d| d.body.as_str()))?;
            let Some(body) = body else {
                return Ok(out);
            };
            if self
                .backend
                .put_document(scope, name, &body, current.map(|d| d.version))?
            {
                return Ok(out);
            }
        }
        Err(StoreError::Unavailable {
            op: "update_document",
            db: self.backend.location(),
            waited: start.elapsed(),
            detail: format!(
                "the shared document {scope}/{name} kept changing ({DOCUMENT_TRIES} tries)"
            ),
        }
        .into())
    }

    /// Records one finished cron run (see [`SessionBackend::record_cron_runs`]).
    pub fn record_cron_run(&self, run: &CronRun) -> Result<(), StoreError> {
        self.backend
            .record_cron_runs(std::slice::from_ref(run))
            .map(|_| ())
    }
}
