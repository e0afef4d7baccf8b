//! The REPL and the setup wizard driven in a pseudo-terminal (expectrl; CONVENTIONS
//! "tests"), against the mock provider: type a prompt and see the streamed answer, Tab turns
//! `/mo` into `/model`, Ctrl-C interrupts a running tool call, Ctrl-D exits; and the
//! first-run path — `hermes` with nothing configured offers the wizard, the answers are
//! typed, and the REPL starts on the new settings.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use hermes_testkit::{MockProvider, MockResponse, TempHome};

use common::term::{Term, wait_until};

#[tokio::test(flavor = "multi_thread")]
async fn repl_streams_completes_interrupts_a_tool_and_exits_on_ctrl_d() {
    let env = common::Env::new().await;
    env.mock.push(MockResponse::text(
        "Streaming answers arrive piece by piece.",
    ));
    env.mock.push(MockResponse::tool_calls(&[(
        "call_slow",
        "terminal",
        r#"{"command":"touch started.flag && sleep 60"}"#,
    )]));
    // After the interrupt the model is not asked again; a fallback keeps a stray request
    // from hanging.
    env.mock
        .set_fallback(Some(MockResponse::text("(unexpected)")));
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    let flag = cwd.join("started.flag");

    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);

        // A prompt, and its streamed answer.
        t.send("what is streaming?\r");
        t.wait_for("Streaming answers arrive piece by piece.");
        t.wait_for_prompt_number(2);

        // Tab completion: `/mo` becomes `/model`; then the line is cleared (Ctrl-U).
        t.send("/mo");
        t.wait_for("/mo");
        t.send("\t");
        t.wait_for("/model");
        t.send("\x15");

        // A tool call that runs until interrupted.
        t.send("run the slow command\r");
        wait_until("the tool to start", || flag.exists());
        // A line typed while the tool runs is not sent once Ctrl-C stops the turn.
        t.send("typed ahead\r");
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.send("\x03");
        t.wait_for("interrupted");
        t.wait_for("1 message(s) typed during the turn not sent");
        t.wait_for_prompt_number(3);

        // Ctrl-D on the empty prompt leaves with status 0.
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();

    // The typed prompts are in the persisted history.
    let history = std::fs::read_to_string(env.home.home().history_file()).unwrap();
    assert!(history.contains("what is streaming?"), "{history}");
    assert!(history.contains("run the slow command"), "{history}");
    // The interrupted tool call still has a result in the stored history (no orphan call).
    hermes_testkit::assert_request_invariants(&env.mock.requests());
    assert!(
        env.mock
            .requests()
            .iter()
            .all(|r| last_user_text(r) != "typed ahead"),
        "a line typed before the interrupt was sent"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn first_run_offers_the_wizard_and_then_chats_on_the_new_settings() {
    let mock = MockProvider::start().await;
    mock.push(MockResponse::text("Hello from the configured model."));
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let home_path = home.path().to_path_buf();
    let cwd_path = cwd.path().to_path_buf();
    let base_url = mock.base_url();

    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn(&home_path, &cwd_path, &[]);
        t.wait_for("No model provider is configured yet.");
        t.wait_for("Run the setup wizard now? [Y/n]");
        t.send("\r");
        t.wait_for("Which model provider?");
        t.wait_for("choice [1]:");
        t.send("custom\r");
        t.wait_for("Base URL of the server");
        t.send(&format!("{base_url}\r"));
        t.wait_for("typing is hidden");
        t.send("\r");
        t.wait_for("1) mock-model");
        t.wait_for("Model (number or name)");
        t.send("1\r");
        t.wait_for("Toolsets to enable");
        t.send("\r");
        t.wait_for("Add an MCP server now? [y/N]");
        t.send("\r");
        t.wait_for("Done.");
        // The REPL starts on the new settings.
        t.wait_for("mock-model on custom");
        t.wait_for_prompt_number(1);
        t.send("hello\r");
        t.wait_for("Hello from the configured model.");
        t.wait_for_prompt_number(2);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();

    let config = hermes_protocol::config::Config::load(&home.home().config_file())
        .unwrap()
        .config;
    let model = config.model.to_config();
    assert_eq!(model.provider.as_deref(), Some("custom"));
    assert_eq!(model.default.as_deref(), Some("mock-model"));
    assert_eq!(config.toolsets, vec!["hermes-cli".to_string()]);
}

/// The text of the last user message of a captured chat request.
fn last_user_text(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| match &m["content"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn multi_line_paste_history_search_and_prompt_in_the_editor() {
    use std::os::unix::fs::PermissionsExt;
    let env = common::Env::new().await;
    for answer in ["ok one", "ok two", "ok three", "ok four"] {
        env.mock.push(MockResponse::text(answer));
    }
    let editor = env.cwd.path().join("fake-editor.sh");
    // The editor also notes which file it was given.
    let edited = env.cwd.path().join("edited-path.txt");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{}'\nprintf 'composed in the editor' > \"$1\"\n",
            edited.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    let pasted: String = (1..=10).map(|i| format!("pasted line {i}\n")).collect();
    let paste = pasted.clone();

    tokio::task::spawn_blocking(move || {
        let vars = [("EDITOR", editor.display().to_string())];
        let mut t = Term::spawn_with(&home, &cwd, &[], &vars);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);

        // A trailing backslash continues the message on the next line.
        t.send("first line\\\r");
        t.wait_for_prompt_number(2);
        t.send("second line\r");
        t.wait_for("ok one");
        t.wait_for_prompt_number(3);

        // A large bracketed paste shows as one placeholder line.
        t.send(&format!("summarize \x1b[200~{paste}\x1b[201~"));
        t.wait_for("[pasted text #1: 10 lines, 141 chars]");
        t.send("\r");
        t.wait_for("ok two");
        t.wait_for_prompt_number(4);

        // Ctrl-R finds an earlier line; Enter takes it, a second Enter sends it.
        t.send("\x12");
        t.send("secon");
        t.wait_for("second line");
        t.send("\r");
        t.send("\r");
        t.wait_for("ok three");
        t.wait_for_prompt_number(5);

        // /prompt writes the message in $EDITOR.
        t.send("/prompt\r");
        t.wait_for("ok four");
        t.wait_for_prompt_number(6);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();

    let sent: Vec<String> = env.mock.requests().iter().map(last_user_text).collect();
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert_eq!(sent[0], "first line\nsecond line");
    assert_eq!(sent[1], format!("summarize {pasted}"));
    assert_eq!(sent[2], "second line");
    assert_eq!(sent[3], "composed in the editor");
    // Issue 18: the file lives in HERMES_HOME (which sandboxed commands cannot write), not in
    // the shared temp directory, and is removed once read.
    let path = std::path::PathBuf::from(std::fs::read_to_string(&edited).unwrap());
    let editor_dir = env.home.path().join("cache/editor");
    assert!(path.starts_with(&editor_dir), "{}", path.display());
    assert!(!path.exists(), "{} was left behind", path.display());
}

/// Issue 20: what is typed while an answer runs is not echoed into it, and every finished
/// line is sent, in order, once the turn ends (a pasted block as one message); an unfinished
/// one waits at the next prompt.
#[tokio::test(flavor = "multi_thread")]
async fn lines_typed_during_a_turn_are_queued_not_echoed() {
    let env = common::Env::new().await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_wait",
        "terminal",
        r#"{"command":"touch started.flag && sleep 3"}"#,
    )]));
    env.mock.push(MockResponse::text("done waiting"));
    env.mock.push(MockResponse::text("answer one"));
    env.mock.push(MockResponse::text("answer two"));
    env.mock.push(MockResponse::text("answer three"));
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    let flag = cwd.join("started.flag");

    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send("wait a little\r");
        wait_until("the tool to start", || flag.exists());
        t.send("queued first\r");
        std::thread::sleep(std::time::Duration::from_millis(400));
        // Two lines at once are a paste: one message.
        t.send("pasted one\rpasted two\r");
        std::thread::sleep(std::time::Duration::from_millis(400));
        t.send("third par");
        t.wait_for("done waiting");
        t.wait_for("answer one");
        t.wait_for("answer two");
        // The unfinished line is at the prompt, editable: finishing it sends all of it.
        t.send("t\r");
        t.wait_for("answer three");
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
        let before_answer = t.seen.split("done waiting").next().unwrap().to_string();
        assert!(
            !before_answer.contains("queued first"),
            "typed text was echoed into the turn:\n{before_answer}"
        );
    })
    .await
    .unwrap();

    let users: Vec<String> = env.mock.requests().iter().map(last_user_text).collect();
    assert_eq!(
        users,
        [
            "wait a little",
            "wait a little",
            "queued first",
            "pasted one\npasted two",
            "third part"
        ],
        "{users:?}"
    );
}

/// Runs the REPL in `env` on a pty: sends `message`, waits for `question` (what the turn
/// asks), presses Ctrl-C there and expects the turn interrupted and the REPL at its next
/// prompt, then ends it with Ctrl-D.
async fn ctrl_c_at_the_question(
    env: &common::Env,
    message: &'static str,
    question: &'static [&'static str],
) {
    env.mock.set_fallback(Some(MockResponse::text("(after)")));
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send(&format!("{message}\r"));
        for text in question {
            t.wait_for(text);
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.send("\x03");
        t.wait_for("interrupted");
        t.wait_for_prompt_number(2);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
}

/// Ctrl-C at the model's `clarify` question (it only echoed `^C` until Enter) gives no
/// answer and stops the turn, as at the approval question; the REPL goes on.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_a_clarify_question_interrupts_the_turn() {
    let env = common::Env::new().await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_ask",
        "clarify",
        r#"{"question":"which branch?","choices":["main","dev"]}"#,
    )]));
    ctrl_c_at_the_question(&env, "deploy it", &["which branch?", "empty to skip"]).await;
}

/// The user pass of issue 20: Ctrl-C at the dangerous-command question denies the command
/// and stops the turn (it only echoed `^C`); the REPL goes on.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_the_approval_question_denies_and_interrupts() {
    let env = common::Env::new().await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_rm",
        "terminal",
        r#"{"command":"rm -rf victim"}"#,
    )]));
    let victim = env.cwd.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    ctrl_c_at_the_question(&env, "clean up", &["run it?"]).await;
    assert!(victim.exists(), "the denied command did not run");
}
