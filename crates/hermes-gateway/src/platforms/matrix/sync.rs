//! The `/sync` loop: log in (a refused token ends `run` with `Auth`), then long-poll with the
//! saved `since` token. Each batch is handled in order — invites, room state (members,
//! encryption), then each room's timeline (a `limited` timeline is completed from
//! `/messages` back to the previous token first, so a long stop loses nothing) — and the new
//! token is saved only after every message of the batch reached the gateway. A crash mid-batch
//! gets the batch again; the gateway drops the messages it already took by their event ids.
//!
//! The very first start (no token saved) does not answer the history the initial sync
//! returns: it only accepts pending invites and notes the rooms' state.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::inbound::{self, Context, RawEvent, Skip};
use super::{MatrixAdapter, PLATFORM, Room, Session, api::enc, lock};
use crate::error::PlatformError;
use crate::platform::InboundMessage;
use crate::platforms::backoff::{Backoff, sleep_or_cancel};
use crate::platforms::media::{self, MediaPolicy, RemoteFile};

/// Events per room per sync; gaps beyond it are fetched with `/messages`.
const TIMELINE_LIMIT: u32 = 100;
/// Most events fetched to fill one gap (older ones are logged as skipped).
const MAX_GAP_EVENTS: usize = 1_000;

fn filter() -> String {
    json!({
        "presence": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
        "room": {
            "timeline": {"limit": TIMELINE_LIMIT},
            "ephemeral": {"not_types": ["*"]},
            "account_data": {"not_types": ["*"]},
        },
    })
    .to_string()
}

/// Reads the events of `list`, skipping (with a log line) any that is malformed.
fn events(list: Option<&Value>, room: &str) -> Vec<RawEvent> {
    list.and_then(Value::as_array)
        .map(|evs| {
            evs.iter()
                .filter_map(|v| match serde_json::from_value::<RawEvent>(v.clone()) {
                    Ok(ev) => Some(ev),
                    Err(e) => {
                        tracing::warn!(
                            platform = PLATFORM,
                            room,
                            "skipping a malformed event: {e}"
                        );
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What handing one message to the gateway came to.
enum Flow {
    Go,
    Stop,
}

impl MatrixAdapter {
    /// Saves the state file (off the async threads).
    pub(crate) async fn persist(&self) {
        let Some(path) = self.settings.state_file.clone() else {
            return;
        };
        let snapshot = lock(&self.state).clone();
        let _ = tokio::task::spawn_blocking(move || snapshot.save(&path)).await;
    }

    /// The body of [`crate::PlatformAdapter::run`].
    pub(crate) async fn sync_loop(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let settings = &self.settings;
        let mut backoff = Backoff::new(settings.reconnect_base, settings.reconnect_max);
        let filter = filter();
        // Syncs in a row the homeserver refused (4xx) with the saved token.
        let mut refused = 0u32;
        loop {
            let session = tokio::select! {
                s = self.session() => s,
                () = cancel.cancelled() => return Ok(()),
            };
            let session = match session {
                Ok(s) => s,
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Rejected { .. })) => {
                    return Err(e);
                }
                Err(e) => {
                    let delay = delay_after(&e, &mut backoff);
                    tracing::warn!(
                        platform = PLATFORM,
                        "login failed, retrying in {} ms: {e}",
                        delay.as_millis()
                    );
                    if !sleep_or_cancel(delay, &cancel).await {
                        return Ok(());
                    }
                    continue;
                }
            };
            let since = lock(&self.state).since.clone();
            let timeout = if since.is_some() {
                settings.poll_timeout
            } else {
                Duration::ZERO
            };
            let result = tokio::select! {
                r = self.client.sync(&session.token, since.as_deref(), &filter, timeout) => r,
                () = cancel.cancelled() => return Ok(()),
            };
            match result {
                Ok(batch) => {
                    backoff.reset();
                    refused = 0;
                    if !self
                        .connected
                        .swap(true, std::sync::atomic::Ordering::SeqCst)
                    {
                        tracing::info!(platform = PLATFORM, user = %session.user_id, "connected");
                    }
                    let Some(next) = batch.get("next_batch").and_then(Value::as_str) else {
                        tracing::warn!(
                            platform = PLATFORM,
                            "a sync answer without next_batch; syncing again"
                        );
                        if !sleep_or_cancel(backoff.next_delay(), &cancel).await {
                            return Ok(());
                        }
                        continue;
                    };
                    let next = next.to_string();
                    let flow = self
                        .handle_batch(&session, &batch, since.as_deref(), &inbound, &cancel)
                        .await;
                    if let Flow::Stop = flow {
                        return Ok(());
                    }
                    lock(&self.state).since = Some(next);
                    self.persist().await;
                }
                Err(e @ PlatformError::Auth { .. }) => {
                    self.drop_session().await;
                    if settings.password.is_none() {
                        return Err(e);
                    }
                    tracing::warn!(
                        platform = PLATFORM,
                        "the access token was refused; logging in again: {e}"
                    );
                }
                Err(e @ PlatformError::Rejected { .. }) if since.is_some() && refused >= 2 => {
                    // A token the server no longer knows (its database was reset or
                    // purged): it cannot be resumed, only replaced.
                    tracing::error!(
                        platform = PLATFORM,
                        "the homeserver refused the saved sync token three times ({e}); starting a fresh sync — messages sent since the last sync are not answered"
                    );
                    refused = 0;
                    lock(&self.state).since = None;
                    self.persist().await;
                }
                Err(e) => {
                    if matches!(e, PlatformError::Rejected { .. }) {
                        refused += 1;
                    }
                    let delay = delay_after(&e, &mut backoff);
                    tracing::warn!(
                        platform = PLATFORM,
                        "sync failed, retrying in {} ms: {e}",
                        delay.as_millis()
                    );
                    if !sleep_or_cancel(delay, &cancel).await {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn handle_batch(
        &self,
        session: &Session,
        batch: &Value,
        since: Option<&str>,
        inbound: &mpsc::Sender<InboundMessage>,
        cancel: &CancellationToken,
    ) -> Flow {
        let empty = serde_json::Map::new();
        let invites = batch
            .pointer("/rooms/invite")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for (room, invite) in invites {
            self.handle_invite(session, room, invite).await;
        }
        let joined = batch
            .pointer("/rooms/join")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        if let Some(left) = batch.pointer("/rooms/leave").and_then(Value::as_object) {
            let mut rooms = lock(&self.rooms);
            for room in left.keys() {
                rooms.remove(room);
            }
        }
        for (room, data) in joined {
            let state = events(data.pointer("/state/events"), room);
            let mut timeline = events(data.pointer("/timeline/events"), room);
            let limited = data
                .pointer("/timeline/limited")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if let (true, Some(since), Some(prev)) = (
                limited,
                since,
                data.pointer("/timeline/prev_batch").and_then(Value::as_str),
            ) {
                let mut gap = self.fill_gap(session, room, prev, since).await;
                gap.append(&mut timeline);
                timeline = gap;
            }
            for ev in state.iter().chain(timeline.iter()) {
                self.note_state(room, ev);
            }
            let encrypted = lock(&self.rooms).get(room).is_some_and(|r| r.encrypted);
            if encrypted {
                self.notice_encryption(room).await;
            }
            if since.is_none() {
                if !timeline.is_empty() {
                    tracing::info!(platform = PLATFORM, room = %room, count = timeline.len(), "first start: not answering messages sent before hermes started");
                }
                continue;
            }
            for ev in &timeline {
                if let Flow::Stop = self.handle_event(session, room, ev, inbound, cancel).await {
                    return Flow::Stop;
                }
            }
        }
        Flow::Go
    }

    /// Accepts or ignores one invite (see [`super::MatrixSettings::accepts_invite`]).
    async fn handle_invite(&self, session: &Session, room: &str, invite: &Value) {
        let stripped = events(invite.pointer("/invite_state/events"), room);
        let Some(me) = stripped.iter().find(|e| {
            e.kind == "m.room.member" && e.state_key.as_deref() == Some(session.user_id.as_str())
        }) else {
            tracing::warn!(
                platform = PLATFORM,
                room,
                "an invite without our membership event; ignored"
            );
            return;
        };
        let is_direct = me
            .content
            .get("is_direct")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !self.settings.accepts_invite(&me.sender, is_direct) {
            tracing::warn!(platform = PLATFORM, room, inviter = %me.sender, "not accepting an invite from a user who is not allowed (MATRIX_ALLOWED_USERS)");
            return;
        }
        let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(5));
        for attempt in 1..=3 {
            match self.client.join(&session.token, room).await {
                Ok(()) => {
                    tracing::info!(platform = PLATFORM, room, inviter = %me.sender, is_direct, "accepted an invite");
                    return;
                }
                Err(e) if attempt < 3 && e.is_retryable() => {
                    tokio::time::sleep(delay_after(&e, &mut backoff)).await;
                }
                Err(e) => {
                    tracing::warn!(
                        platform = PLATFORM,
                        room,
                        "could not join after an invite: {e}"
                    );
                    return;
                }
            }
        }
    }

    /// Events between `since` and a limited timeline's `prev_batch`, oldest first.
    async fn fill_gap(
        &self,
        session: &Session,
        room: &str,
        prev: &str,
        since: &str,
    ) -> Vec<RawEvent> {
        let mut out: Vec<RawEvent> = Vec::new();
        let mut from = prev.to_string();
        while out.len() < MAX_GAP_EVENTS {
            let path = format!("/_matrix/client/v3/rooms/{}/messages", enc(room));
            let req = self
                .client
                .request(Method::GET, &path, Some(&session.token))
                .query(&[
                    ("from", from.as_str()),
                    ("to", since),
                    ("dir", "b"),
                    ("limit", "100"),
                ]);
            let page: Value = match self.client.call("messages", req).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(
                        platform = PLATFORM,
                        room,
                        "could not fetch the messages missed while away: {e}"
                    );
                    break;
                }
            };
            let chunk = events(page.get("chunk"), room);
            let end = page.get("end").and_then(Value::as_str).map(str::to_owned);
            let done = chunk.is_empty() || end.is_none();
            out.extend(chunk);
            match end {
                Some(e) if !done => from = e,
                _ => break,
            }
        }
        if out.len() >= MAX_GAP_EVENTS {
            tracing::warn!(
                platform = PLATFORM,
                room,
                "more than {MAX_GAP_EVENTS} events were missed; older ones are not answered"
            );
        }
        out.reverse();
        tracing::info!(
            platform = PLATFORM,
            room,
            count = out.len(),
            "fetched messages missed while away"
        );
        out
    }

    /// Tracks membership and encryption from state events.
    fn note_state(&self, room: &str, ev: &RawEvent) {
        let mut rooms = lock(&self.rooms);
        let entry = rooms.entry(room.to_string()).or_default();
        match ev.kind.as_str() {
            "m.room.encryption" | "m.room.encrypted" => entry.encrypted = true,
            "m.room.member" => {
                if let (Some(user), Some(members)) = (&ev.state_key, entry.members.as_mut()) {
                    match ev.content.get("membership").and_then(Value::as_str) {
                        Some("join") => {
                            members.insert(user.clone());
                        }
                        _ => {
                            members.remove(user);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `room` is a DM (at most two joined members), fetching the members once.
    async fn is_dm(&self, session: &Session, room: &str) -> bool {
        let known = lock(&self.rooms)
            .get(room)
            .and_then(|r| r.members.as_ref().map(BTreeSet::len));
        let count = match known {
            Some(n) => n,
            None => match self.client.joined_members(&session.token, room).await {
                Ok(list) => {
                    let n = list.len();
                    let mut rooms = lock(&self.rooms);
                    let entry: &mut Room = rooms.entry(room.to_string()).or_default();
                    entry.members = Some(list.into_iter().collect());
                    n
                }
                Err(e) => {
                    tracing::warn!(
                        platform = PLATFORM,
                        room,
                        "could not read the room's members (treated as a room, not a DM): {e}"
                    );
                    return false;
                }
            },
        };
        count <= 2
    }

    async fn handle_event(
        &self,
        session: &Session,
        room: &str,
        ev: &RawEvent,
        inbound: &mpsc::Sender<InboundMessage>,
        cancel: &CancellationToken,
    ) -> Flow {
        match ev.kind.as_str() {
            "m.room.message" => {}
            "m.room.encrypted" if ev.sender != session.user_id => {
                tracing::warn!(platform = PLATFORM, room, sender = %ev.sender, "an end-to-end encrypted message cannot be read (E2EE is not supported)");
                self.notice_encryption(room).await;
                return Flow::Go;
            }
            _ => return Flow::Go,
        }
        if ev.sender == session.user_id {
            return Flow::Go;
        }
        let is_dm = self.is_dm(session, room).await;
        if !is_dm
            && !self.settings.allowed_rooms.is_empty()
            && !self.settings.allowed_rooms.iter().any(|r| r == room)
        {
            tracing::debug!(
                platform = PLATFORM,
                room,
                "ignoring a room not in MATRIX_ALLOWED_ROOMS"
            );
            return Flow::Go;
        }
        let parsed = {
            let state = lock(&self.state).clone();
            let in_thread = |root: &str| state.has_thread(root);
            let cx = Context {
                own_user: &session.user_id,
                room,
                is_dm,
                require_mention: self.settings.require_mention,
                free_room: self.settings.free_response_rooms.iter().any(|r| r == room),
                auto_thread: self.settings.auto_thread,
                process_notices: self.settings.process_notices,
                in_bot_thread: &in_thread,
            };
            inbound::parse_message(ev, &cx)
        };
        let parsed = match parsed {
            Ok(p) => p,
            Err(Skip::Malformed(why)) => {
                tracing::warn!(platform = PLATFORM, room, event = ?ev.event_id, "skipping a message event: {why}");
                return Flow::Go;
            }
            Err(why) => {
                tracing::debug!(platform = PLATFORM, room, event = ?ev.event_id, "not for the agent: {why:?}");
                return Flow::Go;
            }
        };
        let mut message = parsed.message;
        if let Some((url, file_name, mime_type, declared_size)) = parsed.media {
            let policy = MediaPolicy {
                dir: self.settings.media_dir.clone(),
                max_bytes: self.settings.max_media_bytes,
            };
            let file = RemoteFile {
                unique: message.message_id.clone().unwrap_or_default(),
                file_name,
                mime_type,
                declared_size,
            };
            let saved = match self.client.download(&session.token, &url) {
                Some(req) => tokio::select! {
                    s = media::download(PLATFORM, req, &file, &policy) => s,
                    () = cancel.cancelled() => return Flow::Stop,
                },
                None => {
                    tracing::warn!(
                        platform = PLATFORM,
                        room,
                        "a file with a URL that is not mxc://; not fetched"
                    );
                    media::failed_note(&file.file_name)
                }
            };
            media::attach(&mut message, saved);
        }
        tokio::select! {
            sent = inbound.send(message) => match sent {
                Ok(()) => Flow::Go,
                Err(_) => Flow::Stop,
            },
            () = cancel.cancelled() => Flow::Stop,
        }
    }
}

fn delay_after(err: &PlatformError, backoff: &mut Backoff) -> Duration {
    match err {
        PlatformError::RateLimited { retry_after, .. } => *retry_after,
        _ => backoff.next_delay(),
    }
}
