//! One session's worker: takes jobs from the session's queue in order, checks the agent out
//! of the cache (or builds it), keeps it in step with the store, runs the turn or command and
//! delivers the reply.

use crate::lease::{LeaseError, TurnLease};
use std::collections::HashSet;
use std::sync::Arc;

use chrono::Utc;
use hermes_agent::SteerQueue;
use hermes_protocol::{AgentEvent, TurnOutcome};
use hermes_telemetry::SessionLifecycle;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use super::approval::{ApprovalSlot, ChatApprover};
use super::reset::due_reset_local;
use super::{Inner, Job, lock, reply};
use crate::config::{BusyInputMode, ToolProgress};
use crate::delivery::{DeliveryOptions, StreamingReply, ToolProgressMode};
use crate::factory::AgentSpec;
use crate::platform::{ChatTarget, InboundMessage, MessageSource, PlatformAdapter};
use crate::replica::inbound_key;
use crate::routing::{CachedAgent, routed_session};
use hermes_agent::commands::{CommandId, Invocation};

const PLATFORM_CONTEXT: &str = include_str!("../../prompts/platform_context.md");

/// The text the agent gets for a message: the reply context, the text, and one line per
/// saved attachment.
pub(crate) fn input_text(msg: &InboundMessage) -> String {
    let mut out = String::new();
    if let Some(quoted) = msg
        .reply_to_text
        .as_deref()
        .filter(|q| !q.trim().is_empty())
    {
        let short: String = quoted.chars().take(500).collect();
        out.push_str(&format!("[replying to: \"{short}\"]\n"));
    }
    out.push_str(&msg.text);
    for a in &msg.attachments {
        let kind = format!("{:?}", a.kind).to_lowercase();
        out.push_str(&format!("\n[attached {kind}: {}]", a.path.display()));
    }
    out
}

/// Takes the next job; in interrupt mode consecutive queued messages become one turn (the
/// user kept typing while the agent was stopped).
fn next_job(state: &mut super::SessionState, mode: BusyInputMode) -> Option<Job> {
    let job = state.queue.pop_front()?;
    let Job::Message(mut msg) = job else {
        return Some(job);
    };
    if mode == BusyInputMode::Interrupt {
        while let Some(Job::Message(more)) = state.queue.front() {
            msg.text = format!("{}\n\n{}", input_text(&msg), input_text(more));
            msg.attachments.clear();
            msg.reply_to_text = None;
            msg.message_id = more.message_id.clone();
            state.queue.pop_front();
        }
    }
    Some(Job::Message(msg))
}

pub(crate) async fn run(inner: Arc<Inner>, key: String) {
    loop {
        let next = {
            let mut sessions = lock(&inner.sessions);
            let Some(state) = sessions.get_mut(&key) else {
                return;
            };
            let job = if inner.stopping.is_cancelled() {
                None
            } else {
                next_job(state, inner.config.busy_input_mode)
            };
            match job {
                Some(job) => {
                    state.stopped = false;
                    let token = CancellationToken::new();
                    state.cancel = Some(token.clone());
                    Some((job, token, state.steer.clone()))
                }
                None => {
                    if let Some(mut state) = sessions.remove(&key) {
                        inner.keep_queued(&mut state);
                    }
                    None
                }
            }
        };
        let Some((job, token, steer)) = next else {
            return;
        };
        let permit = tokio::select! {
            p = inner.turns.clone().acquire_owned() => p.ok(),
            () = token.cancelled() => None,
        };
        let msg = match &job {
            Job::Message(m) | Job::Command(_, m) => m.clone(),
        };
        let mut ran_turn = permit.is_some() && matches!(job, Job::Message(_));
        if permit.is_some() || matches!(job, Job::Command(..)) {
            let outcome = run_job(&inner, &key, job, token, steer.clone()).await;
            if outcome == Some(TurnOutcome::Interrupted) && inner.stopping.is_cancelled() {
                // Stopped by the shutdown, not answered: the claims stay open, so a live
                // replica (or the next start) takes the message over and finishes the turn.
                ran_turn = false;
            }
        } else if let Job::Message(m) = job {
            // Interrupted while waiting for a turn slot: the text is not lost, it joins the
            // next turn (unless `/stop` asked to drop it).
            requeue_front(&inner, &key, m);
        }
        drop(permit);
        // Under the lock that `enqueue` uses, so no steered message can slip in between.
        let mut done_claims = Vec::new();
        if let Some(state) = lock(&inner.sessions).get_mut(&key) {
            state.cancel = None;
            state.approval = None;
            if ran_turn {
                // The turn took every message not still queued (coalesced, steered).
                let queued: HashSet<String> = state
                    .queue
                    .iter()
                    .filter_map(|j| match j {
                        Job::Message(m) => inbound_key(m),
                        Job::Command(..) => None,
                    })
                    .collect();
                let (done, open): (Vec<String>, Vec<String>) =
                    state.claims.drain(..).partition(|k| !queued.contains(k));
                state.claims = open;
                done_claims = done;
            }
            let leftover = steer.drain();
            if !leftover.is_empty() {
                // Steered messages the turn did not take run next, as one message.
                let mut follow = msg;
                follow.text = leftover.join("\n\n");
                follow.attachments.clear();
                follow.reply_to_text = None;
                state.queue.push_front(Job::Message(follow));
            }
        }
        if !done_claims.is_empty() {
            let replica = inner.replica.clone();
            let _ = tokio::task::spawn_blocking(move || replica.finish(&done_claims)).await;
        }
    }
}

fn requeue_front(inner: &Inner, key: &str, msg: InboundMessage) {
    if let Some(state) = lock(&inner.sessions).get_mut(key)
        && !state.stopped
    {
        state.queue.push_front(Job::Message(msg));
    }
}

async fn run_job(
    inner: &Arc<Inner>,
    key: &str,
    job: Job,
    token: CancellationToken,
    steer: SteerQueue,
) -> Option<TurnOutcome> {
    let msg = match &job {
        Job::Message(m) | Job::Command(_, m) => m,
    };
    let adapter = inner.adapters.get(&msg.source.platform).cloned()?;
    let target = ChatTarget::reply_to(msg);
    let mut cached = match checkout(inner, key, msg, &adapter).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(session_key = key, error = %e, "could not start an agent");
            if let Some(t) = &target {
                reply(
                    adapter.as_ref(),
                    t,
                    &format!("Sorry, I could not start: {e}"),
                )
                .await;
            }
            return None;
        }
    };
    cached.approval.set_target(target.clone());
    cached.agent.set_steer_queue(steer);
    let source = msg.source.clone();
    record_peer(inner, key, &source, &mut cached).await;
    let session_before = cached.agent.session_id().to_string();
    if let Some(state) = lock(&inner.sessions).get_mut(key) {
        state.approval = Some(cached.approval.clone());
    }
    let mut outcome = None;
    let notice = match job {
        Job::Message(msg) => {
            let reset = apply_reset_policy(inner, key, &msg.source.platform, &mut cached).await;
            if let (Some(reason), Some(t)) = (reset, &target) {
                let text = format!(
                    "(Started a fresh session: {}.)",
                    match reason {
                        super::reset::ResetReason::Idle => "the last one was idle",
                        super::reset::ResetReason::Daily => "daily reset",
                    }
                );
                reply(adapter.as_ref(), t, &text).await;
            }
            let redelivered =
                inbound_key(&msg).is_some_and(|k| lock(&inner.redelivered).remove(&k));
            // Pictures reach the model as images when it takes them (issue 26 item 2); the
            // text names every saved file either way.
            let images: Vec<std::path::PathBuf> = msg
                .attachments
                .iter()
                .filter(|a| a.kind == crate::platform::AttachmentKind::Image)
                .map(|a| a.path.clone())
                .collect();
            for why in cached.agent.attach_images(&images) {
                tracing::warn!(platform = %msg.source.platform, "image not sent to the model: {why}");
            }
            let input = TurnInput {
                text: &input_text(&msg),
                redelivered,
            };
            outcome = Some(turn(inner, &mut cached, &adapter, target.as_ref(), input, token).await);
            None
        }
        Job::Command(inv, msg) => {
            let at = (msg.source.platform.as_str(), key);
            command(
                inner,
                at,
                &mut cached,
                &adapter,
                target.as_ref(),
                inv,
                token,
            )
            .await
        }
    };
    if let (Some(text), Some(t)) = (notice, &target) {
        reply(adapter.as_ref(), t, &text).await;
    }
    if cached.agent.session_id() != session_before {
        // `/new` or a reset started a fresh session: the chat's `/model` choice goes with it.
        super::model::carry(inner, &cached).await;
    }
    record_peer(inner, key, &source, &mut cached).await;
    cached.approval.set_target(None);
    cached.history_version = stored_version(inner, cached.agent.session_id()).await;
    cached.last_active = Utc::now();
    hermes_telemetry::metrics().session_transition(SessionLifecycle::Idle);
    inner.cache.put(key.to_string(), cached);
    outcome
}

/// The text a turn runs and whether its message was taken over from a stopped replica.
#[derive(Clone, Copy)]
struct TurnInput<'a> {
    text: &'a str,
    redelivered: bool,
}

/// The agent of `key`: cached (same config signature) or built, resuming the routed session;
/// reloaded from the store when its history changed elsewhere (`history_version`).
async fn checkout(
    inner: &Arc<Inner>,
    key: &str,
    msg: &InboundMessage,
    adapter: &Arc<dyn PlatformAdapter>,
) -> Result<CachedAgent, String> {
    let signature = inner.factory.config_signature();
    let started = std::time::Instant::now();
    let metrics = hermes_telemetry::metrics();
    if let Some(mut cached) = inner.cache.take(key, &signature) {
        metrics.session_transition(SessionLifecycle::Active);
        let sid = cached.agent.session_id().to_string();
        let version = stored_version(inner, &sid).await;
        if version != cached.history_version {
            tracing::info!(session = %sid, "history changed elsewhere; reloading the session");
            cached.agent.resume(&sid).await.map_err(|e| e.to_string())?;
            cached.history_version = version;
        }
        return Ok(cached);
    }
    let store = inner.store.clone();
    let k = key.to_string();
    let resume = tokio::task::spawn_blocking(move || routed_session(&store, &k))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let model_choice = match &resume {
        Some(sid) => super::model::stored_choice(inner, sid).await,
        None => None,
    };
    let approval = Arc::new(ApprovalSlot::default());
    let approver = ChatApprover::new(
        approval.clone(),
        adapter.clone(),
        inner.config.approval_timeout,
    );
    let spec = AgentSpec {
        session_key: key.to_string(),
        resume,
        source: msg.source.platform.clone(),
        ephemeral_prompt: Some(platform_context(msg)),
        approver: Arc::new(approver),
        origin: Some(msg.source.clone()),
        model: model_choice.clone(),
    };
    let resumed = spec.resume.is_some();
    let agent = inner.factory.build(spec).await?;
    if resumed {
        metrics.session_transition(SessionLifecycle::Resumed);
        metrics.session_resumed(started.elapsed().as_secs_f64());
    } else {
        metrics.session_transition(SessionLifecycle::Created);
    }
    metrics.session_transition(SessionLifecycle::Active);
    let sid = agent.session_id().to_string();
    let store = inner.store.clone();
    let s = sid.clone();
    let last = tokio::task::spawn_blocking(move || store.last_activity(&s))
        .await
        .ok()
        .and_then(|r| r.ok())
        .flatten();
    Ok(CachedAgent {
        history_version: stored_version(inner, &sid).await,
        agent,
        signature,
        last_active: last.unwrap_or_else(Utc::now),
        approval,
        model_choice,
        peer_session: String::new(),
        lease_token: 0,
    })
}

/// The chat of `src` as Python's gateway records it on the session row
/// (`_record_gateway_session_peer`; `origin_json` is its `SessionSource.to_dict()` shape).
pub(crate) fn gateway_peer(key: &str, src: &MessageSource) -> hermes_store::GatewayPeer {
    let origin = serde_json::json!({
        "platform": src.platform,
        "chat_id": src.chat_id,
        "chat_name": null,
        "chat_type": src.chat_type.as_str(),
        "user_id": src.user_id,
        "user_name": src.user_name,
        "thread_id": src.thread_id,
        "chat_topic": null,
    });
    hermes_store::GatewayPeer {
        source: src.platform.clone(),
        session_key: key.to_string(),
        user_id: src.user_id.clone(),
        chat_id: src.chat_id.clone(),
        chat_type: Some(src.chat_type.as_str().to_string()),
        thread_id: src.thread_id.clone(),
        display_name: None,
        origin_json: Some(origin.to_string()),
    }
}

/// Records the chat on the row of the session the agent is on, once per session (so that
/// Python's gateway finds, lists and resumes it as one of this chat's sessions). A failure is
/// logged: the conversation itself is stored either way.
async fn record_peer(inner: &Inner, key: &str, src: &MessageSource, cached: &mut CachedAgent) {
    let sid = cached.agent.session_id().to_string();
    if sid.is_empty() || cached.peer_session == sid {
        return;
    }
    let peer = gateway_peer(key, src);
    let store = inner.store.clone();
    let s = sid.clone();
    match tokio::task::spawn_blocking(move || store.record_gateway_peer(&s, &peer)).await {
        Ok(Ok(_)) => cached.peer_session = sid,
        Ok(Err(e)) => {
            tracing::warn!(session = %sid, error = %e, "could not record the chat on the session")
        }
        Err(e) => tracing::warn!(session = %sid, error = %e, "recording the chat failed"),
    }
}

fn platform_context(msg: &InboundMessage) -> String {
    let src = &msg.source;
    PLATFORM_CONTEXT
        .trim()
        .replace("{platform}", &src.platform)
        .replace("{chat_type}", src.chat_type.as_str())
        .replace("{user_name}", src.user_name.as_deref().unwrap_or("unknown"))
        .replace("{user_id}", src.user_id.as_deref().unwrap_or("unknown"))
}

async fn stored_version(inner: &Inner, session_id: &str) -> u64 {
    let store = inner.store.clone();
    let sid = session_id.to_string();
    tokio::task::spawn_blocking(move || store.get_session(&sid))
        .await
        .ok()
        .and_then(|r| r.ok())
        .flatten()
        .map(|r| r.history_version)
        .unwrap_or(0)
}

/// Starts a fresh session when `session_reset` says the current one is over.
async fn apply_reset_policy(
    inner: &Inner,
    key: &str,
    platform: &str,
    cached: &mut CachedAgent,
) -> Option<super::reset::ResetReason> {
    let reason = due_reset_local(&inner.config.reset, cached.last_active, Utc::now())?;
    let old = cached.agent.session_id().to_string();
    let has_messages = !cached.agent.history().is_empty();
    if !has_messages {
        return None;
    }
    for notice in cached.agent.close_for_reset(CancellationToken::new()).await {
        tracing::info!(session = %old, notice, "session-end review before the reset");
    }
    let store = inner.store.clone();
    let why = reason.as_str();
    let ended = old.clone();
    let _ = tokio::task::spawn_blocking(move || store.end_session(&ended, why)).await;
    match cached.agent.new_session().await {
        Ok(()) => {
            inner.fire_reset(platform, key, &old, cached.agent.session_id(), why);
            Some(reason)
        }
        Err(e) => {
            tracing::warn!(error = %e, "session reset failed; continuing the old session");
            None
        }
    }
}

/// How replies are delivered, from the gateway config (`gateway.streaming`,
/// `display.tool_progress`); `MEDIA:<path>` files may come from `HERMES_HOME` but never its
/// secrets, settings or state ([`crate::delivery::MediaPolicy::for_home`]). Email gets no
/// tool progress (each line would be a mail of its own; Python Hermes' `email` display
/// default is `tool_progress: off` too).
fn delivery_options(inner: &Inner, platform: &str) -> DeliveryOptions {
    let tool_progress = match inner.config.tool_progress {
        _ if platform == "email" => ToolProgressMode::Off,
        ToolProgress::Off => ToolProgressMode::Off,
        ToolProgress::New => ToolProgressMode::New,
        ToolProgress::All => ToolProgressMode::All,
        ToolProgress::Verbose => ToolProgressMode::Verbose,
    };
    DeliveryOptions {
        streaming: inner.config.streaming,
        tool_progress,
        media: crate::delivery::MediaPolicy::for_home(&inner.home),
        ..DeliveryOptions::default()
    }
}

/// Runs one turn and delivers it through [`StreamingReply`]: typing indicator while it runs,
/// streamed edits when enabled, tool progress lines, the final chunks and `MEDIA:` files.
/// An interrupted turn's events are still shown as they came, but no final text is sent.
async fn turn(
    inner: &Inner,
    cached: &mut CachedAgent,
    adapter: &Arc<dyn PlatformAdapter>,
    target: Option<&ChatTarget>,
    input: TurnInput<'_>,
    token: CancellationToken,
) -> TurnOutcome {
    // One turn per session across front ends and processes (issue 18 §4): wait for the
    // store lease; when another holder ran a turn meanwhile, reload the history first.
    let sid = cached.agent.session_id().to_string();
    let lease = match TurnLease::acquire_waiting(&inner.store, &sid, "gateway", &token).await {
        Ok((lease, waited)) => {
            let others_ran = lease.others_ran_since(cached.lease_token);
            if (waited || others_ran)
                && let Err(e) = cached.agent.resume(&sid).await
            {
                tracing::warn!(session = %sid, error = %e, "could not reload the session");
            }
            cached.lease_token = lease.token();
            lease
        }
        Err(LeaseError::Cancelled(_)) => return TurnOutcome::Interrupted,
        Err(e) => {
            // Fail closed: without the lease the turn could interleave with another one.
            tracing::warn!(session = %sid, error = %e, "no session lease; the turn does not run");
            if let Some(t) = target {
                reply(
                    adapter.as_ref(),
                    t,
                    "Sorry, I cannot reach my session store right now; please try again shortly.",
                )
                .await;
            }
            return TurnOutcome::Failed;
        }
    };
    let outcome = turn_leased(inner, cached, adapter, target, input, token).await;
    lease.release().await;
    outcome
}

async fn turn_leased(
    inner: &Inner,
    cached: &mut CachedAgent,
    adapter: &Arc<dyn PlatformAdapter>,
    target: Option<&ChatTarget>,
    input: TurnInput<'_>,
    token: CancellationToken,
) -> TurnOutcome {
    let (tx, mut rx) = unbounded_channel();
    let agent = &mut cached.agent;
    let run = async move {
        let outcome = if input.redelivered {
            agent.run_redelivered_turn(input.text, &tx, token).await
        } else {
            agent.run_turn(input.text, &tx, token).await
        };
        drop(tx);
        outcome
    };
    let Some(target) = target else {
        let drain = async { while rx.recv().await.is_some() {} };
        return tokio::join!(run, drain).0;
    };
    // Final text of an interrupted turn is not delivered (the next turn answers).
    let (fwd_tx, fwd_rx) = unbounded_channel();
    let mut reply_chars = None;
    let forward = async {
        while let Some(event) = rx.recv().await {
            let event = match event {
                AgentEvent::TurnFinished {
                    outcome: TurnOutcome::Interrupted,
                    ..
                } => break,
                e => e,
            };
            if let AgentEvent::TurnFinished { final_text, .. } = &event {
                reply_chars = Some(final_text.chars().count());
            }
            if fwd_tx.send(event).is_err() {
                break;
            }
        }
        drop(fwd_tx);
        while rx.recv().await.is_some() {}
    };
    let reply = StreamingReply::new(
        adapter.clone(),
        target.clone(),
        delivery_options(inner, adapter.name()),
    );
    let (outcome, (), report) = tokio::join!(run, forward, reply.run(fwd_rx));
    for e in &report.errors {
        tracing::warn!(platform = adapter.name(), error = %e, "reply delivery problem");
    }
    if let Some(chars) = reply_chars
        && report.sent > 0
    {
        super::log_reply(adapter.name(), target, chars);
    }
    outcome
}

/// Runs a command with the session's agent (history-changing ones, `/model WORDS`); returns the
/// text to send.
async fn command(
    inner: &Inner,
    (platform, key): (&str, &str),
    cached: &mut CachedAgent,
    adapter: &Arc<dyn PlatformAdapter>,
    target: Option<&ChatTarget>,
    inv: Invocation,
    token: CancellationToken,
) -> Option<String> {
    if inv.id == CommandId::Model {
        return Some(super::model::switch(inner, cached, inv.text().unwrap_or_default()).await);
    }
    let agent = &mut cached.agent;
    match inv.id {
        CommandId::New => {
            let old = agent.session_id().to_string();
            let notices = agent.close_for_reset(token.clone()).await;
            let store = inner.store.clone();
            let ended = old.clone();
            let _ =
                tokio::task::spawn_blocking(move || store.end_session(&ended, "user_reset")).await;
            Some(match agent.new_session().await {
                Ok(()) => {
                    inner.fire_reset(platform, key, &old, agent.session_id(), "user_reset");
                    let mut reply = "Started a new session.".to_string();
                    for notice in notices {
                        reply.push_str(&format!(" ({notice})"));
                    }
                    reply
                }
                Err(e) => format!("Could not start a new session: {e}"),
            })
        }
        CommandId::Undo => Some(match agent.undo(inv.count()).await {
            Ok(Some(_)) => format!("Removed the last {} turn(s).", inv.count()),
            Ok(None) => "Nothing to undo.".to_string(),
            Err(e) => format!("Undo failed: {e}"),
        }),
        CommandId::Retry => match agent.undo(1).await {
            Ok(Some(text)) => {
                let input = TurnInput {
                    text: &text,
                    redelivered: false,
                };
                turn(inner, cached, adapter, target, input, token).await;
                None
            }
            Ok(None) => Some("Nothing to retry.".to_string()),
            Err(e) => Some(format!("Retry failed: {e}")),
        },
        CommandId::Compress => {
            let (tx, mut rx) = unbounded_channel();
            agent.compress(inv.text(), &tx, &token).await;
            drop(tx);
            let mut lines = Vec::new();
            while let Some(e) = rx.recv().await {
                if let AgentEvent::Status { message } = e {
                    lines.push(message);
                }
            }
            Some(if lines.is_empty() {
                "Nothing to compress.".to_string()
            } else {
                lines.join("\n")
            })
        }
        _ => None,
    }
}
