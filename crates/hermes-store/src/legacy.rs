//! hermes' own schema before the shared one (`PRAGMA user_version` 1–4, builds up to commit
//! 975e696), kept to migrate such files: [`LEGACY_STEPS`] bring a file of any of those
//! versions to 4, and [`crate::migrate`] converts version 4 into Python Hermes' schema.
//! The steps are the original text (never edited).

/// The SQL text every message trigger uses to flatten tool names and argument text.
macro_rules! tool_text {
    ($row:literal) => {
        concat!(
            "trim(coalesce(",
            $row,
            ".tool_name, '') || ' ' || coalesce((SELECT group_concat(",
            "coalesce(json_extract(j.value, '$.name'), '') || ' ' || ",
            "coalesce(json_extract(j.value, '$.arguments'), ''), ' ') FROM json_each(CASE WHEN ",
            "json_valid(",
            $row,
            ".tool_calls) THEN ",
            $row,
            ".tool_calls ELSE '[]' END) AS j), ''))"
        )
    };
}

const V1: &str = concat!(
    "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    session_key TEXT,
    title TEXT,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL,
    cwd TEXT,
    history_version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_started ON sessions(started_at);
CREATE INDEX sessions_source ON sessions(source, started_at);
CREATE INDEX sessions_title ON sessions(title);
CREATE INDEX sessions_key ON sessions(session_key);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    content_json TEXT,
    tool_calls TEXT,
    tool_call_id TEXT,
    tool_name TEXT,
    reasoning TEXT,
    finish_reason TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    active INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX messages_session ON messages(session_id, id);

CREATE TABLE session_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL,
    PRIMARY KEY (session_id, model, provider)
);

CREATE VIRTUAL TABLE messages_fts USING fts5(content, tools, tokenize = 'unicode61');
CREATE VIRTUAL TABLE messages_trgm USING fts5(body, tokenize = 'trigram');

CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, tools) VALUES (new.id, new.content, ",
    tool_text!("new"),
    ");
    INSERT INTO messages_trgm(rowid, body) VALUES (new.id, trim(new.content || ' ' || ",
    tool_text!("new"),
    "));
END;

CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    DELETE FROM messages_trgm WHERE rowid = old.id;
END;

CREATE TRIGGER messages_au AFTER UPDATE OF content, tool_calls, tool_name ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    DELETE FROM messages_trgm WHERE rowid = old.id;
    INSERT INTO messages_fts(rowid, content, tools) VALUES (new.id, new.content, ",
    tool_text!("new"),
    ");
    INSERT INTO messages_trgm(rowid, body) VALUES (new.id, trim(new.content || ' ' || ",
    tool_text!("new"),
    "));
END;
"
);

/// The GLOB pattern matching text that contains at least one CJK character: the ranges of
/// `search::CJK_RANGES` as one character class (GLOB compares code points).
macro_rules! cjk_glob {
    () => {
        "*[\u{1100}-\u{11FF}\u{2E80}-\u{2FDF}\u{3040}-\u{30FF}\u{3100}-\u{312F}\u{3130}-\u{318F}\u{31F0}-\u{31FF}\u{3400}-\u{4DBF}\u{4E00}-\u{9FFF}\u{AC00}-\u{D7AF}\u{F900}-\u{FAFF}\u{FF66}-\u{FF9F}\u{20000}-\u{323AF}]*"
    };
}

/// The trigram row of a message, written only when its text contains a CJK character.
macro_rules! trgm_insert {
    () => {
        concat!(
            "INSERT INTO messages_trgm(rowid, body) SELECT new.id, b FROM (SELECT trim(new.content || ' ' || ",
            tool_text!("new"),
            ") AS b) WHERE b GLOB '",
            cjk_glob!(),
            "';"
        )
    };
}

/// V2: the trigram index keeps only messages whose text contains CJK characters. It serves
/// nothing else (`search` runs substring groups only for CJK terms, and a CJK term cannot
/// match text without CJK), and it was half of the write cost of every message and half of
/// the file (measured for issue 6: bench/run, docs/benchmarks.md). Rows already indexed stay
/// (removing them would rewrite the whole index at the first start).
const V2: &str = concat!(
    "
DROP TRIGGER messages_ai;
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, tools) VALUES (new.id, new.content, ",
    tool_text!("new"),
    ");
    ",
    trgm_insert!(),
    "
END;

DROP TRIGGER messages_au;
CREATE TRIGGER messages_au AFTER UPDATE OF content, tool_calls, tool_name ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    DELETE FROM messages_trgm WHERE rowid = old.id;
    INSERT INTO messages_fts(rowid, content, tools) VALUES (new.id, new.content, ",
    tool_text!("new"),
    ");
    ",
    trgm_insert!(),
    "
END;
"
);

/// V3: cron run history (issue 8, FEATURES §1 Cron): one row per finished run of a scheduled
/// job — status, error, wall time in milliseconds, the output file (relative to
/// `HERMES_HOME`), and the per-target delivery results as a JSON array of
/// `{"target", "ok", "detail"}`. `session_id` links the agent session of the run (a
/// `sessions` row with `source = 'cron'`); it is not a foreign key, so deleting an old
/// session keeps its run in the history. Purely additive: no existing table changes.
const V3: &str = "
CREATE TABLE cron_runs (
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
CREATE INDEX cron_runs_job ON cron_runs(job_id, started_at);
CREATE INDEX cron_runs_started ON cron_runs(started_at);
";

/// V4: a session's model choice (`/model` in a gateway chat, issue 7 item 6): the provider and
/// model the user picked, as the front end's JSON text, so that an agent rebuilt after an
/// eviction or a restart uses it again. `NULL` = the configured model. Additive (one nullable
/// column; SQLite adds it without rewriting the table).
const V4: &str = "ALTER TABLE sessions ADD COLUMN model_choice TEXT;";

/// The steps, oldest first: step `i` brings `PRAGMA user_version` from `i` to `i + 1`.
pub(crate) const LEGACY_STEPS: &[&str] = &[V1, V2, V3, V4];

/// The last version of hermes' own schema.
pub(crate) const LEGACY_LAST: i64 = LEGACY_STEPS.len() as i64;
