//! The main job on the real embedded model: `hermes chat -q` on the `local` provider with the
//! compact prompt profile. Runs when `HERMES_TEST_GGUF` names the default GGUF (`.ci/run`
//! sets it); otherwise it prints why it is skipped.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use hermes_protocol::Role;
use hermes_store::SessionStore;
use hermes_testkit::TempHome;

/// A fresh home with the default model installed (a symlink to `HERMES_TEST_GGUF`), or
/// `None` (skipped) without it.
fn local_home() -> Option<TempHome> {
    let Some(gguf) = std::env::var_os("HERMES_TEST_GGUF") else {
        eprintln!("skipped: HERMES_TEST_GGUF is not set (see .ci/run)");
        return None;
    };
    let home = TempHome::new().unwrap();
    let models = home.home().models_dir();
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(&gguf, models.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    Some(home)
}

fn hermes(home: &TempHome, cwd: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("hermes"))
        .env_clear()
        .env("HERMES_HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn latest(home: &TempHome) -> hermes_store::SessionRecord {
    let store = SessionStore::open(home.home().state_db()).unwrap();
    store
        .latest_session(Some("cli"))
        .unwrap()
        .expect("session stored")
}

#[test]
fn the_default_first_request_is_sized_to_the_model() {
    let Some(home) = local_home() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(
        &home,
        cwd.path(),
        &["chat", "-q", "What is the capital of France?"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let session = latest(&home);
    // Issue 19: at most 1,500 prompt tokens for the default first question.
    assert!(
        session.input_tokens > 0 && session.input_tokens <= 1_500,
        "{} prompt tokens",
        session.input_tokens
    );
    assert!(stderr.contains("cost free (local)"), "{stderr}");
    // The default model gets no tools (it cannot use them); `-t` still offers them.
    let status = hermes(&home, cwd.path(), &["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("none (the default for the local model)"),
        "{status}"
    );
    let out = hermes(&home, cwd.path(), &["chat", "-q", "Hi", "-t", "file"]);
    assert!(out.status.success());
    assert!(latest(&home).input_tokens > session.input_tokens + 200);
}

#[test]
fn a_second_process_reuses_the_saved_prompt_prefix() {
    let Some(home) = local_home() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let ask = [
        "chat",
        "-q",
        "What is the capital of France?",
        "-t",
        "file,terminal",
    ];
    let first = hermes(&home, cwd.path(), &ask);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let cold = latest(&home);
    assert_eq!(cold.cache_read_tokens, 0);
    let second = hermes(&home, cwd.path(), &ask);
    assert!(second.status.success());
    let warm = latest(&home);
    assert_ne!(warm.id, cold.id);
    assert!(
        warm.cache_read_tokens + 64 > warm.input_tokens,
        "the system turn came from the cache: {} of {}",
        warm.cache_read_tokens,
        warm.input_tokens
    );
    assert_eq!(first.stdout, second.stdout, "same greedy answer");
    let doctor = hermes(&home, cwd.path(), &["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains("prompt cache: 1 entry"), "{text}");
}

#[test]
fn chat_on_the_local_model_answers_and_stores_the_session() {
    let Some(home) = local_home() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(
        &home,
        cwd.path(),
        &[
            "chat",
            "-q",
            "What is the capital of France?",
            "--max-turns",
            "2",
            "--prompt-profile",
            "compact",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    assert!(!stdout.trim().is_empty(), "empty answer; stderr: {stderr}");
    println!("local model answered: {}", stdout.trim());

    let store = SessionStore::open(home.home().state_db()).unwrap();
    let session = latest(&home);
    assert_eq!(session.provider, "local");
    let messages = store.load_messages(&session.id).unwrap();
    assert_eq!(messages[0].message.role, Role::User);
    assert_eq!(messages[0].message.text(), "What is the capital of France?");
    assert!(messages.iter().any(|m| m.message.role == Role::Assistant));
}
