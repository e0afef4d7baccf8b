//! The shared schema: Python Hermes 0.19.0's `state.db` (its `hermes_state.py`,
//! `SCHEMA_VERSION = 22`), so that both programs open the same file, plus the tables only
//! hermes keeps, all named `hermes_*` (Python creates its own tables with `IF NOT EXISTS`,
//! adds missing columns to *its* tables only, and never drops a table it does not know).
//!
//! Search (FEATURES §10) runs on Python's two FTS5 tables, both filled by Python's triggers
//! with `content || ' ' || tool_name || ' ' || tool_calls` of every message:
//! `messages_fts` (`unicode61`: words, tool names, tool-call JSON) and
//! `messages_fts_trigram` (`trigram`: substrings, used for CJK terms). Deactivating a message
//! (`active = 0`) re-indexes the same text, so inactive messages stay searchable
//! (FEATURES §9); deleting a message removes it from both.
//!
//! What only hermes keeps:
//! - `hermes_sessions`: a session's `history_version` (optimistic concurrency, issue 7 item 4)
//!   and its model choice (`/model` in a gateway chat);
//! - `hermes_messages`: the exact content parts of a message that `messages.content` cannot
//!   hold as one text (several parts, images), a reasoning signature, and the trace id of
//!   the turn that wrote the message (issue 24 §1; added to older files when they are
//!   opened, [`HERMES_ADDED_COLUMNS`]); `content` then holds the text Python shows and
//!   searches;
//! - `hermes_cron_runs`: the run history of scheduled jobs.
//!
//! `PRAGMA user_version` (which Python never reads or writes) is [`HERMES_LAYOUT`] in a
//! shared file and 1–4 in a file of hermes' own earlier schema ([`crate::legacy`]).

/// The Python schema version this build reads and writes (`schema_version.version`).
pub const SCHEMA_VERSION: i64 = 22;

/// `PRAGMA user_version` of a shared file written by this build: one past the last version of
/// hermes' own schema, so an older hermes refuses the file as "newer" instead of
/// misreading it.
pub const HERMES_LAYOUT: i64 = 5;

/// Python's `SCHEMA_SQL` (tables and first indexes), verbatim.
pub(crate) const PY_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    session_key TEXT,
    chat_id TEXT,
    chat_type TEXT,
    thread_id TEXT,
    display_name TEXT,
    origin_json TEXT,
    expiry_finalized INTEGER DEFAULT 0,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT,
    git_branch TEXT,
    git_repo_root TEXT,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    handoff_state TEXT,
    handoff_platform TEXT,
    handoff_error TEXT,
    compression_failure_cooldown_until REAL,
    compression_failure_error TEXT,
    compression_fallback_streak INTEGER NOT NULL DEFAULT 0,
    profile_name TEXT,
    rewind_count INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    effect_disposition TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT,
    codex_message_items TEXT,
    platform_message_id TEXT,
    observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0,
    api_content TEXT
);

CREATE TABLE IF NOT EXISTS session_model_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    billing_provider TEXT NOT NULL DEFAULT '',
    billing_base_url TEXT NOT NULL DEFAULT '',
    billing_mode TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    api_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL NOT NULL DEFAULT 0,
    actual_cost_usd REAL NOT NULL DEFAULT 0,
    cost_status TEXT,
    cost_source TEXT,
    first_seen REAL,
    last_seen REAL,
    PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task)
);

CREATE TABLE IF NOT EXISTS state_meta (
    key TEXT PRIMARY KEY,
    value TEXT
);

CREATE TABLE IF NOT EXISTS gateway_routing (
    scope TEXT NOT NULL DEFAULT '',
    session_key TEXT NOT NULL,
    entry_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (scope, session_key)
);

CREATE TABLE IF NOT EXISTS compression_locks (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS async_delegations (
    delegation_id TEXT PRIMARY KEY,
    origin_session TEXT NOT NULL,
    origin_ui_session_id TEXT NOT NULL DEFAULT '',
    parent_session_id TEXT,
    state TEXT NOT NULL,
    dispatched_at REAL NOT NULL,
    completed_at REAL,
    updated_at REAL NOT NULL,
    event_json TEXT,
    result_json TEXT,
    delivery_state TEXT NOT NULL DEFAULT 'pending',
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    delivered_at REAL,
    owner_pid INTEGER,
    owner_started_at INTEGER,
    task_json TEXT,
    delivery_claim TEXT,
    delivery_claimed_at REAL
);

CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_source_id ON sessions(source, id);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_compression_locks_expires ON compression_locks(expires_at);
CREATE INDEX IF NOT EXISTS idx_session_model_usage_session ON session_model_usage(session_id);
CREATE INDEX IF NOT EXISTS idx_session_model_usage_model ON session_model_usage(model);
CREATE INDEX IF NOT EXISTS idx_async_delegations_delivery
    ON async_delegations(delivery_state, completed_at);
"#;

/// The index Python creates after reconciling columns, verbatim.
pub(crate) const PY_PLATFORM_INDEX: &str = "CREATE INDEX IF NOT EXISTS idx_messages_platform_msg_id \
     ON messages(session_id, platform_message_id) WHERE platform_message_id IS NOT NULL";

/// Python's `DEFERRED_INDEX_SQL`, verbatim.
pub(crate) const PY_DEFERRED_INDEXES: &str = r#"
CREATE INDEX IF NOT EXISTS idx_messages_session_active
    ON messages(session_id, active, timestamp);
CREATE INDEX IF NOT EXISTS idx_messages_active_null
    ON messages(active) WHERE active IS NULL;
CREATE INDEX IF NOT EXISTS idx_sessions_session_key
    ON sessions(session_key, started_at DESC);
CREATE INDEX IF NOT EXISTS idx_sessions_gateway_peer
    ON sessions(source, user_id, chat_id, chat_type, thread_id, started_at DESC);
CREATE INDEX IF NOT EXISTS idx_sessions_handoff_state
    ON sessions(handoff_state, started_at);
"#;

/// Python's unique title index (a title names at most one session).
pub(crate) const PY_TITLE_INDEX: &str = "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique \
     ON sessions(title) WHERE title IS NOT NULL";

/// Python's `FTS_SQL`: the word index and its triggers, verbatim.
pub(crate) const PY_FTS: &str = r#"
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content
);

CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    INSERT INTO messages_fts(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END;
"#;

/// Python's `FTS_TRIGRAM_SQL`: the substring index and its triggers, verbatim.
pub(crate) const PY_FTS_TRIGRAM: &str = r#"
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_trigram USING fts5(
    content,
    tokenize='trigram'
);

CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_trigram_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (
        new.id,
        COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END;
"#;

/// The tables only hermes keeps (see the module doc). Additive and idempotent.
pub(crate) const HERMES_TABLES: &str = "
CREATE TABLE IF NOT EXISTS hermes_sessions (
    session_id TEXT PRIMARY KEY,
    history_version INTEGER NOT NULL DEFAULT 0,
    model_choice TEXT
);
CREATE TABLE IF NOT EXISTS hermes_messages (
    message_id INTEGER PRIMARY KEY,
    content_parts TEXT,
    reasoning_signature TEXT,
    trace_id TEXT
);
CREATE TABLE IF NOT EXISTS hermes_cron_runs (
    run_id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    job_name TEXT NOT NULL,
    due_at REAL,
    started_at REAL NOT NULL,
    duration_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    output_path TEXT,
    deliveries TEXT NOT NULL DEFAULT '[]',
    session_id TEXT
);
CREATE INDEX IF NOT EXISTS hermes_cron_runs_job ON hermes_cron_runs(job_id, started_at);
CREATE INDEX IF NOT EXISTS hermes_cron_runs_started ON hermes_cron_runs(started_at);
";

/// Columns added to a `hermes_*` table after it was first created: `(table, column, type)`.
/// A file whose table lacks one gets it when it is opened (`ALTER TABLE … ADD COLUMN`, which
/// keeps every row; Python never reads these tables).
pub(crate) const HERMES_ADDED_COLUMNS: &[(&str, &str, &str)] =
    &[("hermes_messages", "trace_id", "TEXT")];

/// Every column hermes reads or writes, per table. A file of another schema version is used
/// only when all of them exist ([`crate::SessionStore::schema_check`]).
pub(crate) const REQUIRED_COLUMNS: &[(&str, &[&str])] = &[
    ("schema_version", &["version"]),
    (
        "sessions",
        &[
            "id",
            "source",
            "user_id",
            "session_key",
            "chat_id",
            "chat_type",
            "thread_id",
            "display_name",
            "origin_json",
            "model",
            "model_config",
            "system_prompt",
            "parent_session_id",
            "started_at",
            "ended_at",
            "end_reason",
            "message_count",
            "tool_call_count",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
            "cwd",
            "billing_provider",
            "estimated_cost_usd",
            "cost_status",
            "title",
            "api_call_count",
            "rewind_count",
        ],
    ),
    (
        "messages",
        &[
            "id",
            "session_id",
            "role",
            "content",
            "tool_call_id",
            "tool_calls",
            "tool_name",
            "timestamp",
            "token_count",
            "finish_reason",
            "reasoning",
            "reasoning_content",
            "active",
            "compacted",
            "observed",
        ],
    ),
    (
        "session_model_usage",
        &[
            "session_id",
            "model",
            "billing_provider",
            "billing_base_url",
            "billing_mode",
            "task",
            "api_call_count",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
            "estimated_cost_usd",
            "cost_status",
            "first_seen",
            "last_seen",
        ],
    ),
    ("messages_fts", &["content"]),
    ("messages_fts_trigram", &["content"]),
    (
        "hermes_sessions",
        &["session_id", "history_version", "model_choice"],
    ),
    (
        "hermes_messages",
        &[
            "message_id",
            "content_parts",
            "reasoning_signature",
            "trace_id",
        ],
    ),
    (
        "hermes_cron_runs",
        &[
            "run_id",
            "job_id",
            "job_name",
            "due_at",
            "started_at",
            "duration_ms",
            "status",
            "error",
            "output_path",
            "deliveries",
            "session_id",
        ],
    ),
];

/// The text Python's triggers index for message row `m`.
macro_rules! indexed_text {
    () => {
        "COALESCE(m.content, '') || ' ' || COALESCE(m.tool_name, '') || ' ' || COALESCE(m.tool_calls, '')"
    };
}

/// Refills both search indexes from `messages` (for `hermes doctor --fix`) with the text
/// Python's triggers write.
pub(crate) const REBUILD_SEARCH: &str = concat!(
    "DELETE FROM messages_fts; DELETE FROM messages_fts_trigram;
INSERT INTO messages_fts(rowid, content) SELECT m.id, ",
    indexed_text!(),
    " FROM messages AS m;
INSERT INTO messages_fts_trigram(rowid, content) SELECT m.id, ",
    indexed_text!(),
    " FROM messages AS m;"
);

/// The whole shared schema for a new file, in Python's order of creation.
pub(crate) fn fresh_schema() -> String {
    [
        PY_SCHEMA,
        PY_PLATFORM_INDEX,
        ";",
        PY_DEFERRED_INDEXES,
        PY_TITLE_INDEX,
        ";",
        PY_FTS,
        PY_FTS_TRIGRAM,
        HERMES_TABLES,
    ]
    .concat()
}
