//! The receive side: the daemon's server-sent event stream (`GET /api/v1/events`, one
//! `data:` line of JSON per received envelope, `:` comments as keep-alives), read with a
//! small line parser of our own so that keep-alives count as life. A dropped or silent
//! stream is reopened with backoff; attachments are fetched with `getAttachment` before the
//! message is handed on; a message seen twice (same sender and timestamp) is handed on once.

use std::collections::{HashSet, VecDeque};

use base64::Engine;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::inbound::{self, Filter, Parsed, RemoteAttachment};
use super::{PLATFORM, SignalAdapter};
use crate::delivery::{SaveError, save_inbound};
use crate::error::PlatformError;
use crate::platform::{Attachment, InboundMessage};
use crate::platforms::backoff::{Backoff, sleep_or_cancel};
use crate::platforms::media;

/// Messages remembered for de-duplication.
const SEEN_MAX: usize = 1024;
/// A line longer than this without a newline ends the stream (a broken daemon or proxy).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Recently handed-on messages, oldest first.
#[derive(Default)]
struct Seen {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    /// True the first time `key` is offered.
    fn first(&mut self, key: String) -> bool {
        if !self.set.insert(key.clone()) {
            return false;
        }
        self.order.push_back(key);
        if self.order.len() > SEEN_MAX
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
    }
}

impl SignalAdapter {
    /// Reads the event stream until `cancel` fires or the gateway stops listening;
    /// reconnects with backoff on every failure (the daemon down, a 5xx, a dropped or
    /// silent stream).
    pub(crate) async fn listen(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let s = &self.settings;
        let mut backoff = Backoff::new(s.reconnect_initial, s.reconnect_max);
        let mut seen = Seen::default();
        loop {
            if cancel.is_cancelled() || inbound.is_closed() {
                return Ok(());
            }
            match self
                .stream_once(&inbound, &cancel, &mut seen, &mut backoff)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.connected
                        .store(false, std::sync::atomic::Ordering::SeqCst);
                    let delay = backoff.next_delay();
                    tracing::warn!(platform = PLATFORM, error = %e, retry_in_ms = delay.as_millis() as u64, "signal-cli event stream lost; reconnecting");
                    if !sleep_or_cancel(delay, &cancel).await {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// One connection: `Ok` when told to stop, `Err` when the stream failed.
    async fn stream_once(
        &self,
        inbound: &mpsc::Sender<InboundMessage>,
        cancel: &CancellationToken,
        seen: &mut Seen,
        backoff: &mut Backoff,
    ) -> Result<(), PlatformError> {
        self.rpc.check().await?;
        let resp = self.rpc.events().await?;
        self.connected
            .store(true, std::sync::atomic::Ordering::SeqCst);
        backoff.reset();
        tracing::info!(
            platform = PLATFORM,
            "connected to the signal-cli event stream"
        );
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        let mut data: Vec<String> = Vec::new();
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                _ = inbound.closed() => return Ok(()),
                n = tokio::time::timeout(self.settings.idle_timeout, body.next()) => n,
            };
            let chunk = match next {
                Err(_) => {
                    // Silent for a long time: the connection may be dead. A daemon that
                    // still answers keeps the stream (it may just be quiet).
                    self.rpc.check().await?;
                    tracing::debug!(platform = PLATFORM, "event stream quiet; daemon healthy");
                    continue;
                }
                Ok(None) => {
                    return Err(PlatformError::transport(
                        PLATFORM,
                        "the daemon closed the event stream",
                    ));
                }
                Ok(Some(Err(e))) => {
                    return Err(PlatformError::transport(
                        PLATFORM,
                        format!("event stream: {e}"),
                    ));
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            buf.extend_from_slice(&chunk);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let raw: Vec<u8> = buf.drain(..=pos).collect();
                let line = String::from_utf8_lossy(&raw);
                let line = line.trim_end_matches(['\n', '\r']);
                if line.is_empty() {
                    if !data.is_empty() {
                        let event = data.join("\n");
                        data.clear();
                        if !self.dispatch(&event, inbound, seen).await {
                            return Ok(());
                        }
                    }
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                }
                // `:` keep-alive comments, `event:`, `id:` and `retry:` lines need nothing.
            }
            if buf.len() > MAX_LINE_BYTES {
                return Err(PlatformError::protocol(
                    PLATFORM,
                    "an event line over 16 MiB; reopening the stream",
                ));
            }
        }
    }

    /// Handles one event's data; `false` when the gateway stopped listening.
    async fn dispatch(
        &self,
        event: &str,
        inbound: &mpsc::Sender<InboundMessage>,
        seen: &mut Seen,
    ) -> bool {
        let value: Value = match serde_json::from_str(event) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(platform = PLATFORM, error = %e, bytes = event.len(), "unreadable event from signal-cli skipped");
                return true;
            }
        };
        let filter = Filter {
            account: &self.settings.account,
            groups: &self.settings.group_allowed,
            require_mention: self.settings.require_mention,
            ignore_stories: self.settings.ignore_stories,
        };
        let parsed = inbound::parse(&value, &filter, &mut |ts| self.take_echo(ts));
        let incoming = match parsed {
            Ok(Parsed::Message(m)) => m,
            Ok(Parsed::Skip(why)) => {
                tracing::debug!(platform = PLATFORM, why, "envelope skipped");
                return true;
            }
            Err(why) => {
                tracing::warn!(platform = PLATFORM, why = %why, "malformed envelope from signal-cli skipped");
                return true;
            }
        };
        let mut msg = incoming.msg;
        let key = format!(
            "{}/{}",
            msg.source.user_id.as_deref().unwrap_or_default(),
            msg.message_id.as_deref().unwrap_or_default()
        );
        if !seen.first(key) {
            tracing::debug!(platform = PLATFORM, "a message seen before skipped");
            return true;
        }
        for file in &incoming.files {
            let saved = self.fetch(file).await;
            media::attach(&mut msg, saved);
        }
        tracing::info!(
            platform = PLATFORM,
            chat_type = msg.source.chat_type.as_str(),
            chars = msg.text.chars().count(),
            files = msg.attachments.len(),
            "message received"
        );
        inbound.send(msg).await.is_ok()
    }

    /// Fetches one attachment (`getAttachment`, base64) into the media directory; problems
    /// become a note in the message and a warning in the log.
    async fn fetch(&self, file: &RemoteAttachment) -> media::Saved {
        let name = file.file_name.clone().unwrap_or_else(|| file.id.clone());
        let max = self.settings.max_attachment_bytes;
        if let Some(size) = file.size
            && size > max
        {
            return media::too_large_note(&name, size, max);
        }
        let answer = match self.rpc.call("getAttachment", json!({"id": file.id})).await {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(platform = PLATFORM, error = %e, "attachment fetch failed");
                return media::failed_note(&name);
            }
        };
        let encoded = answer
            .as_str()
            .or_else(|| answer.get("data").and_then(Value::as_str))
            .unwrap_or_default();
        let bytes = match base64::engine::general_purpose::STANDARD.decode(encoded.trim()) {
            Ok(b) if !b.is_empty() => b,
            _ => {
                tracing::warn!(platform = PLATFORM, "getAttachment answered no base64 data");
                return media::failed_note(&name);
            }
        };
        match save_inbound(&self.settings.media_dir, &name, &bytes, max).await {
            Ok(path) => media::Saved::File(Attachment {
                kind: media::kind_of(file.content_type.as_deref()),
                path,
                file_name: file.file_name.clone(),
                mime_type: file.content_type.clone(),
                size_bytes: bytes.len() as u64,
            }),
            Err(SaveError::TooLarge { size, max }) => media::too_large_note(&name, size, max),
            Err(e) => {
                tracing::warn!(platform = PLATFORM, error = %e, "attachment not saved");
                media::failed_note(&name)
            }
        }
    }
}
