//! Session-store benchmark for `bench/run` (issue 6 part 1): inserts a synthetic corpus through
//! the public API — one committed transaction per message, as the agent does — then times
//! [`SessionStore::search`] over a fixed query list.
//!
//! ```text
//! cargo run --release -p hermes-store --example store_bench -- \
//!     --db target/store-bench/state.db --messages 100000 --queries bench/store_queries.txt
//! ```
//!
//! Prints one JSON object: `messages`, `sessions`, `insert_s` (wall seconds for all inserts),
//! `insert_us_per_message`, `db_bytes` (state.db plus its -wal and -shm files after the store
//! is closed), `queries`, `search_ms` (every query's wall time in ms, in file order),
//! `search_p50_ms`, `search_p99_ms`, `hits_total`. Searches run once untimed to warm the
//! page cache, then once timed. `--search-only` skips the inserts and searches a store an
//! earlier run filled (same `--messages`), for iterating on search; `insert_*` are then null.
//! `--insert-only` skips the searches (`search_*` are then empty) and `--prefix P` names the
//! sessions `P_0000000`, … and their titles `P session N`, so runs of this program and of
//! `bench/py_store_bench.py` can take turns inserting into one file (`bench/run`'s
//! `samefile` section). `insert_p50_us` / `insert_p99_us` are the per-message insert times.
//! `--postgres DSN` (instead of `--db`) runs the same on the PostgreSQL store, in a schema
//! `store_bench_<messages>` of that database (drop it before a new insert run); `db_bytes`
//! is then 0. The corpus generator is shared with
//! `bench/py_store_bench.py` (same words in the same order), so both stores hold the same
//! text: see `Corpus`.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hermes_protocol::Message;
use hermes_store::{NewSession, SearchQuery, SessionStore};

/// Syllables of the synthetic vocabulary (50; three per word).
const SYLLABLES: [&str; 50] = [
    "ba", "be", "bi", "bo", "bu", "da", "de", "di", "do", "du", "ka", "ke", "ki", "ko", "ku", "la",
    "le", "li", "lo", "lu", "ma", "me", "mi", "mo", "mu", "na", "ne", "ni", "no", "nu", "ra", "re",
    "ri", "ro", "ru", "sa", "se", "si", "so", "su", "ta", "te", "ti", "to", "tu", "va", "ve", "vi",
    "vo", "vu",
];
/// Distinct words in the corpus.
const VOCABULARY: u64 = 20_000;
/// Messages per session.
const PER_SESSION: u64 = 200;

/// Deterministic text source (64-bit LCG, Knuth's MMIX constants; outputs the top 31 bits).
/// Word `i` is three syllables; a word is drawn as `a * b / V` with `a`, `b` uniform below
/// `V`, which makes low indexes frequent and high ones rare (a Zipf-like spread).
struct Corpus {
    state: u64,
}

impl Corpus {
    fn new() -> Corpus {
        Corpus {
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.state >> 33
    }

    fn word(i: u64) -> String {
        let s = |k: u64| SYLLABLES[usize::try_from(k % 50).unwrap_or(0)];
        format!("{}{}{}", s(i), s(i / 50), s(i / 2500))
    }

    fn message(&mut self) -> String {
        let n = 6 + self.next() % 30;
        let mut words = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        for _ in 0..n {
            let a = self.next() % VOCABULARY;
            let b = self.next() % VOCABULARY;
            words.push(Corpus::word(a * b / VOCABULARY));
        }
        words.join(" ")
    }
}

struct Args {
    postgres: Option<String>,
    db: PathBuf,
    messages: u64,
    queries: PathBuf,
    search_only: bool,
    insert_only: bool,
    prefix: String,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut db = None;
    let mut messages = 100_000;
    let mut queries = None;
    let mut search_only = false;
    let mut insert_only = false;
    let mut prefix = "bench".to_string();
    let mut postgres = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--search-only" {
            search_only = true;
            continue;
        }
        if flag == "--insert-only" {
            insert_only = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--db" => db = Some(PathBuf::from(value)),
            "--messages" => messages = value.parse()?,
            "--queries" => queries = Some(PathBuf::from(value)),
            "--prefix" => prefix = value,
            "--postgres" => postgres = Some(value),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if insert_only && queries.is_none() {
        queries = Some(PathBuf::new());
    }
    if postgres.is_some() && db.is_none() {
        db = Some(PathBuf::new());
    }
    Ok(Args {
        postgres,
        db: db.ok_or("--db is required")?,
        messages,
        queries: queries.ok_or("--queries is required")?,
        search_only,
        insert_only,
        prefix,
    })
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank: the smallest value with at least p% of the values at or below it.
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let query_text = if args.insert_only {
        String::new()
    } else {
        std::fs::read_to_string(&args.queries)?
    };
    let queries: Vec<String> = query_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();

    let store = match &args.postgres {
        // A schema of its own per run, so runs do not mix (`--search-only` needs the same
        // `--messages` and reuses the schema of that size).
        Some(dsn) => SessionStore::from_backend(hermes_store::PgStore::open(
            &hermes_store::PgOptions::new(dsn.clone())
                .with_schema(format!("store_bench_{}", args.messages)),
        )?),
        None => SessionStore::open(&args.db)?,
    };
    let mut corpus = Corpus::new();
    let mut session = String::new();
    let mut sessions = 0u64;
    let start = Instant::now();
    let to_insert = if args.search_only { 0 } else { args.messages };
    let mut insert_us = Vec::with_capacity(usize::try_from(to_insert).unwrap_or(0));
    for i in 0..to_insert {
        if i % PER_SESSION == 0 {
            session = format!("{}_{sessions:07}", args.prefix);
            store.create_session(&NewSession {
                id: session.clone(),
                source: "cli".into(),
                session_key: None,
                title: Some(format!("{} session {sessions}", args.prefix)),
                model: "bench-model".into(),
                provider: "custom".into(),
                system_prompt: "You are a benchmark agent.".into(),
                parent_session_id: None,
                cwd: None,
            })?;
            sessions += 1;
        }
        let text = corpus.message();
        let message = if i % 2 == 0 {
            Message::user(text)
        } else {
            Message::assistant(text)
        };
        let t = Instant::now();
        store.append_message(&session, &message, None)?;
        insert_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let insert_s = (!args.search_only).then(|| start.elapsed().as_secs_f64());
    insert_us.sort_by(f64::total_cmp);

    for q in &queries {
        store.search(&SearchQuery::new(q.as_str()))?;
    }
    let mut search_ms = Vec::with_capacity(queries.len());
    let mut hits_total = 0usize;
    for q in &queries {
        let t = Instant::now();
        hits_total += store.search(&SearchQuery::new(q.as_str()))?.len();
        search_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(store);

    let with_suffix = |suffix: &str| {
        let mut p = args.db.clone().into_os_string();
        p.push(suffix);
        PathBuf::from(p)
    };
    let db_bytes =
        file_size(&args.db) + file_size(&with_suffix("-wal")) + file_size(&with_suffix("-shm"));
    let mut sorted = search_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let out = serde_json::json!({
        "messages": args.messages,
        "sessions": args.messages.div_ceil(PER_SESSION),
        "insert_s": insert_s,
        "insert_us_per_message": insert_s.map(|s| s * 1e6 / args.messages.max(1) as f64),
        "insert_p50_us": (!insert_us.is_empty()).then(|| percentile(&insert_us, 50.0)),
        "insert_p99_us": (!insert_us.is_empty()).then(|| percentile(&insert_us, 99.0)),
        "db_bytes": db_bytes,
        "queries": queries.len(),
        "search_ms": search_ms,
        "search_p50_ms": percentile(&sorted, 50.0),
        "search_p99_ms": percentile(&sorted, 99.0),
        "hits_total": hits_total,
    });
    println!("{out}");
    Ok(())
}
