//! Internal logs stay off the terminal (issue 20 item 1): with a dead MCP server and a dead
//! provider, `chat -q` and the REPL show friendly lines only, and the raw `tracing` records
//! land in `HERMES_HOME/logs/agent.log` (plain text) where `hermes logs` reads them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{Env, hermes, stderr, stdout};

/// config.yaml with an unreachable provider (connection refused, no retries) and two dead
/// MCP servers: one whose command exits at once and one whose URL refuses connections.
fn dead_config() -> String {
    "model:\n  provider: custom\n  base_url: http://127.0.0.1:1/v1\n  default: mock-model\n\
     agent:\n  api_max_retries: 0\n\
     mcp_servers:\n  gone:\n    command: sh\n    args: ['-c', 'exit 3']\n  \
     down:\n    url: http://127.0.0.1:1/mcp\n"
        .to_string()
}

/// Fails when `text` holds something that looks like a raw log record: a level word, an
/// RFC 3339 timestamp or a Rust module path.
fn assert_no_log_line(text: &str) {
    for line in text.lines() {
        for word in [" WARN ", " ERROR ", " INFO ", " DEBUG ", "WARN ", "ERROR "] {
            assert!(
                !line.contains(word),
                "log level on the terminal: {line:?}\n{text}"
            );
        }
        assert!(
            !line.contains("::"),
            "module path on the terminal: {line:?}\n{text}"
        );
        let ts = regex_lite_timestamp(line);
        assert!(!ts, "timestamp on the terminal: {line:?}\n{text}");
    }
}

/// `YYYY-MM-DDTHH:MM:SS` anywhere in the line.
fn regex_lite_timestamp(line: &str) -> bool {
    let b = line.as_bytes();
    b.windows(19).any(|w| {
        w[4] == b'-'
            && w[7] == b'-'
            && w[10] == b'T'
            && w[13] == b':'
            && w[16] == b':'
            && w[..4].iter().all(u8::is_ascii_digit)
    })
}

fn agent_log(env: &Env) -> String {
    std::fs::read_to_string(env.home.path().join("logs/agent.log")).unwrap_or_default()
}

#[tokio::test]
async fn chat_q_with_dead_mcp_and_provider_prints_no_log_line_and_logs_to_file() {
    let env = Env::with_config("").await;
    std::fs::write(env.home.home().config_file(), dead_config()).unwrap();
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("error:"), "{err}");
    assert!(err.contains("gone"), "the dead server is named: {err}");
    assert_no_log_line(&stdout(&out));
    assert_no_log_line(&err);
    let log = agent_log(&env);
    assert!(log.contains("WARN") || log.contains("ERROR"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "ANSI codes in the log file: {log:?}"
    );
    // `hermes logs --level warning` shows the records, and nothing below WARN.
    let shown = hermes(
        env.home.path(),
        env.cwd.path(),
        &["logs", "--level", "warning"],
    )
    .await;
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown = stdout(&shown);
    assert!(!shown.trim().is_empty(), "{shown}");
    assert!(!shown.contains(" INFO "), "{shown}");
    // The turn's records carry its session id, so `--session` finds them (the user pass of
    // issue 20: no line of hermes' did).
    let sid = log
        .split("session=")
        .nth(1)
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .next()
        })
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| panic!("no record names its session: {log}"))
        .to_string();
    let by_session = hermes(
        env.home.path(),
        env.cwd.path(),
        &["logs", "--session", &sid],
    )
    .await;
    let by_session = stdout(&by_session);
    assert!(!by_session.trim().is_empty(), "nothing for {sid}");
    assert!(by_session.lines().all(|l| l.contains(&sid)), "{by_session}");
}

/// Issue 20: an MCP server that never answers `initialize` costs the session its discovery
/// wait, and is named in one line instead of being dropped silently; the turn still runs.
#[tokio::test]
async fn chat_q_names_an_mcp_server_that_never_answers_initialize() {
    let env =
        Env::with_config("mcp_servers:\n  mute:\n    command: sh\n    args: ['-c', 'sleep 60']\n")
            .await;
    env.mock
        .push(hermes_testkit::MockResponse::text("the answer"));
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "the answer");
    let err = stderr(&out);
    let told: Vec<&str> = err.lines().filter(|l| l.contains("`mute`")).collect();
    assert_eq!(told.len(), 1, "{err}");
    assert!(told[0].contains("has not answered within 5 s"), "{err}");
    assert_eq!(
        err.matches("waiting up to 5 s for MCP servers to start")
            .count(),
        1,
        "the wait is announced once: {err}"
    );
    assert_no_log_line(&err);
}

/// Runs the REPL on a pty in `env`: sends `hello`, waits for an error on the screen, lets the
/// session run `linger` more (background reconnects), quits, and returns all it drew.
fn repl_screen(env: &Env, linger: Duration) -> String {
    let (mut child, mut master) = common::spawn_on_pty(env, &[]);
    let mut reader = master.try_clone().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = Vec::new();
    let wait_for = |needle: &str, screen: &mut Vec<u8>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if String::from_utf8_lossy(screen).contains(needle) {
                return;
            }
            if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
                screen.extend(chunk);
            }
        }
        panic!(
            "no {needle:?} on screen: {}",
            String::from_utf8_lossy(screen)
        );
    };
    wait_for("❯", &mut screen);
    master.write_all(b"hello\r").unwrap();
    wait_for("error", &mut screen);
    let until = Instant::now() + linger;
    while Instant::now() < until {
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            screen.extend(chunk);
        }
    }
    master.write_all(b"/quit\r").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            screen.extend(chunk);
        }
    }
    let _ = child.kill();
    String::from_utf8_lossy(&screen).to_string()
}

#[test]
fn repl_with_dead_mcp_and_provider_draws_no_log_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(Env::with_config(""));
    std::fs::write(env.home.home().config_file(), dead_config()).unwrap();
    // Let the MCP reconnect loop run a while: its records must not reach the screen.
    let text = repl_screen(&env, Duration::from_secs(3));
    assert_no_log_line(&text);
    let log = agent_log(&env);
    assert!(log.contains("WARN") || log.contains("ERROR"), "{log}");
}

/// Issue 20 item 1: a dead MCP server is told once, however many reconnect attempts fail
/// while the session runs (they are in the log, not on the screen).
#[test]
fn repl_tells_a_dead_mcp_server_once_across_its_retries() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(Env::with_config(""));
    std::fs::write(env.home.home().config_file(), dead_config()).unwrap();
    let text = repl_screen(&env, Duration::from_secs(6));
    for server in ["gone", "down"] {
        let told = text
            .matches(&format!("MCP server `{server}` did not start"))
            .count();
        assert_eq!(told, 1, "`{server}` told {told} times:\n{text}");
    }
    assert!(!text.contains("lost ("), "{text}");
    let log = agent_log(&env);
    let attempts = log.lines().filter(|l| l.contains("gone")).count();
    assert!(attempts >= 2, "the reconnects are in the log:\n{log}");
}

/// Issue 20 items 1 and 10: with `agent.api_max_retries: 2` and a provider that refuses the
/// connection, the screen holds one line about it: no retry lines, no repeat.
#[test]
fn repl_with_a_refusing_provider_and_two_retries_shows_one_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(Env::with_config(""));
    std::fs::write(
        env.home.home().config_file(),
        "model:\n  provider: custom\n  base_url: http://127.0.0.1:1/v1\n  default: mock-model\n\
         agent:\n  api_max_retries: 2\n",
    )
    .unwrap();
    let text = repl_screen(&env, Duration::from_secs(2));
    assert_eq!(
        text.matches("connection refused").count(),
        1,
        "one line for the refused connection:\n{text}"
    );
    assert!(!text.contains("retrying"), "{text}");
    assert_no_log_line(&text);
}
