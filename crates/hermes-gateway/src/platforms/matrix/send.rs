//! Sending: text (`body` + HTML), edits (`m.replace` with `m.new_content`), files through
//! the content repository; replies and threads as `m.relates_to`. Every event is a `PUT`
//! with a transaction id made once per message, so a retry after a timeout or a rate limit
//! stores it once.

use std::path::Path;

use serde_json::{Value, json};
use unicode_segmentation::UnicodeSegmentation;

use super::{MatrixAdapter, PLATFORM, api, format, lock};
use crate::error::PlatformError;
use crate::platform::{ChatTarget, SentMessage};

/// Largest event content sent, in bytes of JSON: the spec caps a whole event (with its
/// envelope) at 65536 bytes.
const MAX_CONTENT_BYTES: usize = 60_000;

fn text_content(markdown: &str, msgtype: &str) -> Value {
    let r = format::render(markdown);
    let mut c = json!({"msgtype": msgtype, "body": r.body});
    if let Some(html) = r.html {
        c["format"] = json!("org.matrix.custom.html");
        c["formatted_body"] = json!(html);
    }
    c
}

fn size(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// Drops the HTML when the content is over the size cap; returns false when even the plain
/// text is too large.
fn fit(content: &mut Value) -> bool {
    if size(content) <= MAX_CONTENT_BYTES {
        return true;
    }
    if let Some(obj) = content.as_object_mut() {
        obj.remove("format");
        obj.remove("formatted_body");
    }
    size(content) <= MAX_CONTENT_BYTES
}

/// Cuts `text` into pieces whose JSON stays under the cap, between grapheme clusters.
fn split_bytes(text: &str, budget: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_len = 0;
    for g in text.graphemes(true) {
        // JSON escaping at most sextuples a byte (`\u00XX`).
        let cost = serde_json::to_string(g)
            .map(|s| s.len() - 2)
            .unwrap_or(g.len() * 6);
        if cur_len + cost > budget && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
            cur_len = 0;
        }
        cur.push_str(g);
        cur_len += cost;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Adds the reply / thread relation of `target` (thread: `m.thread` with the reply fallback
/// for clients without threads, as Python Hermes sends it).
fn relate(content: &mut Value, target: &ChatTarget) {
    if let Some(root) = &target.thread_id {
        let reply = target.reply_to.as_deref().unwrap_or(root);
        content["m.relates_to"] = json!({
            "rel_type": "m.thread",
            "event_id": root,
            "is_falling_back": true,
            "m.in_reply_to": {"event_id": reply},
        });
    } else if let Some(reply) = &target.reply_to {
        content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": reply}});
    }
}

fn mime_of(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "wav" => "audio/wav",
        "m4a" => "audio/mp4",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "pdf" => "application/pdf",
        "txt" | "md" | "log" => "text/plain",
        "json" => "application/json",
        "csv" => "text/csv",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

fn msgtype_of(mime: &str) -> &'static str {
    match mime.split('/').next() {
        Some("image") => "m.image",
        Some("audio") => "m.audio",
        Some("video") => "m.video",
        _ => "m.file",
    }
}

impl MatrixAdapter {
    /// The room a target names: a room id (`!…`) as it is, an alias (`#…:server`) looked
    /// up in the directory, a user id (`@…:server`) as the DM with them — an existing room
    /// of just the two of us, else a new direct chat inviting them (remembered).
    pub(crate) async fn room_of(&self, chat: &str) -> Result<String, PlatformError> {
        if !chat.starts_with(['@', '#']) {
            return Ok(chat.to_string());
        }
        if let Some(room) = lock(&self.dm_rooms).get(chat) {
            return Ok(room.clone());
        }
        let s = self.session().await?;
        let room = if chat.starts_with('#') {
            self.client.resolve_alias(&s.token, chat).await?
        } else {
            let mut found = None;
            for room in self.client.joined_rooms(&s.token).await? {
                let members = self.client.joined_members(&s.token, &room).await?;
                if members.len() > 2 || members.iter().any(|m| m != chat && m != &s.user_id) {
                    continue;
                }
                // Joined, or invited by an earlier send and not yet joined.
                let theirs = self.client.membership(&s.token, &room, chat).await?;
                if matches!(theirs.as_deref(), Some("join" | "invite")) {
                    found = Some(room);
                    break;
                }
            }
            match found {
                Some(room) => room,
                None => {
                    let room = self.client.create_dm(&s.token, chat).await?;
                    tracing::info!(platform = PLATFORM, user = %chat, room = %room, "opened a direct chat");
                    room
                }
            }
        };
        lock(&self.dm_rooms).insert(chat.to_string(), room.clone());
        Ok(room)
    }

    /// Sends one event with a fresh transaction id, retrying the same id after a rate limit
    /// (up to 3 times, when the wait is at most `max_rate_limit_wait`) and once after a
    /// network failure. A refused token drops the session (a password login is redone).
    pub(crate) async fn put_event(
        &self,
        room: &str,
        kind: &str,
        content: &Value,
    ) -> Result<String, PlatformError> {
        let txn = api::new_txn_id();
        let mut attempts = 0;
        loop {
            let s = self.session().await?;
            let result = self
                .client
                .send_event(&s.token, room, kind, &txn, content)
                .await;
            attempts += 1;
            match result {
                Ok(id) => return Ok(id),
                Err(PlatformError::RateLimited { retry_after, .. })
                    if attempts <= 3 && retry_after <= self.settings.max_rate_limit_wait =>
                {
                    tracing::warn!(
                        platform = PLATFORM,
                        room,
                        "rate limited (M_LIMIT_EXCEEDED), sending again in {} ms",
                        retry_after.as_millis()
                    );
                    tokio::time::sleep(retry_after).await;
                }
                Err(e @ PlatformError::Transport { .. }) if attempts == 1 => {
                    tracing::warn!(
                        platform = PLATFORM,
                        room,
                        "send failed, trying once more with the same transaction id: {e}"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
                Err(e @ PlatformError::Auth { .. }) => {
                    self.drop_session().await;
                    // A password login is redone once (another login of the same device,
                    // e.g. a `hermes send`, replaced our token).
                    if attempts > 1 || self.settings.password.is_none() {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Notes that the bot answered in `target`'s thread (follow-ups need no mention).
    fn note_thread(&self, target: &ChatTarget) {
        if let Some(root) = &target.thread_id {
            lock(&self.state).add_thread(root);
        }
    }

    pub(crate) async fn send_text(
        &self,
        target: &ChatTarget,
        text: &str,
    ) -> Result<SentMessage, PlatformError> {
        let room = self.room_of(&target.chat_id).await?;
        let mut content = text_content(text, "m.text");
        relate(&mut content, target);
        self.note_thread(target);
        if fit(&mut content) {
            let id = self.put_event(&room, "m.room.message", &content).await?;
            return Ok(SentMessage { message_id: id });
        }
        // Only text far past the chunk size in bytes (emoji, escapes) gets here: cut it.
        tracing::warn!(
            platform = PLATFORM,
            "a chunk is over the event size limit; sending it in parts"
        );
        let mut first = None;
        for part in split_bytes(text, MAX_CONTENT_BYTES - 2_000) {
            let mut c = json!({"msgtype": "m.text", "body": part});
            relate(&mut c, target);
            let id = self.put_event(&room, "m.room.message", &c).await?;
            first.get_or_insert(id);
        }
        first
            .map(|message_id| SentMessage { message_id })
            .ok_or_else(|| PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: "nothing to send".into(),
            })
    }

    pub(crate) async fn edit_text(
        &self,
        target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        let mut new_content = text_content(text, "m.text");
        if !fit(&mut new_content) {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: "the edited text is over the event size limit".into(),
            });
        }
        // The fallback for clients without edits: "* " and the new text.
        let mut content = json!({
            "msgtype": "m.text",
            "body": format!("* {}", new_content["body"].as_str().unwrap_or("")),
            "m.new_content": new_content,
            "m.relates_to": {"rel_type": "m.replace", "event_id": message.message_id},
        });
        if let Some(html) = content["m.new_content"]["formatted_body"].as_str() {
            let html = format!("* {html}");
            content["format"] = json!("org.matrix.custom.html");
            content["formatted_body"] = json!(html);
        }
        if !fit(&mut content)
            && let Some(obj) = content
                .get_mut("m.new_content")
                .and_then(Value::as_object_mut)
        {
            obj.remove("format");
            obj.remove("formatted_body");
        }
        let room = self.room_of(&target.chat_id).await?;
        self.put_event(&room, "m.room.message", &content)
            .await
            .map(|_| ())
    }

    pub(crate) async fn upload_and_send(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let room = self.room_of(&target.chat_id).await?;
        let (bytes, name) = crate::platforms::http::read_upload(PLATFORM, path).await?;
        let mime = mime_of(path);
        let len = bytes.len();
        let s = self.session().await?;
        let uri = self.client.upload(&s.token, bytes, &name, mime).await?;
        let mut content = json!({
            "msgtype": msgtype_of(mime),
            "body": name,
            "filename": name,
            "url": uri,
            "info": {"mimetype": mime, "size": len},
        });
        if let Some(caption) = caption.filter(|c| !c.trim().is_empty()) {
            // Spec v1.10 captions: `body` is the caption when `filename` is set.
            let r = format::render(caption);
            content["body"] = json!(r.body);
            if let Some(html) = r.html {
                content["format"] = json!("org.matrix.custom.html");
                content["formatted_body"] = json!(html);
            }
        }
        relate(&mut content, target);
        self.note_thread(target);
        fit(&mut content);
        let id = self.put_event(&room, "m.room.message", &content).await?;
        Ok(SentMessage { message_id: id })
    }

    /// Tells `room` once (ever, across restarts) that it is encrypted and cannot be read.
    pub(crate) async fn notice_encryption(&self, room: &str) {
        {
            let st = lock(&self.state);
            if st.encryption_noticed.iter().any(|r| r == room) {
                return;
            }
        }
        tracing::warn!(
            platform = PLATFORM,
            room,
            "room is end-to-end encrypted; hermes cannot read its encrypted messages (E2EE is not supported) — telling the room once"
        );
        let content = json!({"msgtype": "m.notice", "body": super::ENCRYPTION_NOTICE});
        match self.put_event(room, "m.room.message", &content).await {
            Ok(_) => {
                lock(&self.state).encryption_noticed.push(room.to_string());
                self.persist().await;
            }
            Err(e) => {
                tracing::warn!(
                    platform = PLATFORM,
                    room,
                    "could not post the encryption notice: {e}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_for_replies_and_threads() {
        let mut c = json!({});
        relate(
            &mut c,
            &ChatTarget {
                chat_id: "!r".into(),
                thread_id: Some("$root".into()),
                reply_to: None,
            },
        );
        assert_eq!(c["m.relates_to"]["rel_type"], "m.thread");
        assert_eq!(c["m.relates_to"]["m.in_reply_to"]["event_id"], "$root");
        let mut c = json!({});
        relate(
            &mut c,
            &ChatTarget {
                chat_id: "!r".into(),
                thread_id: None,
                reply_to: Some("$m".into()),
            },
        );
        assert_eq!(
            c["m.relates_to"],
            json!({"m.in_reply_to": {"event_id": "$m"}})
        );
    }

    #[test]
    fn oversized_content_loses_html_then_splits_between_graphemes() {
        let mut small = text_content("**hi**", "m.text");
        assert!(fit(&mut small));
        assert!(small.get("formatted_body").is_some());
        let big = "**👍🏽** ".repeat(8_000);
        let mut c = text_content(&big, "m.text");
        assert!(!fit(&mut c));
        let parts = split_bytes(&big, 20_000);
        assert!(parts.len() > 1);
        assert_eq!(parts.concat(), big);
        for p in &parts {
            assert!(serde_json::to_string(p).unwrap().len() <= 20_002);
            assert!(
                !p.starts_with('\u{1F3FD}'),
                "a skin tone modifier was cut off"
            );
        }
    }

    #[test]
    fn files_get_their_msgtype() {
        assert_eq!(msgtype_of(mime_of(Path::new("a.PNG"))), "m.image");
        assert_eq!(msgtype_of(mime_of(Path::new("a.ogg"))), "m.audio");
        assert_eq!(msgtype_of(mime_of(Path::new("a.bin"))), "m.file");
    }
}
