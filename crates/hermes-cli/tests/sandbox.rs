//! The sandbox through the real binary (issue 18 item 1): `hermes` re-executes itself as the
//! launcher for the model's commands, the front end's `unsupported` default applies, and
//! `doctor` reports the mode. The full bypass corpus is `hermes-tools`' `sandbox_corpus`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

const SECRET: &str = "sk-cli-sandbox-SECRET-41";

/// The text of every tool result the model was sent.
fn tool_results(env: &Env) -> String {
    env.mock
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_models_commands_run_inside_the_sandbox() {
    let env = Env::new().await;
    let home = env.home.home().clone();
    std::fs::write(home.env_file(), format!("SANDBOX_TEST_KEY={SECRET}\n")).unwrap();
    let config_before = std::fs::read(home.config_file()).unwrap();
    let command = format!(
        "echo inside > inside.txt; echo evil >> '{cfg}'; mkdir -p '{hooks}/evil'; \
         cat '{dotenv}'; echo \"env=$SANDBOX_TEST_KEY\"; echo done",
        cfg = home.config_file().display(),
        hooks = home.root().join("hooks").display(),
        dotenv = home.env_file().display(),
    );
    let args = serde_json::json!({ "command": command }).to_string();
    env.mock
        .push(MockResponse::tool_calls(&[("call_1", "terminal", &args)]));
    env.mock.push(MockResponse::text("Done."));
    let out = env.run(&["chat", "-q", "go", "--yolo"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&env);
    assert!(results.contains("done"), "{results}");
    assert!(results.contains("env="), "{results}");
    assert!(!results.contains(SECRET), "{results}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(std::fs::read(home.config_file()).unwrap(), config_before);
    assert!(!home.root().join("hooks/evil").exists());
}

#[tokio::test]
async fn headless_runs_refuse_commands_when_the_kernel_cannot_sandbox() {
    let env = Env::new().await;
    let marker = env.cwd.path().join("ran.txt");
    let args =
        serde_json::json!({ "command": format!("touch '{}'", marker.display()) }).to_string();
    env.mock
        .push(MockResponse::tool_calls(&[("call_1", "terminal", &args)]));
    env.mock.push(MockResponse::text("Could not."));
    let out = env
        .run_env(
            &["chat", "-q", "go", "--yolo"],
            &[("HERMES_SANDBOX_TEST_UNSUPPORTED", "1".into())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sandbox unavailable"),
        "{}",
        stderr(&out)
    );
    let results = tool_results(&env);
    assert!(results.contains("Refused"), "{results}");
    assert!(!marker.exists());
}

#[tokio::test]
async fn doctor_reports_the_sandbox_and_warns_when_it_is_off() {
    let env = Env::new().await;
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert!(
        text.contains("ok    sandbox: workspace-write (Landlock ABI"),
        "{text}"
    );
    let off = Env::with_config("terminal:\n  sandbox: off\n").await;
    let out = off.run(&["doctor"]).await;
    let text = stdout(&out);
    assert!(text.contains("warn  terminal.sandbox is off"), "{text}");
    let odd = Env::with_config("terminal:\n  backend: modal\n").await;
    let text = stdout(&odd.run(&["doctor"]).await);
    assert!(text.contains("warn  terminal.backend: `modal`"), "{text}");
}

#[tokio::test]
async fn the_launcher_refuses_a_bad_policy_without_running_anything() {
    let env = Env::new().await;
    let marker = env.cwd.path().join("ran.txt");
    let out = env
        .run(&[
            "__sandbox-exec",
            "--policy",
            "{not json",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ])
        .await;
    assert_eq!(out.status.code(), Some(126));
    assert!(
        stderr(&out).contains("bad sandbox policy"),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists());
}

/// A launcher stand-in that runs the command after `--` with no sandbox.
const FAKE_LAUNCHER: &str =
    "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n";

/// hermes re-executes itself as the launcher of every command. When the binary lies in the
/// workspace (started from a build folder, or `~/.cargo/bin/hermes` with the workspace `~`)
/// the agent must not be able to replace it — the next command, and your next `hermes`,
/// would run whatever it put there, unsandboxed — and a binary replaced by someone else
/// while hermes runs must not become the launcher either (`/proc/self/exe` is used).
#[tokio::test]
async fn the_launcher_cannot_be_replaced_through_the_workspace() {
    let env = Env::new().await;
    let bin = env.cwd.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("hermes");
    let built = assert_cmd::cargo::cargo_bin("hermes");
    if std::fs::hard_link(&built, &exe).is_err() {
        std::fs::copy(&built, &exe).unwrap();
    }
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("canary.txt");
    std::fs::write(&canary, "canary\n").unwrap();
    let swap = serde_json::json!({ "command": format!(
        "mv bin/hermes bin/hermes.orig; printf '{}' > bin/hermes; chmod +x bin/hermes; echo tried",
        FAKE_LAUNCHER.replace('\n', "\\n")
    )})
    .to_string();
    let write = serde_json::json!({ "command": format!("echo pwned >> '{}'", canary.display()) })
        .to_string();
    env.mock
        .push(MockResponse::tool_calls(&[("call_1", "terminal", &swap)]));
    // Before the second command, replace the binary from outside the sandbox (as a
    // reinstall would): the launcher must still be the running executable.
    let (exe_out, orig) = (exe.clone(), bin.join("hermes.outside"));
    let swapped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = swapped.clone();
    env.mock.set_responder(move |body| {
        let calls = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        if calls == 1 && !flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::fs::rename(&exe_out, &orig).unwrap();
            std::fs::write(&exe_out, FAKE_LAUNCHER).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&exe_out, std::fs::Permissions::from_mode(0o755)).unwrap();
            return Some(MockResponse::tool_calls(&[("call_2", "terminal", &write)]));
        }
        None
    });
    env.mock.push(MockResponse::text("Done."));
    let out = tokio::task::spawn_blocking({
        let (exe, home, cwd) = (
            exe.clone(),
            env.home.path().to_path_buf(),
            env.cwd.path().to_path_buf(),
        );
        move || {
            std::process::Command::new(&exe)
                .env_clear()
                .env("HERMES_HOME", &home)
                .env("HOME", &home)
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("NO_COLOR", "1")
                // Only this folder is the writable temp dir: the canary's is not.
                .env("TMPDIR", cwd.join("bin"))
                .current_dir(&cwd)
                .args(["chat", "-q", "go", "--yolo"])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&env);
    assert!(results.contains("Permission denied"), "{results}");
    assert!(
        !bin.join("hermes.orig").exists(),
        "the agent moved the hermes binary away: {results}"
    );
    assert!(swapped.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(
        std::fs::read_to_string(&canary).unwrap(),
        "canary\n",
        "{results}"
    );
}

/// A workspace that is your home folder (the gateway under systemd starts there) leaves
/// everything in it but the protected files writable: `doctor` and the start say so.
#[tokio::test]
async fn a_workspace_holding_the_home_folder_is_warned_about() {
    let env = Env::new().await;
    let text = stdout(&env.run(&["doctor"]).await);
    assert!(!text.contains("holds your home folder"), "{text}");
    let out = common::hermes(env.home.path(), env.home.path(), &["doctor"]).await;
    let text = stdout(&out);
    assert!(text.contains("warn  the workspace"), "{text}");
    assert!(text.contains("holds your home folder"), "{text}");
    env.mock.push(MockResponse::text("Hi."));
    let out = common::hermes(env.home.path(), env.home.path(), &["chat", "-q", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("holds your home folder"),
        "{}",
        stderr(&out)
    );
    // A session with no tool that writes (here only `memory`) has nothing to be warned of.
    env.mock.push(MockResponse::text("Hi."));
    let out = common::hermes(
        env.home.path(),
        env.home.path(),
        &["chat", "-q", "hi", "-t", "memory"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("holds your home folder"),
        "{}",
        stderr(&out)
    );
}
