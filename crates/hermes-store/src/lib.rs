//! # hermes-store
//!
//! Owns the SQLite session store (`HERMES_HOME/state.db`, ARCHITECTURE §2 invariants 3–4,
//! FEATURES §10), in Python Hermes 0.19.0's schema so both programs share the file
//! (issue 17 item 1; `schema.rs`, `migrate.rs`): sessions, messages (each committed as soon as it is complete), per-model
//! usage, the run history of scheduled jobs (`cron_runs`), schema migrations, and full-text
//! search (FTS5 `unicode61` plus a trigram index for CJK) behind a query sanitizer that turns
//! any user text into a valid query, and optimistic concurrency on each session's history
//! (`history_version`, checked on commit), and the link of `delegate_task` subagent sessions
//! to their parent ([`SUBAGENT_SOURCE`]).
//! It must not call models, run tools or build prompts, and it never depends on a hermes
//! crate above `hermes-protocol`. Its API is blocking: async callers use `spawn_blocking`.

mod compaction;
mod cron_runs;
mod error;
mod export;
mod gateway;
mod leases;
mod legacy;
mod maintenance;
mod messages;
mod migrate;
mod model_choice;
mod sanitize;
mod schema;
mod search;
mod store;
mod subagents;
mod types;
mod versioned;

pub use cron_runs::{CronDelivery, CronRun};
pub use error::StoreError;
pub use export::Format;
pub use gateway::GatewayPeer;
pub use leases::{Lease, LeaseAttempt};
pub use maintenance::{SchemaReport, SearchIndexReport};
pub use messages::UsageRecord;
pub use sanitize::{MAX_QUERY_CHARS, sanitize_fts_query};
pub use schema::{HERMES_LAYOUT, SCHEMA_VERSION};
pub use store::{SessionStore, WRITE_RETRY_BUDGET};
pub use subagents::SUBAGENT_SOURCE;
pub use types::{
    ModelUsage, NewSession, SearchHit, SearchQuery, SessionRecord, StoreStats, StoredMessage,
};
