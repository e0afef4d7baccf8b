//! End-to-end gateway behaviour with a fake platform and the mock model: routing,
//! authorization and pairing, busy modes, commands, restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_gateway::auth::PairingStore;
use hermes_gateway::auth::pairing::now_unix;
use hermes_gateway::config::{BusyInputMode, GatewayConfig, PlatformAccess};
use hermes_gateway::{ChatType, KeyOptions, session_key};
use hermes_testkit::MockResponse;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn dm_gets_a_reply_through_the_running_gateway() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("Hello from hermes."));
    let (adapter, inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let gw = gw.clone();
        let cancel = cancel.clone();
        async move { gw.run(cancel).await }
    });
    inject.send(dm("42", "hi")).await.unwrap();
    wait_until("a reply", || !adapter.texts().is_empty()).await;
    assert_eq!(adapter.texts(), vec!["Hello from hermes."]);
    let sent = adapter.sent.lock().unwrap()[0].0.clone();
    assert_eq!(sent.chat_id, "42");
    assert!(
        sent.reply_to
            .as_deref()
            .is_some_and(|id| id.starts_with("m-hi-")),
        "{sent:?}"
    );
    let key = "agent:main:telegram:dm:42";
    assert_eq!(h.user_texts(key), vec!["hi"]);
    // Platform context goes to the call-time prompt only.
    let req = &h.mock.requests()[0];
    let system = req["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("telegram"), "{system}");
    let stored = h.store.latest_session_for_key(key).unwrap().unwrap();
    assert_eq!(stored.system_prompt, SYSTEM_PROMPT);
    assert_eq!(stored.source, "telegram");
    cancel.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(30), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn group_with_two_users_gets_two_sessions() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("one"));
    h.mock.push(MockResponse::text("two"));
    let (adapter, _inject) = FakeAdapter::new("discord");
    let gw = h.gateway(open_config("discord"), adapter.clone());
    gw.handle(message("discord", ChatType::Group, "g1", "u1", "first"))
        .await;
    idle(&gw).await;
    gw.handle(message("discord", ChatType::Group, "g1", "u2", "second"))
        .await;
    idle(&gw).await;
    let k1 = h
        .store
        .latest_session_for_key("agent:main:discord:group:g1:u1")
        .unwrap()
        .unwrap();
    let k2 = h
        .store
        .latest_session_for_key("agent:main:discord:group:g1:u2")
        .unwrap()
        .unwrap();
    assert_ne!(k1.id, k2.id);
    assert_eq!(
        h.user_texts("agent:main:discord:group:g1:u1"),
        vec!["first"]
    );
    assert_eq!(
        h.user_texts("agent:main:discord:group:g1:u2"),
        vec!["second"]
    );
    assert_eq!(adapter.texts(), vec!["one", "two"]);
    let requests = h.mock.requests();
    assert_eq!(request_users(&requests[1]), vec!["second"]);
}

#[tokio::test]
async fn unknown_dm_gets_a_pairing_code_and_is_served_after_approval() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("Now I can help."));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(GatewayConfig::default(), adapter.clone());
    gw.handle(dm("9", "hello?")).await;
    idle(&gw).await;
    let texts = adapter.texts();
    assert_eq!(texts.len(), 1);
    let pairing = PairingStore::for_home(h.home.path());
    let overview = pairing.overview(now_unix()).unwrap();
    assert_eq!(overview.pending.len(), 1);
    assert_eq!(overview.pending[0].1.user_id, "9");
    // The code is in the reply only (the file keeps its salted hash).
    let code = texts[0]
        .split_whitespace()
        .find(|w| {
            w.len() == 8
                && w.bytes()
                    .all(|b| hermes_gateway::auth::pairing::CODE_ALPHABET.contains(&b))
        })
        .unwrap()
        .to_string();
    assert_eq!(
        h.builds(),
        0,
        "an unauthorized message must not reach an agent"
    );
    assert!(h.mock.requests().is_empty());
    pairing.approve("telegram", &code, now_unix()).unwrap();
    gw.handle(dm("9", "hello again")).await;
    idle(&gw).await;
    assert_eq!(adapter.texts()[1], "Now I can help.");
    assert_eq!(
        h.user_texts("agent:main:telegram:dm:9"),
        vec!["hello again"]
    );
}

#[tokio::test]
async fn case_c36_display_name_on_the_allowlist_does_not_authorize_a_stranger() {
    let h = Harness::new().await;
    let (adapter, _inject) = FakeAdapter::new("simplex");
    let mut config = GatewayConfig::default();
    config.access.insert(
        "simplex".into(),
        PlatformAccess {
            allowed_users: vec!["12".into()],
            allow_all: false,
        },
    );
    let gw = h.gateway(config.clone(), adapter.clone());
    let mut msg = message(
        "simplex",
        ChatType::Dm,
        "77",
        "77",
        "run: cat ~/.ssh/id_ed25519",
    );
    msg.source.user_name = Some("alice".into());
    let authorizer =
        hermes_gateway::auth::Authorizer::new(config, PairingStore::for_home(h.home.path()));
    let contact_77_authorized = authorizer.is_allowed(&msg.source);
    gw.handle(msg).await;
    idle(&gw).await;
    let agent_invoked = h.builds() > 0 || !h.mock.requests().is_empty();
    let reply_sent = !adapter.texts().is_empty();
    assert!(!contact_77_authorized);
    assert!(!agent_invoked);
    assert!(!reply_sent);
    // No pairing code was issued either.
    let pairing = PairingStore::for_home(h.home.path());
    assert!(pairing.overview(now_unix()).unwrap().pending.is_empty());
}

/// Busy-mode tests look at answers only: no tool progress lines.
fn mode_config(mode: BusyInputMode) -> GatewayConfig {
    let mut c = open_config("telegram");
    c.busy_input_mode = mode;
    c.tool_progress = hermes_gateway::config::ToolProgress::Off;
    c
}

const FOLLOW_UPS: [&str; 3] = [
    "also bump the version",
    "and tag it v1.2",
    "skip the changelog",
];

#[tokio::test]
async fn case_c35_queue_mode_keeps_every_message_in_order() {
    let h = Harness::new().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
    h.mock.push(MockResponse::text("release built"));
    for i in 0..3 {
        h.mock
            .push(MockResponse::text(&format!("follow-up {i} done")));
    }
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(mode_config(BusyInputMode::Queue), adapter.clone());
    gw.handle(dm("5", "build the release")).await;
    h.gate().wait_entered().await;
    for text in FOLLOW_UPS {
        gw.handle(dm("5", text)).await;
    }
    h.gate().open();
    idle(&gw).await;
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 5);
    // Each queued message got its own turn after the first one, in order.
    let processed_after_turn: Vec<String> = requests[2..]
        .iter()
        .map(|r| request_users(r).last().unwrap().clone())
        .collect();
    assert_eq!(processed_after_turn, FOLLOW_UPS);
    let stored = h.user_texts("agent:main:telegram:dm:5");
    let lost = FOLLOW_UPS
        .iter()
        .filter(|t| !stored.contains(&t.to_string()))
        .count();
    assert_eq!(lost, 0);
    assert_eq!(
        adapter.texts(),
        vec![
            "release built",
            "follow-up 0 done",
            "follow-up 1 done",
            "follow-up 2 done"
        ]
    );
}

#[tokio::test]
async fn interrupt_mode_cancels_the_turn_and_runs_the_new_messages() {
    let h = Harness::new().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
    for i in 0..3 {
        h.mock.push(MockResponse::text(&format!("answer {i}")));
    }
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(mode_config(BusyInputMode::Interrupt), adapter.clone());
    gw.handle(dm("5", "build the release")).await;
    h.gate().wait_entered().await;
    for text in FOLLOW_UPS {
        gw.handle(dm("5", text)).await;
    }
    idle(&gw).await;
    // The first turn ended without an answer; every follow-up reached the model in order.
    let stored = h.user_texts("agent:main:telegram:dm:5").join("\n");
    let mut at = stored.find("build the release").unwrap();
    for text in FOLLOW_UPS {
        let pos = stored[at..].find(text).map(|p| p + at);
        assert!(pos.is_some(), "{text} lost: {stored}");
        at = pos.unwrap();
    }
    assert!(!adapter.texts().is_empty());
    assert!(adapter.texts().iter().all(|t| t.starts_with("answer")));
    for req in h.mock.requests() {
        hermes_testkit::assert_request_invariants(&[req]);
    }
    let sid = h
        .store
        .latest_session_for_key("agent:main:telegram:dm:5")
        .unwrap()
        .unwrap()
        .id;
    let history: Vec<_> = h
        .store
        .load_messages(&sid)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    hermes_agent::validate_tool_pairs(&history).unwrap();
}

#[tokio::test]
async fn steer_mode_hands_messages_to_the_running_turn() {
    let h = Harness::new().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
    h.mock.push(MockResponse::text(
        "released, version bumped, tagged, no changelog",
    ));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(mode_config(BusyInputMode::Steer), adapter.clone());
    gw.handle(dm("5", "build the release")).await;
    h.gate().wait_entered().await;
    for text in FOLLOW_UPS {
        gw.handle(dm("5", text)).await;
    }
    h.gate().open();
    idle(&gw).await;
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 2, "steered messages join the running turn");
    assert_eq!(
        request_users(&requests[1]),
        vec!["build the release".to_string(), FOLLOW_UPS.join("\n\n")]
    );
    assert_eq!(
        adapter.texts(),
        vec!["released, version bumped, tagged, no changelog"]
    );
}

#[tokio::test]
async fn steer_messages_the_turn_did_not_take_run_next() {
    let h = Harness::new().await;
    // The turn answers without another tool call after the steer arrives: the message runs
    // as its own turn afterwards.
    h.mock
        .push(MockResponse::text("first answer").with_delay(std::time::Duration::from_millis(300)));
    h.mock.push(MockResponse::text("second answer"));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(mode_config(BusyInputMode::Steer), adapter.clone());
    gw.handle(dm("5", "one")).await;
    wait_until("the model call", || !h.mock.captured().is_empty()).await;
    gw.handle(dm("5", "two")).await;
    idle(&gw).await;
    assert_eq!(h.user_texts("agent:main:telegram:dm:5"), vec!["one", "two"]);
    assert_eq!(adapter.texts(), vec!["first answer", "second answer"]);
}

#[tokio::test]
async fn commands_in_chat() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("first"));
    h.mock.push(MockResponse::text("again"));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    let key = "agent:main:telegram:dm:5";
    gw.handle(dm("5", "hello")).await;
    idle(&gw).await;
    let first = h.store.latest_session_for_key(key).unwrap().unwrap().id;
    gw.handle(dm("5", "/status")).await;
    gw.handle(dm("5", "/help")).await;
    idle(&gw).await;
    let texts = adapter.texts();
    assert!(texts[1].contains(&first), "{}", texts[1]);
    assert!(texts[2].contains("/approve"), "{}", texts[2]);
    gw.handle(dm("5", "/retry")).await;
    idle(&gw).await;
    assert_eq!(adapter.texts()[3], "again");
    assert_eq!(h.user_texts(key), vec!["hello"]);
    gw.handle(dm("5", "/undo")).await;
    idle(&gw).await;
    assert!(h.user_texts(key).is_empty());
    gw.handle(dm("5", "/new")).await;
    idle(&gw).await;
    let second = h.store.latest_session_for_key(key).unwrap().unwrap();
    assert_ne!(second.id, first);
    let old = h.store.get_session(&first).unwrap().unwrap();
    assert_eq!(old.end_reason.as_deref(), Some("user_reset"));
    gw.handle(dm("5", "/approve")).await;
    gw.handle(dm("5", "/stop")).await;
    gw.handle(dm("5", "/sethome")).await;
    idle(&gw).await;
    let texts = adapter.texts();
    let n = texts.len();
    assert_eq!(texts[n - 3], "Nothing is waiting for approval.");
    assert_eq!(texts[n - 2], "Nothing is running.");
    assert!(texts[n - 1].contains("home channel"), "{}", texts[n - 1]);
    assert_eq!(
        hermes_gateway::status::home_channels(h.home.home())["telegram"].chat_id,
        "5"
    );
}

#[tokio::test]
async fn dangerous_command_waits_for_approve_in_chat() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "terminal",
        r#"{"command":"rm -rf ./scratch"}"#,
    )]));
    h.mock.push(MockResponse::text("removed"));
    std::fs::create_dir_all(h.cwd.path().join("scratch")).unwrap();
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    gw.handle(dm("5", "clean up")).await;
    wait_until("the approval question", || {
        adapter.texts().iter().any(|t| t.contains("/approve"))
    })
    .await;
    gw.handle(dm("5", "/approve")).await;
    idle(&gw).await;
    let texts = adapter.texts();
    assert!(texts.contains(&"Approved.".to_string()), "{texts:?}");
    assert_eq!(texts.last().unwrap(), "removed");
    assert!(!h.cwd.path().join("scratch").exists());
}

#[tokio::test]
async fn restart_mid_turn_continues_with_valid_history() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("noted"));
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
    h.mock
        .push(MockResponse::text("continuing after the restart"));
    let key = "agent:main:telegram:dm:5";
    let (adapter_a, _ia) = FakeAdapter::new("telegram");
    let first = h.gateway(open_config("telegram"), adapter_a.clone());
    first.handle(dm("5", "remember the number 7")).await;
    idle(&first).await;
    first.handle(dm("5", "start the long job")).await;
    h.gate().wait_entered().await;
    // The first process is gone mid-turn (its agent never writes again); a new gateway on
    // the same home picks the conversation up. A dead process stops renewing its session
    // lease; here it is still alive, so its lease is broken as the crash would let it expire.
    let sid = h.store.latest_session_for_key(key).unwrap().unwrap().id;
    assert!(
        h.store.break_lease(&sid).unwrap(),
        "the running turn held the lease"
    );
    let (adapter_b, _ib) = FakeAdapter::new("telegram");
    let second = h.gateway(open_config("telegram"), adapter_b.clone());
    second.handle(dm("5", "are you there?")).await;
    idle(&second).await;
    assert_eq!(adapter_b.texts(), vec!["continuing after the restart"]);
    let requests = h.mock.requests();
    let last = requests.last().unwrap();
    hermes_testkit::assert_request_invariants(std::slice::from_ref(last));
    assert_eq!(
        request_users(last),
        vec![
            "remember the number 7",
            "start the long job",
            "are you there?"
        ]
    );
    let specs = h.factory.specs.lock().unwrap().clone();
    let stored = h.store.latest_session_for_key(key).unwrap().unwrap();
    assert_eq!(specs.last().unwrap().1.as_deref(), Some(stored.id.as_str()));
    first.shutdown().await;
}

#[tokio::test]
async fn config_change_rebuilds_the_agent_and_keeps_the_session() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("a"));
    h.mock.push(MockResponse::text("b"));
    h.mock.push(MockResponse::text("c"));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    for text in ["one", "two"] {
        gw.handle(dm("5", text)).await;
        idle(&gw).await;
    }
    assert_eq!(h.builds(), 1, "the cached agent serves the second message");
    *h.factory.signature.lock().unwrap() = "sig-2".into();
    gw.handle(dm("5", "three")).await;
    idle(&gw).await;
    assert_eq!(h.builds(), 2);
    assert_eq!(
        h.user_texts("agent:main:telegram:dm:5"),
        vec!["one", "two", "three"]
    );
}

#[tokio::test]
async fn history_changed_elsewhere_is_reloaded_before_the_next_turn() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("a"));
    h.mock.push(MockResponse::text("b"));
    h.mock.push(MockResponse::text("c"));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    for text in ["one", "two"] {
        gw.handle(dm("5", text)).await;
        idle(&gw).await;
    }
    // Another process undoes the last turn (history_version moves on).
    let sid = h
        .store
        .latest_session_for_key("agent:main:telegram:dm:5")
        .unwrap()
        .unwrap()
        .id;
    let rows = h.store.load_messages(&sid).unwrap();
    h.store.deactivate_messages_from(&sid, rows[2].id).unwrap();
    gw.handle(dm("5", "three")).await;
    idle(&gw).await;
    let last = h.mock.requests().last().unwrap().clone();
    assert_eq!(request_users(&last), vec!["one", "three"]);
}

#[test]
fn session_keys_match_the_shared_vectors() {
    let text =
        std::fs::read_to_string(hermes_testkit::shared_path("vectors/session_keys.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let s = &case["src"];
        let get = |k: &str| s[k].as_str().map(String::from);
        let src = hermes_gateway::MessageSource {
            platform: get("platform").unwrap(),
            chat_type: serde_json::from_value(s["chat_type"].clone()).unwrap(),
            chat_id: get("chat_id"),
            thread_id: get("thread_id"),
            user_id: get("user_id"),
            user_name: None,
        };
        let columns = [
            ("default", KeyOptions::default()),
            (
                "no_per_user",
                KeyOptions {
                    group_sessions_per_user: false,
                    ..KeyOptions::default()
                },
            ),
            (
                "profile_coder",
                KeyOptions {
                    profile: "coder".into(),
                    ..KeyOptions::default()
                },
            ),
        ];
        for (column, opts) in columns {
            assert_eq!(
                session_key(&src, &opts),
                case[column].as_str().unwrap(),
                "{column} for {s}"
            );
        }
    }
}

/// FEATURES §8 / issue 7 item 7: `/new` in a chat runs the learning loop's session-end review
/// before the session is replaced; what it saves is named in the reply.
#[tokio::test]
async fn new_in_chat_runs_the_session_end_review_first() {
    let h = Harness::new().await;
    h.factory
        .memory_interval
        .store(10, std::sync::atomic::Ordering::SeqCst);
    h.mock.push(MockResponse::text("noted"));
    h.mock.push(MockResponse::tool_calls(&[(
        "r1",
        "memory",
        r#"{"action":"add","content":"Ada deploys on Fridays"}"#,
    )]));
    h.mock.push(MockResponse::text("Saved."));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    gw.handle(dm("5", "I am Ada and I deploy on Fridays")).await;
    idle(&gw).await;
    gw.handle(dm("5", "/new")).await;
    idle(&gw).await;
    let texts = adapter.texts();
    assert_eq!(texts[0], "noted");
    assert_eq!(texts[1], "Started a new session. (memory updated)");
    assert_eq!(h.mock.requests().len(), 3);
    let memory = std::fs::read_to_string(h.home.home().memories_dir().join("MEMORY.md")).unwrap();
    assert!(memory.contains("Ada deploys on Fridays"), "{memory}");
}

/// Counts the gateway's calls of its process-level memory release.
#[derive(Default)]
struct CountReleases(std::sync::atomic::AtomicUsize);

impl hermes_gateway::MemoryRelease for CountReleases {
    fn release(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn idle_gateway_releases_memory_once_after_its_turns_end() {
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    let h = Harness::new().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
    h.mock.push(MockResponse::text("done"));
    h.mock.push(MockResponse::text("again"));
    let (adapter, inject) = FakeAdapter::new("telegram");
    let mut config = mode_config(BusyInputMode::Queue);
    config.idle_release_after = Some(Duration::from_millis(500));
    let gw = h.gateway(config, adapter.clone());
    let releases = std::sync::Arc::new(CountReleases::default());
    gw.set_memory_release(releases.clone());
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let (gw, cancel) = (gw.clone(), cancel.clone());
        async move { gw.run(cancel).await }
    });
    inject.send(dm("8", "a long job")).await.unwrap();
    h.gate().wait_entered().await;
    assert_eq!(
        gw.activity().busy_count(),
        1,
        "the session's worker is busy"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        releases.0.load(Ordering::SeqCst),
        0,
        "nothing is released while a turn runs"
    );
    h.gate().open();
    wait_until("the reply", || adapter.texts() == ["done"]).await;
    wait_until("the idle release", || {
        releases.0.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(releases.0.load(Ordering::SeqCst), 1, "once per idle period");
    inject.send(dm("8", "and now?")).await.unwrap();
    wait_until("the second reply", || adapter.texts().len() == 2).await;
    wait_until("the next idle release", || {
        releases.0.load(Ordering::SeqCst) == 2
    })
    .await;
    assert_eq!(h.user_texts("agent:main:telegram:dm:8").len(), 2);
    cancel.cancel();
    runner.await.unwrap().unwrap();
}
