//! `hermes acp` against a hostile model, a hostile or buggy editor and bad luck, through its
//! public interface: the binary on stdio, raw JSON-RPC lines (tests/acp_attack/peer.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "acp_attack/peer.rs"]
mod peer;

use std::time::Duration;

use common::Env;
use hermes_testkit::MockResponse;
use peer::{Reply, editor, spawn};
use serde_json::{Value, json};

const SECRET: &str = "sk-attack-0123456789abcdefSECRET";
const AUTH_SECRET: &str = "tok-auth-0123456789abcdefSECRET";

async fn secret_env() -> Env {
    let env = Env::new().await;
    std::fs::write(
        env.home.path().join(".env"),
        format!("OPENAI_API_KEY={SECRET}\n"),
    )
    .unwrap();
    std::fs::write(
        env.home.path().join("auth.json"),
        json!({"providers": {"x": {"access_token": AUTH_SECRET}}}).to_string(),
    )
    .unwrap();
    env
}

fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

fn one_call(env: &Env, id: &str, name: &str, args: Value) {
    env.mock
        .push(MockResponse::tool_calls(&[(id, name, &args.to_string())]));
}

/// The text of each ending `tool_call_update`, by call id.
fn endings(p: &peer::Peer) -> Vec<(String, String, String)> {
    p.updates
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] != "in_progress")
        .filter(|u| u["status"].is_string())
        .map(|u| {
            (
                u["toolCallId"].as_str().unwrap().to_string(),
                u["status"].as_str().unwrap().to_string(),
                // The text item (a call run in the editor's terminal shows that first).
                u["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find_map(|c| c["content"]["text"].as_str())
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

fn permission_questions(p: &peer::Peer) -> Vec<&Value> {
    p.requests
        .iter()
        .filter(|r| r["method"] == "session/request_permission")
        .collect()
}

const WAIT: Duration = Duration::from_secs(25);

/// A hostile model: secrets through every file path (absolute, `..`, symlinks, /proc), edits
/// of the home's secrets and config, bad arguments, unknown tools, a large write, commands
/// that read the secrets. Each call is refused or contained and ends for the editor; no
/// secret reaches the model or the editor; the user is never asked about an edit the
/// sandbox refuses anyway. With and without the editor's `fs/*`.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_tool_calls_are_refused_contained_and_all_end() {
    for fs in [true, false] {
        let env = secret_env().await;
        let home = env.home.path().to_path_buf();
        let cwd = env.cwd.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(home.join(".env"), cwd.join("link_env")).unwrap();
        std::os::unix::fs::symlink(home.join("auth.json"), cwd.join("link_auth")).unwrap();
        let config_before = std::fs::read_to_string(home.join("config.yaml")).unwrap();
        let rel = format!("../{}/.env", home.file_name().unwrap().to_str().unwrap());
        let h = home.display().to_string();
        let refused: Vec<(&str, String)> = vec![
            (
                "read_file",
                json!({"path": format!("{h}/.env")}).to_string(),
            ),
            ("read_file", json!({"path": rel}).to_string()),
            ("read_file", json!({"path": "link_env"}).to_string()),
            ("read_file", json!({"path": "link_auth"}).to_string()),
            (
                "read_file",
                json!({"path": "/proc/self/environ"}).to_string(),
            ),
            (
                "write_file",
                json!({"path": format!("{h}/.env"), "content": "OPENAI_API_KEY=mine\n"})
                    .to_string(),
            ),
            (
                "write_file",
                json!({"path": format!("{h}/auth.json"), "content": "{}"}).to_string(),
            ),
            (
                "write_file",
                json!({"path": "link_env", "content": "X=1\n"}).to_string(),
            ),
            (
                "patch",
                json!({"path": "link_auth", "old_string": "tok", "new_string": "x"}).to_string(),
            ),
            (
                "write_file",
                json!({"path": format!("{h}/config.yaml"), "content": "model: {}\n"}).to_string(),
            ),
            ("read_file", json!({"path": 12}).to_string()),
            ("read_file", "{\"path\": \"a.txt\"".to_string()),
            ("no_such_tool", json!({}).to_string()),
        ];
        let contained: Vec<(&str, String)> = vec![
            ("write_file", json!({"path": "big.txt", "content": "Z".repeat(512 * 1024)}).to_string()),
            ("terminal", json!({"command": "env"}).to_string()),
            ("terminal", json!({"command": "cat ~/.env; cat $HERMES_HOME/.env; cat link_env; cat /proc/$PPID/environ | tr '\\0' '\\n'"}).to_string()),
            ("terminal", json!({"command": "grep -r SECRET $HERMES_HOME 2>&1 | head; base64 link_auth"}).to_string()),
            ("search_files", json!({"pattern": "SECRET", "path": h}).to_string()),
        ];
        let all: Vec<(String, &str, &String)> = refused
            .iter()
            .chain(contained.iter())
            .enumerate()
            .map(|(i, (n, a))| (format!("call_{i}"), *n, a))
            .collect();
        for (id, name, args) in &all {
            env.mock.push(MockResponse::tool_calls(&[(id, name, args)]));
        }
        env.mock.push(MockResponse::text("done"));
        let mut p = spawn(&home, &cwd, &[]);
        p.initialize(fs).await;
        let sid = p.new_session(&cwd).await;
        let r = p
            .call("session/prompt", prompt(&sid, "attack"), &mut editor)
            .await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "fs {fs}: {r}");
        p.assert_every_call_ended();
        let ended = endings(&p);
        for (id, _, _) in all.iter().take(refused.len()) {
            assert!(
                ended.iter().any(|(e, s, _)| e == id && s == "failed"),
                "fs {fs}: {id} was not refused: {ended:?}"
            );
        }
        let asked = permission_questions(&p);
        assert_eq!(
            asked.len(),
            1,
            "fs {fs}: only the write the sandbox allows is asked about: {asked:?}"
        );
        let requests = serde_json::to_string(&env.mock.requests()).unwrap();
        let updates = serde_json::to_string(&p.updates).unwrap();
        for secret in [SECRET, AUTH_SECRET] {
            assert!(
                !requests.contains(secret),
                "fs {fs}: a secret reached the model"
            );
            assert!(
                !updates.contains(secret),
                "fs {fs}: a secret reached the editor"
            );
        }
        assert_eq!(
            std::fs::read_to_string(home.join(".env")).unwrap(),
            format!("OPENAI_API_KEY={SECRET}\n")
        );
        assert!(
            std::fs::read_to_string(home.join("auth.json"))
                .unwrap()
                .contains(AUTH_SECRET)
        );
        assert_eq!(
            std::fs::read_to_string(home.join("config.yaml")).unwrap(),
            config_before
        );
        assert!(
            p.bad_lines.is_empty(),
            "not JSON-RPC on stdout: {:?}",
            p.bad_lines
        );
        assert_eq!(p.exit().await, Some(0));
    }
}

/// Lines that are not JSON, JSON that is not JSON-RPC, requests before `initialize`, bad
/// params, deep nesting, stray responses: each request gets its JSON-RPC error (its id kept
/// when it has a usable one), stdout carries nothing but JSON-RPC, and the agent serves a
/// prompt afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn protocol_abuse_gets_json_rpc_errors_and_the_agent_stays_up() {
    let env = Env::new().await;
    env.mock.set_fallback(Some(MockResponse::text("ok")));
    let cwd = env.cwd.path().canonicalize().unwrap();
    let mut p = spawn(env.home.path(), &cwd, &[]);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"session/new","params":{}{}}}"#,
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    let lines: Vec<(Value, &str)> = vec![
        (json!(null), "garbage"),
        (json!(null), "{}"),
        (json!(null), "[1,2]"),
        (json!(null), "42"),
        (
            json!("pre"),
            r#"{"jsonrpc":"2.0","id":"pre","method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
        ),
        (
            json!(7),
            r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
        ),
        (
            json!("no-params"),
            r#"{"jsonrpc":"2.0","id":"no-params","method":"session/new"}"#,
        ),
        (json!(null), &deep),
        (
            json!("neg"),
            r#"{"jsonrpc":"2.0","id":"neg","method":"initialize","params":{"protocolVersion":-1}}"#,
        ),
    ];
    for (_, l) in &lines {
        p.send_raw(l).await;
    }
    // Notifications and stray responses get no answer.
    p.send_raw(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"zz"}}"#)
        .await;
    p.send_raw(r#"{"jsonrpc":"2.0","id":"ghost","result":{}}"#)
        .await;
    let mut answers = Vec::new();
    while answers.len() < lines.len() {
        let Some(m) = p.next(&mut editor, Duration::from_secs(10)).await else {
            panic!(
                "{} of {} lines answered: {answers:?}",
                answers.len(),
                lines.len()
            );
        };
        answers.push(m);
    }
    for ((id, line), answer) in lines.iter().zip(&answers) {
        assert_eq!(&answer["id"], id, "{line:.80}: {answer}");
        assert!(answer["error"]["code"].is_i64(), "{line:.80}: {answer}");
    }
    assert_eq!(answers[0]["error"]["code"], -32700);
    assert_eq!(answers[4]["error"]["code"], -32600);
    p.initialize(true).await;
    let sid = p.new_session(&cwd).await;
    let r = p
        .call("session/prompt", prompt(&sid, "hi"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let r = p
        .call(
            "session/prompt",
            prompt("20200101_000000_abcdef", "hi"),
            &mut editor,
        )
        .await;
    assert_eq!(r["error"]["code"], -32002, "{r}");
    let r = p
        .call(
            "session/load",
            json!({"sessionId": "20200101_000000_abcdef", "cwd": cwd, "mcpServers": []}),
            &mut editor,
        )
        .await;
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert!(
        p.bad_lines.is_empty(),
        "not JSON-RPC on stdout: {:?}",
        p.bad_lines
    );
    assert_eq!(p.exit().await, Some(0));
}

/// An editor that answers `fs/read_text_file` with a file over the transport's 16 MiB line
/// cap: the read fails (the model is told why) and the turn goes on; the editor gets no
/// error "answer" to its own answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_giant_editor_answer_fails_the_read_not_the_turn() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    std::fs::write(cwd.join("g.txt"), "x").unwrap();
    one_call(&env, "c1", "read_file", json!({"path": "g.txt"}));
    env.mock.push(MockResponse::text("the file is too large"));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(true).await;
    let sid = p.new_session(&cwd).await;
    let id = p.send("session/prompt", prompt(&sid, "read g.txt")).await;
    let giant = "g".repeat(17 * 1024 * 1024);
    let mut h = |m: &Value| {
        if m["method"] == "fs/read_text_file" {
            Reply::Result(json!({ "content": giant }))
        } else {
            editor(m)
        }
    };
    let r = p.try_response(id, &mut h, WAIT).await;
    let r = r.unwrap_or_else(|| panic!("the turn hangs on the giant answer: {:?}", p.other));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let ended = endings(&p);
    assert!(
        ended
            .iter()
            .any(|(id, s, t)| id == "c1" && s == "failed" && t.contains("too large")),
        "{ended:?}"
    );
    assert!(
        p.other.is_empty(),
        "stray messages to the editor: {:?}",
        p.other
    );
    assert_eq!(p.exit().await, Some(0));
}

/// Permission questions answered badly: never (then the editor cancels), with an option
/// that was not offered, with a malformed or empty outcome; and `fs/*` failing. Each edit
/// is not made, each call ends `failed`, the turn ends, the session goes on.
#[tokio::test(flavor = "multi_thread")]
async fn bad_permission_answers_and_fs_errors_refuse_and_end_the_call() {
    // Never answered, then cancelled.
    {
        let env = Env::new().await;
        let cwd = env.cwd.path().canonicalize().unwrap();
        one_call(
            &env,
            "c1",
            "write_file",
            json!({"path": "w.txt", "content": "x"}),
        );
        env.mock.set_fallback(Some(MockResponse::text("after")));
        let mut p = spawn(env.home.path(), &cwd, &[]);
        p.initialize(true).await;
        let sid = p.new_session(&cwd).await;
        let id = p.send("session/prompt", prompt(&sid, "write")).await;
        let mut silent = |m: &Value| {
            if m["method"] == "session/request_permission" {
                Reply::Ignore
            } else {
                editor(m)
            }
        };
        p.until(|m| m["method"] == "session/request_permission", &mut silent)
            .await;
        p.notify("session/cancel", json!({"sessionId": sid})).await;
        let r = p
            .try_response(id, &mut silent, WAIT)
            .await
            .expect("answered");
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        p.assert_every_call_ended();
        assert!(!cwd.join("w.txt").exists());
        let r = p
            .call("session/prompt", prompt(&sid, "again"), &mut editor)
            .await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        hermes_testkit::assert_request_invariants(&env.mock.requests());
        assert_eq!(p.exit().await, Some(0));
    }
    for (label, answer) in [
        (
            "unknown option",
            json!({"outcome": {"outcome": "selected", "optionId": "yolo"}}),
        ),
        ("malformed", json!({"outcome": "weird"})),
        ("empty", json!({})),
        ("fs error", json!(null)),
    ] {
        let env = Env::new().await;
        let cwd = env.cwd.path().canonicalize().unwrap();
        std::fs::write(cwd.join("r.txt"), "hello").unwrap();
        if label == "fs error" {
            one_call(&env, "c1", "read_file", json!({"path": "r.txt"}));
            one_call(
                &env,
                "c2",
                "patch",
                json!({"path": "r.txt", "old_string": "hello", "new_string": "bye"}),
            );
        } else {
            one_call(
                &env,
                "c1",
                "write_file",
                json!({"path": "w.txt", "content": "x"}),
            );
        }
        env.mock.set_fallback(Some(MockResponse::text("after")));
        let mut p = spawn(env.home.path(), &cwd, &[]);
        p.initialize(true).await;
        let sid = p.new_session(&cwd).await;
        let mut h = move |m: &Value| match m["method"].as_str() {
            Some("session/request_permission") if label != "fs error" => {
                Reply::Result(answer.clone())
            }
            Some("fs/read_text_file") if label == "fs error" => {
                Reply::Error(-32000, "disk on fire".into())
            }
            _ => editor(m),
        };
        let r = p.call("session/prompt", prompt(&sid, "go"), &mut h).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{label}: {r}");
        let ended = endings(&p);
        assert!(
            !ended.is_empty() && ended.iter().all(|(_, s, _)| s == "failed"),
            "{label}: {ended:?}"
        );
        assert!(!cwd.join("w.txt").exists(), "{label}");
        assert_eq!(std::fs::read_to_string(cwd.join("r.txt")).unwrap(), "hello");
        assert_eq!(p.exit().await, Some(0));
    }
}

/// `session/cancel` sent right after `session/prompt` (the user pressed Esc at once)
/// cancels that prompt, though its turn had not started when the cancel came.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_right_after_the_prompt_cancels_it() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    env.mock.set_fallback(Some(
        MockResponse::tool_calls(&[("c1", "terminal", r#"{"command":"sleep 20"}"#)])
            .with_delay(Duration::from_millis(300)),
    ));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    let started = std::time::Instant::now();
    let id = p.send("session/prompt", prompt(&sid, "sleep")).await;
    p.notify("session/cancel", json!({"sessionId": sid})).await;
    let r = p
        .try_response(id, &mut editor, WAIT)
        .await
        .expect("answered");
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    p.assert_every_call_ended();
    assert_eq!(p.exit().await, Some(0));
}

/// A cancel while nothing runs does not cancel the next prompt; two prompts sent at once
/// run one after the other, each with its answer, and the history stays well formed; a
/// cancel during a command ends it at once with a result.
#[tokio::test(flavor = "multi_thread")]
async fn prompts_queue_cancels_apply_to_running_turns_only() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    env.mock.push(MockResponse::text("first"));
    one_call(
        &env,
        "c1",
        "terminal",
        json!({"command": "sleep 1; echo slept"}),
    );
    env.mock.push(MockResponse::text("second"));
    env.mock.push(MockResponse::text("third"));
    one_call(&env, "c9", "terminal", json!({"command": "sleep 30"}));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    p.notify("session/cancel", json!({"sessionId": sid})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = p
        .call("session/prompt", prompt(&sid, "one"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let a = p.send("session/prompt", prompt(&sid, "two")).await;
    let b = p.send("session/prompt", prompt(&sid, "three")).await;
    let ra = p
        .try_response(a, &mut editor, WAIT)
        .await
        .expect("two answered");
    let rb = p
        .try_response(b, &mut editor, WAIT)
        .await
        .expect("three answered");
    assert_eq!(ra["result"]["stopReason"], "end_turn", "{ra}");
    assert_eq!(rb["result"]["stopReason"], "end_turn", "{rb}");
    let id = p.send("session/prompt", prompt(&sid, "sleep")).await;
    p.until(
        |m| {
            m["params"]["update"]["sessionUpdate"] == "tool_call"
                && m["params"]["update"]["toolCallId"] == "c9"
        },
        &mut editor,
    )
    .await;
    p.notify("session/cancel", json!({"sessionId": sid})).await;
    let started = std::time::Instant::now();
    let r = p
        .try_response(id, &mut editor, WAIT)
        .await
        .expect("answered");
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert!(started.elapsed() < Duration::from_secs(10));
    p.assert_every_call_ended();
    let requests = env.mock.requests();
    hermes_testkit::assert_request_invariants(&requests);
    let users: Vec<Value> = requests[4]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(
        users,
        vec![json!("one"), json!("two"), json!("three"), json!("sleep")]
    );
    assert_eq!(p.exit().await, Some(0));
}

fn load(sid: &str, cwd: &std::path::Path) -> Value {
    json!({"sessionId": sid, "cwd": cwd, "mcpServers": []})
}

/// `kill -9` of `hermes acp` during a command; a new process loads the session: the store
/// opens, the replay ends every call it shows (none stays running in the editor), and the
/// next turn's request is well formed (the killed call has a result).
#[tokio::test(flavor = "multi_thread")]
async fn a_session_killed_mid_call_loads_with_every_call_ended() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    let home = env.home.path().to_path_buf();
    env.mock.push(MockResponse::text("hello one"));
    one_call(&env, "k1", "terminal", json!({"command": "sleep 30"}));
    let mut p = spawn(&home, &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    let r = p
        .call("session/prompt", prompt(&sid, "first"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    p.send("session/prompt", prompt(&sid, "second")).await;
    p.until(
        |m| m["params"]["update"]["sessionUpdate"] == "tool_call",
        &mut editor,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    p.child.start_kill().unwrap();
    p.child.wait().await.unwrap();

    let before = env.mock.requests().len();
    env.mock.push(MockResponse::text("after reload"));
    let mut q = spawn(&home, &cwd, &[]);
    q.initialize(false).await;
    let r = q.call("session/load", load(&sid, &cwd), &mut editor).await;
    assert!(r["result"].is_object(), "{r}");
    let (started, _) = q.tool_calls();
    assert_eq!(started, vec!["k1".to_string()]);
    q.assert_every_call_ended();
    assert!(
        endings(&q)
            .iter()
            .any(|(id, s, _)| id == "k1" && s == "failed"),
        "{:?}",
        endings(&q)
    );
    let r = q
        .call("session/prompt", prompt(&sid, "third"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    hermes_testkit::assert_request_invariants(&env.mock.requests()[before..]);
    assert_eq!(q.exit().await, Some(0));
}

/// The editor closes `hermes acp`'s stdin during a command: the process exits soon, and the
/// interrupted call's result is in the store first.
#[tokio::test(flavor = "multi_thread")]
async fn stdin_closed_mid_call_stores_the_calls_result() {
    for mode in ["command", "fs read", "permission", "model"] {
        let env = Env::new().await;
        let cwd = env.cwd.path().canonicalize().unwrap();
        std::fs::write(cwd.join("r.txt"), "r").unwrap();
        match mode {
            "command" => one_call(&env, "e1", "terminal", json!({"command": "sleep 30"})),
            "fs read" => one_call(&env, "e1", "read_file", json!({"path": "r.txt"})),
            "permission" => one_call(
                &env,
                "e1",
                "write_file",
                json!({"path": "w.txt", "content": "x"}),
            ),
            _ => env.mock.push(MockResponse::text("never").hang()),
        }
        env.mock.set_fallback(Some(MockResponse::text("ok")));
        let mut p = spawn(env.home.path(), &cwd, &[]);
        p.initialize(mode == "fs read").await;
        let sid = p.new_session(&cwd).await;
        p.send("session/prompt", prompt(&sid, "go")).await;
        let mut silent = |m: &Value| {
            if m["method"].is_string() {
                Reply::Ignore
            } else {
                editor(m)
            }
        };
        if mode == "model" {
            p.until(
                |m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk",
                &mut silent,
            )
            .await;
        } else {
            p.until(
                |m| m["params"]["update"]["sessionUpdate"] == "tool_call",
                &mut silent,
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = std::time::Instant::now();
        assert_eq!(p.exit().await, Some(0), "{mode}");
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{mode}: {:?}",
            started.elapsed()
        );
        assert!(p.bad_lines.is_empty(), "{mode}: {:?}", p.bad_lines);
        let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
        let messages = store.load_messages(&sid).unwrap();
        if mode != "model" {
            assert!(
                messages
                    .iter()
                    .any(|m| m.message.tool_call_id.as_deref() == Some("e1")),
                "{mode}: no result stored for the interrupted call: {:?}",
                messages.iter().map(|m| &m.message).collect::<Vec<_>>()
            );
        }
    }
}

/// Two `hermes acp` processes on one home load the same session and prompt at once: both
/// turns are stored, in order, and a third process sees one well-formed history.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_prompting_one_session_keep_one_history() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    let home = env.home.path().to_path_buf();
    env.mock.push(MockResponse::text("created"));
    let mut p = spawn(&home, &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    p.call("session/prompt", prompt(&sid, "start"), &mut editor)
        .await;
    assert_eq!(p.exit().await, Some(0));
    env.mock.set_fallback(Some(
        MockResponse::text("dual answer").with_delay(Duration::from_millis(800)),
    ));
    let mut a = spawn(&home, &cwd, &[]);
    let mut b = spawn(&home, &cwd, &[]);
    for x in [&mut a, &mut b] {
        x.initialize(false).await;
        let r = x.call("session/load", load(&sid, &cwd), &mut editor).await;
        assert!(r["result"].is_object(), "{r}");
    }
    let ia = a.send("session/prompt", prompt(&sid, "from A")).await;
    let ib = b.send("session/prompt", prompt(&sid, "from B")).await;
    let ra = a
        .try_response(ia, &mut editor, WAIT)
        .await
        .expect("A answered");
    let rb = b
        .try_response(ib, &mut editor, WAIT)
        .await
        .expect("B answered");
    assert_eq!(ra["result"]["stopReason"], "end_turn", "{ra}");
    assert_eq!(rb["result"]["stopReason"], "end_turn", "{rb}");
    assert_eq!(a.exit().await, Some(0));
    assert_eq!(b.exit().await, Some(0));
    let before = env.mock.requests().len();
    let mut c = spawn(&home, &cwd, &[]);
    c.initialize(false).await;
    c.call("session/load", load(&sid, &cwd), &mut editor).await;
    let r = c
        .call("session/prompt", prompt(&sid, "from C"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let seen = &env.mock.requests()[before];
    hermes_testkit::assert_request_invariants(std::slice::from_ref(seen));
    let users: Vec<String> = seen["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users.len(), 4, "{users:?}");
    assert_eq!(users[0], "start");
    assert!(users.contains(&"from A".to_string()) && users.contains(&"from B".to_string()));
    assert_eq!(users[3], "from C");
    assert_eq!(c.exit().await, Some(0));
}

/// The home's secrets asked for through the prompt: a link to `.env` (the model's read is
/// refused), `.env` attached by the editor, and a project file holding the same key. No
/// secret reaches the model's requests or the editor's updates.
#[tokio::test(flavor = "multi_thread")]
async fn secrets_in_links_and_attachments_never_reach_the_model() {
    let env = secret_env().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    let home = env.home.path().to_path_buf();
    let dot_env = home.join(".env");
    let uri = format!("file://{}", dot_env.display());
    let project = cwd.join(".env");
    // The same file, named the way some editors write URIs.
    let encoded = format!("file://localhost{}/%2Eenv", home.display());
    std::fs::write(&project, format!("KEY={SECRET}\nNAME=demo\n")).unwrap();
    one_call(&env, "s1", "read_file", json!({"path": dot_env}));
    env.mock.set_fallback(Some(MockResponse::text("ok")));
    let mut p = spawn(&home, &cwd, &[]);
    p.initialize(true).await;
    let sid = p.new_session(&cwd).await;
    let r = p
        .call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [
                {"type": "text", "text": "look at this"},
                {"type": "resource_link", "name": ".env", "uri": uri},
            ]}),
            &mut editor,
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let r = p
        .call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [
                {"type": "text", "text": "and these"},
                {"type": "resource", "resource": {"uri": uri,
                    "text": format!("OPENAI_API_KEY={SECRET}\n")}},
                {"type": "resource", "resource": {"uri": encoded,
                    "text": "OTHER_VALUE=plain-but-private\n"}},
                {"type": "resource", "resource": {"uri": format!("file://{}", project.display()),
                    "text": format!("KEY={SECRET}\nNAME=demo\n")}},
            ]}),
            &mut editor,
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let requests = serde_json::to_string(&env.mock.requests()).unwrap();
    assert!(!requests.contains(SECRET), "a secret reached the model");
    assert!(
        !requests.contains("plain-but-private"),
        "the home's .env reached the model"
    );
    assert!(
        requests.contains("NAME=demo"),
        "the rest of the project file is shown"
    );
    assert!(
        requests.contains("[not shown: reading"),
        "the refusal is shown"
    );
    assert!(!serde_json::to_string(&p.updates).unwrap().contains(SECRET));
    assert!(
        endings(&p)
            .iter()
            .any(|(id, s, _)| id == "s1" && s == "failed")
    );
    assert_eq!(p.exit().await, Some(0));
}

/// A model that repeats a tool call id within one answer (local servers do): the editor
/// sees two calls, each ended once, and the next request names each result's own call.
#[tokio::test(flavor = "multi_thread")]
async fn repeated_tool_call_ids_stay_two_calls() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    std::fs::write(cwd.join("a.txt"), "a").unwrap();
    env.mock.push(MockResponse::tool_calls(&[
        ("dup", "read_file", r#"{"path":"a.txt"}"#),
        ("dup", "read_file", r#"{"path":"missing.txt"}"#),
    ]));
    env.mock.set_fallback(Some(MockResponse::text("ok")));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    let r = p
        .call("session/prompt", prompt(&sid, "dups"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let (started, ended) = p.tool_calls();
    assert_eq!(started.len(), 2);
    assert_ne!(started[0], started[1], "{started:?}");
    assert_eq!(ended.len(), 2, "{ended:?}");
    p.assert_every_call_ended();
    hermes_testkit::assert_request_invariants(&env.mock.requests());
    assert_eq!(p.exit().await, Some(0));
}

/// `delegate_task`: the subagent's edits go through the session's tools, so they are asked
/// about in `default` mode (and not made when refused), and its calls end in the editor.
#[tokio::test(flavor = "multi_thread")]
async fn a_subagents_edits_are_asked_about_too() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    one_call(
        &env,
        "d1",
        "delegate_task",
        json!({"goal": "write child.txt"}),
    );
    one_call(
        &env,
        "child_w",
        "write_file",
        json!({"path": "child.txt", "content": "from child"}),
    );
    env.mock.push(MockResponse::text("child done"));
    env.mock
        .set_fallback(Some(MockResponse::text("parent done")));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(true).await;
    let sid = p.new_session(&cwd).await;
    let mut reject = |m: &Value| {
        if m["method"] == "session/request_permission" {
            Reply::Result(json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}))
        } else {
            editor(m)
        }
    };
    let r = p
        .call("session/prompt", prompt(&sid, "delegate"), &mut reject)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(permission_questions(&p).len(), 1);
    assert!(!cwd.join("child.txt").exists());
    p.assert_every_call_ended();
    assert_eq!(p.exit().await, Some(0));
}

/// The editor's terminals (and `fs/*`) misbehaving: `terminal/create` or `wait_for_exit`
/// failing, a client that stops answering (then the user cancels) at each step, a path with
/// a NUL byte. The call ends with a result each time, a cancel ends the turn within seconds,
/// and the agent exits cleanly.
#[tokio::test(flavor = "multi_thread")]
async fn misbehaving_editor_terminals_never_hold_the_turn() {
    let modes = [
        "create-error",
        "wait-error",
        "ignore-wait-cancel",
        "ignore-after-create-cancel",
        "ignore-create-cancel",
        "ignore-fs-cancel",
        "nul-path",
    ];
    for mode in modes {
        let env = Env::new().await;
        let cwd = env.cwd.path().canonicalize().unwrap();
        std::fs::write(cwd.join("r.txt"), "r").unwrap();
        match mode {
            "nul-path" => {
                one_call(&env, "c1", "read_file", json!({"path": "a\u{0}b"}));
                one_call(
                    &env,
                    "c2",
                    "write_file",
                    json!({"path": "a\u{0}b", "content": "x"}),
                );
            }
            "ignore-fs-cancel" => one_call(&env, "c1", "read_file", json!({"path": "r.txt"})),
            _ => one_call(&env, "c1", "terminal", json!({"command": "echo hi"})),
        }
        env.mock.set_fallback(Some(MockResponse::text("ok")));
        let mut p = spawn(env.home.path(), &cwd, &[]);
        p.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities":
                {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
            &mut editor,
        )
        .await;
        let sid = p.new_session(&cwd).await;
        p.call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "dont_ask"}),
            &mut editor,
        )
        .await;
        let id = p.send("session/prompt", prompt(&sid, "go")).await;
        let mut h = move |m: &Value| {
            let method = m["method"].as_str().unwrap_or("");
            match (mode, method) {
                ("create-error", "terminal/create") => {
                    Reply::Error(-32000, "no terminals today".into())
                }
                ("ignore-create-cancel", "terminal/create") => Reply::Ignore,
                (_, "terminal/create") => Reply::Result(json!({"terminalId": "t1"})),
                ("wait-error", "terminal/wait_for_exit") => Reply::Error(-32000, "lost it".into()),
                (_, "terminal/wait_for_exit") => Reply::Ignore,
                ("ignore-after-create-cancel", m) if m.starts_with("terminal/") => Reply::Ignore,
                (_, "terminal/output") => {
                    Reply::Result(json!({"output": "partial", "truncated": false}))
                }
                (_, "terminal/kill") | (_, "terminal/release") => Reply::Result(json!({})),
                ("ignore-fs-cancel", "fs/read_text_file") => Reply::Ignore,
                _ => editor(m),
            }
        };
        if mode.ends_with("-cancel") {
            let awaited = match mode {
                "ignore-create-cancel" => "terminal/create",
                "ignore-fs-cancel" => "fs/read_text_file",
                _ => "terminal/wait_for_exit",
            };
            p.until(|m| m["method"] == awaited, &mut h).await;
            p.notify("session/cancel", json!({"sessionId": sid})).await;
        }
        let r = p
            .try_response(id, &mut h, Duration::from_secs(20))
            .await
            .unwrap_or_else(|| panic!("{mode}: the turn never ended: {:?}", p.requests));
        let stop = if mode.ends_with("-cancel") {
            "cancelled"
        } else {
            "end_turn"
        };
        assert_eq!(r["result"]["stopReason"], stop, "{mode}: {r}");
        p.assert_every_call_ended();
        assert!(!endings(&p).is_empty(), "{mode}");
        assert!(p.bad_lines.is_empty(), "{mode}: {:?}", p.bad_lines);
        assert_eq!(p.exit().await, Some(0), "{mode}");
    }
}

/// Six prompts sent at once on one session run one at a time in the order they were sent.
#[tokio::test(flavor = "multi_thread")]
async fn prompts_sent_at_once_run_in_order() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    env.mock.set_fallback(Some(MockResponse::text("ok")));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    let mut ids = Vec::new();
    for n in 0..6 {
        ids.push(
            p.send("session/prompt", prompt(&sid, &format!("p{n}")))
                .await,
        );
    }
    for id in ids {
        let r = p
            .try_response(id, &mut editor, WAIT)
            .await
            .expect("answered");
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    }
    let requests = env.mock.requests();
    hermes_testkit::assert_request_invariants(&requests);
    let users: Vec<Value> = requests[5]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect();
    let want: Vec<Value> = (0..6).map(|n| json!(format!("p{n}"))).collect();
    assert_eq!(users, want);
    assert_eq!(p.exit().await, Some(0));
}

/// A dangerous command (a recursive delete) whose question the editor never answers (then
/// cancels), answers with a malformed outcome, or fails: it is not run, its call ends, and
/// a malformed `fs/read_text_file` answer fails the read.
#[tokio::test(flavor = "multi_thread")]
async fn dangerous_commands_badly_answered_are_not_run() {
    for mode in ["ignore-cancel", "bad-result", "error"] {
        let env = Env::new().await;
        let cwd = env.cwd.path().canonicalize().unwrap();
        std::fs::create_dir_all(cwd.join("victim")).unwrap();
        one_call(
            &env,
            "c1",
            "terminal",
            json!({"command": format!("rm -rf {}/victim", cwd.display())}),
        );
        if mode == "bad-result" {
            one_call(&env, "c2", "read_file", json!({"path": "x.txt"}));
        }
        env.mock.set_fallback(Some(MockResponse::text("ok")));
        let mut p = spawn(env.home.path(), &cwd, &[]);
        p.initialize(mode == "bad-result").await;
        let sid = p.new_session(&cwd).await;
        std::fs::write(cwd.join("x.txt"), "x").unwrap();
        let id = p.send("session/prompt", prompt(&sid, "go")).await;
        let mut h = move |m: &Value| match (mode, m["method"].as_str().unwrap_or("")) {
            ("ignore-cancel", "session/request_permission") => Reply::Ignore,
            ("bad-result", "session/request_permission") => {
                Reply::Result(json!({"outcome": {"outcome": "selected", "optionId": 5}}))
            }
            ("bad-result", "fs/read_text_file") => Reply::Result(json!({"content": 5})),
            ("error", "session/request_permission") => Reply::Error(-32000, "nope".into()),
            _ => editor(m),
        };
        if mode == "ignore-cancel" {
            p.until(|m| m["method"] == "session/request_permission", &mut h)
                .await;
            p.notify("session/cancel", json!({"sessionId": sid})).await;
        }
        let r = p
            .try_response(id, &mut h, Duration::from_secs(15))
            .await
            .unwrap_or_else(|| panic!("{mode}: the turn never ended"));
        let stop = if mode == "ignore-cancel" {
            "cancelled"
        } else {
            "end_turn"
        };
        assert_eq!(r["result"]["stopReason"], stop, "{mode}: {r}");
        assert!(cwd.join("victim").exists(), "{mode}: the command ran");
        assert_eq!(permission_questions(&p).len(), 1, "{mode}");
        let ended = endings(&p);
        assert!(
            !ended.is_empty() && ended.iter().all(|(_, s, _)| s == "failed"),
            "{mode}: {ended:?}"
        );
        p.assert_every_call_ended();
        assert_eq!(p.exit().await, Some(0));
    }
}

/// Process B prompts a session while process A runs a turn of it, then A is killed: B's
/// turn runs as soon as A is gone, and its request is well formed (A's killed call has a
/// result).
#[tokio::test(flavor = "multi_thread")]
async fn a_turn_waiting_for_a_killed_process_runs_when_it_dies() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    let home = env.home.path().to_path_buf();
    env.mock.push(MockResponse::text("hello"));
    one_call(&env, "k1", "terminal", json!({"command": "sleep 60"}));
    let mut a = spawn(&home, &cwd, &[]);
    a.initialize(false).await;
    let sid = a.new_session(&cwd).await;
    a.call("session/prompt", prompt(&sid, "first"), &mut editor)
        .await;
    let mut b = spawn(&home, &cwd, &[]);
    b.initialize(false).await;
    b.call("session/load", load(&sid, &cwd), &mut editor).await;
    a.send("session/prompt", prompt(&sid, "long")).await;
    a.until(
        |m| m["params"]["update"]["sessionUpdate"] == "tool_call",
        &mut editor,
    )
    .await;
    // B prompts while A's turn runs.
    env.mock.set_fallback(Some(MockResponse::text("b answer")));
    let ib = b.send("session/prompt", prompt(&sid, "from B")).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = std::time::Instant::now();
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let rb = b
        .try_response(ib, &mut editor, Duration::from_secs(60))
        .await;
    let rb = rb.expect("B answered");
    assert_eq!(rb["result"]["stopReason"], "end_turn", "{rb}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    hermes_testkit::assert_request_invariants(&env.mock.requests()[2..]);
    assert_eq!(b.exit().await, Some(0));
}

/// What the editor shows when a call ends is its result, not a one-line preview: every line
/// of a file read and of a command's output (capped at 5,000 characters, saying how long the
/// result was), and a command run in the editor's terminal keeps that terminal in view.
#[tokio::test(flavor = "multi_thread")]
async fn ended_calls_show_their_whole_result_and_terminal() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    std::fs::write(cwd.join("three.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let long: String = (0..2_000).map(|i| format!("line {i:04}\n")).collect();
    std::fs::write(cwd.join("long.txt"), &long).unwrap();
    one_call(&env, "c_three", "read_file", json!({"path": "three.txt"}));
    one_call(&env, "c_long", "read_file", json!({"path": "long.txt"}));
    one_call(
        &env,
        "c_cmd",
        "terminal",
        json!({"command": "echo one; echo two"}),
    );
    env.mock.set_fallback(Some(MockResponse::text("ok")));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities":
            {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
        &mut editor,
    )
    .await;
    let sid = p.new_session(&cwd).await;
    // An editor whose terminal ran the command and printed two lines.
    let mut h = |m: &Value| match m["method"].as_str().unwrap_or("") {
        "terminal/create" => Reply::Result(json!({"terminalId": "term-7"})),
        "terminal/wait_for_exit" => Reply::Result(json!({"exitCode": 0})),
        "terminal/output" => Reply::Result(json!({"output": "one\ntwo\n", "truncated": false})),
        "terminal/kill" | "terminal/release" => Reply::Result(json!({})),
        _ => editor(m),
    };
    let r = p
        .call("session/prompt", prompt(&sid, "read and run"), &mut h)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    p.assert_every_call_ended();
    let ended = endings(&p);
    let text = |id: &str| {
        ended
            .iter()
            .find(|(c, _, _)| c == id)
            .map(|(_, _, t)| t.clone())
            .unwrap_or_else(|| panic!("{id} did not end: {ended:?}"))
    };
    let three = text("c_three");
    assert!(
        three.contains("alpha") && three.contains("beta") && three.contains("gamma"),
        "{three}"
    );
    let long_shown = text("c_long");
    assert!(long_shown.contains("line 0000"), "{}", &long_shown[..200]);
    assert!(!long_shown.contains("line 0499"));
    assert!(long_shown.contains("characters in all"), "{long_shown}");
    assert!(long_shown.chars().count() <= 5_000);
    let cmd = text("c_cmd");
    assert!(cmd.contains("one") && cmd.contains("two"), "{cmd}");
    let cmd_end = p
        .updates
        .iter()
        .map(|u| &u["update"])
        .find(|u| u["toolCallId"] == "c_cmd" && u["status"] == "completed")
        .unwrap();
    assert_eq!(cmd_end["content"][0]["type"], "terminal", "{cmd_end}");
    assert_eq!(cmd_end["content"][0]["terminalId"], "term-7", "{cmd_end}");
    // The model got the whole file.
    let sent = env.mock.requests().last().unwrap().to_string();
    assert!(sent.contains("line 0499"));
    assert!(p.bad_lines.is_empty(), "{:?}", p.bad_lines);
    assert_eq!(p.exit().await, Some(0));
}

/// The model picker shows the model as it was resolved: a bare name is one of the current
/// provider's (`custom:other-model`), and so is a name with a colon that names no provider.
#[tokio::test(flavor = "multi_thread")]
async fn the_model_option_shows_the_resolved_provider_and_model() {
    let env = Env::new().await;
    let cwd = env.cwd.path().canonicalize().unwrap();
    env.mock.set_fallback(Some(MockResponse::text("ok")));
    let mut p = spawn(env.home.path(), &cwd, &[]);
    p.initialize(false).await;
    let sid = p.new_session(&cwd).await;
    let set = |value: &str| json!({"sessionId": sid, "configId": "model", "value": value});
    for (value, shown) in [
        ("other-model", "custom:other-model"),
        ("qwen3:8b", "custom:qwen3:8b"),
        ("custom:third", "custom:third"),
    ] {
        let r = p
            .call("session/set_config_option", set(value), &mut editor)
            .await;
        let option = &r["result"]["configOptions"][0];
        assert_eq!(option["currentValue"], shown, "{value}: {r}");
        let listed = option["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["value"] == shown)
            .unwrap_or_else(|| panic!("{value}: {option}"));
        assert_eq!(
            listed["description"], "provider custom",
            "{value}: {listed}"
        );
    }
    let r = p
        .call("session/prompt", prompt(&sid, "hi"), &mut editor)
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(env.mock.requests().last().unwrap()["model"], "third");
    assert_eq!(p.exit().await, Some(0));
}
