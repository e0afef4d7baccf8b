//! `--help` of every subcommand (issue 20 item 7): each shows only what applies to it — the
//! conversation flags (`--yolo`, `--max-turns`, `-s`, …) belong to `hermes` and `hermes chat`
//! alone; `-p/--profile` is everywhere. Every help text is snapshotted (insta).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

/// Every subcommand path hermes has, and the conversation flags that must not show there.
const PATHS: &[&[&str]] = &[
    &["sessions"],
    &["sessions", "list"],
    &["sessions", "prune"],
    &["memory"],
    &["skills"],
    &["tools"],
    &["tools", "enable"],
    &["model"],
    &["model", "set"],
    &["config"],
    &["config", "set"],
    &["mcp"],
    &["auth"],
    &["cron"],
    &["cron", "create"],
    &["gateway"],
    &["debug"],
    &["debug", "session"],
    &["debug", "prompt"],
    &["status"],
    &["insights"],
    &["logs"],
    &["pairing"],
    &["setup"],
    &["doctor"],
    &["backup"],
    &["import"],
    &["prompt-size"],
    &["completion"],
    &["sessiondb"],
    &["man"],
    &["version"],
];

const CHAT_ONLY: &[&str] = &[
    "--yolo",
    "--max-turns",
    "--prompt-profile",
    "--continue",
    "--resume",
    "--skills",
    "--json",
    "--quiet",
];

fn help(path: &[&str]) -> String {
    let out = Command::cargo_bin("hermes")
        .unwrap()
        .env_clear()
        .env("HERMES_HOME", "/nonexistent-hermes-home")
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{path:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn each_subcommand_help_shows_only_its_own_flags() {
    for path in PATHS {
        let text = help(path);
        for flag in CHAT_ONLY {
            // `prompt-size --json`, `debug … --json` and `status --json` are their own
            // output switches.
            if matches!(path, ["prompt-size"] | ["debug", _] | ["status"]) && *flag == "--json" {
                continue;
            }
            assert!(
                !text.contains(flag),
                "`hermes {} --help` shows {flag}:\n{text}",
                path.join(" ")
            );
        }
        assert!(text.contains("--profile"), "{path:?}");
        insta::assert_snapshot!(format!("help_{}", path.join("_")), text);
    }
    // The conversation flags are where they apply.
    for path in [&[][..], &["chat"]] {
        let text = help(path);
        for flag in CHAT_ONLY {
            assert!(
                text.contains(flag),
                "`hermes {} --help` lacks {flag}",
                path.join(" ")
            );
        }
    }
    insta::assert_snapshot!("help_chat", help(&["chat"]));
}
