//! `HERMES_HOME/.env` wins over the shell environment, as in Python Hermes 0.19.0, which
//! loads it with `load_dotenv(…, override=True)` (`hermes_cli/env_loader.py`): a key exported
//! in the shell and set in `.env` takes the file's value in both programs. A bare `KEY` line
//! (no `=`) sets nothing, so the shell's value stays.
//!
//! The hermes half always runs; the Python half needs `HERMES_PYTHON_HERMES` (the venv of
//! `scripts/python-hermes.sh`) and prints why it is skipped otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Env, stderr};
use hermes_testkit::MockResponse;

const SHELL_KEY: &str = "sk-from-the-shell-000000000001";
const FILE_KEY: &str = "sk-from-dotenv-file-00000000002";
const SHELL_ONLY: &str = "sk-shell-only-value-0000000003";

fn write_home(env: &Env) {
    std::fs::write(
        env.home.home().config_file(),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  default: mock-model\n",
            env.mock.base_url()
        ),
    )
    .unwrap();
    std::fs::write(
        env.home.path().join(".env"),
        format!("OPENROUTER_API_KEY={FILE_KEY}\nANTHROPIC_API_KEY\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn dotenv_beats_the_shell_in_hermes_and_in_python() {
    let env = Env::new().await;
    write_home(&env);
    env.mock.push(MockResponse::text("answered"));
    let out = env
        .run_env(
            &["chat", "-q", "hi"],
            &[("OPENROUTER_API_KEY", SHELL_KEY.to_string())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let auth: Vec<String> = env
        .mock
        .captured()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(
        auth,
        vec![format!("Bearer {FILE_KEY}")],
        "hermes used the shell's key"
    );

    let Some(venv) = std::env::var_os("HERMES_PYTHON_HERMES")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
    else {
        eprintln!(
            "Python half skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh)"
        );
        return;
    };
    // Python's own loader on the same home and shell.
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(
            "import os, json\nfrom hermes_cli.env_loader import load_hermes_dotenv\n\
             load_hermes_dotenv(hermes_home=os.environ['HERMES_HOME'])\n\
             print(json.dumps({k: os.environ.get(k) for k in ('OPENROUTER_API_KEY', 'ANTHROPIC_API_KEY')}))",
        )
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERMES_HOME", env.home.path())
        .env("HOME", env.home.path())
        .env("OPENROUTER_API_KEY", SHELL_KEY)
        .env("ANTHROPIC_API_KEY", SHELL_ONLY)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(got["OPENROUTER_API_KEY"], FILE_KEY, "Python: {got}");
    assert_eq!(got["ANTHROPIC_API_KEY"], SHELL_ONLY, "Python: {got}");
}

/// A bare `KEY` line in `.env` leaves the shell's value, in hermes as in python-dotenv.
#[tokio::test]
async fn a_bare_key_line_leaves_the_shell_value() {
    let env = Env::new().await;
    std::fs::write(
        env.home.home().config_file(),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  default: mock-model\n",
            env.mock.base_url()
        ),
    )
    .unwrap();
    std::fs::write(env.home.path().join(".env"), "OPENROUTER_API_KEY\n").unwrap();
    env.mock.push(MockResponse::text("answered"));
    let out = env
        .run_env(
            &["chat", "-q", "hi"],
            &[("OPENROUTER_API_KEY", SHELL_ONLY.to_string())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let auth = env.mock.captured()[0]
        .header("authorization")
        .map(str::to_string);
    assert_eq!(auth, Some(format!("Bearer {SHELL_ONLY}")));
}
