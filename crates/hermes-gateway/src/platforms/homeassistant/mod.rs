//! Home Assistant adapter (issue 22), as Python Hermes' `plugins/platforms/homeassistant`:
//! state changes of watched entities arrive over the websocket API ([`events`]) as
//! system-generated messages in one chat (`ha_events`, from the user `homeassistant`, let
//! through by the gateway's authorization as Python Hermes lets them through), and the
//! agent's answers go out as persistent notifications through the REST API
//! (`POST /api/services/persistent_notification/create`). A message to any other chat id
//! (`hermes send --to homeassistant:mobile_app_phone`) calls `notify.notify` with that
//! target, as Python's out-of-process sender does.
//!
//! Settings: `HASS_TOKEN` (a long-lived access token), `HASS_URL` (default
//! `http://homeassistant.local:8123`); the filters are config.yaml's
//! `platforms.homeassistant.extra` keys `watch_domains`, `watch_entities`,
//! `ignore_entities`, `watch_all` and `cooldown_seconds` (30), read by
//! [`HomeAssistantSettings::apply_config`]. With no filter nothing is forwarded.

mod events;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::backoff::{Backoff, sleep_or_cancel};

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "homeassistant";
/// The chat state changes arrive in and answers go to (Python Hermes' `ha_events`).
pub const EVENTS_CHAT: &str = "ha_events";
/// The sender of state changes; the gateway lets it through without an allowlist.
pub const SYSTEM_USER: &str = "homeassistant";
/// Longest notification, in chars (Python Hermes' `MAX_MESSAGE_LENGTH`).
pub const MAX_MESSAGE_CHARS: usize = 4096;
/// Python Hermes' default server.
pub const DEFAULT_URL: &str = "http://homeassistant.local:8123";

/// How to reach Home Assistant and which state changes to forward. `Debug` hides the token.
#[derive(Clone)]
pub struct HomeAssistantSettings {
    /// Base URL (`HASS_URL`).
    pub url: String,
    /// Long-lived access token (`HASS_TOKEN`).
    pub token: String,
    /// The websocket URL when it is not `ws(s)://<url host>/api/websocket` (a proxy that
    /// serves it elsewhere, a test double); `None`: derived from `url`.
    pub websocket_url: Option<String>,
    /// Domains whose entities are forwarded (`watch_domains`, e.g. `binary_sensor`).
    pub watch_domains: Vec<String>,
    /// Entities forwarded (`watch_entities`, e.g. `lock.front_door`).
    pub watch_entities: Vec<String>,
    /// Entities never forwarded (`ignore_entities`).
    pub ignore_entities: Vec<String>,
    /// Forward every entity when no domain or entity is listed (`watch_all`).
    pub watch_all: bool,
    /// Changes of one entity closer together than this are dropped (`cooldown_seconds`).
    pub cooldown: Duration,
    /// First reconnect delay (5 s, doubling to `reconnect_max`, jittered).
    pub reconnect_initial: Duration,
    /// Longest reconnect delay (60 s; Python's steps are 5, 10, 30, 60 s).
    pub reconnect_max: Duration,
    /// A websocket silent this long is pinged; twice as long, reconnected (30 s).
    pub ping_interval: Duration,
}

hermes_protocol::debug_redacted!(HomeAssistantSettings {
    secret: [token],
    shown: [
        url,
        websocket_url,
        watch_domains,
        watch_entities,
        ignore_entities,
        watch_all,
        cooldown,
        reconnect_initial,
        reconnect_max,
        ping_interval,
    ],
});

fn bad(key: &str, detail: impl std::fmt::Display) -> PlatformError {
    PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{key}: {detail}"),
    }
}

impl HomeAssistantSettings {
    /// Settings for `url` and `token`, no filters (nothing forwarded).
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> HomeAssistantSettings {
        HomeAssistantSettings {
            url: url.into().trim_end_matches('/').to_string(),
            token: token.into(),
            websocket_url: None,
            watch_domains: Vec::new(),
            watch_entities: Vec::new(),
            ignore_entities: Vec::new(),
            watch_all: false,
            cooldown: Duration::from_secs(30),
            reconnect_initial: Duration::from_secs(5),
            reconnect_max: Duration::from_secs(60),
            ping_interval: Duration::from_secs(30),
        }
    }

    /// `HASS_TOKEN` and `HASS_URL` from the environment merged over `.env`. `Ok(None)` when
    /// `HASS_TOKEN` is unset; a URL that is not `http(s)://` is an error naming `HASS_URL`.
    pub fn from_env(
        env: &BTreeMap<String, String>,
    ) -> Result<Option<HomeAssistantSettings>, PlatformError> {
        let get = |k: &str| {
            env.get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(token) = get("HASS_TOKEN") else {
            return Ok(None);
        };
        let url = get("HASS_URL").unwrap_or_else(|| DEFAULT_URL.to_string());
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.contains(char::is_whitespace)
        {
            return Err(bad("HASS_URL", format!("`{url}` is not an http(s):// URL")));
        }
        Ok(Some(HomeAssistantSettings::new(url, token)))
    }

    /// Reads the filters from a config.yaml document (`platforms.homeassistant.extra`, and
    /// `url` there when `HASS_URL` is unset is not read: the environment wins, as in Python
    /// Hermes). Errors name the key of a value of the wrong type.
    pub fn apply_config(&mut self, config: &yaml_serde::Value) -> Result<(), PlatformError> {
        let Some(extra) = config
            .get("platforms")
            .and_then(|p| p.get("homeassistant"))
            .and_then(|h| h.get("extra"))
        else {
            return Ok(());
        };
        let key = |k: &str| format!("platforms.homeassistant.extra.{k}");
        let strings = |k: &str| -> Result<Option<Vec<String>>, PlatformError> {
            match extra.get(k) {
                None | Some(yaml_serde::Value::Null) => Ok(None),
                Some(yaml_serde::Value::Sequence(items)) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| bad(&key(k), "every entry must be a string"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(_) => Err(bad(&key(k), "expected a list")),
            }
        };
        if let Some(v) = strings("watch_domains")? {
            self.watch_domains = v;
        }
        if let Some(v) = strings("watch_entities")? {
            self.watch_entities = v;
        }
        if let Some(v) = strings("ignore_entities")? {
            self.ignore_entities = v;
        }
        if let Some(v) = extra.get("watch_all") {
            self.watch_all = v
                .as_bool()
                .ok_or_else(|| bad(&key("watch_all"), "expected true or false"))?;
        }
        if let Some(v) = extra.get("cooldown_seconds") {
            let secs = v.as_u64().ok_or_else(|| {
                bad(
                    &key("cooldown_seconds"),
                    "expected a whole number of seconds",
                )
            })?;
            self.cooldown = Duration::from_secs(secs);
        }
        Ok(())
    }
}

/// The Home Assistant [`PlatformAdapter`].
pub struct HomeAssistantAdapter {
    settings: HomeAssistantSettings,
    http: reqwest::Client,
    connected: AtomicBool,
    sent: AtomicU64,
}

impl HomeAssistantAdapter {
    /// An adapter for `settings`. Errors: `Transport` when the HTTP client cannot be built.
    pub fn new(settings: HomeAssistantSettings) -> Result<HomeAssistantAdapter, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        if settings.watch_domains.is_empty()
            && settings.watch_entities.is_empty()
            && !settings.watch_all
        {
            tracing::warn!(
                platform = PLATFORM,
                "no watch_domains, watch_entities or watch_all in platforms.homeassistant.extra: no state change will be forwarded"
            );
        }
        Ok(HomeAssistantAdapter {
            settings,
            http,
            connected: AtomicBool::new(false),
            sent: AtomicU64::new(0),
        })
    }

    /// True while subscribed to state changes.
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    fn websocket_url(&self) -> String {
        if let Some(url) = &self.settings.websocket_url {
            return url.clone();
        }
        let base = &self.settings.url;
        let ws = base
            .strip_prefix("https://")
            .map(|r| format!("wss://{r}"))
            .or_else(|| base.strip_prefix("http://").map(|r| format!("ws://{r}")))
            .unwrap_or_else(|| base.clone());
        format!("{ws}/api/websocket")
    }

    /// Calls a service over REST (`POST /api/services/<domain>/<service>`).
    async fn call_service(
        &self,
        domain: &str,
        service: &str,
        body: Value,
    ) -> Result<(), PlatformError> {
        let what = format!("{domain}.{service}");
        let resp = self
            .http
            .request(
                Method::POST,
                format!("{}/api/services/{domain}/{service}", self.settings.url),
            )
            .bearer_auth(&self.settings.token)
            .json(&body)
            .send()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("{what}: {e}")))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let text: String = resp
            .text()
            .await
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        let detail = format!("{what}: HTTP {status}: {text}");
        Err(match status.as_u16() {
            401 | 403 => PlatformError::Auth {
                platform: PLATFORM.into(),
                detail,
            },
            500..=599 => PlatformError::transport(PLATFORM, detail),
            _ => PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail,
            },
        })
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for HomeAssistantAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            // Persistent notifications render Markdown.
            markup: Markup::DiscordMarkdown,
            supports_edit: false,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let mut backoff =
            Backoff::new(self.settings.reconnect_initial, self.settings.reconnect_max);
        let mut cooldowns = HashMap::new();
        let result = loop {
            if cancel.is_cancelled() || inbound.is_closed() {
                break Ok(());
            }
            let outcome = self.connect_once(&inbound, &cancel, &mut cooldowns).await;
            self.connected.store(false, Ordering::SeqCst);
            let reason = match outcome {
                Ok(events::Outcome::Stop) => break Ok(()),
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Rejected { .. })) => {
                    tracing::error!(platform = PLATFORM, error = %e, "Home Assistant refused the connection; check HASS_TOKEN");
                    break Err(e);
                }
                Err(e) => e.to_string(),
                Ok(events::Outcome::Reconnect { healthy, reason }) => {
                    if healthy {
                        backoff.reset();
                    }
                    reason
                }
            };
            let delay = backoff.next_delay();
            tracing::warn!(platform = PLATFORM, reason = %reason, retry_in_ms = delay.as_millis() as u64, "websocket lost; reconnecting");
            if !sleep_or_cancel(delay, &cancel).await {
                break Ok(());
            }
        };
        self.connected.store(false, Ordering::SeqCst);
        result
    }

    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        if target.chat_id.is_empty() || target.chat_id == EVENTS_CHAT {
            self.call_service(
                "persistent_notification",
                "create",
                json!({"title": "Hermes Agent", "message": text}),
            )
            .await?;
        } else {
            self.call_service(
                "notify",
                "notify",
                json!({"message": text, "target": target.chat_id}),
            )
            .await?;
        }
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            platform = PLATFORM,
            chars = text.chars().count(),
            "notification sent"
        );
        Ok(SentMessage {
            message_id: format!("ha-{}-{n}", chrono::Utc::now().timestamp_millis()),
        })
    }

    async fn edit(&self, _: &ChatTarget, _: &SentMessage, _: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "editing notifications".into(),
        })
    }

    /// Notifications carry no files: the file is named in the text instead.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut text = caption.unwrap_or_default().to_string();
        text.push_str(&format!(
            "\n(file {name} not sent: Home Assistant notifications carry no files)"
        ));
        self.send(target, text.trim_start()).await
    }

    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }

    /// Each subscription gets every state change: two replicas would each forward it.
    fn single_connection(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_env_and_config() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(
            HomeAssistantSettings::from_env(&env(&[]))
                .unwrap()
                .is_none()
        );
        let mut s = HomeAssistantSettings::from_env(&env(&[("HASS_TOKEN", "SECRET-ha")]))
            .unwrap()
            .unwrap();
        assert_eq!(s.url, DEFAULT_URL);
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("SECRET") && shown.contains("token: <redacted>"),
            "{shown}"
        );
        let e =
            HomeAssistantSettings::from_env(&env(&[("HASS_TOKEN", "t"), ("HASS_URL", "ha.local")]))
                .unwrap_err();
        assert!(e.to_string().contains("HASS_URL"), "{e}");
        let yaml: yaml_serde::Value = yaml_serde::from_str(
            "platforms:\n  homeassistant:\n    extra:\n      watch_domains: [binary_sensor, lock]\n      ignore_entities: [lock.garage]\n      cooldown_seconds: 5\n",
        )
        .unwrap();
        s.apply_config(&yaml).unwrap();
        assert_eq!(s.watch_domains, vec!["binary_sensor", "lock"]);
        assert_eq!(s.ignore_entities, vec!["lock.garage"]);
        assert_eq!(s.cooldown, Duration::from_secs(5));
        let bad: yaml_serde::Value = yaml_serde::from_str(
            "platforms:\n  homeassistant:\n    extra:\n      watch_all: sometimes\n",
        )
        .unwrap();
        let e = s.apply_config(&bad).unwrap_err();
        assert!(
            e.to_string()
                .contains("platforms.homeassistant.extra.watch_all"),
            "{e}"
        );
    }
}
