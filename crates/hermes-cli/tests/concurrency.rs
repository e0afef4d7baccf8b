//! Several `hermes` processes on one `state.db` (issue 6 part 3; ARCHITECTURE §2 invariant 4,
//! case C21 generalized): two `chat -q` loops and a `sessions search` loop for 6 s (30 s with
//! `HERMES_LONG_TESTS=1`) lose no write and never show "database is locked"; a process that
//! holds the write lock for 3 s delays a turn but loses nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::driver::{hermes_command, long_tests, wait_bounded};
use hermes_protocol::Role;
use hermes_store::SessionStore;
use hermes_testkit::{MockProvider, MockResponse, TempHome};

const HANG: Duration = Duration::from_secs(90);

struct Rig {
    /// Runs the mock provider's server while the test thread blocks on processes.
    _rt: tokio::runtime::Runtime,
    mock: MockProvider,
    home: TempHome,
    cwd: tempfile::TempDir,
}

impl Rig {
    fn new() -> Rig {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mock = rt.block_on(MockProvider::start());
        mock.set_fallback(Some(MockResponse::text("noted and saved")));
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let config = format!(
            "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\n",
            mock.base_url()
        );
        std::fs::write(home.home().config_file(), config).unwrap();
        Rig {
            _rt: rt,
            mock,
            home,
            cwd,
        }
    }

    fn run(&self, args: &[&str], context: &str) -> Output {
        let child = hermes_command(self.home.path(), self.cwd.path(), args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_bounded(child, HANG, context)
    }
}

/// Fails when `out` failed or mentions a locked database anywhere.
fn assert_clean(out: &Output, context: &str) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.to_lowercase().contains("locked"),
        "{context}: the user saw a lock error: {text}"
    );
    assert!(
        !text.contains("could not save"),
        "{context}: a write was postponed: {text}"
    );
    assert!(out.status.success(), "{context} failed: {text}");
}

/// Every user message text of every session, with the session's stored message count.
fn stored_turns(db: &Path) -> Vec<(String, usize)> {
    let store = SessionStore::open(db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let sessions = store.list_sessions(100_000, 0).unwrap();
    let mut out = Vec::new();
    for s in sessions {
        let msgs = store.load_messages(&s.id).unwrap();
        let user = msgs
            .iter()
            .find(|m| m.message.role == Role::User)
            .map(|m| m.message.text())
            .unwrap_or_default();
        out.push((user, msgs.len()));
    }
    out
}

#[test]
fn two_chat_loops_and_a_search_loop_share_one_store() {
    let seconds = if long_tests() { 30 } else { 6 };
    let rig = std::sync::Arc::new(Rig::new());
    let deadline = Instant::now() + Duration::from_secs(seconds);

    let chat_loop = |name: &'static str| {
        let rig = rig.clone();
        std::thread::spawn(move || {
            let mut sent = Vec::new();
            let mut n = 0;
            while Instant::now() < deadline {
                let prompt = format!("loop {name} message {n}");
                let out = rig.run(&["chat", "-q", prompt.as_str()], &prompt);
                assert_clean(&out, &prompt);
                assert!(String::from_utf8_lossy(&out.stdout).contains("noted and saved"));
                sent.push(prompt);
                n += 1;
            }
            sent
        })
    };
    let a = chat_loop("A");
    let b = chat_loop("B");
    let searcher = {
        let rig = rig.clone();
        std::thread::spawn(move || {
            let mut searches = 0;
            while Instant::now() < deadline {
                let out = rig.run(&["sessions", "search", "loop message"], "sessions search");
                assert_clean(&out, "sessions search");
                searches += 1;
            }
            searches
        })
    };
    let mut sent = a.join().unwrap();
    sent.extend(b.join().unwrap());
    let searches = searcher.join().unwrap();
    assert!(sent.len() >= 2 && searches >= 1, "the loops did run");

    let db: PathBuf = rig.home.home().state_db();
    let turns = stored_turns(&db);
    for prompt in &sent {
        let found: Vec<&(String, usize)> = turns.iter().filter(|(u, _)| u == prompt).collect();
        assert_eq!(found.len(), 1, "{prompt:?} is stored exactly once");
        assert_eq!(found[0].1, 2, "{prompt:?}: user message and answer");
    }
    assert_eq!(turns.len(), sent.len(), "no other session appeared");
    assert_eq!(
        rig.mock.requests().len(),
        sent.len(),
        "one model call per turn, none repeated"
    );
    eprintln!(
        "concurrency: {} turns and {searches} searches in {seconds} s, all stored",
        sent.len()
    );
}

#[test]
fn write_lock_held_by_another_process_delays_but_loses_nothing() {
    let rig = Rig::new();
    // The store exists (schema created) before the lock is taken.
    assert_clean(
        &rig.run(&["chat", "-q", "before the lock"], "warm-up"),
        "warm-up",
    );
    let db = rig.home.home().state_db();

    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    holder
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS lock_probe(x); INSERT INTO lock_probe VALUES (1)",
        )
        .unwrap();
    let mut child = hermes_command(
        rig.home.path(),
        rig.cwd.path(),
        &["chat", "-q", "during the lock"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // While the lock is held the turn cannot have been committed, so it cannot have ended.
    assert!(
        child.try_wait().unwrap().is_none(),
        "hermes ended while another process held the write lock"
    );
    holder.execute_batch("COMMIT").unwrap();
    drop(holder);

    let out = wait_bounded(child, HANG, "turn during the lock");
    assert_clean(&out, "turn during the lock");
    let turns = stored_turns(&db);
    assert!(turns.contains(&("before the lock".to_string(), 2)));
    assert!(
        turns.contains(&("during the lock".to_string(), 2)),
        "{turns:?}"
    );
    assert_eq!(rig.mock.requests().len(), 2);
    let probe = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = probe
        .query_row("SELECT count(*) FROM lock_probe", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1, "the other process's write is kept too");
}
