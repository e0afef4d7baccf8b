//! Subagent sessions (`delegate_task`, FEATURES §4): each child's transcript is a session of
//! its own, with source [`SUBAGENT_SOURCE`] and `parent_session_id` naming the session that
//! delegated, and Python's `_delegate_from` marker in `model_config` (so Python Hermes hides
//! and cascades it like its own delegate runs; Python's delegate children are likewise left
//! out of hermes' lists). They are reachable by id and from their parent ([`SqliteStore::child_sessions`]),
//! but are never the "latest session" of `hermes -c`, never listed among the conversations,
//! and their tokens are not counted twice in [`SqliteStore::stats`] (the parent's totals
//! already include them).

use rusqlite::OptionalExtension;

use crate::error::StoreError;
use crate::store::{SESSION_COLUMNS, SESSION_FROM, SqliteStore, session_from_row};
use crate::types::SessionRecord;

/// The `source` of a subagent session.
pub const SUBAGENT_SOURCE: &str = "subagent";

impl SqliteStore {
    /// The subagent sessions started by `parent_id`, oldest first (empty for an unknown id).
    pub fn child_sessions(&self, parent_id: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE s.parent_session_id = ?1 \
             AND s.source = '{SUBAGENT_SOURCE}' ORDER BY s.started_at, s.rowid"
        );
        conn.prepare(&sql)
            .and_then(|mut st| {
                st.query_map([parent_id], session_from_row)?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(self.sql_err("child_sessions"))
    }

    /// The parent of `id` when `id` is a subagent session; `None` for any other session or
    /// an unknown id.
    pub fn subagent_parent(&self, id: &str) -> Result<Option<String>, StoreError> {
        let conn = self.lock();
        conn.query_row(
            &format!(
                "SELECT parent_session_id FROM sessions WHERE id = ?1 \
                 AND source = '{SUBAGENT_SOURCE}'"
            ),
            [id],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()
        .map(Option::flatten)
        .map_err(self.sql_err("subagent_parent"))
    }
}
