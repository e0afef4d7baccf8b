//! The runner's reply path through `delivery`: tool progress lines per
//! `display.tool_progress`, `MEDIA:<path>` files, the typing indicator, streaming by edits
//! (`gateway.streaming`), and the lifecycle hooks the gateway fires.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use hermes_agent::Hooks;
use hermes_gateway::config::ToolProgress;
use hermes_testkit::MockResponse;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn tool_progress_lines_follow_display_tool_progress() {
    for (mode, expected) in [
        (
            ToolProgress::All,
            vec!["⚙ wait_gate", "⚙ wait_gate", "done"],
        ),
        (ToolProgress::New, vec!["⚙ wait_gate", "done"]),
        (ToolProgress::Off, vec!["done"]),
    ] {
        let h = Harness::new().await;
        h.gate().open();
        h.gate().open();
        h.mock
            .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
        h.mock
            .push(MockResponse::tool_calls(&[("call_2", "wait_gate", "{}")]));
        h.mock.push(MockResponse::text("done"));
        let (adapter, _inject) = FakeAdapter::new("telegram");
        let mut config = open_config("telegram");
        config.tool_progress = mode;
        let gw = h.gateway(config, adapter.clone());
        gw.handle(dm("7", "work")).await;
        idle(&gw).await;
        // Progress lines after the first one are edits of the same message.
        let mut shown = adapter.texts();
        if let Some((_, last)) = adapter.edits.lock().unwrap().last() {
            shown[0] = last.clone();
        }
        let lines: Vec<String> = shown
            .iter()
            .flat_map(|t| t.lines().map(str::to_string))
            .collect();
        assert_eq!(lines, expected, "{mode:?}");
        assert!(
            adapter.typing.load(Ordering::SeqCst) >= 1,
            "no typing indicator"
        );
    }
}

#[tokio::test]
async fn media_tags_are_sent_as_files_only_from_allowed_dirs() {
    let h = Harness::new().await;
    let inside = h.home.path().join("chart.png");
    std::fs::write(&inside, b"png").unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_dir.path().join("secret.png");
    std::fs::write(&outside, b"png").unwrap();
    h.mock.push(MockResponse::text(&format!(
        "Here is the chart.\nMEDIA:{}\nMEDIA:{}",
        inside.display(),
        outside.display()
    )));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    gw.handle(dm("7", "plot it")).await;
    idle(&gw).await;
    let files = adapter.files.lock().unwrap().clone();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        files[0].canonicalize().unwrap(),
        inside.canonicalize().unwrap()
    );
    let texts = adapter.texts().join("\n");
    assert!(texts.contains("Here is the chart."), "{texts}");
    assert!(
        !texts.contains(&format!("MEDIA:{}", inside.display())),
        "{texts}"
    );
}

#[tokio::test]
async fn streaming_sends_one_message_and_edits_it_to_the_final_answer() {
    let h = Harness::new().await;
    let answer = "Streaming works: this answer arrives in several deltas.";
    h.mock.push(MockResponse::text(answer));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let mut config = open_config("telegram");
    config.streaming = true;
    let gw = h.gateway(config, adapter.clone());
    gw.handle(dm("7", "stream please")).await;
    idle(&gw).await;
    let sent = adapter.texts();
    assert_eq!(sent.len(), 1, "one streamed message: {sent:?}");
    let edits = adapter.edits.lock().unwrap().clone();
    let shown = edits
        .last()
        .map(|(_, t)| t.clone())
        .unwrap_or(sent[0].clone());
    assert_eq!(shown, answer);
    assert!(edits.iter().all(|(id, _)| *id == "1"), "{edits:?}");

    // Without streaming the answer is sent once, never edited.
    let h = Harness::new().await;
    h.mock.push(MockResponse::text(answer));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    gw.handle(dm("7", "no stream")).await;
    idle(&gw).await;
    assert_eq!(adapter.texts(), vec![answer]);
    assert!(adapter.edits.lock().unwrap().is_empty());
}

/// A hooks dir with one hook writing each event to its own file in `log` (no interleaving
/// between concurrent runs).
fn hook_dir(log: &std::path::Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("record");
    std::fs::create_dir(&hook).unwrap();
    std::fs::write(
        hook.join("HOOK.yaml"),
        format!(
            "name: record\nevents: [\"gateway:startup\", \"session:end\", \"session:reset\", \"command:*\"]\ncommand: cat > '{}'/\"$$.json\"\n",
            log.display()
        ),
    )
    .unwrap();
    dir
}

fn logged(log: &std::path::Path) -> Vec<serde_json::Value> {
    let Ok(entries) = std::fs::read_dir(log) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        // A file still being written is skipped until it parses.
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect()
}

#[tokio::test]
async fn gateway_fires_startup_command_and_session_reset_hooks() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("hi there"));
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().to_path_buf();
    let hooks_dir = hook_dir(&log);
    let (hooks, errors) = Hooks::discover_in(hooks_dir.path());
    assert!(errors.is_empty(), "{errors:?}");
    let (adapter, inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    gw.set_hooks(hooks);
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let gw = gw.clone();
        let cancel = cancel.clone();
        async move { gw.run(cancel).await }
    });
    inject.send(dm("42", "hello")).await.unwrap();
    wait_until("the reply", || !adapter.texts().is_empty()).await;
    let first = h
        .store
        .latest_session_for_key("agent:main:telegram:dm:42")
        .unwrap()
        .unwrap()
        .id;
    inject.send(dm("42", "/new")).await.unwrap();
    wait_until("the hooks", || {
        let names: Vec<String> = logged(&log)
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect();
        [
            "gateway:startup",
            "command:new",
            "session:end",
            "session:reset",
        ]
        .iter()
        .all(|n| names.iter().any(|x| x == n))
    })
    .await;
    let events = logged(&log);
    let find = |name: &str| events.iter().find(|e| e["event"] == name).unwrap().clone();
    assert_eq!(find("gateway:startup")["data"]["platforms"][0], "telegram");
    let command = find("command:new");
    assert_eq!(command["platform"], "telegram");
    assert_eq!(command["session_id"], first.as_str());
    assert_eq!(command["data"]["session_key"], "agent:main:telegram:dm:42");
    assert_eq!(find("session:end")["session_id"], first.as_str());
    let reset = find("session:reset");
    assert_eq!(reset["data"]["previous_session_id"], first.as_str());
    assert_ne!(reset["session_id"], first.as_str());
    assert_eq!(reset["data"]["reason"], "user_reset");
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// FEATURES §12: `gateway:startup` fires also when the process serves only the API server
/// (no chat adapter); without any front end `run` refuses to start.
#[tokio::test]
async fn startup_hook_fires_with_only_the_api_server() {
    let h = Harness::new().await;
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().to_path_buf();
    let hooks_dir = hook_dir(&log);
    let (hooks, _) = Hooks::discover_in(hooks_dir.path());
    let gateway = |hooks: Hooks| {
        let gw = hermes_gateway::Gateway::new(
            open_config("telegram"),
            Vec::new(),
            h.factory.clone(),
            h.store.clone(),
            h.home.home().clone(),
        );
        gw.set_hooks(hooks);
        gw
    };
    let none = gateway(hooks.clone());
    assert!(matches!(
        none.run(CancellationToken::new()).await,
        Err(hermes_gateway::GatewayError::NoPlatforms)
    ));

    let gw = gateway(hooks);
    gw.set_front_ends(vec!["api_server".to_string()]);
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let gw = gw.clone();
        let cancel = cancel.clone();
        async move { gw.run(cancel).await }
    });
    wait_until("the startup hook", || !logged(&log).is_empty()).await;
    let events = logged(&log);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "gateway:startup");
    assert_eq!(
        events[0]["data"]["platforms"],
        serde_json::json!(["api_server"])
    );
    assert!(!runner.is_finished(), "it serves until cancelled");
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
