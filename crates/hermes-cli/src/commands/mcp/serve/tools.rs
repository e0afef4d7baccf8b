//! The tools of `hermes mcp serve`: Python Hermes 0.19.0's `mcp_serve.py` set
//! (`conversations_list`, `conversation_get`, `messages_read`, `attachments_fetch`,
//! `events_poll`, `events_wait`, `messages_send`, `channels_list`, `permissions_list_open`,
//! `permissions_respond`) with its arguments, defaults and limits, plus `sessions_search`,
//! `memory_read`, `skills_list` and `skill_view`. Every tool has a JSON-Schema input and
//! answers a JSON object (the MCP result's `structuredContent`, also as its text);
//! a bad argument or a missing conversation is a tool error (`isError`) whose object has an
//! `error` saying what is wrong, as Python's answers do.

use std::sync::Arc;
use std::time::Duration;

use hermes_context::memory::{MemoryStore, MemoryTarget};
use hermes_context::skills::SkillCatalog;
use hermes_protocol::HermesHome;
use hermes_protocol::config::Config;
use hermes_store::{SearchQuery, SessionStore};
use serde_json::{Map, Value, json};

use super::conversations as conv;
use super::events::Events;

/// What a tool call failed on.
#[derive(Debug)]
pub enum ToolError {
    /// No tool of that name.
    Unknown(String),
    /// The caller's mistake or a missing object; the text says which.
    Bad(String),
}

impl From<hermes_store::StoreError> for ToolError {
    fn from(e: hermes_store::StoreError) -> Self {
        ToolError::Bad(format!("session store: {e}"))
    }
}

/// Everything the tools read.
pub struct Bridge {
    /// The session store (the home's `sessiondb`).
    pub store: Arc<SessionStore>,
    /// `HERMES_HOME`.
    pub home: HermesHome,
    /// `config.yaml`.
    pub config: Config,
    /// The message events since the start.
    pub events: Arc<Events>,
    /// Sends chat messages for `messages_send` (`mcp_serve.allow_send: true`); `None` leaves
    /// the tool refusing.
    pub sender: Option<Arc<dyn Sender>>,
}

/// Sends one text to a `platform:chat_id` target (the gateway's adapters).
#[async_trait::async_trait]
pub trait Sender: Send + Sync {
    /// Sends `text`; the answer object on success, else what went wrong.
    async fn send(&self, target: &str, text: &str) -> Result<Value, String>;
}

fn schema(properties: Value, required: &[&str]) -> Map<String, Value> {
    let v = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The tool list: `(name, description, input schema)`.
pub fn catalog() -> Vec<(&'static str, &'static str, Map<String, Value>)> {
    let key = json!({"type": "string", "description": "The session key from conversations_list"});
    let limit =
        |d: u64, max: u64| json!({"type": "integer", "minimum": 1, "maximum": max, "default": d});
    let cursor = json!({"type": "integer", "minimum": 0, "default": 0, "description": "Events after this cursor (0: from the start)"});
    let platform = json!({"type": "string", "description": "Only this platform (telegram, discord, slack, …)"});
    vec![
        (
            "conversations_list",
            "List the messaging conversations the gateway has had, most recent first: session key (for messages_read), platform, chat type, names and last activity.",
            schema(
                json!({"platform": platform, "limit": limit(50, 200),
                       "search": {"type": "string", "description": "Only conversations whose name or key contains this"}}),
                &[],
            ),
        ),
        (
            "conversation_get",
            "Details of one conversation: platform, chat and thread ids, names, times and token counts.",
            schema(json!({"session_key": key}), &["session_key"]),
        ),
        (
            "messages_read",
            "The latest user and assistant messages of a conversation, oldest first (each up to 2,000 characters).",
            schema(
                json!({"session_key": key, "limit": limit(50, 200)}),
                &["session_key"],
            ),
        ),
        (
            "attachments_fetch",
            "The images and MEDIA: files of one message of a conversation.",
            schema(
                json!({"session_key": key, "message_id": {"type": "string", "description": "The id from messages_read"}}),
                &["session_key", "message_id"],
            ),
        ),
        (
            "events_poll",
            "Messages that arrived in any conversation (or one) since a cursor; use next_cursor for the next poll.",
            schema(
                json!({"after_cursor": cursor, "session_key": {"type": "string"}, "limit": limit(20, 200)}),
                &[],
            ),
        ),
        (
            "events_wait",
            "Wait for the next message after a cursor (long poll, at most 5 minutes).",
            schema(
                json!({"after_cursor": cursor, "session_key": {"type": "string"},
                       "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 300000, "default": 30000}}),
                &[],
            ),
        ),
        (
            "messages_send",
            "Send a message to a chat: target \"platform:chat_id\" (see channels_list). Refused unless mcp_serve.allow_send is true in config.yaml.",
            schema(
                json!({"target": {"type": "string"}, "message": {"type": "string"}}),
                &["target", "message"],
            ),
        ),
        (
            "channels_list",
            "Chats messages_send can reach, as \"platform:chat_id\" targets.",
            schema(json!({"platform": platform}), &[]),
        ),
        (
            "permissions_list_open",
            "Approval requests waiting for an answer that this server saw (approvals are answered in the chat that asked; this server sees none).",
            schema(json!({}), &[]),
        ),
        (
            "permissions_respond",
            "Answer an approval request from permissions_list_open.",
            schema(
                json!({"id": {"type": "string"},
                       "decision": {"type": "string", "enum": ["allow-once", "allow-always", "deny"]}}),
                &["id", "decision"],
            ),
        ),
        (
            "sessions_search",
            "Full-text search over every stored session (CLI, gateway, cron), best matches first.",
            schema(
                json!({"query": {"type": "string"}, "limit": limit(20, 100)}),
                &["query"],
            ),
        ),
        (
            "memory_read",
            "The agent's memory entries (MEMORY.md) and the user profile (USER.md).",
            schema(json!({}), &[]),
        ),
        (
            "skills_list",
            "The installed skills: name, description, category.",
            schema(json!({}), &[]),
        ),
        (
            "skill_view",
            "The SKILL.md of one skill.",
            schema(json!({"name": {"type": "string"}}), &["name"]),
        ),
    ]
}

struct Args(Map<String, Value>);

impl Args {
    fn text(&self, name: &str) -> Result<Option<String>, ToolError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(ToolError::Bad(format!("`{name}` must be a string"))),
        }
    }

    fn required(&self, name: &str) -> Result<String, ToolError> {
        self.text(name)?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ToolError::Bad(format!("`{name}` is required")))
    }

    /// An integer clamped to `min..=max`; missing or not a number gives `default` (Python's
    /// `_coerce_int`).
    fn int(&self, name: &str, default: u64, min: u64, max: u64) -> u64 {
        let v = match self.0.get(name) {
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_i64().map(|i| i.max(0) as u64))
                .or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        v.unwrap_or(default).clamp(min, max)
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Bad(format!("internal error: {e}")))?
}

fn not_found(key: &str) -> ToolError {
    ToolError::Bad(format!("Conversation not found: {key}"))
}

/// Runs tool `name` with `arguments`.
pub async fn call(
    bridge: &Bridge,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Value, ToolError> {
    let a = Args(arguments);
    let store = bridge.store.clone();
    match name {
        "conversations_list" => {
            let limit = a.int("limit", 50, 1, 200) as usize;
            let platform = a.text("platform")?;
            let search = a.text("search")?.map(|s| s.to_lowercase());
            let all = blocking(move || Ok(conv::conversations(&store)?)).await?;
            let shown: Vec<Value> = all
                .iter()
                .filter(|c| {
                    platform
                        .as_deref()
                        .is_none_or(|p| c.platform().eq_ignore_ascii_case(p))
                })
                .filter(|c| search.as_deref().is_none_or(|s| c.matches(s)))
                .take(limit)
                .map(conv::Conversation::summary)
                .collect();
            Ok(json!({"count": shown.len(), "conversations": shown}))
        }
        "conversation_get" => {
            let key = a.required("session_key")?;
            let k = key.clone();
            let c = blocking(move || Ok(conv::conversation(&store, &k)?)).await?;
            c.map(|c| c.detail()).ok_or_else(|| not_found(&key))
        }
        "messages_read" | "attachments_fetch" => {
            let key = a.required("session_key")?;
            let k = key.clone();
            let found = blocking(move || {
                let Some(c) = conv::conversation(&store, &k)? else {
                    return Ok(None);
                };
                Ok(Some(store.load_messages(&c.session_id)?))
            })
            .await?;
            let messages = found.ok_or_else(|| not_found(&key))?;
            if name == "messages_read" {
                let limit = a.int("limit", 50, 1, 200) as usize;
                Ok(conv::read(&messages, &key, limit))
            } else {
                let id = a.required("message_id")?;
                conv::attachments(&messages, &id)
                    .ok_or_else(|| ToolError::Bad(format!("Message not found: {id}")))
            }
        }
        "events_poll" => {
            let after = a.int("after_cursor", 0, 0, u64::MAX);
            let limit = a.int("limit", 20, 1, 200) as usize;
            let key = a.text("session_key")?;
            Ok(bridge.events.poll(after, key.as_deref(), limit))
        }
        "events_wait" => {
            let after = a.int("after_cursor", 0, 0, u64::MAX);
            let timeout = a.int("timeout_ms", 30_000, 0, 300_000);
            let key = a.text("session_key")?;
            Ok(bridge
                .events
                .wait(after, key.as_deref(), Duration::from_millis(timeout))
                .await)
        }
        "messages_send" => {
            let target = a.required("target")?;
            let message = a.required("message")?;
            let Some(sender) = &bridge.sender else {
                return Err(ToolError::Bad(
                    "messages_send is off: set `mcp_serve: {allow_send: true}` in config.yaml to let MCP clients send chat messages".into(),
                ));
            };
            sender.send(&target, &message).await.map_err(ToolError::Bad)
        }
        "channels_list" => {
            let platform = a.text("platform")?;
            let home = bridge.home.clone();
            blocking(move || Ok(conv::channel_list(&home, &store, platform.as_deref())?)).await
        }
        "permissions_list_open" => Ok(json!({"count": 0, "approvals": []})),
        "permissions_respond" => {
            let id = a.required("id")?;
            let decision = a.required("decision")?;
            if !["allow-once", "allow-always", "deny"].contains(&decision.as_str()) {
                return Err(ToolError::Bad(format!(
                    "Invalid decision: {decision}. Must be allow-once, allow-always, or deny"
                )));
            }
            Err(ToolError::Bad(format!("Approval not found: {id}")))
        }
        "sessions_search" => {
            let mut query = SearchQuery::new(a.required("query")?);
            query.limit = a.int("limit", 20, 1, 100) as usize;
            let hits = blocking(move || Ok(store.search(&query)?)).await?;
            let hits: Vec<Value> = hits
                .iter()
                .map(|h| {
                    json!({
                        "session_id": h.session_id,
                        "session_title": h.session_title,
                        "message_id": h.message_id.to_string(),
                        "role": h.role.as_str(),
                        "snippet": h.snippet,
                        "started_at": h.started_at.to_rfc3339(),
                    })
                })
                .collect();
            Ok(json!({"count": hits.len(), "results": hits}))
        }
        "memory_read" => {
            let memory = MemoryStore::from_config(&bridge.home, &bridge.config.memory);
            let read = |t: MemoryTarget| {
                memory
                    .read(t)
                    .map_err(|e| ToolError::Bad(format!("{}: {e}", memory.path(t).display())))
            };
            Ok(json!({"memory": read(MemoryTarget::Memory)?, "user": read(MemoryTarget::User)?}))
        }
        "skills_list" => {
            let catalog = SkillCatalog::load(&bridge.home.skills_dir());
            let skills: Vec<Value> = catalog
                .skills
                .iter()
                .map(|s| json!({"name": s.name, "description": s.description, "category": s.category}))
                .collect();
            Ok(json!({"count": skills.len(), "skills": skills}))
        }
        "skill_view" => {
            let name = a.required("name")?;
            let catalog = SkillCatalog::load(&bridge.home.skills_dir());
            let skill = catalog
                .find(&name)
                .ok_or_else(|| ToolError::Bad(format!("No skill named {name:?}")))?;
            let text = std::fs::read_to_string(skill.dir.join("SKILL.md"))
                .map_err(|e| ToolError::Bad(format!("{}: {e}", skill.dir.display())))?;
            Ok(json!({"name": skill.name, "content": text}))
        }
        other => Err(ToolError::Unknown(other.to_string())),
    }
}
