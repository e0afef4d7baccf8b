//! Waiting out a locked SQLite database: immediate transactions, bounded retries with
//! jitter while another connection holds the lock (case C21), and the error plumbing the
//! store's write closures use.

use std::time::{Duration, Instant};

use rand::Rng;
use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};

use crate::error::StoreError;

/// Default total time a write keeps retrying while another connection holds the lock (case C21: it
/// must outlast multi-second maintenance locks; 30 s).
pub const WRITE_RETRY_BUDGET: Duration = Duration::from_secs(30);

/// Why a store transaction failed: SQLite itself, or the closure run inside it.
pub(crate) enum TxError {
    Sql(rusqlite::Error),
    Store(StoreError),
}

/// Lets `?` work on SQLite calls inside store transactions. The `op` is `"write"` and `db`
/// is empty here; the store re-wraps such errors with the real operation and file name
/// before returning them.
impl From<rusqlite::Error> for StoreError {
    fn from(source: rusqlite::Error) -> StoreError {
        // Only used inside `write` closures; `write` re-wraps with the op and db name.
        StoreError::Sqlite {
            op: "write",
            db: String::new(),
            source,
        }
    }
}

pub(crate) fn run_immediate<T>(
    conn: &mut Connection,
    f: &impl Fn(&Transaction<'_>) -> Result<T, StoreError>,
) -> Result<T, TxError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(TxError::Sql)?;
    let value = f(&tx).map_err(|e| match e {
        StoreError::Sqlite { source, .. } => TxError::Sql(source),
        other => TxError::Store(other),
    })?;
    tx.commit().map_err(TxError::Sql)?;
    Ok(value)
}

pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// [`retry_busy`] for a check that reports busy as a store error.
pub(crate) fn retry_store_busy(
    mut f: impl FnMut() -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let start = Instant::now();
    loop {
        match f() {
            Err(StoreError::NotASessionStore { detail, .. })
                if (detail.contains("locked") || detail.contains("busy"))
                    && start.elapsed() < WRITE_RETRY_BUDGET =>
            {
                std::thread::sleep(jitter(start.elapsed()));
            }
            other => return other,
        }
    }
}

/// Retries a statement that is not in a transaction (e.g. switching to WAL) while busy.
pub(crate) fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = Instant::now();
    loop {
        match f() {
            Err(e) if is_busy(&e) && start.elapsed() < WRITE_RETRY_BUDGET => {
                std::thread::sleep(jitter(start.elapsed()));
            }
            other => return other,
        }
    }
}

/// Sleep before the next attempt: 20–150 ms at first, growing to 100–500 ms after a few
/// seconds of waiting, randomized so competing processes do not retry in lockstep.
pub(crate) fn jitter(waited: Duration) -> Duration {
    let (lo, hi) = if waited < Duration::from_secs(2) {
        (20, 150)
    } else {
        (100, 500)
    };
    Duration::from_millis(rand::rng().random_range(lo..=hi))
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
