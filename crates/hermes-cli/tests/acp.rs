//! `hermes acp` (issue 25 item 1) against the official ACP TypeScript SDK's client side
//! (`@agentclientprotocol/sdk` 2.4.0 from npm, installed by `scripts/mcp-peers.sh`; driven by
//! `tests/acp/driver.mjs`): a session that reads a file from an unsaved editor buffer, edits
//! another after a permission question, shows the `todo` plan, switches mode and model,
//! is cancelled in a long command, and is loaded again by a second process; bad input
//! answered with the protocol's errors. Skipped, saying so, without the SDK.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Env;
use hermes_store::SessionStore;
use hermes_testkit::MockResponse;
use serde_json::{Value, json};

fn sdk() -> Option<PathBuf> {
    let peers = PathBuf::from(std::env::var("HERMES_MCP_PEERS").ok()?);
    let dir = peers.join("acp/node_modules");
    dir.join("@agentclientprotocol/sdk/package.json")
        .exists()
        .then_some(dir)
}

/// Runs the driver on `steps` against `hermes acp` in `env`; its output object.
fn drive(env: &Env, sdk: &Path, extra: Value, steps: Value) -> Value {
    let scenario = env.home.path().join("acp-scenario.json");
    let mut s = json!({
        "agent": [assert_cmd::cargo::cargo_bin("hermes"), "acp"],
        "env": {
            "HERMES_HOME": env.home.path(),
            "HOME": env.home.path(),
            "NO_COLOR": "1",
        },
        "cwd": env.cwd.path(),
        "stderr": env.home.path().join("acp-stderr.txt"),
        "timeout_ms": 60000,
        "steps": steps,
    });
    if let (Some(s), Some(extra)) = (s.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    std::fs::write(&scenario, serde_json::to_vec(&s).unwrap()).unwrap();
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/driver.mjs");
    let out = Command::new("node")
        .arg(&driver)
        .arg(&scenario)
        .env("ACP_SDK", sdk)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr =
        std::fs::read_to_string(env.home.path().join("acp-stderr.txt")).unwrap_or_default();
    assert!(
        out.status.success(),
        "driver failed: {stdout}\n{}\nagent stderr: {stderr}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert!(
        v["client_errors"].as_array().is_none_or(|e| e.is_empty()),
        "the SDK refused something hermes sent: {}",
        v["client_errors"]
    );
    v
}

fn result<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {out}"))
}

fn updates<'a>(out: &'a Value, kind: &str) -> Vec<&'a Value> {
    out["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn text_of(out: &Value, kind: &str) -> String {
    updates(out, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_session_reads_edits_plans_cancels_and_loads_again() {
    let Some(sdk) = sdk() else {
        eprintln!(
            "skipped: no ACP TypeScript SDK (scripts/mcp-peers.sh installs it; HERMES_MCP_PEERS)"
        );
        return;
    };
    let env = Env::new().await;
    let work = env.cwd.path().canonicalize().unwrap();
    std::fs::write(work.join("a.txt"), "saved text of a\n").unwrap();
    std::fs::write(work.join("b.txt"), "hello world\n").unwrap();
    let mock = &env.mock;
    // Prompt 1: read a.txt (the editor has unsaved changes), patch b.txt (asked), answer.
    mock.push(MockResponse::tool_calls(&[(
        "call_read",
        "read_file",
        r#"{"path":"a.txt"}"#,
    )]));
    mock.push(MockResponse::tool_calls(&[(
        "call_patch",
        "patch",
        r#"{"path":"b.txt","old_string":"world","new_string":"there"}"#,
    )]));
    mock.push(MockResponse::text("Read a.txt and edited b.txt."));
    // Prompt 2 (mode dont_ask, another model): a plan, a new file without a question.
    mock.push(MockResponse::tool_calls(&[(
        "call_todo",
        "todo",
        r#"{"todos":[{"id":"1","content":"write c.txt","status":"in_progress"}]}"#,
    )]));
    mock.push(MockResponse::tool_calls(&[(
        "call_write",
        "write_file",
        r#"{"path":"c.txt","content":"new file\n"}"#,
    )]));
    mock.push(MockResponse::tool_calls(&[(
        "call_echo",
        "terminal",
        r#"{"command":"cat c.txt; echo shown-in-the-editor"}"#,
    )]));
    mock.push(MockResponse::text("Wrote c.txt."));
    // Prompt 3: a long command, cancelled by the editor.
    mock.push(MockResponse::tool_calls(&[(
        "call_sleep",
        "terminal",
        r#"{"command":"sleep 30"}"#,
    )]));
    let a = work.join("a.txt").display().to_string();
    let out = drive(
        &env,
        &sdk,
        json!({"buffers": {a.clone(): "UNSAVED edit of a\n"}, "permission": "allow_once"}),
        json!([
            {"op": "initialize", "name": "init"},
            {"op": "new_session", "name": "new"},
            {"op": "prompt", "name": "p1", "text": "read a.txt, then fix b.txt"},
            {"op": "set_mode", "name": "mode", "modeId": "dont_ask"},
            {"op": "set_config_option", "name": "model", "configId": "model", "value": "other-model"},
            {"op": "prompt", "name": "p2", "text": "write c.txt"},
            {"op": "prompt", "name": "p3", "text": "now wait a long time",
             "cancel_on": {"sessionUpdate": "tool_call", "title_contains": "sleep"}},
            {"op": "close", "name": "close"},
        ]),
    );
    assert_eq!(out["protocol_version"], 1);
    assert_eq!(
        result(&out, "init")["response"]["agentCapabilities"]["loadSession"],
        true
    );
    let session_id = out["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        result(&out, "p1")["response"]["stopReason"],
        "end_turn",
        "{out}"
    );
    assert_eq!(
        result(&out, "p2")["response"]["stopReason"],
        "end_turn",
        "{out}"
    );
    assert_eq!(
        result(&out, "p3")["response"]["stopReason"],
        "cancelled",
        "{out}"
    );
    assert_eq!(result(&out, "close")["response"]["exit_code"], 0);

    // The read went through the client and the model saw the unsaved buffer.
    assert!(
        out["fs_reads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == a.as_str())
    );
    let second = &mock.requests()[1];
    assert!(second.to_string().contains("UNSAVED edit of a"), "{second}");
    // The patch was asked about (default mode), then written through the client.
    let asked = out["permission_requests"].as_array().unwrap();
    assert_eq!(
        asked.len(),
        1,
        "only the edit in default mode is asked: {asked:?}"
    );
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_patch");
    assert_eq!(asked[0]["toolCall"]["content"][0]["type"], "diff");
    let writes = out["fs_writes"].as_array().unwrap();
    assert!(
        writes
            .iter()
            .any(|w| w["path"] == work.join("b.txt").display().to_string()
                && w["content"] == "hello there\n")
    );
    assert_eq!(
        std::fs::read_to_string(work.join("b.txt")).unwrap(),
        "hello there\n"
    );
    // dont_ask: c.txt was written without a question.
    assert_eq!(
        std::fs::read_to_string(work.join("c.txt")).unwrap(),
        "new file\n"
    );
    // The updates: kinds, locations, the diff, results, the plan, the answers.
    let calls = updates(&out, "tool_call");
    let kind = |id: &str| {
        calls
            .iter()
            .find(|c| c["toolCallId"] == id)
            .map(|c| c["kind"].clone())
    };
    assert_eq!(kind("call_read"), Some(json!("read")));
    assert_eq!(kind("call_patch"), Some(json!("edit")));
    assert_eq!(kind("call_sleep"), Some(json!("execute")));
    let read = calls
        .iter()
        .find(|c| c["toolCallId"] == "call_read")
        .unwrap();
    assert_eq!(read["locations"][0]["path"], a.as_str());
    let finished = updates(&out, "tool_call_update");
    assert!(
        finished
            .iter()
            .any(|u| u["toolCallId"] == "call_patch" && u["status"] == "completed")
    );
    let plan = updates(&out, "plan");
    assert_eq!(plan.len(), 1, "{out}");
    assert_eq!(plan[0]["entries"][0]["content"], "write c.txt");
    assert_eq!(plan[0]["entries"][0]["status"], "in_progress");
    let answer = text_of(&out, "agent_message_chunk");
    assert!(
        answer.contains("Read a.txt and edited b.txt.") && answer.contains("Wrote c.txt."),
        "{answer}"
    );
    // Commands ran in the client's terminals, sandboxed as in the CLI; the cancelled one was
    // killed and released.
    let terminal: Vec<(&str, &Value)> = out["terminal_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["method"].as_str().unwrap(), &c["params"]))
        .collect();
    let created: Vec<&Value> = terminal
        .iter()
        .filter(|(m, _)| *m == "terminal/create")
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(created.len(), 2, "{terminal:?}");
    let line = created[0].to_string();
    assert!(
        line.contains("shown-in-the-editor") && line.contains("bash"),
        "{line}"
    );
    // The editor runs hermes' own launcher (by its path: `/proc/self/exe` would be the
    // editor), which enters the sandbox before bash starts.
    let hermes = assert_cmd::cargo::cargo_bin("hermes")
        .canonicalize()
        .unwrap();
    assert_eq!(created[0]["command"], hermes.display().to_string());
    assert_eq!(created[0]["args"][0], "__sandbox-exec", "{line}");
    assert!(
        terminal.iter().any(|(m, _)| *m == "terminal/kill"),
        "{terminal:?}"
    );
    assert_eq!(
        terminal
            .iter()
            .filter(|(m, _)| *m == "terminal/release")
            .count(),
        2,
        "{terminal:?}"
    );
    let echoed = mock.requests()[6].to_string();
    assert!(
        echoed.contains("new file") && echoed.contains("shown-in-the-editor"),
        "{echoed}"
    );
    assert!(calls.iter().any(|c| c["toolCallId"] == "call_echo"));
    assert!(
        finished
            .iter()
            .any(|u| u["toolCallId"] == "call_echo" && u["content"][0]["type"] == "terminal")
    );
    // The model option: the second prompt's model calls used the chosen model.
    assert_eq!(
        result(&out, "model")["response"]["configOptions"][0]["currentValue"],
        "custom:other-model"
    );
    assert_eq!(mock.requests()[3]["model"], "other-model");
    assert_eq!(mock.requests()[0]["model"], "mock-model");

    // The store: source acp, the cancelled command has a result, nothing dangling.
    let store = SessionStore::open(env.home.home().state_db()).unwrap();
    let session = store.get_session(&session_id).unwrap().expect("stored");
    assert_eq!(session.source, "acp");
    let messages = store.load_messages(&session_id).unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m.message.tool_call_id.as_deref() == Some("call_sleep")),
        "the interrupted call has a result"
    );

    // A new process loads the session and replays its history.
    let out = drive(
        &env,
        &sdk,
        json!({}),
        json!([
            {"op": "initialize"},
            {"op": "load_session", "name": "load", "sessionId": session_id},
            {"op": "close"},
        ]),
    );
    assert!(result(&out, "load")["ok"].as_bool().unwrap(), "{out}");
    let user = text_of(&out, "user_message_chunk");
    assert!(
        user.contains("read a.txt, then fix b.txt") && user.contains("write c.txt"),
        "{user}"
    );
    assert!(text_of(&out, "agent_message_chunk").contains("Read a.txt and edited b.txt."));
    let replayed = updates(&out, "tool_call");
    assert!(
        replayed
            .iter()
            .any(|c| c["toolCallId"] == "call_patch" && c["kind"] == "edit")
    );
    assert!(
        !updates(&out, "plan").is_empty(),
        "the plan is replayed too"
    );
}

/// The Rust SDK's own client side (`Client.v1()`) over the child's pipes: initialize, a
/// session, a streamed answer, the not-found error of an unknown session.
#[tokio::test(flavor = "multi_thread")]
async fn the_rust_sdks_client_side_gets_a_streamed_answer() {
    use agent_client_protocol::schema::ProtocolVersion;
    use agent_client_protocol::v1::schema::{
        ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionId,
        SessionNotification, SessionUpdate, StopReason, TextContent,
    };
    use agent_client_protocol::{ByteStreams, Client};
    use std::sync::{Arc, Mutex};
    use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

    let env = Env::new().await;
    env.mock.push(MockResponse::text("hello from hermes"));
    let mut child = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hermes"))
        .arg("acp")
        .env_clear()
        .env("HERMES_HOME", env.home.path())
        .env("HOME", env.home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(env.cwd.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let seen: Arc<Mutex<Vec<SessionNotification>>> = Arc::default();
    let sink = seen.clone();
    let cwd = env.cwd.path().to_path_buf();
    let (stop, missing) = Client
        .v1()
        .name("rust-sdk-test")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                sink.lock().unwrap().push(n);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V1);
            assert!(init.agent_capabilities.load_session);
            let session = cx
                .send_request(NewSessionRequest::new(cwd.clone()))
                .block_task()
                .await?;
            let hi = vec![ContentBlock::Text(TextContent::new("hi"))];
            let answer = cx
                .send_request(PromptRequest::new(session.session_id.clone(), hi.clone()))
                .block_task()
                .await?;
            let missing = cx
                .send_request(PromptRequest::new(
                    SessionId::new("20200101_000000_000000"),
                    hi,
                ))
                .block_task()
                .await
                .unwrap_err();
            Ok((answer.stop_reason, missing))
        })
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(i32::from(missing.code), -32002);
    let text: String = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(text, "hello from hermes");
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .expect("hermes acp exits when its stdin closes")
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_the_protocols_errors_and_the_agent_stays_up() {
    let Some(sdk) = sdk() else {
        eprintln!(
            "skipped: no ACP TypeScript SDK (scripts/mcp-peers.sh installs it; HERMES_MCP_PEERS)"
        );
        return;
    };
    let env = Env::new().await;
    env.mock.push(MockResponse::text("still here"));
    let big = "x".repeat(2 * 1024 * 1024);
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"raw-big\",\"method\":\"session/prompt\",\"params\":{{\"pad\":\"{}\"}}}}",
        "y".repeat(17 * 1024 * 1024)
    );
    let out = drive(
        &env,
        &sdk,
        json!({"permission": "reject_once"}),
        json!([
            {"op": "initialize"},
            {"op": "raw", "name": "not-json", "line": "this is not json"},
            {"op": "raw", "name": "unknown", "line": "{\"jsonrpc\":\"2.0\",\"id\":\"raw-1\",\"method\":\"session/fly\",\"params\":{}}"},
            {"op": "raw", "name": "huge", "line": huge, "wait_ms": 3000},
            {"op": "prompt_session", "name": "ghost", "sessionId": "20200101_000000_abcdef", "text": "hello?"},
            {"op": "new_session", "name": "relative", "cwd": "relative/dir"},
            {"op": "new_session", "name": "new"},
            {"op": "prompt", "name": "image", "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
            {"op": "prompt", "name": "big", "text": "look", "resources": [
                {"type": "resource", "resource": {"uri": "file:///w/big.txt", "text": big}}]},
            {"op": "set_mode", "name": "bad-mode", "modeId": "chaos"},
            {"op": "load_session", "name": "load-ghost", "sessionId": "20200101_000000_abcdef"},
            {"op": "prompt", "name": "ok", "text": "are you still there?"},
            {"op": "close"},
        ]),
    );
    let raw = |name: &str| -> Value {
        let lines = result(&out, name)["response"]["stdout"]
            .as_array()
            .unwrap()
            .clone();
        serde_json::from_str(lines[0].as_str().unwrap()).unwrap()
    };
    assert_eq!(raw("not-json")["error"]["code"], -32700);
    assert_eq!(raw("unknown")["error"]["code"], -32601);
    assert_eq!(raw("unknown")["id"], "raw-1");
    assert_eq!(raw("huge")["error"]["code"], -32600);
    assert_eq!(raw("huge")["id"], "raw-big");
    let code = |name: &str| result(&out, name)["error"]["code"].clone();
    assert_eq!(code("ghost"), -32002);
    assert_eq!(code("relative"), -32602);
    assert_eq!(code("image"), -32602);
    assert_eq!(code("big"), -32602);
    assert!(
        result(&out, "big")["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    assert_eq!(code("bad-mode"), -32602);
    assert_eq!(code("load-ghost"), -32002);
    assert_eq!(
        result(&out, "ok")["response"]["stopReason"],
        "end_turn",
        "{out}"
    );
    assert_eq!(text_of(&out, "agent_message_chunk"), "still here");
    assert_eq!(out["agent_exit"]["exit_code"], 0);
}

/// `hermes-acp` (Python Hermes' console script name) is `hermes acp`.
#[tokio::test]
async fn the_hermes_acp_name_runs_the_acp_server() {
    let env = Env::new().await;
    let link = env.home.path().join("hermes-acp");
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("hermes"), &link).unwrap();
    let out = Command::new(&link)
        .arg("--check")
        .env_clear()
        .env("HERMES_HOME", env.home.path())
        .env("HOME", env.home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(env.cwd.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("hermes acp: ready (model mock-model on custom"),
        "{stdout}"
    );
}

/// `session/list` through the TypeScript SDK: the capability is advertised; only stored
/// editor sessions with messages are listed, of the directory asked for, newest first, 50 a
/// page with the last id as the cursor (as Python Hermes pages); an unknown cursor gives an
/// empty page; a relative `cwd` is refused.
#[tokio::test]
async fn session_list_pages_the_stored_editor_sessions_of_a_directory() {
    let Some(sdk) = sdk() else {
        eprintln!(
            "skipped: no ACP TypeScript SDK (scripts/mcp-peers.sh installs it; HERMES_MCP_PEERS)"
        );
        return;
    };
    let env = Env::new().await;
    let work = env.cwd.path().canonicalize().unwrap();
    let elsewhere = env.home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let store = SessionStore::open(env.home.home().state_db()).unwrap();
    let add = |id: &str, source: &str, cwd: &Path, title: Option<&str>, messages: usize| {
        store
            .create_session(&hermes_store::NewSession {
                id: id.into(),
                source: source.into(),
                title: title.map(String::from),
                model: "mock-model".into(),
                provider: "custom".into(),
                cwd: Some(cwd.display().to_string()),
                ..hermes_store::NewSession::default()
            })
            .unwrap();
        for i in 0..messages {
            store
                .append_message(
                    id,
                    &hermes_protocol::Message::user(format!("question {i} of {id}")),
                    None,
                )
                .unwrap();
        }
    };
    // 52 editor sessions here, oldest first; the newest has a title.
    for i in 0..52 {
        let title = (i == 51).then_some("Fix the parser");
        add(&format!("acp_{i:02}"), "acp", &work, title, 1);
    }
    add("acp_empty", "acp", &work, None, 0);
    add("acp_elsewhere", "acp", &elsewhere, None, 1);
    add("cli_here", "cli", &work, None, 1);
    drop(store);

    let cwd = work.display().to_string();
    let out = drive(
        &env,
        &sdk,
        json!({}),
        json!([
            {"op": "initialize", "name": "init"},
            {"op": "request", "name": "page1", "method": "session/list", "params": {"cwd": cwd}},
            {"op": "request", "name": "all", "method": "session/list", "params": {}},
            {"op": "request", "name": "unknown", "method": "session/list",
             "params": {"cwd": cwd, "cursor": "no_such_session"}},
            {"op": "request", "name": "relative", "method": "session/list",
             "params": {"cwd": "relative/dir"}},
            {"op": "close"},
        ]),
    );
    assert!(
        result(&out, "init")["response"]["agentCapabilities"]["sessionCapabilities"]["list"]
            .is_object(),
        "{out}"
    );
    let page1 = &result(&out, "page1")["response"];
    let ids: Vec<&str> = page1["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (2..52).rev().map(|i| format!("acp_{i:02}")).collect();
    assert_eq!(ids, expected, "{page1}");
    assert_eq!(page1["nextCursor"], "acp_02", "{page1}");
    let first = &page1["sessions"][0];
    assert_eq!(first["title"], "Fix the parser");
    assert_eq!(first["cwd"], cwd.as_str());
    assert!(
        first["updatedAt"].as_str().unwrap().starts_with("20"),
        "{first}"
    );
    assert_eq!(
        page1["sessions"][1]["title"], "question 0 of acp_50",
        "untitled: the first user message"
    );
    let all: Vec<&str> = result(&out, "all")["response"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        all[0], "acp_elsewhere",
        "every directory without a cwd filter"
    );
    assert!(!all.contains(&"cli_here") && !all.contains(&"acp_empty"));
    assert_eq!(
        result(&out, "unknown")["response"]["sessions"],
        json!([]),
        "{out}"
    );
    assert_eq!(result(&out, "relative")["ok"], false, "{out}");

    // The second page, from the cursor.
    let out = drive(
        &env,
        &sdk,
        json!({}),
        json!([
            {"op": "initialize"},
            {"op": "request", "name": "page2", "method": "session/list",
             "params": {"cwd": cwd, "cursor": "acp_02"}},
            {"op": "close"},
        ]),
    );
    let page2 = &result(&out, "page2")["response"];
    let ids: Vec<&str> = page2["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["acp_01", "acp_00"], "{page2}");
    assert!(page2["nextCursor"].is_null(), "{page2}");
}
