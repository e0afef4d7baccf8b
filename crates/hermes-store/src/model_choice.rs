//! A session's model choice (`hermes_sessions.model_choice`; hermes' schema V4 before the
//! shared schema): what `/model` picked in a gateway chat, kept with
//! the session so that an agent rebuilt after an LRU eviction or a gateway restart uses the
//! same provider and model (issue 7 item 6). The store keeps the text as given; the front end
//! owns its format.

use crate::error::StoreError;
use crate::store::{SqliteStore, found};

impl SqliteStore {
    /// Records that session `id` now runs on `model` at `provider` (the `model` and
    /// `provider` columns shown by `/status` and `sessions list`) because of `choice` (the
    /// front end's text; `None` clears it: the configured model again).
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown id, SQLite failures.
    pub fn set_model_choice(
        &self,
        id: &str,
        model: &str,
        provider: &str,
        choice: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write("set_model_choice", |tx| {
            let n = tx.execute(
                "UPDATE sessions SET model = ?2, billing_provider = ?3 WHERE id = ?1",
                rusqlite::params![id, model, provider],
            )?;
            found(n, id)?;
            tx.execute(
                "INSERT INTO hermes_sessions (session_id, model_choice) VALUES (?1, ?2) \
                 ON CONFLICT (session_id) DO UPDATE SET model_choice = excluded.model_choice",
                rusqlite::params![id, choice],
            )?;
            Ok(())
        })
    }

    /// The model choice recorded for session `id` by [`SqliteStore::set_model_choice`];
    /// `None` when there is none or no such session.
    pub fn model_choice(&self, id: &str) -> Result<Option<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT model_choice FROM hermes_sessions WHERE session_id = ?1")
            .map_err(self.sql_err("model_choice"))?;
        let mut rows = stmt.query([id]).map_err(self.sql_err("model_choice"))?;
        match rows.next().map_err(self.sql_err("model_choice"))? {
            Some(row) => row
                .get::<_, Option<String>>(0)
                .map_err(self.sql_err("model_choice")),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use crate::{NewSession, SqliteStore, StoreError};

    fn session(store: &SqliteStore, id: &str) {
        store
            .create_session(&NewSession {
                id: id.into(),
                source: "telegram".into(),
                session_key: Some("agent:main:telegram:dm:1".into()),
                title: None,
                model: "first".into(),
                provider: "custom".into(),
                system_prompt: "sys".into(),
                parent_session_id: None,
                cwd: None,
            })
            .unwrap();
    }

    #[test]
    fn a_choice_is_kept_with_the_session_and_can_be_cleared() {
        let store = SqliteStore::open_in_memory().unwrap();
        session(&store, "s1");
        assert_eq!(store.model_choice("s1").unwrap(), None);
        let choice = r#"{"provider":"anthropic","model":"claude-x"}"#;
        store
            .set_model_choice("s1", "claude-x", "anthropic", Some(choice))
            .unwrap();
        assert_eq!(store.model_choice("s1").unwrap().as_deref(), Some(choice));
        let record = store.get_session("s1").unwrap().unwrap();
        assert_eq!(
            (record.model.as_str(), record.provider.as_str()),
            ("claude-x", "anthropic")
        );
        store
            .set_model_choice("s1", "first", "custom", None)
            .unwrap();
        assert_eq!(store.model_choice("s1").unwrap(), None);
        assert_eq!(store.model_choice("nope").unwrap(), None);
        assert!(matches!(
            store.set_model_choice("nope", "m", "p", None),
            Err(StoreError::SessionNotFound { .. })
        ));
    }
}
