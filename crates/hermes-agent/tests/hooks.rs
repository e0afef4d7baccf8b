//! Lifecycle hooks (FEATURES §12): discovery, filtering, stdin payload, timeouts, and the
//! events the agent fires itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Harness;
use hermes_agent::{HookEvent, HookOutcome, Hooks};
use hermes_protocol::TurnOutcome;
use hermes_testkit::MockResponse;
use serde_json::{Value, json};

fn write_hook(hooks_dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let dir = hooks_dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("HOOK.yaml"), yaml).unwrap();
    dir
}

/// Reads the JSON lines a recording hook appended.
fn recorded(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn discovery_loads_good_hooks_and_reports_bad_files() {
    let tmp = tempfile::tempdir().unwrap();
    let hooks = tmp.path().join("hooks");
    write_hook(
        &hooks,
        "a-good",
        "name: logger\ndescription: logs\nevents: [agent:end, \"command:*\"]\ncommand: cat > out.json\ntimeout: 2.5\n",
    );
    write_hook(&hooks, "b-broken", "events: [agent:end\ncommand: x\n");
    write_hook(
        &hooks,
        "c-unknown",
        "events: [agent:finish]\ncommand: true\n",
    );
    write_hook(&hooks, "d-nocommand", "events: [agent:end]\n");
    write_hook(
        &hooks,
        "e-unnamed",
        "events: [session:start]\ncommand: \"true\"\n",
    );
    std::fs::create_dir_all(hooks.join("f-empty-dir")).unwrap();

    let (loaded, errors) = Hooks::discover_in(&hooks);
    let names: Vec<&str> = loaded.specs().iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, vec!["logger", "e-unnamed"]);
    let logger = &loaded.specs()[0];
    assert_eq!(logger.timeout, Duration::from_millis(2500));
    assert!(logger.wants("command:new") && logger.wants("agent:end"));
    assert!(!logger.wants("agent:start"));
    assert_eq!(loaded.specs()[1].timeout, Duration::from_secs(10));

    assert_eq!(errors.len(), 3, "{errors:?}");
    let by_dir = |d: &str| {
        errors
            .iter()
            .find(|e| e.path.parent().unwrap().ends_with(d))
            .unwrap_or_else(|| panic!("no error for {d}: {errors:?}"))
    };
    assert!(by_dir("b-broken").reason.contains("invalid YAML"));
    assert!(
        by_dir("c-unknown")
            .reason
            .contains("unknown event `agent:finish`")
    );
    assert!(by_dir("d-nocommand").reason.contains("`command`"));
    assert!(by_dir("b-broken").to_string().contains("HOOK.yaml"));

    // No hooks directory: no hooks, no errors.
    let (none, errors) = Hooks::discover_in(&tmp.path().join("missing"));
    assert!(none.is_empty() && errors.is_empty());
}

#[tokio::test]
async fn hook_gets_the_event_as_json_on_stdin_and_only_its_events() {
    let tmp = tempfile::tempdir().unwrap();
    let hooks = tmp.path().join("hooks");
    let dir = write_hook(
        &hooks,
        "rec",
        "events: [\"command:*\"]\ncommand: 'cat >> seen.jsonl; echo >> seen.jsonl'\n",
    );
    let (loaded, errors) = Hooks::discover_in(&hooks);
    assert!(errors.is_empty());

    let unrelated = loaded.fire(&HookEvent::new("agent:end"));
    assert!(unrelated.is_empty());

    let event = HookEvent {
        event: "command:new".into(),
        session_id: Some("20250101_000000_abcdef".into()),
        platform: Some("telegram".into()),
        data: json!({"args": ""}),
    };
    let fired = loaded.fire(&event);
    assert_eq!(fired.len(), 1);
    let outcomes = fired.wait().await;
    assert_eq!(outcomes, vec![("rec".to_string(), HookOutcome::Succeeded)]);
    let seen = recorded(&dir.join("seen.jsonl"));
    assert_eq!(
        seen,
        vec![json!({
            "event": "command:new",
            "session_id": "20250101_000000_abcdef",
            "platform": "telegram",
            "data": {"args": ""}
        })]
    );
}

#[tokio::test]
async fn failing_hook_is_reported_not_raised() {
    let tmp = tempfile::tempdir().unwrap();
    let hooks = tmp.path().join("hooks");
    write_hook(
        &hooks,
        "bad",
        "events: [agent:end]\ncommand: 'echo broken >&2; exit 3'\n",
    );
    let (loaded, _) = Hooks::discover_in(&hooks);
    let outcomes = loaded.fire(&HookEvent::new("agent:end")).wait().await;
    assert_eq!(
        outcomes[0].1,
        HookOutcome::Failed {
            code: 3,
            stderr: "broken\n".into()
        }
    );
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A zombie (state Z) is dead for our purpose.
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn timeout_kills_the_hook_process_group_without_delaying_the_caller() {
    let tmp = tempfile::tempdir().unwrap();
    let hooks = tmp.path().join("hooks");
    let dir = write_hook(
        &hooks,
        "sleepy",
        "events: [agent:start]\ncommand: 'sleep 300 & echo $! > child.pid; wait'\ntimeout: 0.5\n",
    );
    let (loaded, _) = Hooks::discover_in(&hooks);
    let started = Instant::now();
    let fired = loaded.fire(&HookEvent::new("agent:start"));
    // Firing only spawns: a generous bound that detects a caller waiting on the hook.
    assert!(started.elapsed() < Duration::from_secs(5));
    let outcomes = tokio::time::timeout(Duration::from_secs(60), fired.wait())
        .await
        .expect("hook run hung past its timeout");
    assert_eq!(outcomes[0].1, HookOutcome::TimedOut);
    let pid: u32 = std::fs::read_to_string(dir.join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(pid), "the hook's background child {pid} survived");
}

#[tokio::test]
async fn the_agent_fires_session_and_turn_events() {
    let mut h = Harness::new().await;
    let hooks_dir = h.home.home().root().join("hooks");
    let dir = write_hook(
        &hooks_dir,
        "rec",
        "events: [session:start, agent:start, agent:step, agent:end]\ncommand: 'cat > \"$(mktemp -p . ev.XXXXXX)\"'\n",
    );
    let (hooks, errors) = Hooks::discover(h.home.home());
    assert!(errors.is_empty());
    h.opts.hooks = hooks;
    h.opts.source = "telegram".into();
    std::fs::write(h.path("notes.txt"), "milk\n").unwrap();
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "read_file",
        r#"{"path":"notes.txt"}"#,
    )]));
    h.mock.push(MockResponse::text("It says milk."));
    let mut agent = h.agent().await;
    let (outcome, _) = h.turn(&mut agent, "read notes.txt").await;
    assert_eq!(outcome, TurnOutcome::Completed);

    // Hooks run in the background; wait (bounded) for the four events to land.
    let events = || -> Vec<Value> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("ev.")
                && let Ok(v) = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            {
                out.push(v);
            }
        }
        out
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while events().len() < 4 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut seen = events();
    // Background runs may finish out of order; compare by event name.
    seen.sort_by_key(|v| v["event"].as_str().unwrap_or("").to_string());
    let names: Vec<&str> = seen.iter().map(|v| v["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec!["agent:end", "agent:start", "agent:step", "session:start"]
    );
    for v in &seen {
        assert_eq!(v["session_id"], agent.session_id());
        assert_eq!(v["platform"], "telegram");
    }
    assert_eq!(seen[0]["data"]["outcome"], "completed");
    assert_eq!(seen[0]["data"]["final_text"], "It says milk.");
    assert_eq!(seen[1]["data"]["message"], "read notes.txt");
    assert_eq!(
        seen[2]["data"],
        json!({"iteration": 1, "tool_calls": ["read_file"]})
    );
}
