//! `hermes doctor` and `--fix` (issue 9 item 2): a healthy home, a broken config.yaml
//! (line and column), a corrupted copy of state.db, and the safe repairs — each with its
//! message and exit code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Env, stdout};
use hermes_protocol::Message;
use hermes_store::{NewSession, SessionStore};

/// A store with one session and two messages, checkpointed so the main file holds it all.
fn seed_store(path: &Path) {
    let store = SessionStore::open(path).unwrap();
    store
        .create_session(&NewSession {
            id: "20260101_000000_abcdef".into(),
            source: "cli".into(),
            model: "mock-model".into(),
            provider: "custom".into(),
            ..NewSession::default()
        })
        .unwrap();
    for text in ["where is the quarterly report", "in the shared folder"] {
        store
            .append_message("20260101_000000_abcdef", &Message::user(text), None)
            .unwrap();
    }
    drop(store);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
}

fn lines_with<'a>(text: &'a str, mark: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(mark)).collect()
}

#[tokio::test]
async fn a_healthy_home_passes_with_exit_code_0() {
    let env = Env::new().await;
    seed_store(&env.home.home().state_db());
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(lines_with(&text, "FAIL").is_empty(), "{text}");
    assert!(text.contains("ok    config.yaml parses"), "{text}");
    assert!(text.contains("state.db integrity ok"), "{text}");
    assert!(
        text.contains("state.db search index matches the messages"),
        "{text}"
    );
}

#[tokio::test]
async fn a_broken_config_names_line_and_column_and_exits_1() {
    let env = Env::new().await;
    std::fs::write(
        env.home.home().config_file(),
        "model:\n  provider: custom\nagent:\n  max_turns: [3\n",
    )
    .unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fail = lines_with(&text, "FAIL");
    assert_eq!(fail.len(), 1, "{text}");
    assert!(fail[0].contains("config.yaml line "), "{text}");
    assert!(fail[0].contains(", column "), "{text}");
    // --fix does not touch a config it cannot read.
    let before = std::fs::read(env.home.home().config_file()).unwrap();
    let out = env.run(&["doctor", "--fix"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read(env.home.home().config_file()).unwrap(),
        before
    );
}

#[tokio::test]
async fn a_corrupted_state_db_copy_is_reported_and_left_alone() {
    let env = Env::new().await;
    let db = env.home.home().state_db();
    seed_store(&db);
    // Overwrite everything after the first page (the schema stays readable) with garbage.
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 8192, "store too small: {} bytes", bytes.len());
    for b in bytes.iter_mut().skip(4096) {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();

    for args in [&["doctor"][..], &["doctor", "--fix"][..]] {
        let out = env.run(args).await;
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{text}");
        let fail = lines_with(&text, "FAIL");
        assert!(
            fail.iter()
                .any(|l| l.contains("state.db")
                    && l.contains("hermes does not repair it automatically")),
            "{text}"
        );
        assert_eq!(
            std::fs::read(&db).unwrap(),
            bytes,
            "doctor changed the damaged file"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn fix_repairs_permissions_folders_soul_and_the_search_index() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new().await;
    let home = env.home.home().clone();
    seed_store(&home.state_db());
    {
        let conn = rusqlite::Connection::open(home.state_db()).unwrap();
        conn.execute_batch("DELETE FROM messages_fts;").unwrap();
    }
    std::fs::write(home.env_file(), "OPENROUTER_API_KEY=sk-or-test\n").unwrap();
    std::fs::set_permissions(home.env_file(), std::fs::Permissions::from_mode(0o644)).unwrap();

    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL  state.db search index is out of date (2 messages not indexed, 0 stale entries); `hermes doctor --fix` rebuilds it"),
        "{text}"
    );
    assert!(
        text.contains("warn  .env holds API keys but other users can read it (mode 644)"),
        "{text}"
    );
    assert!(
        text.contains("warn  folders not created yet: memories, skills"),
        "{text}"
    );
    assert!(text.contains("warn  SOUL.md is missing"), "{text}");

    let out = env.run(&["doctor", "--fix"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("fixed .env set to mode 600 (was 644)"),
        "{text}"
    );
    assert!(text.contains("fixed created memories/"), "{text}");
    assert!(text.contains("rebuilt, 2 messages indexed"), "{text}");
    assert!(text.contains("fixed SOUL.md seeded"), "{text}");
    let mode = std::fs::metadata(home.env_file())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(home.skills_dir().is_dir() && home.logs_dir().is_dir());
    assert!(home.soul_file().is_file());

    // Nothing left to repair.
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("ok    .env is private (mode 600)"), "{text}");
    assert!(!text.contains("warn  folders"), "{text}");
    let search = env.run(&["sessions", "search", "quarterly"]).await;
    assert!(stdout(&search).contains("quarterly"), "{}", stdout(&search));
}

/// Files shared with Python Hermes: a malformed `auth.json` or `cron/jobs.json` is reported by
/// name as broken (exit 1) and neither file is rewritten; a Python-made `auth.json` passes.
#[tokio::test]
async fn malformed_shared_files_are_reported_and_left_alone() {
    let env = Env::new().await;
    let auth = env.home.home().auth_file();
    let jobs = env.home.path().join("cron/jobs.json");
    std::fs::create_dir_all(jobs.parent().unwrap()).unwrap();
    std::fs::write(&auth, "{\"credential_pool\": []}").unwrap();
    std::fs::write(&jobs, "{\"jobs\": [{\"id\": \"abc\"}]}").unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fails = lines_with(&text, "FAIL").join("\n");
    assert!(
        fails.contains("auth.json") && fails.contains("credential_pool"),
        "{text}"
    );
    assert!(
        fails.contains("jobs.json") && fails.contains("job #1"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&auth).unwrap(),
        "{\"credential_pool\": []}"
    );
    assert_eq!(
        std::fs::read_to_string(&jobs).unwrap(),
        "{\"jobs\": [{\"id\": \"abc\"}]}"
    );

    std::fs::write(
        &auth,
        include_str!("../../hermes-llm/tests/fixtures/python/auth.json"),
    )
    .unwrap();
    std::fs::remove_file(&jobs).unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert!(text.contains("auth.json: 3 pooled API key(s)"), "{text}");
    assert!(lines_with(&text, "FAIL").is_empty(), "{text}");
}

/// A file where the prompt-cache folder should be turns the cache off; doctor says so
/// instead of reporting an empty cache (stop 31's local pass).
#[cfg(feature = "local")]
#[tokio::test]
async fn a_file_in_place_of_the_prompt_cache_folder_is_named() {
    let env = Env::new().await;
    let cache = env.home.home().cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("prompt"), "not a folder").unwrap();
    let text = stdout(&env.run(&["doctor"]).await);
    assert!(
        text.lines()
            .any(|l| l.contains("prompt cache:") && l.contains("is not a folder")),
        "{text}"
    );
}

/// A dead MCP server is one FAIL line of the report, not raw log records besides it (the
/// user pass of issue 20: each problem was shown three times).
#[tokio::test]
async fn a_dead_mcp_server_is_one_report_line_without_log_records() {
    let env = Env::with_config(
        "mcp_servers:\n  deadhttp:\n    url: http://127.0.0.1:9/mcp\n  deadcmd:\n    command: /bin/false\n",
    )
    .await;
    let out = env.run(&["doctor"]).await;
    let err = common::stderr(&out);
    for level in [" WARN ", " ERROR ", "rmcp::"] {
        assert!(!err.contains(level), "a log record on stderr:\n{err}");
    }
    let report = stdout(&out);
    assert_eq!(
        report.lines().filter(|l| l.contains("deadhttp")).count(),
        1,
        "{report}"
    );
    assert!(!report.contains("rmcp::"), "{report}");
}

/// The user pass of issue 20: a server that never answers `initialize` is reported after the
/// discovery wait (not after its whole connect timeout of 60 s), and its process is gone
/// when doctor ends.
#[tokio::test]
async fn a_server_that_never_answers_is_reported_and_stopped() {
    let marker = format!("hermes-doctor-mute-{}", std::process::id());
    let env = Env::with_config(&format!(
        "mcp_servers:\n  mute:\n    command: sh\n    args: ['-c', 'sleep 600; : {marker}']\n"
    ))
    .await;
    let out = env.run(&["doctor"]).await;
    let report = stdout(&out);
    let line: Vec<&str> = report.lines().filter(|l| l.contains("mute")).collect();
    assert_eq!(line.len(), 1, "{report}");
    assert!(
        line[0].contains("no answer to initialize within 5 s"),
        "{report}"
    );
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&marker))
        .collect();
    assert!(left.is_empty(), "the server outlived doctor: {left:?}");
}

#[tokio::test]
async fn messaging_platforms_are_listed_with_their_access_and_bad_settings_fail() {
    let env = Env::new().await;
    let dotenv = env.home.path().join(".env");
    std::fs::write(&dotenv, "").unwrap();
    let out = env.run(&["doctor"]).await;
    assert!(
        stdout(&out).contains("messaging platforms: none configured"),
        "{}",
        stdout(&out)
    );

    std::fs::write(
        &dotenv,
        "TELEGRAM_BOT_TOKEN=123:abc\nTELEGRAM_ALLOWED_USERS=1,2\nSLACK_BOT_TOKEN=xoxb-1\n\
         IRC_SERVER=127.0.0.1\nIRC_CHANNEL=#ops\n",
    )
    .unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ok    platform telegram: configured; 2 allowed user(s)"),
        "{text}"
    );
    assert!(
        text.contains("ok    platform irc: configured; strangers get a pairing code"),
        "{text}"
    );
    assert!(
        text.contains("warn  platform slack: SLACK_APP_TOKEN not set"),
        "{text}"
    );
    assert!(!text.contains("123:abc"), "the token leaked: {text}");

    std::fs::write(
        &dotenv,
        "IRC_SERVER=127.0.0.1\nIRC_CHANNEL=#ops\nIRC_PORT=99999\n",
    )
    .unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fails = lines_with(&text, "FAIL");
    assert!(fails.len() == 1 && fails[0].contains("IRC_PORT"), "{text}");
}

/// A loopback homeserver that knows one access token.
#[cfg(feature = "matrix")]
async fn fake_homeserver() -> String {
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    async fn whoami(headers: HeaderMap) -> (StatusCode, String) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if auth == "Bearer syt_good" {
            (StatusCode::OK, r#"{"user_id":"@bot:fake"}"#.into())
        } else {
            (
                StatusCode::UNAUTHORIZED,
                r#"{"errcode":"M_UNKNOWN_TOKEN","error":"Invalid access token passed."}"#.into(),
            )
        }
    }
    let app = axum::Router::new().route("/_matrix/client/v3/account/whoami", get(whoami));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

#[cfg(feature = "matrix")]
#[tokio::test]
async fn doctor_shows_the_matrix_login_and_fails_on_a_refused_token() {
    let env = Env::new().await;
    let url = fake_homeserver().await;
    let vars = |token: &str| {
        vec![
            ("MATRIX_HOMESERVER", url.clone()),
            ("MATRIX_ACCESS_TOKEN", token.to_string()),
        ]
    };
    let out = env.run_env(&["doctor"], &vars("syt_good")).await;
    let text = stdout(&out);
    // `ok    matrix: …` (the live check), besides `platform matrix: configured; …`.
    let line = text
        .lines()
        .find(|l| l.get(6..).is_some_and(|t| t.starts_with("matrix:")))
        .unwrap_or_else(|| panic!("no matrix line in:\n{text}"));
    assert!(line.starts_with("ok "), "{line}");
    assert!(line.contains("logged in as @bot:fake"), "{line}");
    assert!(line.contains("no sync yet"), "{line}");
    let out = env.run_env(&["doctor"], &vars("syt_revoked")).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fail = lines_with(&text, "FAIL");
    assert!(
        fail.iter()
            .any(|l| l.contains("matrix:") && l.contains("MATRIX_ACCESS_TOKEN")),
        "{text}"
    );
    assert!(
        !text.contains("syt_revoked"),
        "the token is never printed:\n{text}"
    );
    // A setting that cannot work is named.
    let mut bad = vars("syt_good");
    bad.push(("MATRIX_E2EE_MODE", "required".into()));
    let out = env.run_env(&["doctor"], &bad).await;
    assert!(
        lines_with(&stdout(&out), "FAIL")
            .iter()
            .any(|l| l.contains("MATRIX_E2EE_MODE")),
        "{}",
        stdout(&out)
    );
}
