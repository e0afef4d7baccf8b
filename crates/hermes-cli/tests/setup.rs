//! `hermes setup` (issue 9 item 1): the non-interactive form with flags, the wizard with
//! answers typed on its input (a provider's `/models` list offered), and the hint when
//! nothing is configured. The pty form of the wizard is in `interactive.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use common::{hermes, stderr, stdout};
use hermes_protocol::config::Config;
use hermes_testkit::{MockProvider, TempHome};

/// Runs `hermes args…` with `answers` on standard input (a pipe, not a terminal).
async fn hermes_stdin(home: &Path, args: &[&str], answers: &str) -> Output {
    let home = home.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let answers = answers.to_string();
    tokio::task::spawn_blocking(move || {
        assert_cmd::Command::cargo_bin("hermes")
            .unwrap()
            .env_clear()
            .env("HERMES_HOME", &home)
            .env("HOME", &home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .current_dir(&home)
            .args(&args)
            .write_stdin(answers)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn config(home: &TempHome) -> Config {
    Config::load(&home.home().config_file()).unwrap().config
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn non_interactive_writes_the_key_privately_and_the_model_section() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(
        home.path(),
        cwd.path(),
        &[
            "setup",
            "--non-interactive",
            "--provider",
            "openrouter",
            "--api-key",
            "sk-or-v1-test-key",
            "-m",
            "anthropic/claude-sonnet-4",
            "-t",
            "hermes-cli",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("sk-or-v1-test-key"),
        "the key was printed"
    );
    let env = std::fs::read_to_string(home.home().env_file()).unwrap();
    assert_eq!(env, "OPENROUTER_API_KEY=sk-or-v1-test-key\n");
    #[cfg(unix)]
    assert_eq!(mode(&home.home().env_file()), 0o600);
    let c = config(&home);
    let m = c.model.to_config();
    assert_eq!(m.provider.as_deref(), Some("openrouter"));
    assert_eq!(m.default.as_deref(), Some("anthropic/claude-sonnet-4"));
    assert_eq!(c.toolsets, vec!["hermes-cli".to_string()]);

    // The result resolves: `hermes model show` needs no network.
    let show = hermes(home.path(), cwd.path(), &["model", "show"]).await;
    assert!(show.status.success(), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("provider: openrouter"),
        "{}",
        stdout(&show)
    );
}

#[tokio::test]
async fn non_interactive_errors_say_what_is_missing() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["setup", "--non-interactive"],
            "--non-interactive needs --provider",
        ),
        (
            &["setup", "--non-interactive", "--provider", "anthropic"],
            "ANTHROPIC_API_KEY",
        ),
        (
            &["setup", "--non-interactive", "--provider", "frobnicator"],
            "unknown provider `frobnicator`",
        ),
        (
            &[
                "setup",
                "--non-interactive",
                "--provider",
                "local",
                "-t",
                "nope",
            ],
            "unknown toolset `nope`",
        ),
    ];
    for (args, expected) in cases {
        let out = hermes(home.path(), cwd.path(), args).await;
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(
        !home.home().config_file().exists(),
        "a failed setup wrote config.yaml"
    );
}

#[tokio::test]
async fn non_interactive_custom_server_with_an_mcp_server_keeps_other_settings() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        home.home().config_file(),
        "# my settings\nagent:\n  max_turns: 12   # long tasks\n",
    )
    .unwrap();
    let out = hermes(
        home.path(),
        cwd.path(),
        &[
            "setup",
            "--non-interactive",
            "--provider",
            "custom",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--mcp-name",
            "files",
            "--mcp",
            "npx -y @modelcontextprotocol/server-filesystem /tmp",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let c = config(&home);
    assert_eq!(c.agent.max_turns, 12);
    assert_eq!(
        c.model.to_config().base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    let servers = serde_json::to_value(c.mcp_servers.unwrap()).unwrap();
    assert_eq!(servers["files"]["command"], "npx");
    assert_eq!(servers["files"]["args"][2], "/tmp");
    // The settings were added line by line: the user's comments are still there.
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    assert!(
        text.starts_with("# my settings\nagent:\n  max_turns: 12   # long tasks\n"),
        "{text}"
    );
    assert!(!home.path().join("config.yaml.bak").exists());
    let list = hermes(home.path(), cwd.path(), &["mcp", "list"]).await;
    assert!(
        stdout(&list).contains("files\tenabled"),
        "{}",
        stdout(&list)
    );
}

#[tokio::test]
async fn the_wizard_offers_the_servers_model_list_and_writes_the_answers() {
    let mock = MockProvider::start().await;
    mock.set_models(serde_json::json!({
        "object": "list",
        "data": [{"id": "qwen3-8b"}, {"id": "llama-3.1-8b"}]
    }));
    let home = TempHome::new().unwrap();
    // provider: custom (by name) · URL · no key · model 2 from the list · toolsets ·
    // an MCP server by URL.
    let answers = format!(
        "custom\n{}\n\n2\nhermes-cli,safe\ny\ndocs\nhttps://mcp.example.invalid/mcp\n",
        mock.base_url()
    );
    let out = hermes_stdin(home.path(), &["setup"], &answers).await;
    let shown = stdout(&out);
    assert!(out.status.success(), "{shown}\n{}", stderr(&out));
    assert!(
        shown.contains("local — the embedded model, works offline"),
        "{shown}"
    );
    assert!(shown.contains("1) qwen3-8b"), "{shown}");
    // Issue 20 item 10: `session_search` is among the toolsets offered, and the wizard run
    // on its own says how to start (it does not start the chat itself).
    // (Prompts end without a newline on a pipe, so the list starts mid-line.)
    let offered = shown
        .split_once("Toolsets: ")
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("no toolset list: {shown}"));
    assert!(
        offered.split(", ").any(|t| t == "session_search"),
        "{offered}"
    );
    assert!(
        shown.contains("Done. Run `hermes` to start chatting"),
        "{shown}"
    );
    assert!(shown.contains("2) llama-3.1-8b"), "{shown}");
    assert!(
        mock.captured().iter().any(|r| r.path == "/v1/models"),
        "the wizard did not ask for the model list"
    );
    let c = config(&home);
    let m = c.model.to_config();
    assert_eq!(m.provider.as_deref(), Some("custom"));
    assert_eq!(m.base_url.as_deref(), Some(mock.base_url().as_str()));
    assert_eq!(m.default.as_deref(), Some("llama-3.1-8b"));
    assert_eq!(
        c.toolsets,
        vec!["hermes-cli".to_string(), "safe".to_string()]
    );
    let servers = serde_json::to_value(c.mcp_servers.unwrap()).unwrap();
    assert_eq!(servers["docs"]["url"], "https://mcp.example.invalid/mcp");
    assert!(!home.home().env_file().exists(), "no key was given");
}

#[tokio::test]
async fn the_wizard_stops_cleanly_when_the_answers_run_out() {
    let home = TempHome::new().unwrap();
    let out = hermes_stdin(home.path(), &["setup"], "openai\n").await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("answers ended"), "{}", stderr(&out));
    assert!(!home.home().config_file().exists());
    assert!(!home.home().env_file().exists());
}

#[tokio::test]
async fn nothing_configured_points_at_setup() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(home.path(), cwd.path(), &["chat", "-q", "hello"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("Run `hermes setup`"), "{err}");
    assert!(err.contains("no model provider is configured"), "{err}");

    // The REPL without a terminal says so, and points at the flag form of setup.
    let out = hermes_stdin(home.path(), &[], "hello\n").await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains("hermes setup --non-interactive"), "{err}");
}

/// Issue 20 item 10: the first run on a terminal with nothing configured offers the wizard;
/// "n" prints the skip notice as its own sentence on its own line, then the ways to
/// configure a provider, and exits without starting a chat.
#[test]
fn first_run_declined_says_so_on_its_own_line() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(common::Env::new());
    std::fs::remove_file(env.home.home().config_file()).unwrap();
    let (mut child, mut master) = common::spawn_on_pty(&env, &[]);
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
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&screen).contains("Run the setup wizard now?") {
        assert!(
            Instant::now() < deadline,
            "no offer: {}",
            String::from_utf8_lossy(&screen)
        );
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            screen.extend(chunk);
        }
    }
    master.write_all(b"n\r").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "hermes did not exit after \"n\"");
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(100)) {
            screen.extend(chunk);
        }
    }
    while let Ok(chunk) = rx.recv_timeout(Duration::from_millis(300)) {
        screen.extend(chunk);
    }
    let text = String::from_utf8_lossy(&screen).replace('\r', "");
    let line = text
        .lines()
        .find(|l| l.contains("Setup skipped."))
        .unwrap_or_else(|| panic!("no skip notice: {text}"));
    assert_eq!(
        line.trim(),
        "Setup skipped. Run `hermes setup` when you are ready, or configure a provider yourself:",
        "{text}"
    );
    assert!(!text.contains("❯"), "no chat was started: {text}");
}

/// A home set up for a custom server (a mock listing models `m1` and `m2`, default `m1`),
/// with `extra` lines in its `model:` section.
async fn custom_server_home(extra: &str) -> (MockProvider, TempHome) {
    let mock = MockProvider::start().await;
    mock.set_models(serde_json::json!({"object": "list", "data": [{"id": "m1"}, {"id": "m2"}]}));
    let home = TempHome::new().unwrap();
    std::fs::write(
        home.home().config_file(),
        format!(
            "model:\n  provider: custom\n  base_url: {}\n{extra}  default: m1\n",
            mock.base_url()
        ),
    )
    .unwrap();
    (mock, home)
}

/// Running the wizard again to change the model of a custom server: Enter at the key
/// question keeps the configured key (the user pass of issue 20: it was deleted).
#[tokio::test]
async fn the_wizard_keeps_the_configured_key_on_enter() {
    let (mock, home) = custom_server_home("  api_key: sk-keep-me-0123456789\n").await;
    let answers = format!("custom\n{}\n\n2\n\nn\n", mock.base_url());
    let out = hermes_stdin(home.path(), &["setup"], &answers).await;
    let shown = stdout(&out);
    assert!(out.status.success(), "{shown}\n{}", stderr(&out));
    assert!(shown.contains("Enter keeps the configured one"), "{shown}");
    let m = config(&home).model.to_config();
    assert_eq!(m.default.as_deref(), Some("m2"));
    assert_eq!(m.api_key.as_deref(), Some("sk-keep-me-0123456789"));
}

/// Enter at the provider question keeps the provider in use, even when `.env` has a key for
/// another one (the user pass of issue 20).
#[tokio::test]
async fn the_wizard_offers_the_provider_in_use_first() {
    let (mock, home) = custom_server_home("").await;
    std::fs::write(
        home.home().env_file(),
        "OPENROUTER_API_KEY=sk-or-v1-elsewhere-0001\n",
    )
    .unwrap();
    let answers = format!("\n{}\n\n2\n\nn\n", mock.base_url());
    let out = hermes_stdin(home.path(), &["setup"], &answers).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let m = config(&home).model.to_config();
    assert_eq!(m.provider.as_deref(), Some("custom"));
    assert_eq!(m.default.as_deref(), Some("m2"));
}

/// `hermes model` on a custom server: Enter at every question keeps the server's URL and
/// model (the user pass of issue 20: the example URL and `default` were offered instead).
#[tokio::test]
async fn the_model_picker_offers_the_configured_server_and_model() {
    let (mock, home) = custom_server_home("").await;
    mock.set_models(serde_json::json!({"object": "list", "data": [{"id": "m0"}, {"id": "m1"}]}));
    let out = hermes_stdin(home.path(), &["model", "pick"], "\n\n\n\n").await;
    let shown = stdout(&out);
    assert!(out.status.success(), "{shown}\n{}", stderr(&out));
    assert!(
        shown.contains(&format!("Base URL of the server [{}]", mock.base_url())),
        "{shown}"
    );
    let m = config(&home).model.to_config();
    assert_eq!(m.base_url.as_deref(), Some(mock.base_url().as_str()));
    assert_eq!(
        m.default.as_deref(),
        Some("m1"),
        "the model in use stays the default"
    );
}
