//! Process driver for the crash and concurrency suites: the `hermes` binary run as a child
//! on a mock-provider home, its `--json` events read line by line as they arrive, a seeded
//! random source and the store checks every crash must pass.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use hermes_protocol::Role;
use hermes_store::SessionStore;
use serde_json::Value;

/// True when `HERMES_LONG_TESTS` asks for the long forms (issue 6; README "Tests").
pub fn long_tests() -> bool {
    std::env::var("HERMES_LONG_TESTS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// A small seeded generator (splitmix64): enough to pick kill points reproducibly.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `HERMES_TEST_SEED` when set, else from the clock; the seed is printed so a
    /// failure can be replayed.
    pub fn from_env(what: &str) -> (Rng, u64) {
        let seed = std::env::var("HERMES_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        eprintln!("{what}: seed {seed} (replay with HERMES_TEST_SEED={seed})");
        (Rng(seed), seed)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A duration uniform in `0..max_ms` milliseconds.
    pub fn millis(&mut self, max_ms: u64) -> Duration {
        Duration::from_millis(self.below(max_ms))
    }
}

/// `hermes args…` with only PATH, HERMES_HOME, HOME and NO_COLOR from the environment.
pub fn hermes_command(home: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hermes"));
    cmd.env_clear()
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args);
    cmd
}

/// Waits for `child` to exit within `limit`; kills it and panics (naming `context`) when it
/// does not — a hang is a failure.
pub fn wait_bounded(mut child: Child, limit: Duration, context: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{context}: hermes did not finish within {limit:?}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A running `hermes … --json` whose stdout events are read on a thread.
pub struct Running {
    /// The process.
    pub child: Child,
    events: Receiver<Value>,
    /// Every event received so far.
    pub seen: Vec<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Running {
    /// Spawns `cmd` with piped stdout (JSON lines) and stderr.
    pub fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text);
            text
        });
        Running {
            child,
            events,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// Reads events until one satisfies `pred` (returns true), the process's stdout ends
    /// (false) or `limit` passes (panics: a hang).
    pub fn wait_for(&mut self, limit: Duration, pred: impl Fn(&Value) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) => {
                    let hit = pred(&v);
                    self.seen.push(v);
                    if hit {
                        return true;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no expected event within {limit:?}; seen: {:?}", self.seen)
                }
            }
        }
    }

    /// SIGKILLs the process (if still running), reaps it and takes every event it wrote.
    pub fn kill(mut self) -> (Vec<Value>, String) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The reader thread ends at EOF; drain what it already parsed.
        while let Ok(v) = self.events.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(v);
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        (self.seen, stderr)
    }
}

/// What the `--json` events of one run acknowledged as complete.
#[derive(Debug, Default)]
pub struct Acknowledged {
    /// Call ids of `tool_started` (their assistant message was committed first).
    pub calls: Vec<String>,
    /// Call ids of `tool_finished` (their result was committed first).
    pub results: Vec<String>,
    /// `final_text` of a completed `turn_finished`.
    pub final_text: Option<String>,
    /// A `status` said the context was compressed.
    pub compressed: bool,
}

impl Acknowledged {
    /// Reads the acknowledgements out of `events`.
    pub fn from_events(events: &[Value]) -> Acknowledged {
        let mut ack = Acknowledged::default();
        for e in events {
            match e["type"].as_str().unwrap_or("") {
                "tool_started" => ack.calls.push(e["call_id"].as_str().unwrap().to_string()),
                "tool_finished" => ack.results.push(e["call_id"].as_str().unwrap().to_string()),
                "turn_finished" if e["outcome"] == "completed" => {
                    ack.final_text = Some(e["final_text"].as_str().unwrap().to_string());
                }
                "status"
                    if e["message"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("context compressed") =>
                {
                    ack.compressed = true;
                }
                _ => {}
            }
        }
        ack
    }
}

/// Checks `db` after a crash: `PRAGMA integrity_check` is ok, everything `ack` reported is
/// stored (active or, after a compression, inactive rows), the active history needs no
/// repair beyond results synthesized for calls cut off by the kill, and the repaired history
/// passes the tool-pair validator. `context` names the iteration and seed in failures.
pub fn check_store_after_crash(db: &Path, session: &str, ack: &Acknowledged, context: &str) {
    let store = SessionStore::open(db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok", "{context}");
    let all = store.load_all_messages(session).unwrap();
    for id in &ack.calls {
        assert!(
            all.iter().any(|m| m.message.role == Role::Assistant
                && m.message.tool_calls.iter().any(|c| &c.id == id)),
            "{context}: the call {id} was reported started but is not stored"
        );
    }
    for id in &ack.results {
        assert!(
            all.iter().any(|m| m.message.role == Role::Tool
                && m.message.tool_call_id.as_deref() == Some(id.as_str())),
            "{context}: the result of {id} was reported finished but is not stored"
        );
    }
    if let Some(text) = &ack.final_text {
        assert!(
            all.iter()
                .any(|m| m.message.role == Role::Assistant && &m.message.text() == text),
            "{context}: the final answer was reported but is not stored"
        );
    }
    let active: Vec<_> = store
        .load_messages(session)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    if ack.compressed {
        let header = hermes_context::compress::SUMMARY_HEADER.trim();
        assert!(
            active.iter().any(|m| m.text().contains(header)),
            "{context}: a compression was reported but the active history has no summary"
        );
    }
    let (repaired, report) = hermes_agent::repair_history(&active);
    assert_eq!(
        (
            report.dropped_orphans,
            report.moved,
            report.rewritten_ids,
            report.dropped_empty
        ),
        (0, 0, 0, 0),
        "{context}: the stored history needs more than synthesized results: {report:?}"
    );
    hermes_agent::validate_tool_pairs(&repaired)
        .unwrap_or_else(|e| panic!("{context}: repaired history invalid: {e}"));
}
