//! # hermes-store
//!
//! Owns the session store behind one interface ([`SessionBackend`], held as the cloneable
//! handle [`SessionStore`]) with two implementations: SQLite ([`SqliteStore`], the embedded
//! default) and PostgreSQL (`postgres/`, for several processes or machines on one store,
//! issue 21).
//!
//! Why a blocking, object-safe trait behind an `Arc` handle: every caller (agent, gateway,
//! cron, context, CLI) already holds an `Arc<SessionStore>` and calls blocking methods from
//! `spawn_blocking`, so the handle keeps their code as it was; a trait object (rather than
//! a generic parameter) keeps the backend choice a run-time decision of `config.yaml`
//! without making every crate above generic; and blocking methods keep SQLite's
//! implementation free of an async runtime, while the PostgreSQL one runs its own small
//! runtime inside (callable from any thread, async workers included).
//!
//! The SQLite store (`HERMES_HOME/state.db`, ARCHITECTURE §2 invariants 3–4,
//! FEATURES §10), in Python Hermes 0.19.0's schema so both programs share the file
//! (issue 17 item 1; `schema.rs`, `migrate.rs`): sessions, messages (each committed as soon as it is complete), per-model
//! usage, the run history of scheduled jobs (`cron_runs`), schema migrations, and full-text
//! search (FTS5 `unicode61` plus a trigram index for CJK) behind a query sanitizer that turns
//! any user text into a valid query, and optimistic concurrency on each session's history
//! (`history_version`, checked on commit), and the link of `delegate_task` subagent sessions
//! to their parent ([`SUBAGENT_SOURCE`]).
//! It must not call models, run tools or build prompts, and it never depends on a hermes
//! crate above `hermes-protocol`. Its API is blocking: async callers use `spawn_blocking`.

mod backend;
mod busy;
mod choice;
mod claims;
mod compaction;
mod cron_runs;
mod documents;
mod error;
mod export;
mod gateway;
mod handle;
mod leases;
mod legacy;
mod maintenance;
mod messages;
mod migrate;
mod model_choice;
mod open_files;
mod postgres;
mod sanitize;
mod schema;
mod search;
mod store;
mod subagents;
mod types;
mod versioned;

pub use backend::{Provider, SessionBackend};
pub use choice::StoreChoice;
pub use claims::ClaimRecord;
pub use cron_runs::{CronDelivery, CronRun};
pub use documents::Document;
pub use error::StoreError;
pub use export::Format;
pub use gateway::GatewayPeer;
pub use handle::SessionStore;
pub use leases::{Lease, LeaseAttempt};
pub use maintenance::{SchemaReport, SearchIndexReport};
pub use messages::UsageRecord;
pub use postgres::{ImportReport, PG_SCHEMA_VERSION, PgOptions, PgStore, masked_location};
pub use sanitize::{MAX_QUERY_CHARS, sanitize_fts_query};
pub use schema::{HERMES_LAYOUT, SCHEMA_VERSION};
pub use store::{SqliteStore, WRITE_RETRY_BUDGET};
pub use subagents::SUBAGENT_SOURCE;
pub use types::{
    ModelUsage, NewSession, SearchHit, SearchQuery, SessionRecord, StoreStats, StoredMessage,
};
