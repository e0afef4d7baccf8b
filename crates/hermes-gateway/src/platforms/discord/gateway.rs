//! One Discord gateway connection (API v10, JSON encoding): HELLO → IDENTIFY or RESUME →
//! dispatches, with the heartbeat loop, sequence tracking and the opcodes and close codes
//! that end a connection. Source: Discord developer docs, "Gateway" (opcodes 0, 1, 2, 6, 7,
//! 9, 10, 11; close codes 4000–4014).

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platforms::backoff::jitter;

use super::PLATFORM;
use super::event::{Incoming, parse_message_create};
use super::rest::Rest;

/// Intents: GUILD_MESSAGES (1 << 9), DIRECT_MESSAGES (1 << 12), MESSAGE_CONTENT (1 << 15).
/// MESSAGE_CONTENT is privileged: it must be enabled for the bot in the developer portal.
pub const INTENTS: u64 = (1 << 9) | (1 << 12) | (1 << 15);

/// How long to wait for the websocket handshake and for HELLO.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Close code we use to drop a connection while keeping the session resumable (any code
/// other than 1000/1001 keeps it).
const CLOSE_KEEP_SESSION: u16 = 4000;

/// What survives between connections: the session to resume and the last sequence number.
#[derive(Debug, Default)]
pub(crate) struct GatewayState {
    /// `session_id` from READY.
    pub(crate) session_id: Option<String>,
    /// `resume_gateway_url` from READY.
    pub(crate) resume_url: Option<String>,
    /// Last dispatch sequence number (`s`).
    pub(crate) seq: Option<u64>,
    /// The bot's own user id from READY (its messages are ignored).
    pub(crate) bot_user_id: Option<String>,
}

impl GatewayState {
    fn can_resume(&self) -> bool {
        self.session_id.is_some() && self.resume_url.is_some()
    }

    fn forget_session(&mut self) {
        self.session_id = None;
        self.resume_url = None;
        self.seq = None;
    }
}

/// How a connection ended without a fatal error.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Cancelled, or nobody listens for messages any more: stop for good.
    Stop,
    /// Connect again (resuming when the state still has a session).
    Reconnect {
        /// READY or RESUMED was seen, so the backoff starts over.
        healthy: bool,
        /// A wait the protocol asks for (INVALID_SESSION: 1–5 s), instead of the backoff.
        wait: Option<Duration>,
        /// Why, for the log.
        reason: String,
    },
}

/// `…/?v=10&encoding=json` appended to the gateway URL from REST or READY.
pub(crate) fn ws_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    format!("{base}/?v=10&encoding=json")
}

/// What a close code from Discord means: `Err` for codes retrying cannot fix (4004
/// authentication failed → `Auth`; 4010–4014 bad shard, API version or intents →
/// `Rejected`), `Ok(true)` when the session must be dropped (4007 invalid seq, 4009 session
/// timed out), `Ok(false)` when resuming is fine.
pub(crate) fn close_code_action(code: u16, reason: &str) -> Result<bool, PlatformError> {
    match code {
        4004 => Err(PlatformError::Auth {
            platform: PLATFORM.into(),
            detail: format!("gateway closed with 4004 ({reason}): check DISCORD_BOT_TOKEN"),
        }),
        4014 => Err(PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail: format!(
                "gateway closed with 4014 ({reason}): enable the MESSAGE CONTENT intent for \
                 the bot in the Discord developer portal"
            ),
        }),
        4010..=4013 => Err(PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail: format!("gateway closed with {code} ({reason})"),
        }),
        4007 | 4009 => Ok(true),
        _ => Ok(false),
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send_json(ws: &mut Ws, v: &Value) -> Result<(), String> {
    ws.send(Message::text(v.to_string()))
        .await
        .map_err(|e| e.to_string())
}

async fn close(ws: &mut Ws, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    // Best effort: the connection is going away either way.
    let _ = timeout(Duration::from_secs(2), ws.close(Some(frame))).await;
}

/// Waits for HELLO (op 10) and returns its heartbeat interval.
async fn hello(ws: &mut Ws) -> Result<Duration, String> {
    let wait = async {
        while let Some(frame) = ws.next().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Message::Text(t) = frame {
                let v: Value = serde_json::from_str(&t).map_err(|e| e.to_string())?;
                if v.get("op").and_then(Value::as_u64) == Some(10) {
                    let ms = v
                        .pointer("/d/heartbeat_interval")
                        .and_then(Value::as_u64)
                        .ok_or("HELLO without heartbeat_interval")?;
                    return Ok(Duration::from_millis(ms.max(1)));
                }
            }
        }
        Err("connection closed before HELLO".to_owned())
    };
    timeout(OPEN_TIMEOUT, wait)
        .await
        .map_err(|_| "no HELLO within 30 s".to_owned())?
}

/// Runs one connection until it ends. `Err` only for errors before the connection was up
/// (the caller retries those unless they are `Auth`/`Rejected`) and for fatal close codes.
pub(crate) async fn connect_once(
    rest: &Rest,
    token: &str,
    state: &mut GatewayState,
    raw: &mpsc::Sender<Incoming>,
    stop: &CancellationToken,
) -> Result<Outcome, PlatformError> {
    let resuming = state.can_resume();
    let base = match (&state.resume_url, resuming) {
        (Some(url), true) => url.clone(),
        _ => rest.gateway_url().await?,
    };
    let url = ws_url(&base);
    tracing::debug!(platform = PLATFORM, %url, resuming, "connecting to the gateway");
    let mut ws = tokio::select! {
        _ = stop.cancelled() => return Ok(Outcome::Stop),
        r = timeout(OPEN_TIMEOUT, tokio_tungstenite::connect_async(url.as_str())) => {
            r.map_err(|_| PlatformError::transport(PLATFORM, "websocket handshake timed out"))?
                .map_err(|e| PlatformError::transport(PLATFORM, format!("websocket connect: {e}")))?
                .0
        }
    };
    let interval = tokio::select! {
        _ = stop.cancelled() => return Ok(Outcome::Stop),
        r = hello(&mut ws) => r.map_err(|e| PlatformError::transport(PLATFORM, e))?,
    };
    let first = if resuming {
        json!({"op": 6, "d": {
            "token": token,
            "session_id": state.session_id,
            "seq": state.seq,
        }})
    } else {
        json!({"op": 2, "d": {
            "token": token,
            "intents": INTENTS,
            "properties": {"os": std::env::consts::OS, "browser": "hermes", "device": "hermes"},
        }})
    };
    send_json(&mut ws, &first)
        .await
        .map_err(|e| PlatformError::transport(PLATFORM, e))?;

    let mut next_beat = Instant::now() + jitter(interval);
    let mut awaiting_ack = false;
    let mut healthy = false;
    let reconnect = |healthy: bool, reason: String| Outcome::Reconnect {
        healthy,
        wait: None,
        reason,
    };
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                close(&mut ws, 1000, "shutting down").await;
                return Ok(Outcome::Stop);
            }
            _ = sleep_until(next_beat) => {
                if awaiting_ack {
                    close(&mut ws, CLOSE_KEEP_SESSION, "heartbeat not acknowledged").await;
                    return Ok(reconnect(healthy, "heartbeat ACK missing".into()));
                }
                if let Err(e) = send_json(&mut ws, &json!({"op": 1, "d": state.seq})).await {
                    return Ok(reconnect(healthy, format!("sending heartbeat: {e}")));
                }
                awaiting_ack = true;
                next_beat = Instant::now() + interval;
            }
            frame = ws.next() => {
                let text = match frame {
                    None => return Ok(reconnect(healthy, "connection closed".into())),
                    Some(Err(e)) => return Ok(reconnect(healthy, format!("websocket: {e}"))),
                    Some(Ok(Message::Close(frame))) => {
                        let (code, reason) = frame
                            .map(|f| (u16::from(f.code), f.reason.to_string()))
                            .unwrap_or((1005, String::new()));
                        if close_code_action(code, &reason)? {
                            state.forget_session();
                        }
                        return Ok(reconnect(healthy, format!("closed by Discord: {code} {reason}")));
                    }
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(_)) => continue,
                };
                let v: Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::warn!(platform = PLATFORM, error = %e, "unreadable gateway frame");
                        continue;
                    }
                };
                match v.get("op").and_then(Value::as_u64) {
                    Some(0) => {
                        if let Some(s) = v.get("s").and_then(Value::as_u64) {
                            state.seq = Some(s);
                        }
                        let d = v.get("d").unwrap_or(&Value::Null);
                        match v.get("t").and_then(Value::as_str) {
                            Some("READY") => {
                                state.session_id = d.get("session_id").and_then(Value::as_str).map(str::to_owned);
                                state.resume_url = d.get("resume_gateway_url").and_then(Value::as_str).map(str::to_owned);
                                state.bot_user_id = d.pointer("/user/id").and_then(Value::as_str).map(str::to_owned);
                                healthy = true;
                                tracing::info!(platform = PLATFORM, "connected (READY)");
                            }
                            Some("RESUMED") => {
                                healthy = true;
                                tracing::info!(platform = PLATFORM, "session resumed");
                            }
                            Some("MESSAGE_CREATE") => {
                                if let Some(incoming) = parse_message_create(d, state.bot_user_id.as_deref())
                                    && raw.send(incoming).await.is_err()
                                {
                                    close(&mut ws, 1000, "shutting down").await;
                                    return Ok(Outcome::Stop);
                                }
                            }
                            _ => {}
                        }
                    }
                    Some(1) => {
                        if let Err(e) = send_json(&mut ws, &json!({"op": 1, "d": state.seq})).await {
                            return Ok(reconnect(healthy, format!("sending heartbeat: {e}")));
                        }
                        awaiting_ack = true;
                        next_beat = Instant::now() + interval;
                    }
                    Some(11) => awaiting_ack = false,
                    Some(7) => {
                        close(&mut ws, CLOSE_KEEP_SESSION, "reconnect requested").await;
                        return Ok(reconnect(healthy, "Discord asked to reconnect".into()));
                    }
                    Some(9) => {
                        let resumable = v.get("d").and_then(Value::as_bool).unwrap_or(false);
                        if !resumable {
                            state.forget_session();
                        }
                        close(&mut ws, CLOSE_KEEP_SESSION, "invalid session").await;
                        let wait = Duration::from_millis(1000) + jitter(Duration::from_millis(4000));
                        return Ok(Outcome::Reconnect { healthy, wait: Some(wait), reason: "invalid session".into() });
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_are_guild_messages_direct_messages_and_message_content() {
        assert_eq!(INTENTS, 512 + 4096 + 32768);
    }

    #[test]
    fn urls_get_version_and_encoding() {
        assert_eq!(
            ws_url("wss://gateway.discord.gg"),
            "wss://gateway.discord.gg/?v=10&encoding=json"
        );
        assert_eq!(
            ws_url("ws://127.0.0.1:9/"),
            "ws://127.0.0.1:9/?v=10&encoding=json"
        );
    }

    #[test]
    fn close_codes() {
        assert!(matches!(
            close_code_action(4004, ""),
            Err(PlatformError::Auth { .. })
        ));
        assert!(matches!(
            close_code_action(4014, ""),
            Err(PlatformError::Rejected { .. })
        ));
        assert!(matches!(
            close_code_action(4012, ""),
            Err(PlatformError::Rejected { .. })
        ));
        assert!(matches!(close_code_action(4009, ""), Ok(true)));
        assert!(matches!(close_code_action(4000, ""), Ok(false)));
        assert!(matches!(close_code_action(1006, ""), Ok(false)));
    }
}
