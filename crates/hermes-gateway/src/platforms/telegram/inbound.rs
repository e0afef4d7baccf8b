//! Turning a Bot API `Message` into an [`InboundMessage`]: who and where (stable ids only for
//! identity, names for display), replies, forum topics, and attachments saved under the media
//! directory with a size cap.

use std::path::{Path, PathBuf};

use super::api::{BotApi, DownloadError};
use super::types::{File, Message};
use crate::delivery::sanitize_file_name;
use crate::platform::{Attachment, AttachmentKind, ChatType, InboundMessage, MessageSource};

/// Note added to the text when an attachment is over the size cap (model-visible; shared
/// with the other adapters: `{name}`, `{size}` and `{max}` in bytes).
const TOO_LARGE_NOTE: &str = include_str!("../../../prompts/attachment_too_large.md");
/// Note added to the text when an attachment could not be downloaded (model-visible).
const FAILED_NOTE: &str = include_str!("../../../prompts/attachment_failed.md");

/// A file a message carries, before download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MediaRef {
    pub kind: AttachmentKind,
    pub file_id: String,
    pub file_unique_id: String,
    pub file_name: Option<String>,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
}

/// Maps Telegram chat types: `private` → Dm, `group`/`supergroup` → Group, `channel` →
/// Channel (unknown types count as groups: never widen a session to one user by mistake).
pub(crate) fn chat_type(kind: &str) -> ChatType {
    match kind {
        "private" => ChatType::Dm,
        "channel" => ChatType::Channel,
        _ => ChatType::Group,
    }
}

/// Where `msg` came from: `from.id` is the stable user id; `@username` (or first and last
/// name) is display only. Forum topics give the thread id.
pub(crate) fn source_of(msg: &Message) -> MessageSource {
    let user_name = msg.from.as_ref().map(|u| match &u.username {
        Some(name) if !name.is_empty() => name.clone(),
        _ => match &u.last_name {
            Some(last) if !last.is_empty() => format!("{} {}", u.first_name, last),
            _ => u.first_name.clone(),
        },
    });
    MessageSource {
        platform: "telegram".into(),
        chat_type: chat_type(&msg.chat.kind),
        chat_id: Some(msg.chat.id.to_string()),
        thread_id: topic_of(msg).map(|t| t.to_string()),
        user_id: msg.from.as_ref().map(|u| u.id.to_string()),
        user_name,
    }
}

/// The forum topic a message belongs to (only messages Telegram marks as topic messages;
/// in supergroups without topics `message_thread_id` names reply threads, not topics).
fn topic_of(msg: &Message) -> Option<i64> {
    if msg.is_topic_message {
        msg.message_thread_id
    } else {
        None
    }
}

/// The message `msg` replies to, ignoring the implicit reply to a topic's first message that
/// Telegram adds to every message in a forum topic.
fn real_reply(msg: &Message) -> Option<&Message> {
    let replied = msg.reply_to_message.as_deref()?;
    if topic_of(msg) == Some(replied.message_id) {
        return None;
    }
    Some(replied)
}

/// The file a message carries (the largest photo size for photos).
pub(crate) fn media_of(msg: &Message) -> Option<MediaRef> {
    if let Some(sizes) = &msg.photo
        && let Some(best) = sizes
            .iter()
            .max_by_key(|p| (u64::from(p.width) * u64::from(p.height), p.file_size))
    {
        return Some(MediaRef {
            kind: AttachmentKind::Image,
            file_id: best.file_id.clone(),
            file_unique_id: best.file_unique_id.clone(),
            file_name: None,
            mime_type: Some("image/jpeg".into()),
            size: best.file_size,
        });
    }
    let (kind, file) = if let Some(f) = &msg.voice {
        (AttachmentKind::Audio, f)
    } else if let Some(f) = &msg.audio {
        (AttachmentKind::Audio, f)
    } else if let Some(f) = &msg.video {
        (AttachmentKind::Video, f)
    } else if let Some(f) = &msg.document {
        let is_image = f
            .mime_type
            .as_deref()
            .is_some_and(|m| m.starts_with("image/"));
        let kind = if is_image {
            AttachmentKind::Image
        } else {
            AttachmentKind::Document
        };
        (kind, f)
    } else {
        return None;
    };
    Some(MediaRef {
        kind,
        file_id: file.file_id.clone(),
        file_unique_id: file.file_unique_id.clone(),
        file_name: file.file_name.clone(),
        mime_type: file.mime_type.clone(),
        size: file.file_size,
    })
}

/// The message without its attachment: `None` for messages with neither text nor a file
/// (stickers, service messages), which the gateway has nothing to answer.
pub(crate) fn text_message(msg: &Message) -> Option<InboundMessage> {
    let text = msg
        .text
        .clone()
        .or_else(|| msg.caption.clone())
        .unwrap_or_default();
    if text.is_empty() && media_of(msg).is_none() {
        return None;
    }
    let reply = real_reply(msg);
    Some(InboundMessage {
        source: source_of(msg),
        message_id: Some(msg.message_id.to_string()),
        text,
        reply_to: reply.map(|r| r.message_id.to_string()),
        reply_to_text: reply.and_then(|r| r.text.clone().or_else(|| r.caption.clone())),
        attachments: Vec::new(),
    })
}

fn fill(template: &str, name: &str, size: u64, limit: u64) -> String {
    template
        .trim_end()
        .replace("{name}", name)
        .replace("{size}", &size.to_string())
        .replace("{max}", &limit.to_string())
}

fn append_note(text: &mut String, note: &str) {
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(note);
}

/// Downloads `media` into `media_dir` (created if missing) unless it is over `max_bytes`;
/// on success the attachment is added to `msg`, otherwise a note saying why is added to its
/// text so the agent knows a file came but is not available.
pub(crate) async fn attach(
    api: &BotApi,
    msg: &mut InboundMessage,
    media: &MediaRef,
    media_dir: &Path,
    max_bytes: u64,
) {
    let shown = media
        .file_name
        .clone()
        .unwrap_or_else(|| kind_word(media.kind).to_string());
    if let Some(size) = media.size
        && size > max_bytes
    {
        append_note(
            &mut msg.text,
            &fill(TOO_LARGE_NOTE, &shown, size, max_bytes),
        );
        return;
    }
    match fetch(api, media, media_dir, max_bytes).await {
        Ok((path, size)) => msg.attachments.push(Attachment {
            kind: media.kind,
            path,
            file_name: media.file_name.clone(),
            mime_type: media.mime_type.clone(),
            size_bytes: size,
        }),
        Err(DownloadError::TooLarge(size)) => {
            append_note(
                &mut msg.text,
                &fill(TOO_LARGE_NOTE, &shown, size, max_bytes),
            );
        }
        Err(DownloadError::Failed(why)) => {
            tracing::warn!(platform = "telegram", file = %shown, "attachment not downloaded: {why}");
            append_note(&mut msg.text, &fill(FAILED_NOTE, &shown, 0, max_bytes));
        }
    }
}

fn kind_word(kind: AttachmentKind) -> &'static str {
    match kind {
        AttachmentKind::Image => "(photo)",
        AttachmentKind::Audio => "(voice or audio message)",
        AttachmentKind::Video => "(video)",
        AttachmentKind::Document => "(file)",
    }
}

async fn fetch(
    api: &BotApi,
    media: &MediaRef,
    media_dir: &Path,
    max_bytes: u64,
) -> Result<(PathBuf, u64), DownloadError> {
    let file: File = api
        .call(
            "getFile",
            &serde_json::json!({ "file_id": media.file_id }),
            None,
        )
        .await
        .map_err(|e| DownloadError::Failed(e.to_string()))?;
    if let Some(size) = file.file_size
        && size > max_bytes
    {
        return Err(DownloadError::TooLarge(size));
    }
    let Some(remote_path) = file.file_path else {
        // The Bot API leaves out file_path for files over its own download limit.
        return Err(DownloadError::TooLarge(
            file.file_size.or(media.size).unwrap_or(max_bytes + 1),
        ));
    };
    let base_name = media
        .file_name
        .clone()
        .or_else(|| remote_path.rsplit('/').next().map(str::to_string))
        .unwrap_or_default();
    let name = format!(
        "{}_{}",
        sanitize_file_name(&media.file_unique_id),
        sanitize_file_name(&base_name)
    );
    tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(hermes_protocol::private_fs::PRIVATE_DIR_MODE)
        .create(media_dir)
        .await
        .map_err(|e| DownloadError::Failed(format!("creating {}: {e}", media_dir.display())))?;
    let dest = media_dir.join(name);
    let size = api.download(&remote_path, &dest, max_bytes).await?;
    Ok((dest, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: serde_json::Value) -> Message {
        match serde_json::from_value(json) {
            Ok(m) => m,
            Err(e) => panic!("test message does not parse: {e}"),
        }
    }

    #[test]
    fn private_chat_maps_to_dm_with_stable_id_and_display_name() {
        let m = message(serde_json::json!({
            "message_id": 5, "chat": {"id": 42, "type": "private"},
            "from": {"id": 42, "is_bot": false, "first_name": "Alice", "username": "alice"},
            "text": "hi"
        }));
        let src = source_of(&m);
        assert_eq!(src.chat_type, ChatType::Dm);
        assert_eq!(src.user_id.as_deref(), Some("42"));
        assert_eq!(src.user_name.as_deref(), Some("alice"));
        assert_eq!(src.thread_id, None);
    }

    #[test]
    fn topic_reply_to_the_topic_root_is_not_a_reply_but_a_real_reply_is() {
        let base = serde_json::json!({
            "message_id": 20, "message_thread_id": 7, "is_topic_message": true,
            "chat": {"id": -100, "type": "supergroup", "is_forum": true},
            "from": {"id": 1, "first_name": "Bo"},
            "text": "in topic",
            "reply_to_message": {"message_id": 7, "chat": {"id": -100, "type": "supergroup"}}
        });
        let m = message(base.clone());
        let inbound = text_message(&m);
        assert_eq!(inbound.as_ref().and_then(|i| i.reply_to.clone()), None);
        assert_eq!(
            inbound.and_then(|i| i.source.thread_id),
            Some("7".to_string())
        );
        let mut real = base;
        real["reply_to_message"] = serde_json::json!({
            "message_id": 15, "chat": {"id": -100, "type": "supergroup"}, "text": "earlier"
        });
        let inbound = text_message(&message(real));
        assert_eq!(
            inbound.as_ref().and_then(|i| i.reply_to.clone()),
            Some("15".into())
        );
        assert_eq!(
            inbound.and_then(|i| i.reply_to_text),
            Some("earlier".into())
        );
    }

    #[test]
    fn reply_thread_in_a_plain_supergroup_is_not_a_topic() {
        let m = message(serde_json::json!({
            "message_id": 3, "message_thread_id": 2,
            "chat": {"id": -5, "type": "supergroup"}, "from": {"id": 9, "first_name": "C"},
            "text": "x"
        }));
        assert_eq!(source_of(&m).thread_id, None);
        assert_eq!(source_of(&m).chat_type, ChatType::Group);
    }

    #[test]
    fn stickers_and_service_messages_are_skipped() {
        let m = message(serde_json::json!({
            "message_id": 3, "chat": {"id": 1, "type": "private"}, "from": {"id": 1, "first_name": "A"}
        }));
        assert!(text_message(&m).is_none());
    }

    #[test]
    fn largest_photo_size_is_chosen() {
        let m = message(serde_json::json!({
            "message_id": 3, "chat": {"id": 1, "type": "private"},
            "photo": [
                {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 1000},
                {"file_id": "big", "file_unique_id": "b", "width": 1280, "height": 960, "file_size": 90000}
            ]
        }));
        let media = media_of(&m);
        assert_eq!(media.map(|m| m.file_id), Some("big".to_string()));
    }
}
