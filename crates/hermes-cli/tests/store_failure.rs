//! A message that cannot be stored fails loudly (issue 17): `hermes chat -q` exits 1 with one
//! line naming `state.db` and the cause, even though the answer was already shown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

#[tokio::test]
async fn chat_q_exits_1_naming_state_db_when_the_answer_cannot_be_stored() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("first answer"));
    let out = env.run(&["chat", "-q", "first"]).await;
    assert!(out.status.success(), "{}", stderr(&out));

    // Another program (or a failing disk) now refuses every stored reply.
    let db = env.home.home().state_db();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER test_no_replies BEFORE INSERT ON messages WHEN NEW.role = 'assistant' \
         BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END;",
    )
    .unwrap();
    drop(conn);

    env.mock.push(MockResponse::text("unsaved answer"));
    let out = env.run(&["chat", "-q", "second"]).await;
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "not saved, so not success: {err}"
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("could not be saved"))
        .collect();
    assert_eq!(lines.len(), 1, "one line about it: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(lines[0].contains("state.db"), "names the file: {err}");
    assert!(
        lines[0].contains("simulated write failure"),
        "names the cause: {err}"
    );
    // The answer may have been shown before the failed save; the exit code tells the truth.
    let _ = stdout(&out);
}
