//! The Python Hermes commands of issue 20, on a fresh home and on homes Python Hermes made
//! (its `config.yaml` writer's output, its `state.db`, a `hermes backup` zip from the real
//! Python Hermes 0.19.0 when `HERMES_PYTHON_HERMES` is set): `config set|get|unset|edit`,
//! `tools enable|disable`, `gateway install|…` (without systemd, and with a stand-in
//! `systemctl`), `status`, `insights`, `sessions rename|delete|prune|stats`,
//! `backup`/`import`, `prompt-size`, and one-line answers for the commands hermes lacks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/python.rs"]
mod python;

use std::path::{Path, PathBuf};

use common::{Env, hermes, hermes_env, stderr, stdout};
use hermes_testkit::{MockResponse, TempHome};

fn python_config() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../hermes-protocol/tests/fixtures/python_config/python_home_config.yaml"),
    )
    .unwrap()
}

/// A home holding Python Hermes' `state.db` fixture (three sessions: two cli, one telegram).
fn python_state_home() -> (TempHome, tempfile::TempDir) {
    let home = TempHome::new().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../hermes-store/tests/fixtures/python-home/state.db"),
        home.home().state_db(),
    )
    .unwrap();
    (home, tempfile::tempdir().unwrap())
}

fn comments(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect()
}

#[tokio::test]
async fn config_set_get_unset_keep_the_comments_of_a_python_made_file() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let original = python_config();
    let file = home.home().config_file();
    std::fs::write(&file, &original).unwrap();
    let run = |args: Vec<&'static str>| {
        let (h, c) = (home.path().to_path_buf(), cwd.path().to_path_buf());
        async move { hermes(&h, &c, &args).await }
    };

    let out = run(vec!["config", "set", "agent.max_turns", "42"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("set agent.max_turns = 42"),
        "{}",
        stdout(&out)
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert_eq!(comments(&after), comments(&original));
    let v: serde_json::Value = yaml_serde::from_str(&after).unwrap();
    assert_eq!(v["agent"]["max_turns"], 42);
    assert_eq!(
        stdout(&run(vec!["config", "get", "agent.max_turns"]).await).trim(),
        "42"
    );
    // Lines other than the one set are byte for byte the same.
    let changed: Vec<(&str, &str)> = original
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");

    // A new key, text that YAML would read otherwise, and its removal.
    run(vec!["config", "set", "display.skin", "mono"]).await;
    assert_eq!(
        stdout(&run(vec!["config", "get", "display.skin"]).await).trim(),
        "mono"
    );
    let out = run(vec!["config", "unset", "display.skin"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        run(vec!["config", "get", "display.skin"])
            .await
            .status
            .code(),
        Some(1)
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert_eq!(comments(&after), comments(&original));
    assert!(after.contains("_config_version"), "{after}");

    // A value of the wrong type is refused and nothing changes.
    let before = std::fs::read_to_string(&file).unwrap();
    let out = run(vec!["config", "set", "agent.max_turns", "[1, 2]"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("agent.max_turns"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // An unknown key is saved with a warning naming the near miss (issue 20 item 10).
    let out = run(vec!["config", "set", "toolset", "[file]"]).await;
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("did you mean `toolsets`?"),
        "{}",
        stderr(&out)
    );

    // A Python Hermes setting hermes does not apply is written (Python reads it), with a
    // note saying hermes ignores it (issue 17 F9); one hermes applies gets no note.
    let out = run(vec!["config", "set", "tts.edge.voice", "en-US-AriaNeural"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: hermes does not use tts.edge.voice (Python Hermes does)"),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("en-US-AriaNeural")
    );
    let out = run(vec!["config", "set", "agent.max_turns", "40"]).await;
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));

    // Capitals are .env variables: written there, shown masked.
    let out = run(vec![
        "config",
        "set",
        "OPENROUTER_API_KEY",
        "sk-or-v1-abcdef0123456789",
    ])
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let env = std::fs::read_to_string(home.home().env_file()).unwrap();
    assert!(
        env.contains("OPENROUTER_API_KEY=sk-or-v1-abcdef0123456789"),
        "{env}"
    );
    let shown = stdout(&run(vec!["config", "get", "OPENROUTER_API_KEY"]).await);
    assert!(!shown.contains("abcdef0123456789"), "{shown}");
    run(vec!["config", "unset", "OPENROUTER_API_KEY"]).await;
    let env = std::fs::read_to_string(home.home().env_file()).unwrap();
    assert!(!env.contains("OPENROUTER_API_KEY"), "{env}");
}

#[tokio::test]
async fn config_edit_opens_the_editor_then_checks_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new().await;
    let editor = env.cwd.path().join("append-bad-line.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'agent:\\n  max_turns: lots\\n' >> \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .run_env(
            &["config", "edit"],
            &[("EDITOR", editor.display().to_string())],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("line"), "{err}");
    // The location is said once (issue 20 item 10).
    assert_eq!(err.matches("column").count(), 1, "{err}");
}

#[tokio::test]
async fn tools_enable_and_disable_change_config_and_show_in_the_list() {
    let env = Env::new().await;
    let config = || -> serde_json::Value {
        yaml_serde::from_str(&std::fs::read_to_string(env.home.home().config_file()).unwrap())
            .unwrap()
    };
    let out = env.run(&["tools", "disable", "web"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The terminal's own list, as in Python Hermes: `platform_toolsets.cli`, the default
    // composite spelled out without `web`; nothing global that the gateway reads.
    let cli: Vec<String> =
        serde_json::from_value(config()["platform_toolsets"]["cli"].clone()).unwrap();
    assert!(!cli.contains(&"web".to_string()), "{cli:?}");
    assert!(cli.contains(&"terminal".to_string()), "{cli:?}");
    assert!(cli.contains(&"cronjob".to_string()), "{cli:?}");
    assert_eq!(
        config()["agent"]["disabled_toolsets"],
        serde_json::Value::Null
    );
    let list = stdout(&env.run_ok(&["tools", "list"]).await);
    assert!(list.contains("platform_toolsets.cli"), "{list}");
    let line = |list: &str, tool: &str| {
        list.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(tool))
            .unwrap_or_else(|| panic!("{tool}: {list}"))
            .to_string()
    };
    assert!(line(&list, "web_extract").contains("off:"), "{list}");
    assert!(line(&list, "terminal").contains(" on"), "{list}");
    // A chat platform without a list of its own still gets the web tools.
    let telegram = stdout(
        &env.run_ok(&["tools", "list", "--platform", "telegram"])
            .await,
    );
    assert!(line(&telegram, "web_extract").contains(" on"), "{telegram}");
    env.run_ok(&["tools", "enable", "web"]).await;
    let list = stdout(&env.run_ok(&["tools", "list"]).await);
    assert!(line(&list, "web_extract").contains(" on"), "{list}");

    // Enabling a toolset that `agent.disabled_toolsets` turns off everywhere takes it out
    // of that list, or the change could never take effect.
    let file = env.home.home().config_file();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}agent:\n  disabled_toolsets: [memory, todo]\n"),
    )
    .unwrap();
    env.run_ok(&["tools", "enable", "memory"]).await;
    assert_eq!(
        config()["agent"]["disabled_toolsets"],
        serde_json::json!(["todo"])
    );
    let list = stdout(&env.run_ok(&["tools", "list"]).await);
    assert!(line(&list, "memory").contains(" on"), "{list}");

    // Per platform: Python's `platform_toolsets.<platform>`, the composite spelled out.
    env.run_ok(&["tools", "disable", "memory", "--platform", "telegram"])
        .await;
    let telegram: Vec<String> =
        serde_json::from_value(config()["platform_toolsets"]["telegram"].clone()).unwrap();
    assert!(!telegram.contains(&"memory".to_string()), "{telegram:?}");
    assert!(telegram.contains(&"terminal".to_string()), "{telegram:?}");

    let out = env.run(&["tools", "disable", "webb"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `web`?"),
        "{}",
        stderr(&out)
    );
    let out = env
        .run(&["tools", "enable", "web", "--platform", "myspace"])
        .await;
    assert_eq!(out.status.code(), Some(2));
}

/// A stand-in `systemctl` that logs its arguments and answers like a user systemd.
fn fake_systemctl(dir: &Path, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("systemctl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$2\" in is-active) echo active ;; esac\nexit 0\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[tokio::test]
async fn gateway_service_without_systemd_says_so_and_prints_the_unit() {
    let env = Env::new().await;
    // No systemctl at all on PATH.
    let out = env
        .run_env(
            &["gateway", "install"],
            &[("PATH", "/nonexistent".to_string())],
        )
        .await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("cannot manage the gateway as a service"),
        "{err}"
    );
    let unit = stdout(&out);
    assert!(
        unit.contains("[Service]") && unit.contains("gateway run"),
        "{unit}"
    );
    assert!(
        unit.contains(&format!("HERMES_HOME={}", env.home.path().display())),
        "{unit}"
    );
}

#[tokio::test]
async fn gateway_service_is_installed_controlled_and_removed_with_systemctl() {
    let env = Env::new().await;
    let log = env.cwd.path().join("systemctl.log");
    let bin = fake_systemctl(env.cwd.path(), &log);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let vars = [("PATH", path)];
    let run = |args: &'static [&'static str]| env.run_env(args, &vars);
    let out = run(&["gateway", "install"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let unit = env
        .home
        .path()
        .join(".config/systemd/user/hermes-gateway.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(
        text.contains("gateway run") && text.contains("Restart=on-failure"),
        "{text}"
    );
    for args in [
        &["gateway", "restart"][..],
        &["gateway", "stop"],
        &["gateway", "start"],
    ] {
        assert!(run(args).await.status.success());
    }
    let status = stdout(&run(&["gateway", "status"]).await);
    assert!(
        status.contains("service: hermes-gateway active"),
        "{status}"
    );
    assert!(run(&["gateway", "uninstall"]).await.status.success());
    assert!(!unit.exists());
    let calls = std::fs::read_to_string(&log).unwrap();
    for call in [
        "--user daemon-reload",
        "--user enable --now hermes-gateway",
        "--user restart hermes-gateway",
        "--user stop hermes-gateway",
        "--user start hermes-gateway",
        "--user disable --now hermes-gateway",
    ] {
        assert!(calls.contains(call), "{call} missing from:\n{calls}");
    }
}

#[tokio::test]
async fn status_shows_every_component_on_a_fresh_and_a_python_made_home() {
    let env = Env::new().await;
    let out = env.run_ok(&["status"]).await;
    let text = stdout(&out);
    for part in [
        "HERMES_HOME",
        "mock-model",
        "custom",
        "state.db",
        "toolsets",
        "Gateway",
        "Cron",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let (home, cwd) = python_state_home();
    std::fs::write(home.home().config_file(), python_config()).unwrap();
    let out = hermes(home.path(), cwd.path(), &["status"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("3 ("), "{}", stdout(&out));
}

#[tokio::test]
async fn insights_and_sessions_commands_on_a_python_made_state_db() {
    let (home, cwd) = python_state_home();
    let run = |args: &'static [&'static str]| hermes(home.path(), cwd.path(), args);
    let out = run(&["insights", "--days", "100000"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Sessions        3"), "{text}");
    assert!(text.contains("Tool calls      1"), "{text}");
    assert!(text.contains("Input tokens    1,200"), "{text}");
    assert!(text.contains("anthropic/claude-sonnet-4"), "{text}");
    assert!(text.contains("telegram"), "{text}");
    let only = stdout(&run(&["insights", "--days", "100000", "--source", "telegram"]).await);
    assert!(only.contains("Sessions        1"), "{only}");

    let list = stdout(&run(&["sessions", "list"]).await);
    assert_eq!(list.lines().count(), 4, "{list}");
    assert!(
        list.contains("Quarterly report hunt") && list.contains("telegram"),
        "{list}"
    );
    let out = run(&["sessions", "rename", "20260521", "Laptop", "whereabouts"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&run(&["sessions", "list"]).await).contains("Laptop whereabouts"));
    let out = run(&["sessions", "rename", "20260520", "Laptop whereabouts"]).await;
    assert_eq!(out.status.code(), Some(1), "a title is unique");
}

#[tokio::test]
async fn sessions_delete_and_prune_ask_first_and_filter_by_source() {
    let env = Env::new().await;
    for answer in ["one", "two", "three"] {
        env.mock.push(MockResponse::text(answer));
    }
    env.run_ok(&["chat", "-q", "first question"]).await;
    env.run_ok(&["chat", "-q", "second question"]).await;
    env.run_ok(&["chat", "-q", "third question"]).await;
    async fn rows(env: &Env) -> usize {
        stdout(&env.run_ok(&["sessions", "list"]).await)
            .lines()
            .count()
            - 1
    }
    assert_eq!(rows(&env).await, 3);
    let out = env
        .run(&["sessions", "prune", "--older-than", "0", "--dry-run"])
        .await;
    assert!(stdout(&out).contains("dry run"), "{}", stdout(&out));
    assert_eq!(rows(&env).await, 3);
    // Without a terminal and without --yes nothing is deleted.
    let out = env.run(&["sessions", "delete", "first question"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert_eq!(rows(&env).await, 3);
    let out = env
        .run(&["sessions", "delete", "first question", "--yes"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(rows(&env).await, 2);
    // Another source is left alone; an age is days, or 12h, 2d, 1w.
    let out = env
        .run(&[
            "sessions",
            "prune",
            "--older-than",
            "0",
            "--source",
            "telegram",
            "--yes",
        ])
        .await;
    assert!(
        stdout(&out).contains("no sessions to prune"),
        "{}",
        stdout(&out)
    );
    let out = env
        .run(&["sessions", "prune", "--older-than", "1w", "--yes"])
        .await;
    assert!(
        stdout(&out).contains("no sessions to prune"),
        "{}",
        stdout(&out)
    );
    let out = env
        .run(&[
            "sessions",
            "prune",
            "--older-than",
            "0",
            "--source",
            "cli",
            "--yes",
        ])
        .await;
    assert!(
        stdout(&out).contains("pruned 2 session"),
        "{}",
        stdout(&out)
    );
    assert_eq!(rows(&env).await, 0);
    let out = env
        .run(&["sessions", "prune", "--older-than", "soon"])
        .await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is not an age"), "{}", stderr(&out));
}

#[tokio::test]
async fn backup_leaves_secrets_out_unless_asked_and_import_restores_it() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("Backed up answer."));
    env.run_ok(&["chat", "-q", "remember the backup test"])
        .await;
    std::fs::write(
        env.home.home().env_file(),
        "OPENROUTER_API_KEY=sk-or-secret-123\n",
    )
    .unwrap();
    let skill = env.home.home().skills_dir().join("notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: n\n---\nB\n",
    )
    .unwrap();
    let out_dir = tempfile::tempdir().unwrap();

    let out = env
        .run(&["backup", "-o", out_dir.path().to_str().unwrap()])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("secrets left out"),
        "{}",
        stderr(&out)
    );
    let plain = PathBuf::from(stdout(&out).trim());
    let names = entries(&plain);
    assert!(names.contains(&"state.db".to_string()), "{names:?}");
    assert!(
        names.contains(&"skills/notes/SKILL.md".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.ends_with(".env")), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with("-wal")), "{names:?}");
    let out = env
        .run(&[
            "backup",
            "--include-secrets",
            "-o",
            out_dir.path().join("full.zip").to_str().unwrap(),
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let full = out_dir.path().join("full.zip");
    assert!(entries(&full).contains(&".env".to_string()));

    // Into a new home: the session and the key come back, the key owner-only.
    let target = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(
        target.path(),
        cwd.path(),
        &["import", full.to_str().unwrap()],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let list = stdout(&hermes(target.path(), cwd.path(), &["sessions", "list"]).await);
    assert!(list.contains("remember the backup test"), "{list}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(target.home().env_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // A second import over an existing setup needs --force without a terminal.
    let out = hermes(
        target.path(),
        cwd.path(),
        &["import", plain.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));

    // Entries that would land outside the home are refused.
    let evil = out_dir.path().join("evil.zip");
    {
        use std::io::Write;
        let mut z = zip::ZipWriter::new(std::fs::File::create(&evil).unwrap());
        let o = zip::write::SimpleFileOptions::default();
        z.start_file("config.yaml", o).unwrap();
        z.write_all(b"toolsets: [file]\n").unwrap();
        z.start_file("../escaped.txt", o).unwrap();
        z.write_all(b"x").unwrap();
        z.finish().unwrap();
    }
    let fresh = TempHome::new().unwrap();
    let out = hermes(
        fresh.path(),
        cwd.path(),
        &["import", evil.to_str().unwrap()],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("../escaped.txt"), "{}", stderr(&out));
    assert!(!fresh.path().parent().unwrap().join("escaped.txt").exists());
}

/// The entry names of a zip.
fn entries(zip: &Path) -> Vec<String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| archive.by_index(i).unwrap().name().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_python_hermes_backup_imports() {
    let Some(venv) = python::python_venv("a_python_hermes_backup_imports") else {
        return;
    };
    let (py_home, cwd) = python_state_home();
    std::fs::write(py_home.home().config_file(), python_config()).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let zip = out_dir.path().join("py-backup.zip");
    let py = tokio::process::Command::new(venv.join("bin/hermes"))
        .env_clear()
        .env("HERMES_HOME", py_home.path())
        .env("HOME", py_home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .args(["backup", "-o", zip.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let target = TempHome::new().unwrap();
    let out = hermes(
        target.path(),
        cwd.path(),
        &["import", zip.to_str().unwrap()],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let list = stdout(&hermes(target.path(), cwd.path(), &["sessions", "list"]).await);
    assert!(list.contains("Quarterly report hunt"), "{list}");
    let got = std::fs::read_to_string(target.home().config_file()).unwrap();
    assert_eq!(got, python_config());
}

#[tokio::test]
async fn prompt_size_measures_the_prompt_and_the_tool_schemas() {
    let env = Env::new().await;
    let text = stdout(&env.run_ok(&["prompt-size"]).await);
    for part in [
        "System prompt",
        "Identity",
        "Tool schemas",
        "read_file",
        "Everything",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&env.run_ok(&["prompt-size", "--json"]).await)).unwrap();
    let prompt = json["system_prompt"]["bytes"].as_u64().unwrap();
    let tools = json["tools"]["bytes"].as_u64().unwrap();
    assert!(prompt > 0 && tools > 0, "{json}");
    assert_eq!(json["total"]["bytes"].as_u64().unwrap(), prompt + tools);
    let sum: u64 = json["tools"]["schemas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, tools);
}

#[tokio::test]
async fn python_commands_hermes_lacks_answer_in_one_line() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    for args in [
        &["moa"][..],
        &["kanban", "list"],
        &["whatsapp"],
        &["sessions", "archive"],
        &["config", "migrate"],
        &["gateway", "setup"],
        &["mcp", "configure"],
        &["tools", "post-setup"],
    ] {
        let out = hermes_env(home.path(), cwd.path(), args, &[]).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("`hermes {}", args[0])),
            "{args:?}: {err}"
        );
        assert!(!err.to_lowercase().contains("unrecognized"), "{err}");
    }
    let out = hermes_env(home.path(), cwd.path(), &["sesions"], &[]).await;
    assert!(
        stderr(&out).contains("did you mean `hermes sessions`?"),
        "{}",
        stderr(&out)
    );
}

/// A damaged backup (an entry whose data fails its checksum) restores nothing: the files
/// read before the damaged one do not replace the home's (attack pass of stop 31, H13).
#[tokio::test]
async fn a_damaged_backup_changes_nothing() {
    use std::io::Write;
    let env = Env::new().await;
    let config = env.home.home().config_file();
    std::fs::write(&config, "model: mine/model\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let zip_path = dir.path().join("damaged.zip");
    {
        let mut w = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        w.start_file("config.yaml", stored).unwrap();
        w.write_all(b"model: from/backup\n").unwrap();
        w.start_file("memories/MEMORY.md", stored).unwrap();
        w.write_all("remembered line\n".repeat(50).as_bytes())
            .unwrap();
        w.finish().unwrap();
    }
    let mut bytes = std::fs::read(&zip_path).unwrap();
    let at = bytes
        .windows(15)
        .rposition(|w| w == b"remembered line")
        .unwrap();
    bytes[at] = b'R';
    std::fs::write(&zip_path, &bytes).unwrap();
    let out = env
        .run(&["import", zip_path.to_str().unwrap(), "--force"])
        .await;
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("nothing was restored"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "model: mine/model\n"
    );
    assert!(!env.home.home().root().join("memories/MEMORY.md").exists());
    let leftovers: Vec<_> = std::fs::read_dir(env.home.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".import-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
