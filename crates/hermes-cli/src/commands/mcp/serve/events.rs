//! The event queue of `hermes mcp serve` (`events_poll`, `events_wait`; Python Hermes'
//! `EventBridge`): a task looks at the store every [`POLL_INTERVAL`] and queues one `message`
//! event per user or assistant message that arrived in a conversation since the server
//! started, numbered by an increasing cursor; the queue keeps the newest [`QUEUE_LIMIT`].
//!
//! Unlike Python's bridge, the history that was already there when the server started is not
//! replayed as events (`messages_read` reads it); a session is re-read only when its message
//! count changed, so a quiet store costs one query per poll.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_store::SessionStore;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::conversations::{self, chat_text, clip, unix};

/// How often the store is looked at (Python's `POLL_INTERVAL`).
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Events kept (Python's `QUEUE_LIMIT`).
pub const QUEUE_LIMIT: usize = 1_000;
/// Characters of a message an event carries (as Python).
pub const EVENT_CHARS: usize = 500;

/// One queued event.
#[derive(Debug, Clone)]
struct Event {
    cursor: u64,
    session_key: String,
    data: Value,
}

impl Event {
    fn to_json(&self) -> Value {
        let mut v =
            json!({"cursor": self.cursor, "type": "message", "session_key": self.session_key});
        if let (Some(map), Some(extra)) = (v.as_object_mut(), self.data.as_object()) {
            for (k, val) in extra {
                map.insert(k.clone(), val.clone());
            }
        }
        v
    }
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Event>,
    cursor: u64,
}

/// The queue and what the poller has seen.
#[derive(Default)]
pub struct Events {
    queue: Mutex<Queue>,
    arrived: Notify,
}

fn matching<'a>(
    q: &'a Queue,
    after: u64,
    key: Option<&'a str>,
) -> impl Iterator<Item = &'a Event> + 'a {
    q.events
        .iter()
        .filter(move |e| e.cursor > after && key.is_none_or(|k| e.session_key == k))
}

impl Events {
    fn push(&self, session_key: &str, data: Value) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.cursor += 1;
        let cursor = q.cursor;
        q.events.push_back(Event {
            cursor,
            session_key: session_key.to_string(),
            data,
        });
        while q.events.len() > QUEUE_LIMIT {
            q.events.pop_front();
        }
        drop(q);
        self.arrived.notify_waiters();
    }

    /// `events_poll`: at most `limit` events after `after`, of one conversation or all, and
    /// the cursor to poll from next.
    pub fn poll(&self, after: u64, key: Option<&str>, limit: usize) -> Value {
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let events: Vec<Value> = matching(&q, after, key)
            .take(limit)
            .map(Event::to_json)
            .collect();
        let next = events
            .last()
            .and_then(|e| e["cursor"].as_u64())
            .unwrap_or(after);
        json!({"events": events, "next_cursor": next})
    }

    /// `events_wait`: the first event after `after` (of one conversation or all), waiting up
    /// to `timeout` for one to arrive.
    pub async fn wait(&self, after: u64, key: Option<&str>, timeout: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.arrived.notified();
            {
                let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(e) = matching(&q, after, key).next() {
                    return json!({"event": e.to_json()});
                }
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return json!({"event": null, "reason": "timeout"});
            }
        }
    }
}

/// Polls `store` until `stop`, queueing the messages that arrive.
pub async fn run_poller(store: Arc<SessionStore>, events: Arc<Events>, stop: CancellationToken) {
    // session id → (message count seen, last message id seen)
    let mut seen: HashMap<String, (u64, i64)> = HashMap::new();
    let mut first = true;
    loop {
        let store2 = store.clone();
        let found = tokio::task::spawn_blocking(move || {
            let mut fresh = Vec::new();
            let sessions = store2.list_sessions(conversations::SCAN_SESSIONS, 0)?;
            for s in sessions {
                let Some(key) = s.session_key.clone().filter(|k| !k.is_empty()) else {
                    continue;
                };
                fresh.push((s.id, key, s.message_count));
            }
            Ok::<_, hermes_store::StoreError>(fresh)
        })
        .await;
        match found {
            Ok(Ok(sessions)) => {
                for (id, key, count) in sessions {
                    let known = seen.get(&id).copied();
                    if known.is_some_and(|(c, _)| c == count) {
                        continue;
                    }
                    let store3 = store.clone();
                    let sid = id.clone();
                    let Ok(Ok(messages)) =
                        tokio::task::spawn_blocking(move || store3.load_messages(&sid)).await
                    else {
                        continue;
                    };
                    let last_seen = known.map_or(i64::MAX, |(_, last)| last);
                    // A session new since the start: its earlier history is not replayed
                    // unless it appeared after the first look.
                    let last_seen = if known.is_none() && !first {
                        0
                    } else {
                        last_seen
                    };
                    for m in &messages {
                        if m.id <= last_seen {
                            continue;
                        }
                        if let Some(text) = chat_text(m) {
                            events.push(
                                &key,
                                json!({
                                    "role": m.message.role.as_str(),
                                    "content": clip(&text, EVENT_CHARS),
                                    "timestamp": unix(m).to_string(),
                                    "message_id": m.id.to_string(),
                                }),
                            );
                        }
                    }
                    let last = messages.iter().map(|m| m.id).max().unwrap_or(0);
                    seen.insert(id, (count, last));
                }
                first = false;
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "mcp serve: could not read the session store"),
            Err(e) => tracing::warn!(error = %e, "mcp serve: store poll task failed"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}
