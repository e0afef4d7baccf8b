//! Home Assistant adapter against loopback fakes of its websocket API and REST API.
//!
//! Payload sources: developers.home-assistant.io, "WebSocket API" (`auth_required` with
//! `ha_version`, `auth` with `access_token`, `auth_ok` / `auth_invalid` with `message`,
//! `subscribe_events` with `event_type` answered `{"id", "type": "result", "success": true,
//! "result": null}`, `{"id", "type": "event", "event": {"event_type": "state_changed",
//! "data": {"entity_id", "old_state", "new_state"}, "origin", "time_fired"}}`, state objects
//! with `entity_id`, `state`, `attributes`, `last_changed`) and "REST API" (`POST
//! /api/services/<domain>/<service>` with `Authorization: Bearer`, answered with the
//! changed states as a JSON list).
#![cfg(feature = "homeassistant")]
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::auth::Authorizer;
use hermes_gateway::auth::pairing::PairingStore;
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::platforms::homeassistant::EVENTS_CHAT;
use hermes_gateway::{
    ChatTarget, ChatType, HomeAssistantAdapter, HomeAssistantSettings, InboundMessage,
    PlatformAdapter, PlatformError,
};
use serde_json::{Value, json};
use support::{FakeConn, HttpFake, Reaction, Recorded, WsServer, ok_json, status_json, within};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "ha-long-lived-token";

fn ha_ws(v: &Value) -> Reaction {
    let reply = match v["type"].as_str() {
        Some("auth") if v["access_token"] == TOKEN => {
            Some(json!({"type": "auth_ok", "ha_version": "2025.1.0"}))
        }
        Some("auth") => {
            Some(json!({"type": "auth_invalid", "message": "Invalid access token or password"}))
        }
        Some("subscribe_events") => {
            Some(json!({"id": v["id"], "type": "result", "success": true, "result": null}))
        }
        _ => None,
    };
    Reaction {
        reply,
        forward: true,
    }
}

fn rest(r: &Recorded) -> support::Answer {
    if r.header("authorization").as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return status_json(401, json!({"message": "401: Unauthorized"}));
    }
    ok_json(json!([]))
}

struct Harness {
    ws: WsServer,
    rest: HttpFake,
    adapter: Arc<HomeAssistantAdapter>,
    inbound: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), PlatformError>>,
}

async fn start(token: &str) -> Harness {
    let ws = WsServer::start(ha_ws).await;
    let rest = HttpFake::start(rest).await;
    let mut s = HomeAssistantSettings::new(rest.url.clone(), token);
    s.websocket_url = Some(format!("{}/api/websocket", ws.url));
    s.watch_domains = vec!["binary_sensor".into()];
    s.watch_entities = vec!["lock.front".into()];
    s.ignore_entities = vec!["binary_sensor.garage".into()];
    s.reconnect_initial = Duration::from_millis(10);
    s.reconnect_max = Duration::from_millis(50);
    let adapter = Arc::new(HomeAssistantAdapter::new(s).unwrap());
    let (tx, inbound) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    let run = tokio::spawn(async move { a.run(tx, c).await });
    Harness {
        ws,
        rest,
        adapter,
        inbound,
        cancel,
        run,
    }
}

impl Harness {
    async fn next(&mut self) -> InboundMessage {
        within("an inbound message", self.inbound.recv())
            .await
            .expect("adapter running")
    }

    /// Accepts a connection and runs the handshake up to the subscription.
    async fn connect(&mut self) -> FakeConn {
        let mut conn = self.ws.next_conn().await;
        conn.send(json!({"type": "auth_required", "ha_version": "2025.1.0"}));
        let auth = conn.recv().await;
        assert_eq!(auth, json!({"type": "auth", "access_token": TOKEN}));
        let sub = conn.recv().await;
        assert_eq!(sub["type"], "subscribe_events");
        assert_eq!(sub["event_type"], "state_changed");
        conn
    }
}

fn state(entity: &str, s: &str, attrs: Value) -> Value {
    json!({"entity_id": entity, "state": s, "attributes": attrs,
        "last_changed": format!("2025-01-01T10:00:{:02}+00:00", s.len()), "context": {"id": "c1"}})
}

fn change(entity: &str, old: &str, new: &str, name: &str) -> Value {
    json!({"id": 1, "type": "event", "event": {"event_type": "state_changed", "origin": "LOCAL",
        "time_fired": "2025-01-01T10:00:00+00:00",
        "data": {"entity_id": entity, "old_state": state(entity, old, json!({})),
                 "new_state": state(entity, new, json!({"friendly_name": name}))}}})
}

#[tokio::test]
async fn watched_state_changes_arrive_as_system_messages_and_answers_become_notifications() {
    let mut h = start(TOKEN).await;
    let conn = h.connect().await;
    conn.send_raw("{nonsense");
    conn.send(json!({"id": 1, "type": "event", "event": {"event_type": "state_changed"}}));
    conn.send(change("light.kitchen", "off", "on", "Kitchen"));
    conn.send(change("binary_sensor.garage", "off", "on", "Garage"));
    conn.send(change("binary_sensor.door", "off", "on", "Front door"));
    // The same entity again within the cooldown is dropped.
    conn.send(change("binary_sensor.door", "on", "off", "Front door"));
    conn.send(change("lock.front", "locked", "unlocked", "Front lock"));
    let m = h.next().await;
    assert_eq!(
        m.text,
        "[Home Assistant] Front door: triggered (was cleared)"
    );
    assert_eq!(m.source.platform, "homeassistant");
    assert_eq!(m.source.chat_type, ChatType::Channel);
    assert_eq!(m.source.chat_id.as_deref(), Some(EVENTS_CHAT));
    assert_eq!(m.source.user_id.as_deref(), Some("homeassistant"));
    let m2 = h.next().await;
    assert_eq!(
        m2.text,
        "[Home Assistant] Front lock (lock.front): changed from 'locked' to 'unlocked'"
    );
    assert_ne!(m.message_id, m2.message_id);
    // The gateway lets these system messages through with no allowlist, as Python Hermes does.
    let home = tempfile::tempdir().unwrap();
    let auth = Authorizer::new(GatewayConfig::default(), PairingStore::new(home.path()));
    assert!(auth.is_allowed(&m.source));
    let mut stranger = m.source.clone();
    stranger.user_id = Some("someone".into());
    assert!(!auth.is_allowed(&stranger));

    let events = ChatTarget {
        chat_id: EVENTS_CHAT.into(),
        thread_id: None,
        reply_to: m.message_id.clone(),
    };
    h.adapter
        .send(&events, "The front door opened.")
        .await
        .unwrap();
    let phone = ChatTarget {
        chat_id: "mobile_app_phone".into(),
        thread_id: None,
        reply_to: None,
    };
    h.adapter.send(&phone, "Backup finished").await.unwrap();
    let created = h
        .rest
        .requests_to("/api/services/persistent_notification/create");
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0].json(),
        json!({"title": "Hermes Agent", "message": "The front door opened."})
    );
    let notified = h.rest.requests_to("/api/services/notify/notify");
    assert_eq!(
        notified[0].json(),
        json!({"message": "Backup finished", "target": "mobile_app_phone"})
    );
    let e = h
        .adapter
        .edit(
            &events,
            &hermes_gateway::SentMessage {
                message_id: "x".into(),
            },
            "y",
        )
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::Unsupported { .. }));
    h.cancel.cancel();
}

#[tokio::test]
async fn a_dropped_websocket_reconnects_and_subscribes_again() {
    let mut h = start(TOKEN).await;
    let conn = h.connect().await;
    conn.drop_connection();
    let conn = h.connect().await;
    conn.send(change("binary_sensor.window", "off", "on", "Window"));
    assert_eq!(
        h.next().await.text,
        "[Home Assistant] Window: triggered (was cleared)"
    );
    h.cancel.cancel();
    within("the adapter to stop", &mut h.run)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_refused_token_stops_the_adapter_and_sends_fail_with_auth_errors() {
    let mut h = start("wrong").await;
    let mut conn = h.ws.next_conn().await;
    conn.send(json!({"type": "auth_required", "ha_version": "2025.1.0"}));
    assert_eq!(conn.recv().await["type"], "auth");
    let result = within("the adapter to stop", &mut h.run).await.unwrap();
    assert!(
        matches!(result, Err(PlatformError::Auth { .. })),
        "{result:?}"
    );
    let target = ChatTarget {
        chat_id: EVENTS_CHAT.into(),
        thread_id: None,
        reply_to: None,
    };
    let e = h.adapter.send(&target, "x").await.unwrap_err();
    assert!(matches!(e, PlatformError::Auth { .. }), "{e}");
}
