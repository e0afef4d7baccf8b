//! The one interface of the session store ([`SessionBackend`]), which the SQLite store
//! ([`crate::SqliteStore`]) and the PostgreSQL store ([`crate::PgStore`]) implement, and
//! which callers reach through the cheap handle [`crate::SessionStore`].
//!
//! Every method is blocking and may be called from any thread (async callers use
//! `spawn_blocking`, ARCHITECTURE §6). The behaviour each method promises is the one its
//! SQLite implementation documents on [`crate::SqliteStore`]; the conformance suite
//! (`tests/conformance/`) runs the same tests against both implementations and is the
//! definition of that behaviour.

use std::time::Duration;

use chrono::{DateTime, Utc};
use hermes_protocol::Message;

use crate::claims::ClaimRecord;
use crate::cron_runs::CronRun;
use crate::documents::Document;
use crate::error::StoreError;
use crate::gateway::GatewayPeer;
use crate::leases::{Lease, LeaseAttempt};
use crate::maintenance::{SchemaReport, SearchIndexReport};
use crate::messages::UsageRecord;
use crate::types::{
    ModelUsage, NewSession, SearchHit, SearchQuery, SessionRecord, StoreStats, StoredMessage,
};

/// Which implementation a store is (`sessiondb.provider` in `config.yaml`, the names of
/// Python Hermes' RFC for pluggable session stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// The embedded default: `HERMES_HOME/state.db`, shared with Python Hermes.
    Sqlite,
    /// A PostgreSQL database, for several processes or machines on one store.
    Postgresql,
}

impl Provider {
    /// The config name: `sqlite` or `postgresql`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Sqlite => "sqlite",
            Provider::Postgresql => "postgresql",
        }
    }
}

/// The session store's operations: sessions, messages (each committed when complete),
/// search, usage, the history version, compaction, subagents, gateway routing, model choice,
/// cron runs, session and named leases, claims, and the health checks `hermes doctor` runs.
///
/// Object safe: callers hold an `Arc<dyn SessionBackend>` inside [`crate::SessionStore`].
/// The documentation of each method is on the SQLite implementation's method of the same
/// name ([`crate::SqliteStore`]); the PostgreSQL implementation keeps the same contract.
#[allow(missing_docs)] // documented once, on `SqliteStore`'s methods of the same names
pub trait SessionBackend: Send + Sync {
    /// Which implementation this is.
    fn provider(&self) -> Provider;
    /// Where the store is, safe to show and log: the file path, or the PostgreSQL server
    /// and database without user or password.
    fn location(&self) -> String;
    /// How long a write keeps retrying a busy or failed-over database before it gives up
    /// ([`crate::WRITE_RETRY_BUDGET`] by default).
    fn set_retry_budget(&self, budget: Duration);

    // Sessions.
    fn create_session(&self, new: &NewSession) -> Result<(), StoreError>;
    fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError>;
    fn find_session(&self, key: &str) -> Result<Option<SessionRecord>, StoreError>;
    fn latest_session(&self, source: Option<&str>) -> Result<Option<SessionRecord>, StoreError>;
    fn list_sessions(&self, limit: usize, offset: usize) -> Result<Vec<SessionRecord>, StoreError>;
    fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError>;
    fn set_title_numbered(&self, id: &str, title: &str) -> Result<String, StoreError>;
    fn end_session(&self, id: &str, reason: &str) -> Result<(), StoreError>;
    fn set_archived(&self, id: &str, archived: bool) -> Result<(), StoreError>;
    fn delete_session(&self, id: &str) -> Result<bool, StoreError>;
    fn prune_sessions(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError>;
    fn latest_session_for_key(
        &self,
        session_key: &str,
    ) -> Result<Option<SessionRecord>, StoreError>;
    fn count_session_keys(&self) -> Result<u64, StoreError>;
    fn last_activity(&self, session_id: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
    fn set_system_prompt(&self, id: &str, prompt: &str) -> Result<(), StoreError>;
    fn child_sessions(&self, parent_id: &str) -> Result<Vec<SessionRecord>, StoreError>;
    fn subagent_parent(&self, id: &str) -> Result<Option<String>, StoreError>;
    fn set_model_choice(
        &self,
        id: &str,
        model: &str,
        provider: &str,
        choice: Option<&str>,
    ) -> Result<(), StoreError>;
    fn model_choice(&self, id: &str) -> Result<Option<String>, StoreError>;
    fn route_session(&self, session_key: &str) -> Result<Option<String>, StoreError>;
    fn record_gateway_peer(&self, session_id: &str, peer: &GatewayPeer)
    -> Result<bool, StoreError>;
    /// Who and where the gateway chat of session `session_id` is, as recorded by
    /// [`SessionBackend::record_gateway_peer`] (either program's); `None` for a missing
    /// session or one without a session key.
    fn gateway_peer(&self, session_id: &str) -> Result<Option<GatewayPeer>, StoreError>;

    // Messages, usage and the history version.
    fn append_message(
        &self,
        session_id: &str,
        message: &Message,
        token_count: Option<u64>,
    ) -> Result<i64, StoreError>;
    fn append_message_checked(
        &self,
        session_id: &str,
        message: &Message,
        token_count: Option<u64>,
        expected_version: u64,
    ) -> Result<i64, StoreError>;
    fn append_message_with_usage_checked(
        &self,
        session_id: &str,
        message: &Message,
        usage: &UsageRecord<'_>,
        expected_version: u64,
    ) -> Result<i64, StoreError>;
    fn append_message_traced(
        &self,
        session_id: &str,
        message: &Message,
        trace_id: Option<&str>,
        usage: Option<&UsageRecord<'_>>,
        expected_version: u64,
    ) -> Result<i64, StoreError>;
    fn load_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError>;
    fn load_all_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError>;
    /// [`SessionBackend::load_all_messages`] for tools that show a session as it is
    /// (`hermes debug session`): every row in order, each decoded or the
    /// [`StoreError::Corrupt`] that says why it cannot be (a row another program wrote
    /// wrong does not hide the others). `Err` only when the rows cannot be read at all.
    fn load_all_messages_tolerant(
        &self,
        session_id: &str,
    ) -> Result<Vec<Result<StoredMessage, StoreError>>, StoreError>;
    fn deactivate_messages_from(
        &self,
        session_id: &str,
        message_id: i64,
    ) -> Result<usize, StoreError>;
    fn deactivate_messages_checked(
        &self,
        session_id: &str,
        message_id: i64,
        expected_version: u64,
    ) -> Result<u64, StoreError>;
    fn replace_active_from(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
    ) -> Result<Vec<i64>, StoreError>;
    fn replace_active_checked(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
        expected_version: u64,
    ) -> Result<(Vec<i64>, u64), StoreError>;
    fn replace_active_traced(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
        trace_ids: &[Option<String>],
        expected_version: u64,
    ) -> Result<(Vec<i64>, u64), StoreError>;
    fn add_usage(&self, session_id: &str, usage: &UsageRecord<'_>) -> Result<(), StoreError>;
    fn usage_by_model(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError>;

    // Search.
    fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError>;

    // Cron run history.
    fn record_cron_runs(&self, runs: &[CronRun]) -> Result<usize, StoreError>;
    fn cron_runs(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<CronRun>, StoreError>;
    fn latest_cron_runs(&self) -> Result<Vec<CronRun>, StoreError>;

    // Session leases.
    fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError>;
    fn renew_lease(&self, lease: &mut Lease, ttl: Duration) -> Result<bool, StoreError>;
    fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError>;
    fn break_lease(&self, session_id: &str) -> Result<bool, StoreError>;
    fn leases(&self, prefix: &str) -> Result<Vec<Lease>, StoreError>;

    // Claims: inbound de-duplication and cron fires across processes.
    fn claim(
        &self,
        scope: &str,
        key: &str,
        holder: &str,
        payload: Option<&str>,
    ) -> Result<bool, StoreError>;
    fn finish_claim(&self, scope: &str, key: &str) -> Result<bool, StoreError>;
    fn release_claim(&self, scope: &str, key: &str, holder: &str) -> Result<bool, StoreError>;
    fn open_claims(&self, scope: &str, limit: usize) -> Result<Vec<ClaimRecord>, StoreError>;
    fn get_claim(&self, scope: &str, key: &str) -> Result<Option<ClaimRecord>, StoreError>;
    fn adopt_claim(&self, scope: &str, key: &str, from: &str, to: &str)
    -> Result<bool, StoreError>;
    fn prune_claims(&self, before: f64) -> Result<usize, StoreError>;

    // Shared documents (`documents.rs`): versioned texts every process reads and replaces.
    fn document(&self, scope: &str, name: &str) -> Result<Option<Document>, StoreError>;
    fn put_document(
        &self,
        scope: &str,
        name: &str,
        body: &str,
        expected: Option<i64>,
    ) -> Result<bool, StoreError>;

    // Health and maintenance (`hermes doctor`).
    fn stats(&self) -> Result<StoreStats, StoreError>;
    fn schema_version(&self) -> Result<i64, StoreError>;
    fn schema_check(&self) -> Result<SchemaReport, StoreError>;
    fn integrity_check(&self) -> Result<String, StoreError>;
    fn journal_mode(&self) -> Result<String, StoreError>;
    fn search_index_check(&self) -> Result<SearchIndexReport, StoreError>;
    fn rebuild_search_index(&self) -> Result<u64, StoreError>;
    fn write_probe(&self) -> Result<(), StoreError>;
    fn release_memory(&self) -> Result<(), StoreError>;
}

/// Implements the trait methods listed by forwarding each to the inherent method of the same
/// name on `$ty` (inherent methods take precedence in `Type::method` paths).
macro_rules! forward_backend {
    ($ty:ty; $( fn $name:ident(&self $(, $arg:ident : $argty:ty)* ) -> $ret:ty; )*) => {
        $(
            fn $name(&self $(, $arg: $argty)*) -> $ret {
                <$ty>::$name(self $(, $arg)*)
            }
        )*
    };
}

impl SessionBackend for crate::store::SqliteStore {
    fn provider(&self) -> Provider {
        Provider::Sqlite
    }

    fn location(&self) -> String {
        self.db().to_string()
    }

    fn set_retry_budget(&self, budget: Duration) {
        crate::store::SqliteStore::set_retry_budget(self, budget);
    }

    forward_backend! { crate::store::SqliteStore;
        fn create_session(&self, new: &NewSession) -> Result<(), StoreError>;
        fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError>;
        fn find_session(&self, key: &str) -> Result<Option<SessionRecord>, StoreError>;
        fn latest_session(&self, source: Option<&str>) -> Result<Option<SessionRecord>, StoreError>;
        fn list_sessions(&self, limit: usize, offset: usize) -> Result<Vec<SessionRecord>, StoreError>;
        fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError>;
        fn set_title_numbered(&self, id: &str, title: &str) -> Result<String, StoreError>;
        fn end_session(&self, id: &str, reason: &str) -> Result<(), StoreError>;
        fn set_archived(&self, id: &str, archived: bool) -> Result<(), StoreError>;
        fn delete_session(&self, id: &str) -> Result<bool, StoreError>;
        fn prune_sessions(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError>;
        fn latest_session_for_key(&self, session_key: &str) -> Result<Option<SessionRecord>, StoreError>;
        fn count_session_keys(&self) -> Result<u64, StoreError>;
        fn last_activity(&self, session_id: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
        fn set_system_prompt(&self, id: &str, prompt: &str) -> Result<(), StoreError>;
        fn child_sessions(&self, parent_id: &str) -> Result<Vec<SessionRecord>, StoreError>;
        fn subagent_parent(&self, id: &str) -> Result<Option<String>, StoreError>;
        fn set_model_choice(&self, id: &str, model: &str, provider: &str, choice: Option<&str>) -> Result<(), StoreError>;
        fn model_choice(&self, id: &str) -> Result<Option<String>, StoreError>;
        fn route_session(&self, session_key: &str) -> Result<Option<String>, StoreError>;
        fn record_gateway_peer(&self, session_id: &str, peer: &GatewayPeer) -> Result<bool, StoreError>;
        fn gateway_peer(&self, session_id: &str) -> Result<Option<GatewayPeer>, StoreError>;
        fn append_message(&self, session_id: &str, message: &Message, token_count: Option<u64>) -> Result<i64, StoreError>;
        fn append_message_checked(&self, session_id: &str, message: &Message, token_count: Option<u64>, expected_version: u64) -> Result<i64, StoreError>;
        fn append_message_with_usage_checked(&self, session_id: &str, message: &Message, usage: &UsageRecord<'_>, expected_version: u64) -> Result<i64, StoreError>;
        fn append_message_traced(&self, session_id: &str, message: &Message, trace_id: Option<&str>, usage: Option<&UsageRecord<'_>>, expected_version: u64) -> Result<i64, StoreError>;
        fn load_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError>;
        fn load_all_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError>;
        fn load_all_messages_tolerant(&self, session_id: &str) -> Result<Vec<Result<StoredMessage, StoreError>>, StoreError>;
        fn deactivate_messages_from(&self, session_id: &str, message_id: i64) -> Result<usize, StoreError>;
        fn deactivate_messages_checked(&self, session_id: &str, message_id: i64, expected_version: u64) -> Result<u64, StoreError>;
        fn replace_active_from(&self, session_id: &str, from_id: Option<i64>, replacement: &[Message]) -> Result<Vec<i64>, StoreError>;
        fn replace_active_checked(&self, session_id: &str, from_id: Option<i64>, replacement: &[Message], expected_version: u64) -> Result<(Vec<i64>, u64), StoreError>;
        fn replace_active_traced(&self, session_id: &str, from_id: Option<i64>, replacement: &[Message], trace_ids: &[Option<String>], expected_version: u64) -> Result<(Vec<i64>, u64), StoreError>;
        fn add_usage(&self, session_id: &str, usage: &UsageRecord<'_>) -> Result<(), StoreError>;
        fn usage_by_model(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError>;
        fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError>;
        fn record_cron_runs(&self, runs: &[CronRun]) -> Result<usize, StoreError>;
        fn cron_runs(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<CronRun>, StoreError>;
        fn latest_cron_runs(&self) -> Result<Vec<CronRun>, StoreError>;
        fn acquire_lease(&self, session_id: &str, holder: &str, ttl: Duration) -> Result<LeaseAttempt, StoreError>;
        fn renew_lease(&self, lease: &mut Lease, ttl: Duration) -> Result<bool, StoreError>;
        fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError>;
        fn break_lease(&self, session_id: &str) -> Result<bool, StoreError>;
        fn leases(&self, prefix: &str) -> Result<Vec<Lease>, StoreError>;
        fn claim(&self, scope: &str, key: &str, holder: &str, payload: Option<&str>) -> Result<bool, StoreError>;
        fn finish_claim(&self, scope: &str, key: &str) -> Result<bool, StoreError>;
        fn release_claim(&self, scope: &str, key: &str, holder: &str) -> Result<bool, StoreError>;
        fn open_claims(&self, scope: &str, limit: usize) -> Result<Vec<ClaimRecord>, StoreError>;
        fn get_claim(&self, scope: &str, key: &str) -> Result<Option<ClaimRecord>, StoreError>;
        fn adopt_claim(&self, scope: &str, key: &str, from: &str, to: &str) -> Result<bool, StoreError>;
        fn prune_claims(&self, before: f64) -> Result<usize, StoreError>;
        fn document(&self, scope: &str, name: &str) -> Result<Option<Document>, StoreError>;
        fn put_document(&self, scope: &str, name: &str, body: &str, expected: Option<i64>) -> Result<bool, StoreError>;
        fn stats(&self) -> Result<StoreStats, StoreError>;
        fn schema_version(&self) -> Result<i64, StoreError>;
        fn schema_check(&self) -> Result<SchemaReport, StoreError>;
        fn integrity_check(&self) -> Result<String, StoreError>;
        fn journal_mode(&self) -> Result<String, StoreError>;
        fn search_index_check(&self) -> Result<SearchIndexReport, StoreError>;
        fn rebuild_search_index(&self) -> Result<u64, StoreError>;
        fn write_probe(&self) -> Result<(), StoreError>;
        fn release_memory(&self) -> Result<(), StoreError>;
    }
}
