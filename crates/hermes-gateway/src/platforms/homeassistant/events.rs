//! Home Assistant's websocket API (developers.home-assistant.io, "WebSocket API"):
//! `auth_required` → `{"type": "auth", "access_token": …}` → `auth_ok` (or
//! `auth_invalid`), then `{"id": 1, "type": "subscribe_events", "event_type":
//! "state_changed"}` answered by a `result`, then `{"type": "event", "event": {"event_type":
//! "state_changed", "data": {"entity_id", "old_state", "new_state"}}}` frames. Which changes
//! reach the agent and how they read are Python Hermes' (`plugins/platforms/homeassistant`):
//! watched domains or entities (or everything with `watch_all`), ignored entities, a
//! per-entity cooldown, and one line per change such as `[Home Assistant] Front door:
//! triggered (was cleared)`.

use std::collections::HashMap;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::{EVENTS_CHAT, HomeAssistantAdapter, HomeAssistantSettings, PLATFORM, SYSTEM_USER};
use crate::error::PlatformError;
use crate::platform::{ChatType, InboundMessage, MessageSource};

const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// How a connection ended without a fatal error.
pub(crate) enum Outcome {
    /// Cancelled, or nobody listens any more.
    Stop,
    /// Connect again; `healthy` when the subscription was confirmed.
    Reconnect { healthy: bool, reason: String },
}

/// The line the agent gets for a state change, or `None` when the state did not change.
pub(crate) fn describe(entity_id: &str, old: &Value, new: &Value) -> Option<String> {
    if !new.is_object() {
        return None;
    }
    let state = |v: &Value| {
        v.get("state")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string()
    };
    let old_val = if old.is_object() {
        state(old)
    } else {
        "unknown".into()
    };
    let new_val = state(new);
    if old_val == new_val {
        return None;
    }
    let attrs = new.get("attributes").cloned().unwrap_or(Value::Null);
    let attr = |k: &str| match attrs.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    };
    let name = Some(attr("friendly_name"))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| entity_id.to_string());
    let domain = entity_id
        .split_once('.')
        .map(|(d, _)| d)
        .unwrap_or_default();
    let on_off = |v: &str, on: &'static str, off: &'static str| if v == "on" { on } else { off };
    Some(match domain {
        "climate" => {
            let or_q = |s: String| if s.is_empty() { "?".to_string() } else { s };
            format!(
                "[Home Assistant] {name}: HVAC mode changed from '{old_val}' to '{new_val}' (current: {}, target: {})",
                or_q(attr("current_temperature")),
                or_q(attr("temperature"))
            )
        }
        "sensor" => {
            let unit = attr("unit_of_measurement");
            format!("[Home Assistant] {name}: changed from {old_val}{unit} to {new_val}{unit}")
        }
        "binary_sensor" => format!(
            "[Home Assistant] {name}: {} (was {})",
            on_off(&new_val, "triggered", "cleared"),
            on_off(&old_val, "triggered", "cleared")
        ),
        "light" | "switch" | "fan" => {
            format!(
                "[Home Assistant] {name}: turned {}",
                on_off(&new_val, "on", "off")
            )
        }
        "alarm_control_panel" => {
            format!("[Home Assistant] {name}: alarm state changed from '{old_val}' to '{new_val}'")
        }
        _ => format!(
            "[Home Assistant] {name} ({entity_id}): changed from '{old_val}' to '{new_val}'"
        ),
    })
}

/// Whether the filters let `entity_id` through (closed by default, as in Python Hermes).
pub(crate) fn watched(s: &HomeAssistantSettings, entity_id: &str) -> bool {
    if s.ignore_entities.iter().any(|e| e == entity_id) {
        return false;
    }
    let domain = entity_id
        .split_once('.')
        .map(|(d, _)| d)
        .unwrap_or_default();
    if !s.watch_domains.is_empty() || !s.watch_entities.is_empty() {
        return s.watch_domains.iter().any(|d| d == domain)
            || s.watch_entities.iter().any(|e| e == entity_id);
    }
    s.watch_all
}

impl HomeAssistantAdapter {
    /// One connection: authenticate, subscribe, forward state changes. `Err(Auth)` when
    /// the token is refused.
    pub(crate) async fn connect_once(
        &self,
        inbound: &mpsc::Sender<InboundMessage>,
        cancel: &CancellationToken,
        cooldowns: &mut HashMap<String, Instant>,
    ) -> Result<Outcome, PlatformError> {
        let url = self.websocket_url();
        let mut ws = tokio::select! {
            _ = cancel.cancelled() => return Ok(Outcome::Stop),
            r = timeout(OPEN_TIMEOUT, tokio_tungstenite::connect_async(url.as_str())) => match r {
                Err(_) => return Err(PlatformError::transport(PLATFORM, "websocket handshake timed out")),
                Ok(Err(e)) => return Err(PlatformError::transport(PLATFORM, format!("websocket connect: {e}"))),
                Ok(Ok((ws, _))) => ws,
            }
        };
        let ping = self.settings.ping_interval;
        let mut healthy = false;
        let mut last_rx = Instant::now();
        let mut ticker = tokio::time::interval_at(Instant::now() + ping, ping);
        let reconnect = |healthy: bool, reason: String| Ok(Outcome::Reconnect { healthy, reason });
        loop {
            let frame = tokio::select! {
                _ = cancel.cancelled() => {
                    let _ = timeout(Duration::from_secs(2), ws.close(None)).await;
                    return Ok(Outcome::Stop);
                }
                _ = ticker.tick() => {
                    let idle = last_rx.elapsed();
                    if idle >= ping * 2 {
                        return reconnect(healthy, format!("nothing received for {} s", idle.as_secs()));
                    }
                    if idle >= ping && let Err(e) = ws.send(Message::Ping(Vec::new().into())).await {
                        return reconnect(healthy, format!("sending ping: {e}"));
                    }
                    continue;
                }
                f = ws.next() => f,
            };
            last_rx = Instant::now();
            let text = match frame {
                None => return reconnect(healthy, "connection closed".into()),
                Some(Err(e)) => return reconnect(healthy, format!("websocket: {e}")),
                Some(Ok(Message::Close(_))) => {
                    return reconnect(healthy, "closed by Home Assistant".into());
                }
                Some(Ok(Message::Text(t))) => t.to_string(),
                Some(Ok(_)) => continue,
            };
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(platform = PLATFORM, error = %e, "unreadable websocket frame skipped");
                    continue;
                }
            };
            let send = |v: Value| Message::text(v.to_string());
            match v.get("type").and_then(Value::as_str).unwrap_or_default() {
                "auth_required" => {
                    let auth = json!({"type": "auth", "access_token": self.settings.token});
                    if let Err(e) = ws.send(send(auth)).await {
                        return reconnect(false, format!("sending auth: {e}"));
                    }
                }
                "auth_invalid" => {
                    let why = v
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("auth_invalid");
                    return Err(PlatformError::Auth {
                        platform: PLATFORM.into(),
                        detail: why.to_string(),
                    });
                }
                "auth_ok" => {
                    let sub =
                        json!({"id": 1, "type": "subscribe_events", "event_type": "state_changed"});
                    if let Err(e) = ws.send(send(sub)).await {
                        return reconnect(false, format!("subscribing: {e}"));
                    }
                }
                "result" if v.get("id").and_then(Value::as_i64) == Some(1) => {
                    if v.get("success").and_then(Value::as_bool) != Some(true) {
                        return Err(PlatformError::Rejected {
                            platform: PLATFORM.into(),
                            detail: format!(
                                "subscribe_events refused: {}",
                                v.get("error").cloned().unwrap_or(Value::Null)
                            ),
                        });
                    }
                    healthy = true;
                    self.connected
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                    tracing::info!(platform = PLATFORM, "connected; watching state changes");
                }
                "event" => {
                    let Some(data) = v.pointer("/event/data") else {
                        tracing::warn!(platform = PLATFORM, "an event without data skipped");
                        continue;
                    };
                    if let Some(msg) = self.state_change(data, cooldowns)
                        && inbound.send(msg).await.is_err()
                    {
                        return Ok(Outcome::Stop);
                    }
                }
                other => tracing::trace!(platform = PLATFORM, kind = other, "frame ignored"),
            }
        }
    }

    /// The message for one `state_changed` event's data, after the filters and cooldown.
    fn state_change(
        &self,
        data: &Value,
        cooldowns: &mut HashMap<String, Instant>,
    ) -> Option<InboundMessage> {
        let entity = data
            .get("entity_id")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty())?;
        if !watched(&self.settings, entity) {
            return None;
        }
        let now = Instant::now();
        if let Some(last) = cooldowns.get(entity)
            && now.duration_since(*last) < self.settings.cooldown
        {
            tracing::debug!(
                platform = PLATFORM,
                entity,
                "state change within the cooldown skipped"
            );
            return None;
        }
        let null = Value::Null;
        let text = describe(
            entity,
            data.get("old_state").unwrap_or(&null),
            data.get("new_state").unwrap_or(&null),
        )?;
        cooldowns.insert(entity.to_string(), now);
        let changed = data
            .pointer("/new_state/last_changed")
            .and_then(Value::as_str)
            .unwrap_or_default();
        tracing::info!(platform = PLATFORM, entity, "state change received");
        Some(InboundMessage {
            source: MessageSource {
                platform: PLATFORM.into(),
                chat_type: ChatType::Channel,
                chat_id: Some(EVENTS_CHAT.into()),
                thread_id: None,
                user_id: Some(SYSTEM_USER.into()),
                user_name: Some("Home Assistant".into()),
            },
            message_id: Some(format!("ha_{entity}_{changed}")),
            text,
            reply_to: None,
            reply_to_text: None,
            attachments: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_changes_read_as_python_hermes_writes_them() {
        let st = |s: &str, attrs: Value| json!({"state": s, "attributes": attrs});
        assert_eq!(
            describe(
                "binary_sensor.door",
                &st("off", json!({})),
                &st("on", json!({"friendly_name": "Front door"}))
            )
            .unwrap(),
            "[Home Assistant] Front door: triggered (was cleared)"
        );
        assert_eq!(
            describe(
                "sensor.t",
                &st("20", json!({})),
                &st("21.5", json!({"unit_of_measurement": "°C"}))
            )
            .unwrap(),
            "[Home Assistant] sensor.t: changed from 20°C to 21.5°C"
        );
        assert_eq!(
            describe(
                "climate.lr",
                &Value::Null,
                &st(
                    "heat",
                    json!({"current_temperature": 19, "temperature": 21})
                )
            )
            .unwrap(),
            "[Home Assistant] climate.lr: HVAC mode changed from 'unknown' to 'heat' (current: 19, target: 21)"
        );
        assert_eq!(
            describe(
                "lock.x",
                &st("locked", json!({})),
                &st("unlocked", json!({}))
            )
            .unwrap(),
            "[Home Assistant] lock.x (lock.x): changed from 'locked' to 'unlocked'"
        );
        assert!(describe("light.a", &st("on", json!({})), &st("on", json!({}))).is_none());
        assert!(describe("light.a", &st("on", json!({})), &Value::Null).is_none());
    }

    #[test]
    fn filters_are_closed_by_default() {
        let mut s = HomeAssistantSettings::new("http://ha", "t");
        assert!(!watched(&s, "light.a"));
        s.watch_all = true;
        assert!(watched(&s, "light.a"));
        s.watch_domains = vec!["binary_sensor".into()];
        assert!(!watched(&s, "light.a"), "a domain filter narrows watch_all");
        assert!(watched(&s, "binary_sensor.door"));
        s.ignore_entities = vec!["binary_sensor.door".into()];
        assert!(!watched(&s, "binary_sensor.door"));
    }
}
