//! One Slack Socket Mode connection: `apps.connections.open` → websocket → `hello`, then
//! envelopes, each acknowledged with `{"envelope_id": …}` before anything else is done with
//! it (Slack redelivers envelopes not acknowledged within 3 s). `disconnect` envelopes end
//! the connection so the caller opens a fresh one. Source: Slack API docs, "Socket Mode".

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;

use super::event::parse_event;
use super::web::Web;
use super::{PLATFORM, Raw};

/// How long to wait for the websocket handshake.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// How a connection ended without a fatal error.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Cancelled, or nobody listens for messages any more.
    Stop,
    /// Open a new connection.
    Reconnect {
        /// `hello` was seen, so the backoff starts over.
        healthy: bool,
        /// Why, for the log.
        reason: String,
    },
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn close(ws: &mut Ws) {
    let frame = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    let _ = timeout(Duration::from_secs(2), ws.close(Some(frame))).await;
}

/// Runs one connection until it ends. `Err` for failures before the socket was open (the
/// caller retries unless `Auth`/`Rejected`) and for `disconnect` with reason
/// `link_disabled` (Socket Mode was turned off for the app: `Rejected`).
///
/// `ping_interval`: when nothing arrived for this long a websocket ping is sent; when
/// nothing arrived for twice as long the connection is considered dead.
pub(crate) async fn connect_once(
    web: &Web,
    bot_user_id: &str,
    raw: &mpsc::Sender<Raw>,
    stop: &CancellationToken,
    ping_interval: Duration,
) -> Result<Outcome, PlatformError> {
    let url = web.open_connection().await?;
    let mut ws = tokio::select! {
        _ = stop.cancelled() => return Ok(Outcome::Stop),
        r = timeout(OPEN_TIMEOUT, tokio_tungstenite::connect_async(url.as_str())) => {
            r.map_err(|_| PlatformError::transport(PLATFORM, "websocket handshake timed out"))?
                .map_err(|e| PlatformError::transport(PLATFORM, format!("websocket connect: {e}")))?
                .0
        }
    };
    let mut healthy = false;
    let mut last_rx = Instant::now();
    let mut ticker = tokio::time::interval_at(Instant::now() + ping_interval, ping_interval);
    let reconnect = |healthy: bool, reason: String| Ok(Outcome::Reconnect { healthy, reason });
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                close(&mut ws).await;
                return Ok(Outcome::Stop);
            }
            _ = ticker.tick() => {
                let idle = last_rx.elapsed();
                if idle >= ping_interval * 2 {
                    close(&mut ws).await;
                    return reconnect(healthy, format!("nothing received for {} s", idle.as_secs()));
                }
                if idle >= ping_interval
                    && let Err(e) = ws.send(Message::Ping(Vec::new().into())).await
                {
                    return reconnect(healthy, format!("sending ping: {e}"));
                }
            }
            frame = ws.next() => {
                last_rx = Instant::now();
                let text = match frame {
                    None => return reconnect(healthy, "connection closed".into()),
                    Some(Err(e)) => return reconnect(healthy, format!("websocket: {e}")),
                    Some(Ok(Message::Close(f))) => {
                        let why = f.map(|f| format!("{} {}", u16::from(f.code), f.reason)).unwrap_or_default();
                        return reconnect(healthy, format!("closed by Slack: {why}"));
                    }
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(_)) => continue,
                };
                let v: Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::warn!(platform = PLATFORM, error = %e, "unreadable Socket Mode frame");
                        continue;
                    }
                };
                if let Some(id) = v.get("envelope_id").and_then(Value::as_str) {
                    let ack = json!({"envelope_id": id}).to_string();
                    if let Err(e) = ws.send(Message::text(ack)).await {
                        return reconnect(healthy, format!("acknowledging an envelope: {e}"));
                    }
                }
                match v.get("type").and_then(Value::as_str) {
                    Some("hello") => {
                        healthy = true;
                        tracing::info!(platform = PLATFORM, "connected (Socket Mode)");
                    }
                    Some("disconnect") => {
                        let reason = v.get("reason").and_then(Value::as_str).unwrap_or("unknown");
                        if reason == "link_disabled" {
                            close(&mut ws).await;
                            return Err(PlatformError::Rejected {
                                platform: PLATFORM.into(),
                                detail: "Socket Mode is disabled for this Slack app (disconnect: link_disabled)".into(),
                            });
                        }
                        close(&mut ws).await;
                        return reconnect(healthy, format!("Slack asked to reconnect ({reason})"));
                    }
                    Some("events_api") => {
                        let Some(event) = v.pointer("/payload/event") else { continue };
                        if let Some(incoming) = parse_event(event, Some(bot_user_id))
                            && raw.send((incoming, None)).await.is_err()
                        {
                            close(&mut ws).await;
                            return Ok(Outcome::Stop);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}
