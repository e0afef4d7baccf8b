//! Optimistic concurrency on a session's history (issue 7 item 4): every change that
//! rewrites the active history (`/undo`, `/retry`, compression, ending the session) bumps
//! the session's history version (`hermes_sessions.history_version`, plus Python's
//! `sessions.rewind_count`, so Python's rewinds count too); a writer that loaded the history at version `v` passes `v` to
//! these checked forms, and the write is refused with [`StoreError::HistoryChanged`] — in the
//! same transaction that would have written — when someone else changed the history meanwhile.
//! So an agent never appends to, or compacts over, a history it has not seen.

use chrono::Utc;
use hermes_protocol::Message;

use crate::compaction::replace_in;
use crate::error::StoreError;
use crate::messages::{UsageRecord, add_usage_in, append_in, deactivate_in, encode};
use crate::store::{SqliteStore, to_ts};

/// The stored `history_version` of `session_id`, or [`StoreError::HistoryChanged`] when it is
/// not `expected` ([`StoreError::SessionNotFound`] when there is no such session).
fn check(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    expected: u64,
) -> Result<u64, StoreError> {
    let found: Option<i64> = tx
        .prepare_cached(
            "SELECT COALESCE(h.history_version, 0) + COALESCE(s.rewind_count, 0) \
             FROM sessions s LEFT JOIN hermes_sessions h ON h.session_id = s.id WHERE s.id = ?1",
        )?
        .query_row([session_id], |row| row.get(0))
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            other => Err(other),
        })?;
    let Some(found) = found else {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    };
    let found = u64::try_from(found).unwrap_or(0);
    if found != expected {
        return Err(StoreError::HistoryChanged {
            id: session_id.to_string(),
            expected,
            found,
        });
    }
    Ok(found)
}

impl SqliteStore {
    /// [`SqliteStore::append_message`], refused unless the session's `history_version` is
    /// still `expected_version` (appending does not change the version).
    ///
    /// Errors: [`StoreError::HistoryChanged`] when the history changed since the caller loaded
    /// it (nothing is written), [`StoreError::SessionNotFound`], [`StoreError::Busy`].
    pub fn append_message_checked(
        &self,
        session_id: &str,
        message: &Message,
        token_count: Option<u64>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        let enc = encode(message)?;
        let now = to_ts(Utc::now());
        let token_count = token_count.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        let calls = i64::try_from(message.tool_calls.len()).unwrap_or(i64::MAX);
        self.write("append_message_checked", |tx| {
            check(tx, session_id, expected_version)?;
            append_in(tx, session_id, message, &enc, now, token_count, calls)
        })
    }

    /// [`SqliteStore::append_message_checked`] for a model's reply, with the call's usage
    /// added ([`SqliteStore::add_usage`]) in the same committed transaction: one commit
    /// instead of two per model call (issue 6), and the tokens are never counted for a reply
    /// that was not stored, nor a reply stored without its tokens. When the version check
    /// fails nothing is written, the usage included.
    ///
    /// Errors: as [`SqliteStore::append_message_checked`].
    pub fn append_message_with_usage_checked(
        &self,
        session_id: &str,
        message: &Message,
        usage: &UsageRecord<'_>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        self.append_checked(
            "append_message_with_usage_checked",
            session_id,
            message,
            None,
            Some(usage),
            expected_version,
        )
    }

    /// The version-checked append with what hermes keeps beside the message: `trace_id`, the
    /// W3C trace id (32 lowercase hex digits) of the turn that produced it, stored in
    /// `hermes_messages.trace_id` and read back as [`crate::StoredMessage::trace_id`]; and,
    /// for a model's reply, the `usage` of its call, recorded in the same commit as
    /// [`SqliteStore::append_message_with_usage_checked`] does. With neither it is
    /// [`SqliteStore::append_message_checked`].
    ///
    /// Errors: as [`SqliteStore::append_message_checked`].
    pub fn append_message_traced(
        &self,
        session_id: &str,
        message: &Message,
        trace_id: Option<&str>,
        usage: Option<&UsageRecord<'_>>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        self.append_checked(
            "append_message_traced",
            session_id,
            message,
            trace_id,
            usage,
            expected_version,
        )
    }

    fn append_checked(
        &self,
        op: &'static str,
        session_id: &str,
        message: &Message,
        trace_id: Option<&str>,
        usage: Option<&UsageRecord<'_>>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        let enc = encode(message)?.traced(trace_id);
        let now = to_ts(Utc::now());
        let calls = i64::try_from(message.tool_calls.len()).unwrap_or(i64::MAX);
        self.write(op, |tx| {
            check(tx, session_id, expected_version)?;
            let id = append_in(tx, session_id, message, &enc, now, None, calls)?;
            if let Some(usage) = usage {
                add_usage_in(tx, session_id, usage)?;
            }
            Ok(id)
        })
    }

    /// [`SqliteStore::deactivate_messages_from`], refused unless the session's
    /// `history_version` is still `expected_version`. Returns the new version (unchanged
    /// when no message was active from `message_id` on).
    ///
    /// Errors: as [`SqliteStore::append_message_checked`].
    pub fn deactivate_messages_checked(
        &self,
        session_id: &str,
        message_id: i64,
        expected_version: u64,
    ) -> Result<u64, StoreError> {
        self.write("deactivate_messages_checked", |tx| {
            let v = check(tx, session_id, expected_version)?;
            let changed = deactivate_in(tx, session_id, message_id)?;
            Ok(v + u64::from(changed > 0))
        })
    }

    /// [`SqliteStore::replace_active_from`], refused unless the session's `history_version`
    /// is still `expected_version`. Returns the new row ids and the new version.
    ///
    /// Errors: as [`SqliteStore::append_message_checked`].
    pub fn replace_active_checked(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
        expected_version: u64,
    ) -> Result<(Vec<i64>, u64), StoreError> {
        self.replace_active_traced(session_id, from_id, replacement, &[], expected_version)
    }

    /// [`SqliteStore::replace_active_checked`] with a trace id per replacement message:
    /// `trace_ids[i]` is stored with `replacement[i]` (as
    /// [`SqliteStore::append_message_traced`] stores one); a message past the end of
    /// `trace_ids` has none. Compression passes the trace ids of the messages it keeps, so a
    /// turn's messages keep their turn's trace id.
    ///
    /// Errors: as [`SqliteStore::append_message_checked`].
    pub fn replace_active_traced(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
        trace_ids: &[Option<String>],
        expected_version: u64,
    ) -> Result<(Vec<i64>, u64), StoreError> {
        let encoded = crate::messages::encode_traced(replacement, trace_ids)?;
        let now = to_ts(Utc::now());
        self.write("replace_active_checked", |tx| {
            let v = check(tx, session_id, expected_version)?;
            let ids = replace_in(tx, session_id, from_id, replacement, &encoded, now)?;
            Ok((ids, v + 1))
        })
    }
}
