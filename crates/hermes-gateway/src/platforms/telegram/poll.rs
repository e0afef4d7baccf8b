//! The long-polling loop: getMe once (a bad token ends `run` with `Auth`), then getUpdates
//! with `timeout` and `offset`, forwarding each message and only then moving the offset past
//! it, so an update is never acknowledged before it reached the inbound channel. The offset
//! is also saved to a file (when configured) after each forwarded update, so a crash or kill
//! re-delivers exactly the updates that were not forwarded yet.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::TelegramAdapter;
use super::inbound;
use super::types::{Update, User};
use crate::error::PlatformError;
use crate::platform::InboundMessage;
use crate::platforms::backoff::{Backoff, sleep_or_cancel};

/// Reads the saved next offset; a missing or unreadable file means "start from what the Bot
/// API still holds".
pub(crate) async fn load_offset(path: &Path) -> Option<i64> {
    let text = tokio::fs::read_to_string(path).await.ok()?;
    match text.trim().parse::<i64>() {
        Ok(offset) => Some(offset),
        Err(_) => {
            tracing::warn!(platform = "telegram", file = %path.display(), "ignoring an offset file that does not hold a number");
            None
        }
    }
}

/// Saves the next offset atomically (write beside, then rename).
async fn save_offset(path: &Path, offset: i64) {
    let result = async {
        let (path, text) = (path.to_path_buf(), format!("{offset}\n"));
        tokio::task::spawn_blocking(move || hermes_protocol::private_fs::write_atomic(&path, text))
            .await
            .map_err(std::io::Error::other)?
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(platform = "telegram", file = %path.display(), "could not save the update offset: {e}");
    }
}

/// What one pass of the loop decided.
pub(super) enum Step {
    /// Keep polling.
    Continue,
    /// `cancel` fired or the receiver is gone: stop quietly.
    Stop,
}

impl TelegramAdapter {
    /// getMe with backoff on transport errors; `Ok(None)` when cancelled.
    pub(super) async fn identify(
        &self,
        cancel: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<Option<User>, PlatformError> {
        let empty = serde_json::json!({});
        loop {
            let result = tokio::select! {
                r = self.api.call::<User>("getMe", &empty, None) => r,
                _ = cancel.cancelled() => return Ok(None),
            };
            match result {
                Ok(me) => return Ok(Some(me)),
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Protocol { .. })) => {
                    return Err(e);
                }
                Err(e) => {
                    let delay = self.delay_after(&e, backoff);
                    tracing::warn!(
                        platform = "telegram",
                        "getMe failed, retrying in {} ms: {e}",
                        delay.as_millis()
                    );
                    if !sleep_or_cancel(delay, cancel).await {
                        return Ok(None);
                    }
                }
            }
        }
    }

    pub(super) fn delay_after(&self, err: &PlatformError, backoff: &mut Backoff) -> Duration {
        match err {
            PlatformError::RateLimited { retry_after, .. } => *retry_after,
            _ => backoff.next_delay(),
        }
    }

    /// The body of [`crate::PlatformAdapter::run`] for Telegram.
    pub(crate) async fn poll(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let settings = &self.settings;
        let mut backoff = Backoff::new(settings.reconnect_base, settings.reconnect_max);
        let Some(me) = self.identify(&cancel, &mut backoff).await? else {
            return Ok(());
        };
        backoff.reset();
        tracing::info!(platform = "telegram", bot_id = me.id, "connected");
        // A webhook left registered (by webhook mode, or another program) makes getUpdates
        // fail with 409 Conflict for good; clearing it is what polling needs. Best effort.
        let clear = serde_json::json!({ "drop_pending_updates": false });
        if let Err(e) = self.api.call::<bool>("deleteWebhook", &clear, None).await {
            tracing::debug!(platform = "telegram", "deleteWebhook failed: {e}");
        }
        let mut offset = match &settings.offset_file {
            Some(path) => load_offset(path).await,
            None => None,
        };
        let poll_secs = settings.poll_timeout.as_secs();
        loop {
            let mut body = serde_json::json!({
                "timeout": poll_secs,
                "allowed_updates": ["message", "channel_post"],
            });
            if let Some(next) = offset {
                body["offset"] = serde_json::json!(next);
            }
            let request_timeout = settings.poll_timeout + Duration::from_secs(15);
            let result = tokio::select! {
                r = self.api.call::<Vec<Update>>("getUpdates", &body, Some(request_timeout)) => r,
                _ = cancel.cancelled() => return Ok(()),
            };
            match result {
                Ok(updates) => {
                    backoff.reset();
                    for update in updates {
                        match self.forward(&update, me.id, &inbound, &cancel).await {
                            Step::Continue => {}
                            Step::Stop => return Ok(()),
                        }
                        let next = update.update_id + 1;
                        offset = Some(offset.map_or(next, |o| o.max(next)));
                        if let Some(path) = &settings.offset_file {
                            save_offset(path, next).await;
                        }
                    }
                }
                Err(e @ PlatformError::Auth { .. }) => return Err(e),
                Err(e) => {
                    let delay = self.delay_after(&e, &mut backoff);
                    tracing::warn!(
                        platform = "telegram",
                        "getUpdates failed, retrying in {} ms: {e}",
                        delay.as_millis()
                    );
                    if !sleep_or_cancel(delay, &cancel).await {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Converts one update and hands it to the channel (waiting while the channel is full).
    pub(super) async fn forward(
        &self,
        update: &Update,
        bot_id: i64,
        inbound: &mpsc::Sender<InboundMessage>,
        cancel: &CancellationToken,
    ) -> Step {
        let Some(msg) = update.message.as_ref().or(update.channel_post.as_ref()) else {
            return Step::Continue;
        };
        if msg.from.as_ref().is_some_and(|u| u.id == bot_id) {
            return Step::Continue;
        }
        let Some(mut message) = inbound::text_message(msg) else {
            return Step::Continue;
        };
        if let Some(media) = inbound::media_of(msg) {
            tokio::select! {
                () = inbound::attach(
                    &self.api,
                    &mut message,
                    &media,
                    &self.settings.media_dir,
                    self.settings.max_media_bytes,
                ) => {}
                _ = cancel.cancelled() => return Step::Stop,
            }
        }
        tokio::select! {
            sent = inbound.send(message) => match sent {
                Ok(()) => Step::Continue,
                Err(_) => Step::Stop,
            },
            _ = cancel.cancelled() => Step::Stop,
        }
    }
}
