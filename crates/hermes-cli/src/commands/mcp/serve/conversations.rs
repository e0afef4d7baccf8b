//! What `hermes mcp serve` reads from the session store: the gateway's conversations (a
//! session key, the session it routes to and the chat's peer columns) and their messages,
//! in the shapes of Python Hermes' `mcp_serve.py` (`conversations_list`, `conversation_get`,
//! `messages_read`, `attachments_fetch`, `channels_list`).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use hermes_protocol::{ContentPart, Role};
use hermes_store::{GatewayPeer, SessionStore, StoreError, StoredMessage};
use serde_json::{Value, json};

/// Sessions looked at for conversations, newest first (a home with more gateway sessions
/// lists the conversations of the newest ones).
pub const SCAN_SESSIONS: usize = 5_000;
/// Characters of a message's text `messages_read` returns (as Python).
pub const READ_CHARS: usize = 2_000;

/// One gateway conversation: the key, its routed session and who and where the chat is.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The session key (`agent:main:telegram:dm:42`).
    pub key: String,
    /// The session the key routes to.
    pub session_id: String,
    /// The peer columns of that session (platform, chat id and type, names).
    pub peer: GatewayPeer,
    /// Python's `SessionSource` of the chat (`origin_json`), or one made of the columns.
    pub origin: Value,
    /// When the session started.
    pub created_at: DateTime<Utc>,
    /// Its last message, or its start.
    pub updated_at: DateTime<Utc>,
    /// Tokens the session used.
    pub input_tokens: u64,
    /// See [`Conversation::input_tokens`].
    pub output_tokens: u64,
}

impl Conversation {
    fn field(&self, name: &str) -> String {
        self.origin
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// The platform (`telegram`, …).
    pub fn platform(&self) -> String {
        if self.peer.source.is_empty() {
            self.field("platform")
        } else {
            self.peer.source.clone()
        }
    }

    /// The chat's name as the platform gave it.
    pub fn display_name(&self) -> String {
        self.peer
            .display_name
            .clone()
            .unwrap_or_else(|| self.field("chat_name"))
    }

    /// `conversations_list`'s entry.
    pub fn summary(&self) -> Value {
        json!({
            "session_key": self.key,
            "session_id": self.session_id,
            "platform": self.platform(),
            "chat_type": self.peer.chat_type.clone().unwrap_or_else(|| self.field("chat_type")),
            "display_name": self.display_name(),
            "chat_name": self.field("chat_name"),
            "user_name": self.field("user_name"),
            "updated_at": self.updated_at.to_rfc3339(),
        })
    }

    /// `conversation_get`'s answer.
    pub fn detail(&self) -> Value {
        let mut v = self.summary();
        if let Some(map) = v.as_object_mut() {
            map.insert(
                "chat_id".into(),
                json!(
                    self.peer
                        .chat_id
                        .clone()
                        .unwrap_or_else(|| self.field("chat_id"))
                ),
            );
            map.insert("thread_id".into(), json!(self.peer.thread_id));
            map.insert("created_at".into(), json!(self.created_at.to_rfc3339()));
            map.insert("input_tokens".into(), json!(self.input_tokens));
            map.insert("output_tokens".into(), json!(self.output_tokens));
            map.insert(
                "total_tokens".into(),
                json!(self.input_tokens + self.output_tokens),
            );
        }
        v
    }

    /// Whether `needle` (lower case) is in the name, the chat name or the key.
    pub fn matches(&self, needle: &str) -> bool {
        [
            self.display_name(),
            self.field("chat_name"),
            self.key.clone(),
        ]
        .iter()
        .any(|h| h.to_lowercase().contains(needle))
    }
}

/// Every conversation of the store, most recently active first.
///
/// Errors: the store's.
pub fn conversations(store: &SessionStore) -> Result<Vec<Conversation>, StoreError> {
    let keys: BTreeSet<String> = store
        .list_sessions(SCAN_SESSIONS, 0)?
        .into_iter()
        .filter_map(|s| s.session_key)
        .filter(|k| !k.is_empty())
        .collect();
    let mut out = Vec::new();
    for key in keys {
        if let Some(c) = conversation(store, &key)? {
            out.push(c);
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.updated_at));
    Ok(out)
}

/// The conversation of `key`, `None` when no session carries it.
///
/// Errors: the store's.
pub fn conversation(store: &SessionStore, key: &str) -> Result<Option<Conversation>, StoreError> {
    let Some(id) = store.route_session(key)? else {
        return Ok(None);
    };
    let Some(record) = store.get_session(&id)? else {
        return Ok(None);
    };
    let peer = store.gateway_peer(&id)?.unwrap_or_else(|| GatewayPeer {
        source: record.source.clone(),
        session_key: key.to_string(),
        ..GatewayPeer::default()
    });
    let origin = peer
        .origin_json
        .as_deref()
        .and_then(|j| serde_json::from_str::<Value>(j).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| {
            json!({
                "platform": peer.source,
                "chat_id": peer.chat_id,
                "chat_type": peer.chat_type,
                "thread_id": peer.thread_id,
                "user_id": peer.user_id,
            })
        });
    let updated_at = store.last_activity(&id)?.unwrap_or(record.started_at);
    Ok(Some(Conversation {
        key: key.to_string(),
        session_id: id,
        peer,
        origin,
        created_at: record.started_at,
        updated_at,
        input_tokens: record.input_tokens,
        output_tokens: record.output_tokens,
    }))
}

/// The visible text of a user or assistant message; `None` for other roles and empty texts.
pub fn chat_text(m: &StoredMessage) -> Option<String> {
    if !matches!(m.message.role, Role::User | Role::Assistant) {
        return None;
    }
    let text = m
        .message
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (!text.is_empty()).then_some(text)
}

/// The first `n` characters of `text`.
pub fn clip(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

/// A message's time as Unix seconds (Python's `timestamp` column).
pub fn unix(m: &StoredMessage) -> f64 {
    m.timestamp.timestamp_millis() as f64 / 1000.0
}

/// `messages_read`: the last `limit` user and assistant messages with text.
pub fn read(messages: &[StoredMessage], key: &str, limit: usize) -> Value {
    let all: Vec<Value> = messages
        .iter()
        .filter_map(|m| {
            let text = chat_text(m)?;
            Some(json!({
                "id": m.id.to_string(),
                "role": m.message.role.as_str(),
                "content": clip(&text, READ_CHARS),
                "timestamp": unix(m),
            }))
        })
        .collect();
    let shown = &all[all.len().saturating_sub(limit)..];
    json!({
        "session_key": key,
        "count": shown.len(),
        "total_in_session": all.len(),
        "messages": shown,
    })
}

/// `attachments_fetch`: the images of message `message_id` and the `MEDIA:` paths in its
/// text. `None` when the session has no such message.
pub fn attachments(messages: &[StoredMessage], message_id: &str) -> Option<Value> {
    let m = messages.iter().find(|m| m.id.to_string() == message_id)?;
    let mut found = Vec::new();
    for part in &m.message.content {
        match part {
            ContentPart::Image { url } => found.push(json!({"type": "image", "url": url})),
            ContentPart::Text { text } => {
                for path in media_paths(text) {
                    found.push(json!({"type": "media", "path": path}));
                }
            }
        }
    }
    Some(json!({
        "message_id": message_id,
        "count": found.len(),
        "attachments": found,
    }))
}

/// The paths after `MEDIA:` tags in `text` (the word that follows each tag).
fn media_paths(text: &str) -> Vec<String> {
    text.match_indices("MEDIA:")
        .filter_map(|(i, tag)| {
            let rest = text[i + tag.len()..].trim_start();
            let path = rest.split_whitespace().next()?;
            Some(path.to_string())
        })
        .collect()
}

/// [`channels`] over `home`'s `channel_directory.json` (absent or unreadable: none) and the
/// conversations of `store` (also `hermes send --list`).
pub fn channel_list(
    home: &hermes_protocol::HermesHome,
    store: &SessionStore,
    platform: Option<&str>,
) -> Result<Value, StoreError> {
    let path = home.root().join("channel_directory.json");
    let directory = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    Ok(channels(
        directory.as_ref(),
        &conversations(store)?,
        platform,
    ))
}

/// `channels_list`: the targets of `HERMES_HOME/channel_directory.json` (Python's cache of
/// the platforms' channels) when it has any, else one per conversation
/// (`platform:chat_id`), optionally of one platform.
pub fn channels(
    directory: Option<&Value>,
    convs: &[Conversation],
    platform: Option<&str>,
) -> Value {
    let wanted = |p: &str| platform.is_none_or(|w| w.eq_ignore_ascii_case(p));
    let mut out = Vec::new();
    if let Some(platforms) = directory
        .and_then(|d| d.get("platforms"))
        .and_then(Value::as_object)
    {
        for (plat, entries) in platforms {
            if !wanted(plat) {
                continue;
            }
            for ch in entries.as_array().into_iter().flatten() {
                let id = ch.get("id").or_else(|| ch.get("chat_id"));
                let id = match id {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => String::new(),
                };
                let name = ch
                    .get("name")
                    .or_else(|| ch.get("display_name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push(json!({
                    "target": if id.is_empty() { plat.clone() } else { format!("{plat}:{id}") },
                    "platform": plat,
                    "name": name,
                    "chat_type": ch.get("type").and_then(Value::as_str).unwrap_or_default(),
                }));
            }
        }
    }
    if out.is_empty() {
        let mut seen = BTreeSet::new();
        for c in convs {
            let (plat, chat) = (c.platform(), c.peer.chat_id.clone().unwrap_or_default());
            if plat.is_empty() || chat.is_empty() || !wanted(&plat) {
                continue;
            }
            let target = format!("{plat}:{chat}");
            if seen.insert(target.clone()) {
                out.push(json!({
                    "target": target,
                    "platform": plat,
                    "name": c.display_name(),
                    "chat_type": c.peer.chat_type.clone().unwrap_or_default(),
                }));
            }
        }
    }
    json!({"count": out.len(), "channels": out})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_tags_give_their_paths() {
        assert_eq!(
            media_paths("see MEDIA: /tmp/a.png and MEDIA:/tmp/b.pdf\nbye"),
            ["/tmp/a.png", "/tmp/b.pdf"]
        );
        assert!(media_paths("MEDIA:").is_empty());
    }
}
