//! Discord and Slack end to end: the loopback platform fakes, the real adapters, the gateway
//! core and the mock model (issue 7, "How it is checked": DM → reply; a group with two users
//! → two sessions; an allowlisted platform ignores strangers; a long reply → chunks within
//! the platform limit).
#![cfg(all(feature = "discord", feature = "slack"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod support;

use std::sync::Arc;

use common::{Harness, open_config, wait_until};
use hermes_gateway::config::{GatewayConfig, PlatformAccess};
use hermes_gateway::{
    DiscordAdapter, DiscordSettings, Gateway, PlatformAdapter, SlackAdapter, SlackSettings,
};
use hermes_testkit::MockResponse;
use serde_json::{Value, json};
use support::{
    HttpFake, Reaction, Recorded, WsServer, discord_heartbeat_ack, ok_json, status_json,
};
use tokio_util::sync::CancellationToken;

fn discord_rest(ws_url: String) -> impl Fn(&Recorded) -> support::Answer + Send + Sync {
    let n = std::sync::atomic::AtomicU64::new(1);
    move |r: &Recorded| {
        let parts: Vec<&str> = r.path.trim_start_matches('/').split('/').collect();
        match (r.method.as_str(), parts.as_slice()) {
            ("GET", ["gateway", "bot"]) => ok_json(json!({"url": ws_url})),
            ("GET", ["channels", id]) => ok_json(json!({"id": id, "type": 0})),
            ("POST", ["channels", _, "messages"]) => {
                let id = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                ok_json(json!({"id": format!("out-{id}")}))
            }
            ("PATCH", ["channels", _, "messages", mid]) => ok_json(json!({"id": mid})),
            ("POST", ["channels", _, "typing"]) => {
                (axum::http::StatusCode::NO_CONTENT, vec![], vec![])
            }
            _ => status_json(404, json!({"message": "Unknown"})),
        }
    }
}

fn discord_message(id: &str, channel: &str, user: &str, guild: bool, text: &str) -> Value {
    let mut d = json!({"id": id, "channel_id": channel, "type": 0, "content": text,
                       "author": {"id": user, "username": format!("u{user}")}});
    if guild {
        d["guild_id"] = json!("guild-1");
    }
    json!({"op": 0, "t": "MESSAGE_CREATE", "s": 2, "d": d})
}

struct Discord {
    ws: WsServer,
    rest: HttpFake,
    adapter: Arc<DiscordAdapter>,
    _media: tempfile::TempDir,
}

async fn discord() -> Discord {
    let ws = WsServer::start(discord_heartbeat_ack).await;
    let rest = HttpFake::start(discord_rest(ws.url.clone())).await;
    let media = tempfile::tempdir().unwrap();
    let mut settings = DiscordSettings::new("tok", media.path());
    settings.api_base_url = rest.url.clone();
    let adapter = Arc::new(DiscordAdapter::new(settings).unwrap());
    Discord {
        ws,
        rest,
        adapter,
        _media: media,
    }
}

fn serve(
    h: &Harness,
    config: GatewayConfig,
    adapter: Arc<dyn PlatformAdapter>,
) -> (Gateway, CancellationToken) {
    let gw = Gateway::new(
        config,
        vec![adapter],
        h.factory.clone(),
        h.store.clone(),
        h.home.home().clone(),
    );
    let cancel = CancellationToken::new();
    let (g, c) = (gw.clone(), cancel.clone());
    tokio::spawn(async move { g.run(c).await });
    (gw, cancel)
}

fn posted(rest: &HttpFake, channel: &str) -> Vec<Value> {
    rest.requests_to(&format!("/channels/{channel}/messages"))
        .iter()
        .filter(|r| r.method == "POST")
        .map(Recorded::json)
        .collect()
}

#[tokio::test]
async fn discord_dm_gets_a_reply_and_two_group_users_get_two_sessions() {
    let h = Harness::new().await;
    for text in ["Hello from hermes.", "Hi 43.", "Hi 44."] {
        h.mock.push(MockResponse::text(text));
    }
    let mut d = discord().await;
    let (_gw, cancel) = serve(&h, open_config("discord"), d.adapter.clone());
    let mut conn = d.ws.next_conn().await;
    conn.send(json!({"op": 10, "d": {"heartbeat_interval": 45000}}));
    assert_eq!(conn.recv().await["op"], 2);
    conn.send(json!({"op": 0, "t": "READY", "s": 1, "d": {"session_id": "s", "resume_gateway_url": d.ws.url, "user": {"id": "bot"}}}));

    conn.send(discord_message("m1", "dm-chan", "42", false, "hi"));
    wait_until("the DM reply", || !posted(&d.rest, "dm-chan").is_empty()).await;
    let reply = &posted(&d.rest, "dm-chan")[0];
    assert_eq!(reply["content"], "Hello from hermes.");
    assert_eq!(reply["message_reference"]["message_id"], "m1");
    assert!(
        h.store
            .latest_session_for_key("agent:main:discord:dm:dm-chan")
            .unwrap()
            .is_some()
    );

    conn.send(discord_message("m2", "chan-1", "43", true, "<@bot> hello"));
    wait_until("the first group reply", || {
        posted(&d.rest, "chan-1").len() == 1
    })
    .await;
    conn.send(discord_message(
        "m3",
        "chan-1",
        "44",
        true,
        "<@bot> hello too",
    ));
    wait_until("the second group reply", || {
        posted(&d.rest, "chan-1").len() == 2
    })
    .await;
    for user in ["43", "44"] {
        let key = format!("agent:main:discord:group:chan-1:{user}");
        assert!(
            h.store.latest_session_for_key(&key).unwrap().is_some(),
            "{key}"
        );
    }
    cancel.cancel();
}

#[tokio::test]
async fn discord_with_an_allowlist_ignores_strangers_and_splits_long_replies() {
    let h = Harness::new().await;
    let long: String = (0..120)
        .map(|i| format!("Paragraph {i} says something fairly long here.\n\n"))
        .collect();
    h.mock.push(MockResponse::text(&long));
    let mut d = discord().await;
    let mut config = GatewayConfig::default();
    config.access.insert(
        "discord".into(),
        PlatformAccess {
            allowed_users: vec!["42".into()],
            allow_all: false,
        },
    );
    let (_gw, cancel) = serve(&h, config, d.adapter.clone());
    let mut conn = d.ws.next_conn().await;
    conn.send(json!({"op": 10, "d": {"heartbeat_interval": 45000}}));
    assert_eq!(conn.recv().await["op"], 2);
    conn.send(json!({"op": 0, "t": "READY", "s": 1, "d": {"session_id": "s", "resume_gateway_url": d.ws.url, "user": {"id": "bot"}}}));

    conn.send(discord_message(
        "m1",
        "stranger-dm",
        "77",
        false,
        "let me in",
    ));
    conn.send(discord_message("m2", "dm-chan", "42", false, "write a lot"));
    let total: usize = long.matches("Paragraph").count();
    let sent = |rest: &HttpFake| -> String {
        posted(rest, "dm-chan")
            .iter()
            .map(|c| c["content"].as_str().unwrap().to_owned())
            .collect()
    };
    wait_until("every chunk of the long reply", || {
        sent(&d.rest).matches("Paragraph").count() == total
    })
    .await;
    let chunks = posted(&d.rest, "dm-chan");
    assert!(chunks.len() > 1, "split into {} chunks", chunks.len());
    for c in &chunks {
        let n = c["content"].as_str().unwrap().chars().count();
        assert!(n <= 2000, "chunk of {n} chars");
    }
    assert!(
        posted(&d.rest, "stranger-dm").is_empty(),
        "strangers get no reply"
    );
    assert_eq!(
        h.mock.requests().len(),
        1,
        "only the allowed user reached the model"
    );
    cancel.cancel();
}

#[tokio::test]
async fn slack_dm_gets_a_reply_in_its_thread() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("Hello from hermes."));
    let mut ws = WsServer::start(|_| Reaction {
        reply: None,
        forward: true,
    })
    .await;
    let ws_url = ws.url.clone();
    let web = HttpFake::start(move |r| match r.path.as_str() {
        "/apps.connections.open" => ok_json(json!({"ok": true, "url": ws_url})),
        "/auth.test" => ok_json(json!({"ok": true, "user_id": "UBOT"})),
        "/users.info" => ok_json(json!({"ok": true, "user": {"name": "ann"}})),
        "/chat.postMessage" => ok_json(json!({"ok": true, "ts": "9.9"})),
        "/chat.update" => ok_json(json!({"ok": true})),
        _ => ok_json(json!({"ok": false, "error": "unknown_method"})),
    })
    .await;
    let media = tempfile::tempdir().unwrap();
    let mut settings = SlackSettings::new("xoxb-1", "xapp-1", media.path());
    settings.api_base_url = web.url.clone();
    let adapter = Arc::new(SlackAdapter::new(settings).unwrap());
    let (_gw, cancel) = serve(&h, open_config("slack"), adapter);
    let mut conn = ws.next_conn().await;
    conn.send(json!({"type": "hello"}));
    conn.send(
        json!({"envelope_id": "e1", "type": "events_api", "payload": {"event": {
        "type": "message", "channel": "D1", "channel_type": "im", "user": "U42",
        "ts": "5.0", "thread_ts": "4.0", "text": "hi"}}}),
    );
    assert_eq!(conn.recv().await, json!({"envelope_id": "e1"}));
    wait_until("the reply", || {
        !web.requests_to("/chat.postMessage").is_empty()
    })
    .await;
    let body = web.requests_to("/chat.postMessage")[0].json();
    assert_eq!(body["channel"], "D1");
    assert_eq!(body["thread_ts"], "4.0");
    assert_eq!(body["text"], "Hello from hermes.");
    assert!(
        h.store
            .latest_session_for_key("agent:main:slack:dm:D1:4.0")
            .unwrap()
            .is_some()
    );
    cancel.cancel();
}
