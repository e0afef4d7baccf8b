//! The Matrix adapter against a real homeserver (Synapse from PyPI on loopback), through the
//! gateway core and the mock model (issue 22 item 3, "How it is checked"): an allowed user's
//! invite is accepted and their DM answered with HTML; in a room only a mention is answered,
//! in a thread; a stranger is paired in a DM or refused with an allowlist; a long answer
//! arrives in chunks within the limit, streaming edits with `m.replace`; files go both ways
//! through the content repository; an encrypted room is told once; a restart replays nothing
//! and loses nothing.
#![cfg(feature = "matrix")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod matrix_support;

use std::path::PathBuf;
use std::sync::Arc;

use common::{Harness, wait_until};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::{Gateway, MatrixAdapter, MatrixSettings, PlatformAdapter};
use hermes_testkit::MockResponse;
use matrix_support::{Synapse, synapse_venv};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const BOT: &str = "@hermes:localhost";

fn settings(hs: &Synapse, h: &Harness, allowed: &[&str]) -> MatrixSettings {
    let mut s = MatrixSettings::new(&hs.url, "");
    s.access_token = None;
    s.user_id = Some(BOT.into());
    s.password = Some("hermes-pw".into());
    s.allowed_users = allowed.iter().map(|u| u.to_string()).collect();
    s.pair_strangers = allowed.is_empty();
    s.media_dir = h.home.home().cache_dir().join("media");
    s.state_file = Some(state_file(h));
    s.poll_timeout = std::time::Duration::from_secs(5);
    s
}

fn state_file(h: &Harness) -> PathBuf {
    h.home
        .home()
        .root()
        .join("gateway")
        .join("matrix_state.json")
}

/// The gateway config from the environment, as `hermes gateway run` reads it.
fn allow(users: &[&str], streaming: bool) -> GatewayConfig {
    let env = [("MATRIX_ALLOWED_USERS".to_string(), users.join(","))]
        .into_iter()
        .collect();
    let mut c = GatewayConfig::from_config(&hermes_protocol::config::Config::default(), &env, None)
        .unwrap()
        .0;
    c.streaming = streaming;
    c
}

struct Running {
    gw: Gateway,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops the gateway and waits for it.
    async fn stop(mut self) {
        self.cancel.cancel();
        self.gw.shutdown().await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn serve(h: &Harness, config: GatewayConfig, settings: MatrixSettings) -> Running {
    let adapter = Arc::new(MatrixAdapter::new(settings).unwrap());
    let gw = Gateway::new(
        config,
        vec![adapter.clone() as Arc<dyn PlatformAdapter>],
        h.factory.clone(),
        h.store.clone(),
        h.home.home().clone(),
    );
    let cancel = CancellationToken::new();
    let (g, c) = (gw.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let _ = g.run(c).await;
    });
    let a = adapter.clone();
    wait_until("the bot's first sync", || a.is_connected()).await;
    Running {
        gw,
        cancel,
        task: Some(task),
    }
}

async fn server() -> Option<Synapse> {
    let venv = synapse_venv()?;
    let hs = Synapse::start(&venv).await;
    hs.register("hermes").await;
    Some(hs)
}

fn body(m: &Value) -> &str {
    m["content"]["body"].as_str().unwrap_or("")
}

/// True for the last chunk of a split answer (it ends with ` (n/n)`).
fn last_chunk(m: &Value) -> bool {
    let b = body(m);
    b.rsplit_once('(')
        .and_then(|(_, tail)| tail.strip_suffix(')'))
        .and_then(|t| t.split_once('/'))
        .is_some_and(|(i, n)| i == n && i.parse::<u32>().is_ok())
}

fn answers(msgs: &[Value]) -> Vec<&Value> {
    msgs.iter()
        .filter(|m| m["content"]["msgtype"] == "m.text")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_users_dm_is_answered_in_html_and_a_room_only_when_mentioned() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    let carol = hs.user("carol").await;
    h.mock.push(MockResponse::text("**Hello** from hermes"));
    h.mock.push(MockResponse::text("In the thread."));
    let bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    let dm = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm, BOT).await;
    alice.say(&dm, "hi").await;
    let answer = alice
        .wait_message(&dm, BOT, "the DM answer", |m| {
            body(m).contains("from hermes")
        })
        .await;
    assert_eq!(body(&answer), "Hello from hermes");
    assert_eq!(answer["content"]["format"], "org.matrix.custom.html");
    assert!(
        answer["content"]["formatted_body"]
            .as_str()
            .unwrap()
            .contains("<strong>Hello</strong>"),
        "{answer}"
    );
    let key = format!("agent:main:matrix:dm:{dm}");
    assert_eq!(h.user_texts(&key), vec!["hi"]);

    // A room of three: not addressed, silence; addressed, an answer in a thread.
    let room = alice
        .create_room(&[BOT, &carol.user_id], false, false)
        .await;
    carol.join(&room).await;
    alice.wait_joined(&room, BOT).await;
    alice.say(&room, "hello everyone").await;
    let asked = alice.say(&room, "hermes: what is new?").await;
    let threaded = alice
        .wait_message(&room, BOT, "the room answer", |m| {
            body(m) == "In the thread."
        })
        .await;
    assert_eq!(threaded["content"]["m.relates_to"]["rel_type"], "m.thread");
    assert_eq!(threaded["content"]["m.relates_to"]["event_id"], asked);
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 2, "one model call per addressed message");
    assert_eq!(
        common::request_users(&requests[1])
            .last()
            .map(String::as_str),
        Some("what is new?"),
        "the mention is removed"
    );
    bot.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_is_paired_in_a_dm_and_refused_when_an_allowlist_is_set() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let mallory = hs.user("mallory").await;
    // No allowlist: a direct invite is accepted and the DM gets a pairing code.
    let bot = serve(&h, GatewayConfig::default(), settings(&hs, &h, &[])).await;
    let dm = mallory.create_room(&[BOT], true, false).await;
    mallory.wait_joined(&dm, BOT).await;
    mallory.say(&dm, "hello").await;
    mallory
        .wait_message(&dm, BOT, "the pairing code", |m| {
            body(m).contains("hermes pairing approve matrix")
        })
        .await;
    assert!(
        h.mock.requests().is_empty(),
        "a stranger never reaches the agent"
    );
    bot.stop().await;

    // With an allowlist, a stranger's invite is not accepted and nothing is answered.
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    h.mock.push(MockResponse::text("for alice only"));
    let _bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    let refused = mallory.create_room(&[BOT], true, false).await;
    let dm = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm, BOT).await;
    alice.say(&dm, "hi").await;
    alice
        .wait_message(&dm, BOT, "alice's answer", |m| body(m) == "for alice only")
        .await;
    assert_eq!(
        mallory.membership(&refused, BOT).await.as_deref(),
        Some("invite"),
        "the stranger's invite was not accepted"
    );
    assert_eq!(h.mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_answers_arrive_in_chunks_and_streaming_edits_the_message() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    let paragraph = "Matrix 👩‍👩‍👧 chunking works: ünïcödé stays whole. ".repeat(6);
    let long = format!("{paragraph}\n\n{paragraph}\n\n{paragraph}\n\n{paragraph}");
    h.mock.push(MockResponse::text(&long));
    let mut s = settings(&hs, &h, &[&alice.user_id]);
    s.max_message_chars = 500;
    let bot = serve(&h, allow(&[&alice.user_id], false), s).await;
    let dm = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm, BOT).await;
    alice.say(&dm, "tell me a lot").await;
    alice
        .wait_message(&dm, BOT, "the last chunk", last_chunk)
        .await;
    let msgs = alice.messages_from(&dm, BOT).await;
    let parts = answers(&msgs);
    assert!(parts.len() >= 2, "{parts:#?}");
    for p in &parts {
        assert!(
            body(p).chars().count() <= 500,
            "a chunk over the limit: {}",
            body(p).chars().count()
        );
        assert!(!body(p).contains('\u{FFFD}'), "broken UTF-8");
        let families = body(p).matches("👩‍👩‍👧").count();
        assert_eq!(
            body(p).matches('👧').count(),
            families,
            "a family emoji was split"
        );
        assert_eq!(
            body(p).matches('👩').count(),
            2 * families,
            "a family emoji was split"
        );
    }
    bot.stop().await;

    // Streaming: the answer is one message edited (m.replace with m.new_content).
    let h = Harness::new().await;
    h.mock.push(MockResponse::text(
        "Streaming answer with several words in it.",
    ));
    let _bot = serve(
        &h,
        allow(&[&alice.user_id], true),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    let dm2 = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm2, BOT).await;
    alice.say(&dm2, "stream please").await;
    let edit = alice
        .wait_message(&dm2, BOT, "the final edit", |m| {
            m["content"]["m.new_content"]["body"] == "Streaming answer with several words in it."
        })
        .await;
    assert_eq!(edit["content"]["m.relates_to"]["rel_type"], "m.replace");
    let original = edit["content"]["m.relates_to"]["event_id"]
        .as_str()
        .unwrap();
    let msgs = alice.messages_from(&dm2, BOT).await;
    assert!(
        msgs.iter().any(|m| m["event_id"] == original),
        "the edit replaces our message"
    );
    let fresh: Vec<_> = msgs
        .iter()
        .filter(|m| m["content"]["m.relates_to"]["rel_type"] != "m.replace")
        .collect();
    assert_eq!(fresh.len(), 1, "one message, then edits: {msgs:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_go_both_ways_through_the_content_repository() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    let out_dir = h.home.home().cache_dir().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let report = out_dir.join("report.txt");
    std::fs::write(&report, b"the report body").unwrap();
    h.mock.push(MockResponse::text(&format!(
        "Here it is MEDIA:{}",
        report.display()
    )));
    let _bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    let dm = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm, BOT).await;
    let mxc = alice
        .upload(b"hello file".to_vec(), "notes.txt", "text/plain")
        .await;
    alice
        .send_event(
            &dm,
            "m.room.message",
            json!({"msgtype": "m.file", "body": "notes.txt", "url": mxc, "info": {"mimetype": "text/plain", "size": 10}}),
        )
        .await;
    let file = alice
        .wait_message(&dm, BOT, "the file answer", |m| {
            m["content"]["msgtype"] == "m.file"
        })
        .await;
    let url = file["content"]["url"].as_str().unwrap();
    assert!(url.starts_with("mxc://localhost/"), "{file}");
    assert_eq!(alice.download(url).await, b"the report body");
    let asked = common::request_users(&h.mock.requests()[0]).join("\n");
    let saved = asked
        .split("[attached document: ")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or_else(|| panic!("no attachment in {asked}"));
    assert_eq!(std::fs::read(saved).unwrap(), b"hello file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_room_is_told_once_and_its_messages_are_not_answered() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    h.mock.push(MockResponse::text("plain answer"));
    h.mock.push(MockResponse::text("after the restart"));
    let bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    let room = alice.create_room(&[BOT], true, true).await;
    alice.wait_joined(&room, BOT).await;
    let encrypted = json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAc", "sender_key": "k", "device_id": "D", "session_id": "s"});
    alice
        .send_event(&room, "m.room.encrypted", encrypted.clone())
        .await;
    alice
        .wait_message(&room, BOT, "the encryption notice", |m| {
            m["content"]["msgtype"] == "m.notice" && body(m).contains("end-to-end encrypted")
        })
        .await;
    alice
        .send_event(&room, "m.room.encrypted", encrypted.clone())
        .await;
    // A plain DM afterwards proves the encrypted events were processed before it.
    let dm = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm, BOT).await;
    alice.say(&dm, "hi").await;
    alice
        .wait_message(&dm, BOT, "the DM answer", |m| body(m) == "plain answer")
        .await;
    bot.stop().await;
    // After a restart the room is not told again.
    let _bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    alice.send_event(&room, "m.room.encrypted", encrypted).await;
    alice.say(&dm, "again").await;
    alice
        .wait_message(&dm, BOT, "the answer after the restart", |m| {
            body(m) == "after the restart"
        })
        .await;
    let notices = alice
        .messages_from(&room, BOT)
        .await
        .into_iter()
        .filter(|m| m["content"]["msgtype"] == "m.notice")
        .count();
    assert_eq!(notices, 1, "told once");
    assert_eq!(
        h.mock.requests().len(),
        2,
        "encrypted messages never reach the agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_replays_nothing_and_loses_nothing() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    h.mock.push(MockResponse::text("first answer"));
    h.mock.push(MockResponse::text("second answer"));
    let bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    let dm = alice.create_room(&[BOT], true, false).await;
    alice.wait_joined(&dm, BOT).await;
    alice.say(&dm, "one").await;
    alice
        .wait_message(&dm, BOT, "the first answer", |m| body(m) == "first answer")
        .await;
    bot.stop().await;
    let saved = std::fs::read_to_string(state_file(&h)).unwrap();
    assert!(saved.contains("\"since\""), "{saved}");
    // Sent while the gateway is down.
    alice.say(&dm, "two").await;
    let _bot = serve(
        &h,
        allow(&[&alice.user_id], false),
        settings(&hs, &h, &[&alice.user_id]),
    )
    .await;
    alice
        .wait_message(&dm, BOT, "the second answer", |m| {
            body(m) == "second answer"
        })
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let msgs = alice.messages_from(&dm, BOT).await;
    let texts: Vec<&str> = answers(&msgs).into_iter().map(body).collect();
    assert_eq!(
        texts,
        vec!["first answer", "second answer"],
        "nothing twice, nothing lost"
    );
    let key = format!("agent:main:matrix:dm:{dm}");
    assert_eq!(h.user_texts(&key), vec!["one", "two"]);
    assert_eq!(h.mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_id_target_opens_one_direct_chat() {
    let Some(hs) = server().await else { return };
    let h = Harness::new().await;
    let alice = hs.user("alice").await;
    // Sending only (as `hermes send -t matrix:@alice:localhost` does): no sync loop runs.
    let adapter = MatrixAdapter::new(settings(&hs, &h, &[])).unwrap();
    let to_alice = hermes_gateway::ChatTarget {
        chat_id: alice.user_id.clone(),
        thread_id: None,
        reply_to: None,
    };
    adapter.send(&to_alice, "first").await.unwrap();
    adapter.send(&to_alice, "second").await.unwrap();
    // A fresh adapter (another `hermes send`) finds the same room, before and after she
    // joined it.
    let again = MatrixAdapter::new(settings(&hs, &h, &[])).unwrap();
    again.send(&to_alice, "third").await.unwrap();
    let invites = alice.invites().await;
    assert_eq!(invites.len(), 1, "one direct chat: {invites:?}");
    alice.join(&invites[0]).await;
    let later = MatrixAdapter::new(settings(&hs, &h, &[])).unwrap();
    later.send(&to_alice, "fourth").await.unwrap();
    let msgs = alice.messages_from(&invites[0], BOT).await;
    let texts: Vec<&str> = answers(&msgs).into_iter().map(body).collect();
    assert_eq!(texts, vec!["first", "second", "third", "fourth"]);
}
