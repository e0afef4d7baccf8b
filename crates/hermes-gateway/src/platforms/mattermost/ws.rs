//! One websocket connection to `/api/v4/websocket` (Mattermost API v4 "WebSocket"
//! reference): the token goes in an `authentication_challenge` action (answered
//! `{"status": "OK", "seq_reply": 1}`, or `FAIL`), the server says `hello` with its
//! `connection_id`, then events arrive with an increasing `seq`. A reconnect passes
//! `connection_id` and the last `sequence_number` seen, so a server that still holds the
//! events missed meanwhile sends them (posts seen before are skipped by id).

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use super::{MattermostAdapter, Me, PLATFORM, inbound};
use crate::error::PlatformError;
use crate::platform::InboundMessage;

const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// How a connection ended without a fatal error.
pub(crate) enum Outcome {
    /// Cancelled, or nobody listens any more.
    Stop,
    /// Open a new connection; `healthy` when `hello` was seen (the backoff starts over).
    Reconnect { healthy: bool, reason: String },
}

/// Where a reconnect resumes.
#[derive(Default)]
pub(crate) struct Resume {
    pub(crate) connection_id: Option<String>,
    pub(crate) seq: Option<i64>,
}

impl MattermostAdapter {
    /// Runs one connection until it ends. `Err(Auth)` when the server refuses the token.
    pub(crate) async fn connect_once(
        &self,
        me: &Me,
        inbound: &mpsc::Sender<InboundMessage>,
        cancel: &CancellationToken,
        resume: &mut Resume,
    ) -> Result<Outcome, PlatformError> {
        let mut url = self
            .settings
            .websocket_url
            .clone()
            .unwrap_or_else(|| self.api.websocket_url());
        if let (Some(id), Some(seq)) = (&resume.connection_id, resume.seq) {
            url.push_str(&format!("?connection_id={id}&sequence_number={seq}"));
        }
        let mut ws = tokio::select! {
            _ = cancel.cancelled() => return Ok(Outcome::Stop),
            r = timeout(OPEN_TIMEOUT, tokio_tungstenite::connect_async(url.as_str())) => {
                match r {
                    Err(_) => return Err(PlatformError::transport(PLATFORM, "websocket handshake timed out")),
                    Ok(Err(tungstenite::Error::Http(resp))) if matches!(resp.status().as_u16(), 401 | 403) => {
                        return Err(PlatformError::Auth { platform: PLATFORM.into(), detail: format!("websocket refused: HTTP {}", resp.status()) });
                    }
                    Ok(Err(e)) => return Err(PlatformError::transport(PLATFORM, format!("websocket connect: {e}"))),
                    Ok(Ok((ws, _))) => ws,
                }
            }
        };
        let auth = json!({"seq": 1, "action": "authentication_challenge", "data": {"token": self.settings.token}});
        if let Err(e) = ws.send(Message::text(auth.to_string())).await {
            return Ok(Outcome::Reconnect {
                healthy: false,
                reason: format!("sending the authentication challenge: {e}"),
            });
        }
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
                        let _ = timeout(Duration::from_secs(2), ws.close(None)).await;
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
                Some(Ok(Message::Close(f))) => {
                    let why = f
                        .map(|f| format!("{} {}", u16::from(f.code), f.reason))
                        .unwrap_or_default();
                    return reconnect(healthy, format!("closed by the server: {why}"));
                }
                Some(Ok(Message::Text(t))) => t.to_string(),
                Some(Ok(Message::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
                Some(Ok(_)) => continue,
            };
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(platform = PLATFORM, error = %e, "unreadable websocket frame skipped");
                    continue;
                }
            };
            if v.get("seq_reply").and_then(Value::as_i64) == Some(1) {
                if v.get("status").and_then(Value::as_str) == Some("FAIL") {
                    let detail = v
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("authentication_challenge failed")
                        .to_string();
                    return Err(PlatformError::Auth {
                        platform: PLATFORM.into(),
                        detail,
                    });
                }
                continue;
            }
            let Some(event) = v.get("event").and_then(Value::as_str) else {
                continue;
            };
            if let Some(seq) = v.get("seq").and_then(Value::as_i64) {
                resume.seq = Some(seq);
            }
            match event {
                "hello" => {
                    healthy = true;
                    resume.connection_id = v
                        .pointer("/data/connection_id")
                        .and_then(Value::as_str)
                        .filter(|c| !c.is_empty())
                        .map(str::to_owned)
                        .or(resume.connection_id.take());
                    self.connected
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                    tracing::info!(platform = PLATFORM, "connected (websocket)");
                }
                "posted" => {
                    let data = v.get("data").cloned().unwrap_or(Value::Null);
                    match inbound::parse_posted(&data, &me.id, &me.username, &self.settings) {
                        Ok(Some(incoming)) => {
                            if !self.deliver(incoming, inbound).await {
                                let _ = timeout(Duration::from_secs(2), ws.close(None)).await;
                                return Ok(Outcome::Stop);
                            }
                        }
                        Ok(None) => {}
                        Err(why) => {
                            tracing::warn!(platform = PLATFORM, why = %why, "malformed posted event skipped");
                        }
                    }
                }
                other => tracing::trace!(platform = PLATFORM, event = other, "event ignored"),
            }
        }
    }
}
