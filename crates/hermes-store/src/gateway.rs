//! Gateway chats across a switch of program (issue 17 item 1): Python Hermes routes a chat's
//! session key to its session through `gateway_routing` (one JSON `SessionEntry` per key and
//! sessions directory) and falls back to the newest live session carrying the key; hermes
//! routes by the newest session carrying the key. So that the same chat reaches the same
//! session in both programs, hermes reads Python's routing entry when it is newer than its
//! own newest session for the key ([`SqliteStore::route_session`]), and every session hermes
//! creates with a key moves Python's entries for that key to it (in `create_session`'s
//! transaction, [`move_routes`]).

use rusqlite::OptionalExtension;

use crate::error::StoreError;
use crate::store::SqliteStore;

/// Points every `gateway_routing` entry of `key` at `session_id` (keeping the rest of each
/// entry's JSON), with `updated_at` now. Entries whose JSON is not an object are left alone.
pub(crate) fn move_routes(
    tx: &rusqlite::Transaction<'_>,
    key: &str,
    session_id: &str,
    now: f64,
) -> rusqlite::Result<usize> {
    let iso = chrono::DateTime::from_timestamp_millis((now * 1000.0) as i64)
        .unwrap_or_default()
        .naive_utc()
        .format("%Y-%m-%dT%H:%M:%S%.6f")
        .to_string();
    tx.prepare_cached(
        "UPDATE gateway_routing SET entry_json = json_set(entry_json, '$.session_id', ?2, \
         '$.updated_at', ?3), updated_at = ?4 \
         WHERE session_key = ?1 AND json_valid(entry_json) \
         AND json_type(entry_json) = 'object'",
    )?
    .execute(rusqlite::params![key, session_id, iso, now])
}

impl SqliteStore {
    /// The session a gateway chat's `session_key` routes to: Python's routing entry for the
    /// key (the newest one, when several sessions directories have one) if its session
    /// exists and the entry is at least as new as the newest session carrying the key; else
    /// that newest session; `None` for a chat neither program has seen.
    pub fn route_session(&self, session_key: &str) -> Result<Option<String>, StoreError> {
        let newest = self.latest_session_for_key(session_key)?;
        let conn = self.lock();
        let entry: Option<(String, f64)> = conn
            .prepare_cached(
                "SELECT json_extract(g.entry_json, '$.session_id'), g.updated_at \
                 FROM gateway_routing g JOIN sessions s \
                 ON s.id = json_extract(g.entry_json, '$.session_id') \
                 WHERE g.session_key = ?1 AND json_valid(g.entry_json) \
                 ORDER BY g.updated_at DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row([session_key], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(self.sql_err("route_session"))?;
        Ok(match (entry, newest) {
            (Some((id, updated)), Some(n))
                if crate::store::to_ts(n.started_at) <= updated + 0.001 =>
            {
                Some(id)
            }
            (Some((id, _)), None) => Some(id),
            (_, Some(n)) => Some(n.id),
            (None, None) => None,
        })
    }
}
