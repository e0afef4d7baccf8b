//! Cases C25 and C28 of cases/cases.json.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use hermes_tools::{Approval, Registry};
use serde_json::{Value, json};

fn case(id: &str) -> Value {
    let all = common::load_json("cases/cases.json");
    let list = all
        .as_array()
        .cloned()
        .or_else(|| all["cases"].as_array().cloned())
        .unwrap();
    list.into_iter().find(|c| c["id"] == id).unwrap()
}

#[tokio::test]
async fn case_c25_fuzzy_patch_on_crlf_file_keeps_indentation_and_crlf() {
    let expected = case("C25")["expected"]["file_after"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.py");
    std::fs::write(
        &file,
        "def run():\r\n    n = 0\r\n    while n:\r\n        n -= 1\r\n        log(n)\r\n    return n\r\n",
    )
    .unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let patch = Registry::builtin().get("patch").unwrap();
    let out = patch
        .call(
            json!({
                "path": "run.py",
                "old_string": "while n:\n        n -= 1\n        log(n)",
                "new_string": "while n:\n        n -= 2\n        log(n, 'x')"
            }),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
}

#[test]
fn case_c25_whitespace_tolerant_path_produces_the_expected_file() {
    // Same file, but the exact text cannot match (a trailing space in the file), so the
    // indentation-tolerant strategy must do the C25 re-indent itself.
    let expected = case("C25")["expected"]["file_after"]
        .as_str()
        .unwrap()
        .to_string();
    let file = "def run():\r\n    n = 0\r\n    while n:\r\n        n -= 1 \r\n        log(n)\r\n    return n\r\n";
    let out = hermes_tools::file::apply_patch(
        file,
        "while n:\n        n -= 1\n        log(n)",
        "while n:\n        n -= 2\n        log(n, 'x')",
        false,
    )
    .unwrap();
    assert_eq!(out.strategy, "indentation");
    assert_eq!(out.content, expected);
}

/// Runs `command` through the terminal tool; returns (result text, is_error).
async fn run_terminal(command: &str) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let terminal = Registry::builtin().get("terminal").unwrap();
    // A generous bound that detects the hang (the tool's own timeout is 180 s).
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        terminal.call(json!({"command": command}), &ctx),
    )
    .await
    .expect("terminal call hung on a backgrounded process");
    (out.content, out.is_error)
}

fn pid_in(text: &str) -> u32 {
    text.lines()
        .find_map(|l| l.trim().parse::<u32>().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

#[tokio::test]
async fn case_c28_backgrounded_process_returns_promptly_and_stays_alive() {
    let expected = &case("C28")["expected"];
    assert_eq!(expected["exit_code"], 0);
    // The case's `python3 -m http.server 8765 >/dev/null 2>&1 &`, with sleep instead.
    let (text, is_error) = run_terminal("sleep 600 >/dev/null 2>&1 &\necho $!").await;
    let pid = pid_in(&text);
    assert!(!is_error, "{text}");
    assert!(text.contains("[exit code: 0]"), "{text}");
    assert!(common::alive(pid), "background process died with the shell");
    common::kill(pid);
}

#[tokio::test]
async fn case_c28_detached_grandchild_holding_the_pipe_does_not_hang() {
    // Variant #50806 as given, plus one where the grandchild keeps stdout open.
    let (text, is_error) =
        run_terminal("setsid sleep 600 >/dev/null 2>&1 < /dev/null & disown\necho $!").await;
    let pid = pid_in(&text);
    assert!(!is_error && text.contains("[exit code: 0]"), "{text}");
    assert!(common::alive(pid));
    common::kill(pid);

    let (text, is_error) = run_terminal("sleep 600 & disown; echo $!; echo done").await;
    let pid = pid_in(&text);
    assert!(
        !is_error && text.contains("done") && text.contains("[exit code: 0]"),
        "{text}"
    );
    assert!(
        common::alive(pid),
        "the grandchild holding the pipe must keep running"
    );
    common::kill(pid);
}
