//! Discord `MESSAGE_CREATE` payloads → [`InboundMessage`]s (gateway v10 message object).

use serde::Deserialize;

use crate::platform::{ChatType, InboundMessage, MessageSource};
use crate::platforms::media::RemoteFile;

use super::PLATFORM;

/// Message types that carry user text: `0` DEFAULT and `19` REPLY. Joins, pins, thread
/// notices and the like are not conversation.
const USER_MESSAGE_TYPES: [u8; 2] = [0, 19];

#[derive(Debug, Deserialize)]
struct User {
    id: String,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    global_name: Option<String>,
    #[serde(default)]
    bot: bool,
}

#[derive(Debug, Deserialize)]
struct AttachmentObj {
    id: String,
    filename: String,
    url: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    content_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Reference {
    #[serde(default)]
    message_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Referenced {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct MessageObj {
    id: String,
    channel_id: String,
    #[serde(default)]
    guild_id: Option<String>,
    author: User,
    #[serde(default)]
    content: String,
    #[serde(default, rename = "type")]
    kind: u8,
    #[serde(default)]
    webhook_id: Option<String>,
    #[serde(default)]
    attachments: Vec<AttachmentObj>,
    #[serde(default)]
    message_reference: Option<Reference>,
    #[serde(default)]
    referenced_message: Option<Referenced>,
}

/// A parsed message before thread resolution and attachment download.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The message; for guild messages `chat_id` is still the raw channel id (a thread's id
    /// when the message is in a thread) and `attachments` is empty.
    pub(crate) message: InboundMessage,
    /// Attachments to download: the CDN URL and what Discord says about the file.
    pub(crate) files: Vec<(String, RemoteFile)>,
}

/// Removes mentions of the bot itself (`<@ID>` and the legacy `<@!ID>`) and trims.
pub(crate) fn strip_self_mention(text: &str, bot_id: Option<&str>) -> String {
    let Some(id) = bot_id else {
        return text.trim().to_owned();
    };
    text.replace(&format!("<@{id}>"), "")
        .replace(&format!("<@!{id}>"), "")
        .trim()
        .to_owned()
}

/// Reads a `MESSAGE_CREATE` `d` object. `None` for messages the gateway must not see:
/// the bot's own (author id = `bot_user_id`), other bots' and webhooks' (no bot loops), and
/// non-user message types. A message without `guild_id` is a DM, else a guild `Group`
/// message; `author.id` is the stable user id, the display name is `global_name` or
/// `username`. Errors in the payload are logged and the message dropped.
pub(crate) fn parse_message_create(
    d: &serde_json::Value,
    bot_user_id: Option<&str>,
) -> Option<Incoming> {
    let m: MessageObj = match serde_json::from_value(d.clone()) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(platform = PLATFORM, error = %e, "unreadable MESSAGE_CREATE");
            return None;
        }
    };
    if bot_user_id == Some(m.author.id.as_str()) || m.author.bot || m.webhook_id.is_some() {
        return None;
    }
    if !USER_MESSAGE_TYPES.contains(&m.kind) {
        return None;
    }
    let chat_type = if m.guild_id.is_some() {
        ChatType::Group
    } else {
        ChatType::Dm
    };
    let files = m
        .attachments
        .iter()
        .map(|a| {
            (
                a.url.clone(),
                RemoteFile {
                    unique: format!("{}-{}", m.id, a.id),
                    file_name: a.filename.clone(),
                    mime_type: a.content_type.clone(),
                    declared_size: a.size,
                },
            )
        })
        .collect();
    let message = InboundMessage {
        source: MessageSource {
            platform: PLATFORM.into(),
            chat_type,
            chat_id: Some(m.channel_id),
            thread_id: None,
            user_id: Some(m.author.id),
            user_name: m.author.global_name.or(m.author.username),
        },
        message_id: Some(m.id),
        text: strip_self_mention(&m.content, bot_user_id),
        reply_to: m.message_reference.and_then(|r| r.message_id),
        reply_to_text: m.referenced_message.and_then(|r| r.content),
        attachments: Vec::new(),
    };
    Some(Incoming { message, files })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(author: &str, guild: Option<&str>) -> serde_json::Value {
        let mut v = json!({
            "id": "111", "channel_id": "222", "type": 0,
            "author": {"id": author, "username": "ann", "global_name": "Ann"},
            "content": "<@999> hello there",
        });
        if let Some(g) = guild {
            v["guild_id"] = json!(g);
        }
        v
    }

    #[test]
    fn dm_without_guild_and_stable_user_id() {
        let inc = parse_message_create(&msg("42", None), Some("999")).expect("a message");
        let m = inc.message;
        assert_eq!(m.source.chat_type, ChatType::Dm);
        assert_eq!(m.source.chat_id.as_deref(), Some("222"));
        assert_eq!(m.source.user_id.as_deref(), Some("42"));
        assert_eq!(m.source.user_name.as_deref(), Some("Ann"));
        assert_eq!(m.message_id.as_deref(), Some("111"));
        assert_eq!(m.text, "hello there");
    }

    #[test]
    fn guild_message_is_a_group_message() {
        let inc = parse_message_create(&msg("42", Some("7")), Some("999")).expect("a message");
        assert_eq!(inc.message.source.chat_type, ChatType::Group);
    }

    #[test]
    fn own_other_bot_webhook_and_system_messages_are_ignored() {
        assert!(parse_message_create(&msg("999", None), Some("999")).is_none());
        let mut bot = msg("5", None);
        bot["author"]["bot"] = json!(true);
        assert!(parse_message_create(&bot, Some("999")).is_none());
        let mut hook = msg("5", None);
        hook["webhook_id"] = json!("77");
        assert!(parse_message_create(&hook, Some("999")).is_none());
        let mut pin = msg("5", None);
        pin["type"] = json!(6);
        assert!(parse_message_create(&pin, Some("999")).is_none());
    }

    #[test]
    fn replies_and_attachments_are_read() {
        let mut v = msg("42", None);
        v["type"] = json!(19);
        v["message_reference"] = json!({"message_id": "100"});
        v["referenced_message"] = json!({"content": "earlier"});
        v["attachments"] = json!([{"id": "9", "filename": "a.png", "url": "http://x/a.png",
                                   "size": 12, "content_type": "image/png"}]);
        let inc = parse_message_create(&v, None).expect("a message");
        assert_eq!(inc.message.reply_to.as_deref(), Some("100"));
        assert_eq!(inc.message.reply_to_text.as_deref(), Some("earlier"));
        assert_eq!(inc.files.len(), 1);
        assert_eq!(inc.files[0].0, "http://x/a.png");
        assert_eq!(inc.files[0].1.declared_size, Some(12));
    }

    #[test]
    fn malformed_payload_is_dropped() {
        assert!(parse_message_create(&json!({"id": 1}), None).is_none());
    }
}
