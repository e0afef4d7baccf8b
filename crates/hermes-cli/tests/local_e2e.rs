//! The main job on the real embedded model: `hermes chat -q` on the `local` provider with the
//! compact prompt profile. Runs when `HERMES_TEST_GGUF` names the default GGUF (`.ci/run`
//! sets it); otherwise it prints why it is skipped.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use hermes_protocol::Role;
use hermes_store::SessionStore;
use hermes_testkit::TempHome;

#[test]
fn chat_on_the_local_model_answers_and_stores_the_session() {
    let Some(gguf) = std::env::var_os("HERMES_TEST_GGUF") else {
        eprintln!("skipped: HERMES_TEST_GGUF is not set (see .ci/run)");
        return;
    };
    let home = TempHome::new().unwrap();
    let models = home.home().models_dir();
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(&gguf, models.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("hermes"))
        .env_clear()
        .env("HERMES_HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(cwd.path())
        .args([
            "chat",
            "-q",
            "What is the capital of France?",
            "--max-turns",
            "2",
            "--prompt-profile",
            "compact",
        ])
        .output()
        .unwrap();
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
    let session = store
        .latest_session(Some("cli"))
        .unwrap()
        .expect("session stored");
    assert_eq!(session.provider, "local");
    let messages = store.load_messages(&session.id).unwrap();
    assert_eq!(messages[0].message.role, Role::User);
    assert_eq!(messages[0].message.text(), "What is the capital of France?");
    assert!(messages.iter().any(|m| m.message.role == Role::Assistant));
}
