//! Gateway chats across a switch of program (issue 17 item 1): Python Hermes routes a chat's
//! session key to its session through `gateway_routing` (one JSON `SessionEntry` per key and
//! sessions directory) and falls back to the newest live session carrying the key; hermes
//! routes by the newest session carrying the key. So that the same chat reaches the same
//! session in both programs, hermes reads Python's routing entry when it is newer than its
//! own newest session for the key ([`SqliteStore::route_session`]), and every session hermes
//! creates with a key moves Python's entries for that key to it (in `create_session`'s
//! transaction, [`move_routes`]).
//!
//! Python's gateway also records on each gateway session row who and where the chat is
//! (`user_id`, `chat_id`, `chat_type`, `thread_id`, `display_name`, `origin_json`;
//! `SessionDB.record_gateway_session_peer`), and reads them back to find a chat's session
//! (`find_session_by_origin`, the peer fallback of `find_latest_gateway_session_for_peer`) and
//! to decide whether a chat may `/resume` or list a session (its IDOR scoping compares the
//! row's user and chat with the caller's). hermes' gateway records the same columns the same
//! way ([`SqliteStore::record_gateway_peer`]).

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

/// Who and where a gateway chat is, as Python's gateway stores it on the session row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayPeer {
    /// The platform (`telegram`, …): the row's `source`.
    pub source: String,
    /// The chat's session key.
    pub session_key: String,
    /// Stable id of the sender.
    pub user_id: Option<String>,
    /// The chat's id.
    pub chat_id: Option<String>,
    /// `dm`, `group`, `channel` (Python also writes `thread`, `forum`).
    pub chat_type: Option<String>,
    /// Thread or topic id inside the chat.
    pub thread_id: Option<String>,
    /// The chat's name, when the platform gives one (`None` keeps what the row has).
    pub display_name: Option<String>,
    /// Python's `SessionSource.to_dict()` of the chat as JSON (`None` keeps what the row has).
    pub origin_json: Option<String>,
}

impl SqliteStore {
    /// Python's `record_gateway_session_peer`: sets `session_key`, `source`, `user_id`,
    /// `chat_id`, `chat_type` and `thread_id` of session `session_id` from `peer`, and
    /// `display_name` / `origin_json` when given. Returns whether the session exists. A peer
    /// without a session key changes nothing (as in Python).
    pub fn record_gateway_peer(
        &self,
        session_id: &str,
        peer: &GatewayPeer,
    ) -> Result<bool, StoreError> {
        if session_id.is_empty() || peer.session_key.is_empty() {
            return Ok(false);
        }
        self.write("record_gateway_peer", |tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE sessions SET session_key = ?1, source = ?2, user_id = ?3, \
                     chat_id = ?4, chat_type = ?5, thread_id = ?6, \
                     display_name = COALESCE(?7, display_name), \
                     origin_json = COALESCE(?8, origin_json) WHERE id = ?9",
                )?
                .execute(rusqlite::params![
                    peer.session_key,
                    peer.source,
                    peer.user_id,
                    peer.chat_id,
                    peer.chat_type,
                    peer.thread_id,
                    peer.display_name,
                    peer.origin_json,
                    session_id
                ])?;
            Ok(n > 0)
        })
    }

    /// The peer columns of session `session_id` ([`SqliteStore::record_gateway_peer`]);
    /// `None` for a missing session or one without a session key.
    pub fn gateway_peer(&self, session_id: &str) -> Result<Option<GatewayPeer>, StoreError> {
        let conn = self.lock();
        conn.prepare_cached(
            "SELECT session_key, source, user_id, chat_id, chat_type, thread_id, display_name, \
             origin_json FROM sessions WHERE id = ?1 AND COALESCE(session_key, '') != ''",
        )
        .and_then(|mut st| {
            st.query_row([session_id], |r| {
                Ok(GatewayPeer {
                    session_key: r.get(0)?,
                    source: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    user_id: r.get(2)?,
                    chat_id: r.get(3)?,
                    chat_type: r.get(4)?,
                    thread_id: r.get(5)?,
                    display_name: r.get(6)?,
                    origin_json: r.get(7)?,
                })
            })
            .optional()
        })
        .map_err(self.sql_err("gateway_peer"))
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewSession;

    #[test]
    fn the_peer_is_recorded_on_the_row_as_python_records_it() {
        let store = SqliteStore::open_in_memory().unwrap();
        store
            .create_session(&NewSession {
                id: "s1".into(),
                source: "telegram".into(),
                session_key: Some("agent:main:telegram:group:-5:7".into()),
                model: "m".into(),
                provider: "p".into(),
                ..NewSession::default()
            })
            .unwrap();
        let mut peer = GatewayPeer {
            source: "telegram".into(),
            session_key: "agent:main:telegram:group:-5:7".into(),
            user_id: Some("42".into()),
            chat_id: Some("-5".into()),
            chat_type: Some("group".into()),
            thread_id: Some("7".into()),
            display_name: Some("ops".into()),
            origin_json: Some(r#"{"platform": "telegram"}"#.into()),
        };
        assert!(store.record_gateway_peer("s1", &peer).unwrap());
        // Later records without a name or origin keep the ones stored (COALESCE).
        peer.display_name = None;
        peer.origin_json = None;
        assert!(store.record_gateway_peer("s1", &peer).unwrap());
        assert!(!store.record_gateway_peer("nope", &peer).unwrap());
        peer.session_key.clear();
        assert!(!store.record_gateway_peer("s1", &peer).unwrap());
        let conn = store.lock();
        let row: (String, String, String, String, String, String) = conn
            .query_row(
                "SELECT user_id, chat_id, chat_type, thread_id, display_name, origin_json \
                 FROM sessions WHERE id = 's1'",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(
            row,
            (
                "42".into(),
                "-5".into(),
                "group".into(),
                "7".into(),
                "ops".into(),
                r#"{"platform": "telegram"}"#.into()
            )
        );
    }
}
