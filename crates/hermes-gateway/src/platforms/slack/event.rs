//! Slack Events API `message` / `app_mention` events → [`InboundMessage`]s.
//! Source: Slack API docs, "message event", "app_mention event", "message subtypes".

use serde::Deserialize;

use crate::platform::{ChatType, InboundMessage, MessageSource};
use crate::platforms::media::RemoteFile;

use super::PLATFORM;

/// Subtypes that are still a person talking: a message with files, and a thread reply
/// also sent to the channel. Every other subtype (edits, deletions, joins, topic changes,
/// bot messages) is not conversation.
const USER_SUBTYPES: [&str; 2] = ["file_share", "thread_broadcast"];

#[derive(Debug, Deserialize)]
struct FileObj {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mimetype: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    url_private_download: Option<String>,
    #[serde(default)]
    url_private: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    real_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct EventObj {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    subtype: Option<String>,
    #[serde(default)]
    bot_id: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    thread_ts: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    channel_type: Option<String>,
    #[serde(default)]
    files: Vec<FileObj>,
    #[serde(default)]
    user_profile: Option<Profile>,
}

/// A parsed message before attachment download.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The message (`attachments` still empty).
    pub(crate) message: InboundMessage,
    /// Files to download with the bot token: the private URL and what Slack says.
    pub(crate) files: Vec<(String, RemoteFile)>,
}

/// Chat type from `channel_type` (`im` → DM, `mpim` → group, `channel`/`group` → channel);
/// `app_mention` events carry none, so the channel id's prefix decides (`D…` is a DM).
pub(crate) fn chat_type(channel_type: Option<&str>, channel: &str) -> ChatType {
    match channel_type {
        Some("im") => ChatType::Dm,
        Some("mpim") => ChatType::Group,
        Some(_) => ChatType::Channel,
        None if channel.starts_with('D') => ChatType::Dm,
        None => ChatType::Channel,
    }
}

/// Slack's text with the bot's own mention removed and the three entities Slack escapes
/// (`&lt;`, `&gt;`, `&amp;`) decoded.
pub(crate) fn clean_text(text: &str, bot_user_id: Option<&str>) -> String {
    let mut t = text.to_owned();
    if let Some(id) = bot_user_id {
        t = t.replace(&format!("<@{id}>"), "");
    }
    t.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
        .trim()
        .to_owned()
}

/// Reads the `event` of an `events_api` payload. `None` for events the gateway must not
/// see: other event types, bot messages (`bot_id`, or the bot's own user id), subtypes
/// other than [`USER_SUBTYPES`], events without user, channel or timestamp. `user` is the
/// stable user id; `ts` the message id; `thread_ts` the thread id.
pub(crate) fn parse_event(
    event: &serde_json::Value,
    bot_user_id: Option<&str>,
) -> Option<Incoming> {
    let e: EventObj = match serde_json::from_value(event.clone()) {
        Ok(e) => e,
        Err(err) => {
            tracing::warn!(platform = PLATFORM, error = %err, "unreadable event");
            return None;
        }
    };
    if e.kind != "message" && e.kind != "app_mention" {
        return None;
    }
    if e.bot_id.is_some() {
        return None;
    }
    if let Some(sub) = &e.subtype
        && !USER_SUBTYPES.contains(&sub.as_str())
    {
        return None;
    }
    let (user, channel, ts) = (e.user?, e.channel?, e.ts?);
    if bot_user_id == Some(user.as_str()) {
        return None;
    }
    let files = e
        .files
        .iter()
        .filter_map(|f| {
            let url = f.url_private_download.clone().or(f.url_private.clone())?;
            Some((
                url,
                RemoteFile {
                    unique: format!("{ts}-{}", f.id),
                    file_name: f.name.clone().unwrap_or_else(|| f.id.clone()),
                    mime_type: f.mimetype.clone(),
                    declared_size: f.size,
                },
            ))
        })
        .collect();
    let user_name = e.user_profile.and_then(|p| {
        p.display_name
            .filter(|n| !n.is_empty())
            .or(p.real_name.filter(|n| !n.is_empty()))
    });
    let message = InboundMessage {
        source: MessageSource {
            platform: PLATFORM.into(),
            chat_type: chat_type(e.channel_type.as_deref(), &channel),
            chat_id: Some(channel),
            thread_id: e.thread_ts,
            user_id: Some(user),
            user_name,
        },
        message_id: Some(ts),
        text: clean_text(e.text.as_deref().unwrap_or(""), bot_user_id),
        reply_to: None,
        reply_to_text: None,
        attachments: Vec::new(),
    };
    Some(Incoming { message, files })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(extra: serde_json::Value) -> serde_json::Value {
        let mut v = json!({"type": "message", "user": "U42", "text": "hi &lt;there&gt; &amp; you",
                           "ts": "1700000000.000100", "channel": "D1", "channel_type": "im"});
        if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in x {
                o.insert(k.clone(), val.clone());
            }
        }
        v
    }

    #[test]
    fn dm_message_with_stable_ids_and_decoded_text() {
        let m = parse_event(&ev(json!({})), Some("UBOT"))
            .expect("a message")
            .message;
        assert_eq!(m.source.chat_type, ChatType::Dm);
        assert_eq!(m.source.chat_id.as_deref(), Some("D1"));
        assert_eq!(m.source.user_id.as_deref(), Some("U42"));
        assert_eq!(m.message_id.as_deref(), Some("1700000000.000100"));
        assert_eq!(m.text, "hi <there> & you");
    }

    #[test]
    fn channel_types() {
        assert_eq!(chat_type(Some("im"), "D1"), ChatType::Dm);
        assert_eq!(chat_type(Some("mpim"), "G1"), ChatType::Group);
        assert_eq!(chat_type(Some("channel"), "C1"), ChatType::Channel);
        assert_eq!(chat_type(Some("group"), "G1"), ChatType::Channel);
        assert_eq!(chat_type(None, "D9"), ChatType::Dm);
        assert_eq!(chat_type(None, "C9"), ChatType::Channel);
    }

    #[test]
    fn mention_in_a_thread() {
        let v = json!({"type": "app_mention", "user": "U1", "text": "<@UBOT> summarize",
                       "ts": "2.0", "thread_ts": "1.0", "channel": "C7"});
        let m = parse_event(&v, Some("UBOT")).expect("a message").message;
        assert_eq!(m.source.chat_type, ChatType::Channel);
        assert_eq!(m.source.thread_id.as_deref(), Some("1.0"));
        assert_eq!(m.text, "summarize");
    }

    #[test]
    fn bots_edits_joins_and_own_messages_are_skipped() {
        assert!(parse_event(&ev(json!({"bot_id": "B1"})), Some("UBOT")).is_none());
        assert!(parse_event(&ev(json!({"user": "UBOT"})), Some("UBOT")).is_none());
        for sub in [
            "message_changed",
            "message_deleted",
            "channel_join",
            "bot_message",
        ] {
            assert!(
                parse_event(&ev(json!({"subtype": sub})), Some("UBOT")).is_none(),
                "{sub}"
            );
        }
        assert!(parse_event(&json!({"type": "reaction_added", "user": "U1"}), None).is_none());
        assert!(parse_event(&ev(json!({"subtype": "file_share"})), Some("UBOT")).is_some());
    }

    #[test]
    fn files_use_the_private_download_url() {
        let v = ev(json!({"subtype": "file_share", "files": [
            {"id": "F1", "name": "a.pdf", "mimetype": "application/pdf", "size": 10,
             "url_private_download": "https://files/a.pdf"}]}));
        let inc = parse_event(&v, None).expect("a message");
        assert_eq!(inc.files.len(), 1);
        assert_eq!(inc.files[0].0, "https://files/a.pdf");
        assert_eq!(inc.files[0].1.file_name, "a.pdf");
    }
}
