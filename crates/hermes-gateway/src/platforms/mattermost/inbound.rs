//! What a websocket `posted` event is (Mattermost API v4 "WebSocket" reference: `{"event":
//! "posted", "data": {"channel_type": "O", "post": "<the post as a JSON string>",
//! "sender_name": "@alice", …}, "seq": 7}`). Rules carried over from Python Hermes'
//! `plugins/platforms/mattermost`: the bot's own posts and system posts (`type` set) are
//! skipped; outside DMs only channels in `MATTERMOST_ALLOWED_CHANNELS` (when set) are read,
//! and only posts that mention the bot (`@username` or `@user_id`, any case) unless
//! `MATTERMOST_REQUIRE_MENTION=false` or the channel is in
//! `MATTERMOST_FREE_RESPONSE_CHANNELS`; the mention is removed from the text. A post in a
//! thread carries its root as the thread; in reply mode `thread` a top-level channel post
//! starts a thread of its own.

use serde_json::Value;

use super::{MattermostSettings, PLATFORM, ReplyMode};
use crate::platform::{ChatType, InboundMessage, MessageSource};

/// A post to hand on, with the ids of its files.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The message.
    pub(crate) msg: InboundMessage,
    /// `file_ids` of the post.
    pub(crate) files: Vec<String>,
}

/// Reads a `posted` event's `data`. `Ok(None)`: nothing to answer (the reason is logged at
/// debug level); `Err`: malformed, naming what.
pub(crate) fn parse_posted(
    data: &Value,
    bot_id: &str,
    bot_username: &str,
    s: &MattermostSettings,
) -> Result<Option<Incoming>, String> {
    let raw = data
        .get("post")
        .and_then(Value::as_str)
        .ok_or("a `posted` event without `data.post`")?;
    let post: Value =
        serde_json::from_str(raw).map_err(|e| format!("`data.post` is not JSON: {e}"))?;
    let field = |k: &str| {
        post.get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let (Some(post_id), Some(channel), Some(user)) =
        (field("id"), field("channel_id"), field("user_id"))
    else {
        return Err("a post without id, channel_id or user_id".into());
    };
    if user == bot_id {
        tracing::debug!(platform = PLATFORM, "own post skipped");
        return Ok(None);
    }
    if field("type").is_some() {
        tracing::debug!(platform = PLATFORM, "system post skipped");
        return Ok(None);
    }
    let channel_type = data
        .get("channel_type")
        .and_then(Value::as_str)
        .unwrap_or("O");
    let chat_type = match channel_type {
        "D" => ChatType::Dm,
        "G" | "P" => ChatType::Group,
        _ => ChatType::Channel,
    };
    let mut text = field("message").unwrap_or_default().to_string();
    if chat_type != ChatType::Dm {
        if !s.allowed_channels.is_empty() && !s.allowed_channels.iter().any(|c| c == channel) {
            tracing::debug!(
                platform = PLATFORM,
                "post in a channel not in MATTERMOST_ALLOWED_CHANNELS skipped"
            );
            return Ok(None);
        }
        let patterns = [format!("@{bot_username}"), format!("@{bot_id}")];
        let mentioned = patterns
            .iter()
            .filter(|p| p.len() > 1)
            .any(|p| contains_ci(&text, p));
        let free = s.free_response_channels.iter().any(|c| c == channel);
        if s.require_mention && !free && !mentioned {
            tracing::debug!(
                platform = PLATFORM,
                "channel post without a mention skipped"
            );
            return Ok(None);
        }
        for p in patterns.iter().filter(|p| p.len() > 1) {
            text = remove_ci(&text, p);
        }
        text = text.trim().to_string();
    }
    let files: Vec<String> = post
        .get("file_ids")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if text.trim().is_empty() && files.is_empty() {
        return Ok(None);
    }
    let mut thread = field("root_id").map(str::to_owned);
    if thread.is_none() && s.reply_mode == ReplyMode::Thread && chat_type != ChatType::Dm {
        thread = Some(post_id.to_string());
    }
    let user_name = data
        .get("sender_name")
        .and_then(Value::as_str)
        .map(|n| n.trim_start_matches('@').to_string())
        .filter(|n| !n.is_empty());
    Ok(Some(Incoming {
        msg: InboundMessage {
            source: MessageSource {
                platform: PLATFORM.into(),
                chat_type,
                chat_id: Some(channel.to_string()),
                thread_id: thread,
                user_id: Some(user.to_string()),
                user_name,
            },
            message_id: Some(post_id.to_string()),
            text: text.trim_start().to_string(),
            reply_to: None,
            reply_to_text: None,
            attachments: Vec::new(),
        },
        files,
    }))
}

fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
}

/// `hay` without any case-insensitive occurrence of the ASCII-insensitive `needle`.
fn remove_ci(hay: &str, needle: &str) -> String {
    let lower_needle = needle.to_lowercase();
    let mut out = String::with_capacity(hay.len());
    let mut rest = hay;
    while !rest.is_empty() {
        let candidate: String = rest.chars().take(needle.chars().count()).collect();
        if candidate.to_lowercase() == lower_needle {
            rest = &rest[candidate.len()..];
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_removed_in_any_case() {
        assert_eq!(remove_ci("@Hermes: hi @hermes", "@hermes"), ": hi ");
        assert_eq!(remove_ci("café @bot ☕", "@bot"), "café  ☕");
    }
}
