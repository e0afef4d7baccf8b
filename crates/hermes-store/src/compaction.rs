//! Context compression support (FEATURES §9): replacing the active tail of a session's
//! history in one transaction, and updating the stored system prompt after the rebuild that
//! follows a compression. Replaced messages stay in the store, inactive and searchable
//! (`active = 0, compacted = 1`: Python's mark for turns summarized away, which its search
//! includes too).

use chrono::Utc;
use hermes_protocol::Message;

use crate::error::StoreError;
use crate::messages::{Encoded, bump_version, encode, insert_row};
use crate::store::{SqliteStore, to_ts};

/// The body of [`SqliteStore::replace_active_from`], shared with the version-checked form.
pub(crate) fn replace_in(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    from_id: Option<i64>,
    replacement: &[Message],
    encoded: &[Encoded],
    now: f64,
) -> Result<Vec<i64>, StoreError> {
    let changed = match from_id {
        Some(id) => tx.execute(
            "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ?1 AND id >= ?2 \
             AND active = 1",
            rusqlite::params![session_id, id],
        )?,
        None => 0,
    };
    let delta = i64::try_from(replacement.len()).unwrap_or(i64::MAX)
        - i64::try_from(changed).unwrap_or(i64::MAX);
    let n = tx.execute(
        "UPDATE sessions SET message_count = max(COALESCE(message_count, 0) + ?2, 0) \
         WHERE id = ?1",
        rusqlite::params![session_id, delta],
    )?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    bump_version(tx, session_id)?;
    replacement
        .iter()
        .zip(encoded)
        .map(|(m, enc)| insert_row(tx, session_id, m, enc, now, None))
        .collect()
}

impl SqliteStore {
    /// In ONE transaction: marks message `from_id` and every later message of the session
    /// inactive (when `from_id` is given), then appends `replacement` as new active messages
    /// in order. Returns the new row ids. `message_count` ends up counting the active
    /// messages; `tool_call_count` is not increased (the calls were counted when first saved);
    /// `history_version` is bumped. A crash leaves either the old or the new history active,
    /// never a mix.
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown session.
    pub fn replace_active_from(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        let encoded = replacement
            .iter()
            .map(encode)
            .collect::<Result<Vec<_>, _>>()?;
        let now = to_ts(Utc::now());
        self.write("replace_active_from", |tx| {
            replace_in(tx, session_id, from_id, replacement, &encoded, now)
        })
    }

    /// Replaces the stored system prompt of a session (after a compression rebuilt it; the new
    /// text is then reused byte-for-byte on resume). Errors with
    /// [`StoreError::SessionNotFound`] for an unknown id.
    pub fn set_system_prompt(&self, id: &str, prompt: &str) -> Result<(), StoreError> {
        self.write("set_system_prompt", |tx| {
            let n = tx.execute(
                "UPDATE sessions SET system_prompt = ?2 WHERE id = ?1",
                rusqlite::params![id, prompt],
            )?;
            if n == 0 {
                return Err(StoreError::SessionNotFound { id: id.to_string() });
            }
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use crate::{NewSession, SqliteStore};
    use hermes_protocol::Message;

    fn store_with(n: usize) -> (SqliteStore, Vec<i64>) {
        let store = SqliteStore::open_in_memory().unwrap();
        store
            .create_session(&NewSession {
                id: "s1".into(),
                source: "cli".into(),
                session_key: None,
                title: None,
                model: "m".into(),
                provider: "p".into(),
                system_prompt: "old prompt".into(),
                parent_session_id: None,
                cwd: None,
            })
            .unwrap();
        let ids = (0..n)
            .map(|i| {
                store
                    .append_message("s1", &Message::user(format!("needle{i} text")), None)
                    .unwrap()
            })
            .collect();
        (store, ids)
    }

    #[test]
    fn replaced_messages_stay_searchable_and_the_new_ones_are_active_in_order() {
        let (store, ids) = store_with(6);
        let new = vec![
            Message::user("summary of 2..4"),
            Message::user("needle5 text"),
        ];
        let new_ids = store.replace_active_from("s1", Some(ids[2]), &new).unwrap();
        assert_eq!(new_ids.len(), 2);
        let active: Vec<String> = store
            .load_messages("s1")
            .unwrap()
            .iter()
            .map(|m| m.message.text())
            .collect();
        assert_eq!(
            active,
            vec![
                "needle0 text",
                "needle1 text",
                "summary of 2..4",
                "needle5 text"
            ]
        );
        assert_eq!(store.load_all_messages("s1").unwrap().len(), 8);
        let rec = store.find_session("s1").unwrap().unwrap();
        assert_eq!(rec.message_count, 4);
        let hits = store.search(&crate::SearchQuery::new("needle3")).unwrap();
        assert!(
            hits.iter().any(|h| !h.active),
            "inactive message still found"
        );

        store.set_system_prompt("s1", "new prompt").unwrap();
        let rec = store.find_session("s1").unwrap().unwrap();
        assert_eq!(rec.system_prompt, "new prompt");
        assert!(store.set_system_prompt("nope", "x").is_err());
        assert!(store.replace_active_from("nope", None, &new).is_err());
    }
}
