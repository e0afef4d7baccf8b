#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! What only the PostgreSQL store has to prove, on a real server (`HERMES_TEST_PG_DSN`; each
//! test skips, saying so, without it): writes survive connections cut at any point (no
//! acknowledged message lost, none stored twice), the statement timeout, replicas migrating
//! at once (a new database, and one of schema version 3), a DSN's password never showing in
//! an error, and search gathering its window slice by slice with the result of one query.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_protocol::Message;
use hermes_protocol::Role;
use hermes_store::{NewSession, PG_SCHEMA_VERSION, PgOptions, PgStore, SearchQuery, SessionStore};

fn dsn() -> Option<String> {
    let dsn = std::env::var("HERMES_TEST_PG_DSN")
        .ok()
        .filter(|v| !v.is_empty());
    if dsn.is_none() {
        eprintln!("skipped: HERMES_TEST_PG_DSN is not set");
    }
    dsn
}

fn fresh_schema() -> String {
    format!(
        "pgtest_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn session(store: &SessionStore, id: &str) {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: "cli".into(),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
}

/// A loopback TCP proxy in front of the server that can cut every open connection.
struct CuttingProxy {
    port: u16,
    open: Arc<Mutex<Vec<TcpStream>>>,
    cuts: Arc<AtomicUsize>,
    /// How many of the server's `COMMIT` replies to swallow (cutting the connection instead):
    /// the transaction committed, but the client cannot know.
    swallow_commits: Arc<AtomicUsize>,
}

impl CuttingProxy {
    fn start(upstream: (String, u16)) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let registry = open.clone();
        let swallow_commits: Arc<AtomicUsize> = Arc::default();
        let swallow = swallow_commits.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let Ok(server) = TcpStream::connect((upstream.0.as_str(), upstream.1)) else {
                    continue;
                };
                registry
                    .lock()
                    .unwrap()
                    .extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                pipe(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    None,
                );
                pipe(server, client, Some(swallow.clone()));
            }
        });
        CuttingProxy {
            port,
            open,
            cuts: Arc::default(),
            swallow_commits,
        }
    }

    /// Cuts every connection open now.
    fn cut_all(&self) {
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.cuts.fetch_add(1, Ordering::Relaxed);
    }
}

/// Copies `from` to `to`; on the server's side, drops the connection instead of passing on a
/// `COMMIT` reply while `swallow` says so.
fn pipe(mut from: TcpStream, mut to: TcpStream, swallow: Option<Arc<AtomicUsize>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let commit_reply = buf[..n].windows(7).any(|w| w == b"COMMIT\0");
                    if commit_reply
                        && let Some(left) = &swallow
                        && left
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
                            .is_ok()
                    {
                        let _ = from.shutdown(Shutdown::Both);
                        break;
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

fn upstream(dsn: &str) -> ((String, u16), String, String) {
    let config: tokio_postgres::Config = dsn.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        other => panic!("the test server must listen on TCP: {other:?}"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    (
        (host, port),
        config.get_user().unwrap_or("postgres").to_string(),
        config.get_dbname().unwrap_or("postgres").to_string(),
    )
}

/// Two writers append to session `s` of `stores` until each wrote at least `min` messages
/// and `enough()` holds (the fault injected often enough), at most `max` each; the
/// acknowledged `(id, text)` pairs, sorted. A failed append fails the test.
fn append_until(
    stores: [SessionStore; 2],
    min: usize,
    max: usize,
    enough: impl Fn() -> bool + Clone + Send + 'static,
) -> Vec<(i64, String)> {
    let writers: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(w, store)| {
            let enough = enough.clone();
            std::thread::spawn(move || {
                let mut out = Vec::new();
                let mut i = 0;
                while (i < min || !enough()) && i < max {
                    let text = format!("writer {w} message {i}");
                    let id = store
                        .append_message("s", &Message::user(text.clone()), None)
                        .unwrap_or_else(|e| panic!("{text}: {e}"));
                    out.push((id, text));
                    i += 1;
                }
                out
            })
        })
        .collect();
    let mut acknowledged: Vec<(i64, String)> = writers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    acknowledged.sort();
    acknowledged
}

/// Every acknowledged message of session `s` is stored once, and nothing else is.
fn assert_stored_as_acknowledged(store: &SessionStore, acknowledged: &[(i64, String)]) {
    let stored: Vec<(i64, String)> = store
        .load_messages("s")
        .unwrap()
        .into_iter()
        .map(|m| (m.id, m.message.text()))
        .collect();
    assert_eq!(stored, acknowledged, "stored = acknowledged, each once");
    assert_eq!(
        store.get_session("s").unwrap().unwrap().message_count,
        acknowledged.len() as u64
    );
}

/// Connections are cut every few dozen milliseconds — before, during and after `COMMIT` —
/// while two handles append: every append that returned an id is stored exactly once, and
/// nothing else is (a retry after a cut around `COMMIT` finds its write in the write log
/// instead of writing again).
#[test]
fn cut_connections_lose_no_acknowledged_message_and_duplicate_none() {
    let Some(dsn) = dsn() else { return };
    let (up, user, dbname) = upstream(&dsn);
    let proxy = Arc::new(CuttingProxy::start(up));
    let via_proxy = format!("postgresql://{user}@127.0.0.1:{}/{dbname}", proxy.port);
    let options = PgOptions::new(via_proxy).with_schema(fresh_schema());
    let a = SessionStore::from_backend(PgStore::open(&options).unwrap());
    let b = SessionStore::from_backend(PgStore::open(&options).unwrap());
    session(&a, "s");

    let stop = Arc::new(AtomicBool::new(false));
    let cutter = {
        let (proxy, stop) = (proxy.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(40 + (i * 7919) % 100));
                proxy.cut_all();
                i += 1;
            }
        })
    };
    // Each writer appends at least 60 messages, and goes on until the proxy has cut at
    // least 15 times (however fast the machine is), up to 5,000.
    let counted = proxy.clone();
    let acknowledged = append_until([a.clone(), b.clone()], 60, 5_000, move || {
        counted.cuts.load(Ordering::Relaxed) >= 15
    });
    stop.store(true, Ordering::Relaxed);
    cutter.join().unwrap();
    assert!(
        proxy.cuts.load(Ordering::Relaxed) > 10,
        "the proxy cut too rarely to prove anything"
    );
    assert_stored_as_acknowledged(&a, &acknowledged);
}

/// Issue 21 item 2, retried by error class: two handles append to one session at once
/// (serializable transactions on the same rows: `40001` serialization failures) while an
/// administrator keeps terminating their server processes (`57P01` admin shutdown). Every
/// append returns an id, none surfaces a raw database error, and stored = acknowledged.
#[test]
fn serialization_failures_and_terminated_backends_are_retried() {
    let Some(dsn) = dsn() else { return };
    let tag = fresh_schema();
    let sep = if dsn.contains('?') { '&' } else { '?' };
    let options =
        PgOptions::new(format!("{dsn}{sep}application_name={tag}")).with_schema(tag.clone());
    let a = SessionStore::from_backend(PgStore::open(&options).unwrap());
    let b = SessionStore::from_backend(PgStore::open(&options).unwrap());
    session(&a, "s");

    let stop = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (stop, kills, dsn, tag) = (stop.clone(), kills.clone(), dsn.clone(), tag.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let (admin, conn) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(60)).await;
                    let rows = admin
                        .query(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                             WHERE application_name = $1 AND pid <> pg_backend_pid()",
                            &[&tag],
                        )
                        .await
                        .unwrap();
                    kills.fetch_add(rows.len(), Ordering::Relaxed);
                }
            });
        })
    };
    let counted = kills.clone();
    let acknowledged = append_until([a.clone(), b.clone()], 80, 3_000, move || {
        counted.load(Ordering::Relaxed) >= 6
    });
    stop.store(true, Ordering::Relaxed);
    killer.join().unwrap();
    assert!(
        kills.load(Ordering::Relaxed) >= 6,
        "too few backends terminated to prove anything"
    );
    assert_stored_as_acknowledged(&a, &acknowledged);
}

/// The server commits but its reply never arrives (the connection drops first): the retry
/// finds the write in the write log and returns its id instead of writing it again.
#[test]
fn a_commit_whose_reply_was_lost_is_not_written_twice() {
    let Some(dsn) = dsn() else { return };
    let (up, user, dbname) = upstream(&dsn);
    let proxy = CuttingProxy::start(up);
    let via_proxy = format!("postgresql://{user}@127.0.0.1:{}/{dbname}", proxy.port);
    let store = SessionStore::from_backend(
        PgStore::open(&PgOptions::new(via_proxy).with_schema(fresh_schema())).unwrap(),
    );
    session(&store, "s");
    proxy.swallow_commits.store(4, Ordering::SeqCst);
    let acknowledged: Vec<i64> = (0..8)
        .map(|i| {
            store
                .append_message("s", &Message::user(format!("m{i}")), None)
                .unwrap()
        })
        .collect();
    assert_eq!(
        proxy.swallow_commits.load(Ordering::SeqCst),
        0,
        "replies were swallowed"
    );
    let stored = store.load_messages("s").unwrap();
    assert_eq!(
        stored.iter().map(|m| m.id).collect::<Vec<_>>(),
        acknowledged
    );
    let texts: Vec<String> = stored.iter().map(|m| m.message.text()).collect();
    assert_eq!(texts, (0..8).map(|i| format!("m{i}")).collect::<Vec<_>>());
    assert_eq!(store.get_session("s").unwrap().unwrap().message_count, 8);
}

/// A statement waiting on a lock longer than `statement_timeout` is cancelled and retried;
/// after the retry budget the call fails as retryable with nothing written, and succeeds
/// once the lock is gone.
#[test]
fn the_statement_timeout_bounds_a_blocked_write() {
    let Some(dsn) = dsn() else { return };
    let schema = fresh_schema();
    let mut options = PgOptions::new(dsn.clone()).with_schema(schema.clone());
    options.statement_timeout = Duration::from_millis(300);
    options.retry_budget = Duration::from_millis(1500);
    let store = SessionStore::from_backend(PgStore::open(&options).unwrap());
    session(&store, "s");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let (locker, conn) = rt
        .block_on(tokio_postgres::connect(&dsn, tokio_postgres::NoTls))
        .unwrap();
    rt.spawn(conn);
    rt.block_on(locker.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM {schema}.sessions WHERE id = 's' FOR UPDATE"
    )))
    .unwrap();

    let started = std::time::Instant::now();
    let err = store
        .append_message("s", &Message::user("blocked"), None)
        .unwrap_err();
    assert!(err.is_busy(), "{err}");
    assert!(err.to_string().contains("57014"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));

    rt.block_on(locker.batch_execute("ROLLBACK")).unwrap();
    store
        .append_message("s", &Message::user("after"), None)
        .unwrap();
    let texts: Vec<String> = store
        .load_messages("s")
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(texts, vec!["after"]);
}

/// Four replicas starting at once on a new database migrate it once, all successfully.
#[test]
fn replicas_starting_together_migrate_once() {
    let Some(dsn) = dsn() else { return };
    let options = PgOptions::new(dsn).with_schema(fresh_schema());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            std::thread::spawn(move || PgStore::open(&options).map(SessionStore::from_backend))
        })
        .collect();
    for h in handles {
        let store = h.join().unwrap().unwrap();
        assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    }
}

/// An unreachable server is reported with its host and port, never the DSN's password.
#[test]
fn an_unreachable_server_is_named_without_the_password() {
    let mut options = PgOptions::new("postgresql://alice:s3cret@127.0.0.1:9/hermes");
    options.connect_timeout = Duration::from_millis(300);
    options.retry_budget = Duration::from_millis(600);
    let err = PgStore::open(&options).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("127.0.0.1:9/hermes"), "{text}");
    assert!(
        !text.contains("s3cret") && !text.contains("alice"),
        "{text}"
    );
    assert!(err.is_busy(), "{text}");
    assert!(!format!("{options:?}").contains("s3cret"));
}

/// A direct connection to the server, in the schema `schema`, for what the store's interface
/// does not do (moving the id sequence, the reference search query, catalog checks).
struct Admin {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Admin {
    fn connect(dsn: &str, schema: &str) -> Admin {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            client
                .batch_execute(&format!("SET search_path = {schema}, public"))
                .await
                .unwrap();
            client
        });
        Admin { rt, client }
    }

    fn run(&self, sql: &str) {
        self.rt.block_on(self.client.batch_execute(sql)).unwrap();
    }

    fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Vec<tokio_postgres::Row> {
        self.rt.block_on(self.client.query(sql, params)).unwrap()
    }

    /// The best `limit` of the newest `window` matches of tsquery SQL `tsquery`, as
    /// `(id, rank)`: the single query search ran before it went slice by slice.
    fn reference(
        &self,
        tsquery: &str,
        session: Option<&str>,
        role: Option<&str>,
        limit: i64,
    ) -> Vec<(i64, f64)> {
        let sql = format!(
            "WITH q AS (SELECT {tsquery} AS q) \
             SELECT w.id, (-ts_rank(w.search_tsv, q.q, 1))::float8 AS rank FROM \
             (SELECT m.id, m.search_tsv FROM messages m, q WHERE m.search_tsv @@ q.q \
              AND ($1::text IS NULL OR m.session_id = $1) AND ($2::text IS NULL OR m.role = $2) \
              ORDER BY m.id DESC LIMIT 5000) w, q \
             ORDER BY rank, w.id DESC LIMIT $3"
        );
        self.rows(&sql, &[&session, &role, &limit])
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }
}

/// Search gathers the newest 5,000 matches a few id slices at a time (65,536 ids a slice,
/// newest first) and must return exactly what one query over those matches returns: the
/// same hits in the same order with the same ranks. The ids here jump (the identity is
/// moved) so that the matches lie in runs far apart: several queries run, some over empty
/// slices, runs straddle slice boundaries, the newest slice holds less than half a slice,
/// and the window's oldest match lies inside the oldest run; queries with many and with few
/// matches, prefixes, NOT, OR, the session and role filters and large limits are compared
/// with that one query.
#[test]
fn search_by_slices_returns_what_one_query_over_the_window_returns() {
    let Some(dsn) = dsn() else { return };
    let schema = fresh_schema();
    let store = SessionStore::from_backend(
        PgStore::open(&PgOptions::new(dsn.clone()).with_schema(schema.clone())).unwrap(),
    );
    let admin = Admin::connect(&dsn, &schema);
    session(&store, "s");
    session(&store, "t");
    // (first id, messages), in slices 0, 0–1, 3, 6, 7, 14–15, 15 and 15–16; the newest id
    // is 1,048,719, in slice 16.
    let runs: [(i64, usize); 8] = [
        (1, 1_600),
        (65_400, 300),
        (200_000, 900),
        (400_000, 1_200),
        (500_000, 600),
        (983_000, 400),
        (1_000_000, 1_700),
        (1_048_570, 150),
    ];
    let mut n = 0usize;
    for (first, count) in runs {
        admin.run(&format!(
            "ALTER TABLE messages ALTER COLUMN id RESTART WITH {first}"
        ));
        for _ in 0..count {
            // Ranks vary with how often `beacon` occurs and how long the message is; many
            // messages share a rank, so ties fall back to the newest first.
            let beacons = "beacon ".repeat(1 + n % 3);
            let tail = "and a tail of other words ".repeat(n % 4);
            let text = match n % 10 {
                0 => format!("alpha rare{} {tail}", n % 7),
                1 => format!("beaconing {tail} alpha"),
                _ => format!("{beacons}{tail}"),
            };
            let message = if n % 5 == 2 {
                Message::assistant(text)
            } else {
                Message::user(text)
            };
            let id = store
                .append_message(if n.is_multiple_of(3) { "t" } else { "s" }, &message, None)
                .unwrap();
            assert!(id >= first, "the identity moved: {id} >= {first}");
            n += 1;
        }
    }
    let term = |t: &str, prefix: bool| format!("hermes_term_query('{t}', {prefix})");
    // (query, the same as tsquery SQL, session, role, limit)
    type Case<'a> = (&'a str, String, Option<&'a str>, Option<Role>, usize);
    let cases: Vec<Case> = vec![
        ("beacon", term("beacon", false), None, None, 20),
        ("beacon", term("beacon", false), None, None, 5_000),
        ("beac*", term("beac", true), None, None, 300),
        ("beacon", term("beacon", false), Some("t"), None, 100),
        (
            "beacon",
            term("beacon", false),
            None,
            Some(Role::Assistant),
            100,
        ),
        (
            "beacon NOT tail",
            format!("({} && !!{})", term("beacon", false), term("tail", false)),
            None,
            None,
            50,
        ),
        (
            "rare3 OR beaconing",
            format!(
                "({}) || ({})",
                term("rare3", false),
                term("beaconing", false)
            ),
            None,
            None,
            1_000,
        ),
        (
            "alpha",
            term("alpha", false),
            Some("s"),
            Some(Role::User),
            40,
        ),
        ("rare5", term("rare5", false), None, None, 20),
        ("nowhere", term("nowhere", false), None, None, 20),
    ];
    for (text, tsquery, session_id, role, limit) in cases {
        let mut q = SearchQuery::new(text);
        q.session_id = session_id.map(str::to_string);
        q.role = role;
        q.limit = limit;
        let got: Vec<(i64, f64)> = store
            .search(&q)
            .unwrap()
            .iter()
            .map(|h| (h.message_id, h.rank))
            .collect();
        let want = admin.reference(&tsquery, session_id, role.map(Role::as_str), limit as i64);
        // The first difference, not thousands of pairs.
        let first = got.iter().zip(&want).position(|(g, w)| g != w);
        assert!(
            got == want,
            "query {text:?} session {session_id:?} role {role:?}: {} hits, {} expected; \
             first difference at {first:?}: {:?} / {:?}",
            got.len(),
            want.len(),
            first.map(|i| got[i]),
            first.map(|i| want[i]),
        );
        if text != "nowhere" {
            assert!(!got.is_empty(), "{text:?} finds something");
        }
    }
    // The window really is cut, inside the oldest run: `beacon` matches more than 5,000
    // messages, its oldest matches are outside the window and the window reaches that run.
    let all = admin.rows(
        "SELECT count(*), min(id) FROM messages \
         WHERE search_tsv @@ hermes_term_query('beacon', false)",
        &[],
    );
    let (matches, oldest): (i64, i64) = (all[0].get(0), all[0].get(1));
    assert!(matches > 5_000, "{matches}");
    let mut q = SearchQuery::new("beacon");
    q.limit = 5_000;
    let hits = store.search(&q).unwrap();
    assert_eq!(hits.len(), 5_000);
    assert!(hits.iter().all(|h| h.message_id > oldest));
    assert!(hits.iter().any(|h| h.message_id < 65_536));
}

/// A database of schema version 3 (its word index over `search_tsv` alone) is migrated to
/// the current version by replicas starting at once: the index keys the id slice, the old
/// messages are found, and a store opened afterwards has nothing to do.
#[test]
fn a_version_3_database_migrates_forward() {
    let Some(dsn) = dsn() else { return };
    let schema = fresh_schema();
    let options = PgOptions::new(dsn.clone()).with_schema(schema.clone());
    let store = SessionStore::from_backend(PgStore::open(&options).unwrap());
    session(&store, "s");
    let old = store
        .append_message("s", &Message::user("written at version three"), None)
        .unwrap();
    drop(store);
    let admin = Admin::connect(&dsn, &schema);
    // Back to what version 3 had.
    admin.run(
        "DROP INDEX idx_messages_search; \
         CREATE INDEX idx_messages_search ON messages USING gin (search_tsv); \
         DELETE FROM hermes_schema_migrations WHERE version > 3",
    );
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            std::thread::spawn(move || PgStore::open(&options).map(SessionStore::from_backend))
        })
        .collect();
    let stores: Vec<SessionStore> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    for store in &stores {
        assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    }
    let applied = admin.rows(
        "SELECT version FROM hermes_schema_migrations ORDER BY version",
        &[],
    );
    let applied: Vec<i64> = applied.iter().map(|r| r.get(0)).collect();
    assert_eq!(applied, (1..=PG_SCHEMA_VERSION).collect::<Vec<_>>());
    let defs = admin.rows(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'messages' \
         AND indexdef LIKE '%search_tsv%'",
        &[&schema],
    );
    let defs: Vec<String> = defs.iter().map(|r| r.get(0)).collect();
    assert_eq!(defs.len(), 1, "{defs:?}");
    assert!(defs[0].contains("idx_messages_search"), "{defs:?}");
    assert!(defs[0].contains("id >> 16"), "{defs:?}");
    let new = stores[0]
        .append_message("s", &Message::user("written at version four"), None)
        .unwrap();
    let mut found: Vec<i64> = stores[1]
        .search(&SearchQuery::new("written"))
        .unwrap()
        .iter()
        .map(|h| h.message_id)
        .collect();
    found.sort();
    assert_eq!(found, vec![old, new]);
    drop(stores);
    let again = SessionStore::from_backend(PgStore::open(&options).unwrap());
    assert_eq!(again.schema_version().unwrap(), PG_SCHEMA_VERSION);
}

/// A database of PostgreSQL schema version 4 (`hermes_messages` without `trace_id`) migrates
/// to version 5: the column is added, the rows it had are kept, and trace ids are stored from
/// then on.
#[test]
fn a_version_4_database_gains_the_trace_id_column() {
    use hermes_protocol::ContentPart;
    let Some(dsn) = dsn() else { return };
    let schema = fresh_schema();
    let options = PgOptions::new(dsn.clone()).with_schema(schema.clone());
    let store = SessionStore::from_backend(PgStore::open(&options).unwrap());
    session(&store, "s");
    let mut multi = Message::user("see");
    multi.content.push(ContentPart::Image {
        url: "https://example.com/x.png".into(),
    });
    store.append_message("s", &multi, None).unwrap();
    drop(store);
    let admin = Admin::connect(&dsn, &schema);
    admin.run(
        "ALTER TABLE hermes_messages DROP COLUMN trace_id; \
         DELETE FROM hermes_schema_migrations WHERE version > 4",
    );
    let store = SessionStore::from_backend(PgStore::open(&options).unwrap());
    assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    assert!(store.schema_check().unwrap().is_current());
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    store
        .append_message_traced("s", &Message::assistant("ok"), Some(trace), None, 0)
        .unwrap();
    let stored = store.load_messages("s").unwrap();
    assert_eq!(stored[0].message, multi, "the old row's parts are kept");
    let ids: Vec<Option<&str>> = stored.iter().map(|m| m.trace_id.as_deref()).collect();
    assert_eq!(ids, [None, Some(trace)]);
}
