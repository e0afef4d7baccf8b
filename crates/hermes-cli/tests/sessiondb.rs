//! `sessiondb.provider: postgresql` end to end (issue 21): a home's SQLite sessions are
//! migrated with `hermes sessiondb migrate`, after which `chat`, `sessions` and `doctor` use
//! the PostgreSQL store and the SQLite file is no longer written; the DSN's password shows
//! nowhere. Needs a real server (`HERMES_TEST_PG_DSN`, set by `.ci/run`); skipped, saying so,
//! without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

#[tokio::test]
async fn a_home_moves_to_postgresql_and_keeps_working_there() {
    let Some(dsn) = std::env::var("HERMES_TEST_PG_DSN")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!("skipped: HERMES_TEST_PG_DSN is not set");
        return;
    };
    // The test server trusts loopback, so a password is accepted and ignored: it is there to
    // prove it never shows.
    let with_password = dsn.replacen("postgresql://hermes@", "postgresql://hermes:pw-s3cret@", 1);
    assert_ne!(with_password, dsn, "unexpected test DSN shape");
    let env = Env::new().await;
    env.mock.push(MockResponse::text("Noted: llamas."));
    env.run_ok(&["chat", "-q", "remember the llamas"]).await;

    let schema = format!("cli_{}", std::process::id());
    let config = env.home.home().config_file();
    let mut yaml = std::fs::read_to_string(&config).unwrap();
    yaml.push_str(&format!(
        "sessiondb:\n  provider: postgresql\n  postgresql:\n    schema: {schema}\n"
    ));
    std::fs::write(&config, yaml).unwrap();
    let vars = [("HERMES_SESSIONDB_DSN", with_password.clone())];
    let mut seen = String::new();

    let out = env.run_env(&["sessiondb", "migrate"], &vars).await;
    seen.push_str(&stdout(&out));
    seen.push_str(&stderr(&out));
    assert!(out.status.success(), "{seen}");
    assert!(stdout(&out).contains("verified 2 messages"), "{seen}");
    assert!(stderr(&out).contains("sessions 1/1"), "{seen}");

    let list = env.run_env(&["sessions", "list"], &vars).await;
    assert!(
        stdout(&list).contains("remember the llamas"),
        "{}",
        stdout(&list)
    );
    env.mock.push(MockResponse::text("Alpacas too."));
    let chat = env.run_env(&["chat", "-q", "and the alpacas"], &vars).await;
    assert!(chat.status.success(), "{}", stderr(&chat));
    let search = env.run_env(&["sessions", "search", "alpacas"], &vars).await;
    assert!(stdout(&search).contains("alpacas"), "{}", stdout(&search));
    let status = env.run_env(&["sessiondb", "status"], &vars).await;
    assert!(
        stdout(&status).contains("postgresql postgresql://127.0.0.1:")
            && stdout(&status).contains("2 sessions"),
        "{}",
        stdout(&status)
    );
    let doctor = env.run_env(&["doctor"], &vars).await;
    assert!(
        stdout(&doctor).contains("accepts writes (probe rolled back)"),
        "{}",
        stdout(&doctor)
    );
    for out in [&list, &chat, &search, &status, &doctor] {
        seen.push_str(&stdout(out));
        seen.push_str(&stderr(out));
    }

    // The SQLite file kept only what it had before the move.
    let sqlite = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    assert_eq!(sqlite.stats().unwrap().sessions, 1);

    // The DSN in config.yaml instead of the environment: `config show` masks it.
    let mut yaml = std::fs::read_to_string(&config).unwrap();
    yaml.push_str(&format!("    dsn: {with_password}\n"));
    std::fs::write(&config, yaml).unwrap();
    let shown = env.run(&["config", "show"]).await;
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(stdout(&shown).contains("dsn:"), "{}", stdout(&shown));
    let list = env.run(&["sessions", "list"]).await;
    assert!(stdout(&list).contains("alpacas"), "{}", stdout(&list));
    for out in [&shown, &list] {
        seen.push_str(&stdout(out));
        seen.push_str(&stderr(out));
    }
    assert!(!seen.contains("pw-s3cret"), "the password showed:\n{seen}");
    let logs = env.home.path().join("logs");
    if let Ok(entries) = std::fs::read_dir(&logs) {
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            assert!(
                !text.contains("pw-s3cret"),
                "{} holds the password",
                entry.path().display()
            );
        }
    }
}
