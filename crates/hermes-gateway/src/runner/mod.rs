//! The [`Gateway`]: runs every adapter, authorizes and routes inbound messages, and drives one
//! worker task per busy session (issue 7 parts 2, 4, 6, 9).
//!
//! Per session: a FIFO of jobs (messages and history-changing commands) and at most one worker
//! that owns the session's agent while it works through them. `display.busy_input_mode`
//! decides what a message does while a turn runs: `interrupt` cancels the turn and runs next,
//! `queue` waits its turn (every message kept, in order — case C35), `steer` is handed to the
//! running turn after its next tool batch (what the turn did not take runs next).

pub mod approval;
pub mod commands;
pub mod deliver;
mod events;
mod model;
pub mod observe;
pub mod pending;
pub mod reset;
mod worker;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_agent::{Hooks, SteerQueue};
use hermes_protocol::HermesHome;
use hermes_store::SessionStore;
use hermes_tools::Approval;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::pairing::now_unix;
use crate::auth::{Authorizer, Decision, PairingStore};
use crate::config::{BusyInputMode, GatewayConfig};
use crate::factory::AgentFactory;
use crate::idle::{Activity, MemoryRelease};
use crate::keys::session_key;
use crate::platform::{ChatTarget, InboundMessage, PlatformAdapter};
use crate::replica::{Replica, inbound_key};
use crate::routing::AgentCache;
use approval::ApprovalSlot;
use commands::{ChatInput, help_text};
use hermes_agent::commands::{CommandId, Invocation};

/// Work waiting in a session.
pub(crate) enum Job {
    /// A message for the agent.
    Message(InboundMessage),
    /// A command run with the session's agent: history-changing ones (`/new`, `/undo`,
    /// `/retry`, `/compress`) and `/model WORDS`.
    Command(Invocation, InboundMessage),
}

/// A session with work (removed once its worker has nothing left to do).
#[derive(Default)]
pub(crate) struct SessionState {
    /// A worker task is running for this session.
    worker: bool,
    /// Cancels the job in progress.
    cancel: Option<CancellationToken>,
    /// Jobs waiting, oldest first.
    queue: VecDeque<Job>,
    /// Messages for the running turn (busy mode `steer`).
    steer: SteerQueue,
    /// The approval slot of the agent in use.
    approval: Option<Arc<ApprovalSlot>>,
    /// `/stop` was sent: the cancelled job is dropped, not run later.
    stopped: bool,
    /// Inbound claims of the messages queued or taken by a turn, marked done when the turn
    /// that took them ended ([`crate::replica`]).
    claims: Vec<String>,
}

pub(crate) struct Inner {
    pub(crate) config: GatewayConfig,
    pub(crate) adapters: BTreeMap<String, Arc<dyn PlatformAdapter>>,
    pub(crate) factory: Arc<dyn AgentFactory>,
    pub(crate) store: Arc<SessionStore>,
    pub(crate) auth: Arc<Authorizer>,
    pub(crate) home: HermesHome,
    pub(crate) sessions: Mutex<HashMap<String, SessionState>>,
    pub(crate) cache: AgentCache,
    pub(crate) turns: Arc<Semaphore>,
    pub(crate) tracker: TaskTracker,
    pub(crate) stopping: CancellationToken,
    /// Lifecycle hooks the gateway fires (empty unless [`Gateway::set_hooks`]).
    pub(crate) hooks: Mutex<Hooks>,
    /// Messages still queued when the gateway stopped, saved at the end of
    /// [`Gateway::shutdown`] ([`pending`]).
    pub(crate) leftover: Mutex<Vec<InboundMessage>>,
    /// Front ends served beside the chat adapters by the same process
    /// ([`Gateway::set_front_ends`]).
    pub(crate) front_ends: Mutex<Vec<String>>,
    /// Inbound messages and running workers, for the idle memory release ([`crate::idle`]).
    pub(crate) activity: Activity,
    /// What the idle release does beyond the store's cache ([`Gateway::set_memory_release`]).
    pub(crate) memory_release: Mutex<Option<Arc<dyn MemoryRelease>>>,
    /// This process as a replica on the store: inbound de-duplication and adoption.
    pub(crate) replica: Arc<Replica>,
    /// Inbound keys of messages taken over from a stopped replica: a turn for them may
    /// have started there, so their turn continues what is stored
    /// ([`hermes_agent::Agent::run_redelivered_turn`]).
    pub(crate) redelivered: Mutex<HashSet<String>>,
    /// The state of each platform adapter's task ([`observe`]).
    pub(crate) connections: Mutex<HashMap<String, observe::ConnectionState>>,
}

/// The messaging gateway. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

/// Why [`Gateway::run`] could not serve.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No adapter was given.
    #[error(
        "no messaging platform is configured (set TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN, SLACK_BOT_TOKEN + SLACK_APP_TOKEN, IRC_SERVER + IRC_CHANNEL, MATRIX_HOMESERVER + MATRIX_ACCESS_TOKEN or MATRIX_PASSWORD, EMAIL_ADDRESS + EMAIL_PASSWORD + EMAIL_IMAP_HOST + EMAIL_SMTP_HOST, WEBHOOK_SECRET, WHATSAPP_CLOUD_PHONE_NUMBER_ID + WHATSAPP_CLOUD_ACCESS_TOKEN, TWILIO_ACCOUNT_SID + TWILIO_AUTH_TOKEN, SIGNAL_HTTP_URL + SIGNAL_ACCOUNT, MATTERMOST_URL + MATTERMOST_TOKEN, HASS_TOKEN, or API_SERVER_ENABLED=true)"
    )]
    NoPlatforms,
}

/// How long shutdown waits for workers to end after interrupting their turns.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

impl Gateway {
    /// A gateway serving `adapters` (one per platform name) with agents from `factory`.
    /// Pairing state lives where Python Hermes keeps it ([`PairingStore::for_home`]), or in
    /// the store for replicas on PostgreSQL ([`PairingStore::for_store`]); files of earlier
    /// hermes releases are brought into Python's format here.
    pub fn new(
        config: GatewayConfig,
        adapters: Vec<Arc<dyn PlatformAdapter>>,
        factory: Arc<dyn AgentFactory>,
        store: Arc<SessionStore>,
        home: HermesHome,
    ) -> Gateway {
        let pairing = PairingStore::for_store(home.root(), &store);
        if let Err(e) = pairing.migrate() {
            tracing::warn!(error = %e, "could not migrate the pairing files");
        }
        let adapters = adapters
            .into_iter()
            .map(|a| (a.name().to_string(), a))
            .collect();
        Gateway {
            inner: Arc::new(Inner {
                auth: Arc::new(Authorizer::new(config.clone(), pairing)),
                cache: AgentCache::new(config.agent_cache_size),
                turns: Arc::new(Semaphore::new(config.max_concurrent_sessions.max(1))),
                config,
                adapters,
                factory,
                home,
                sessions: Mutex::new(HashMap::new()),
                tracker: TaskTracker::new(),
                stopping: CancellationToken::new(),
                hooks: Mutex::new(Hooks::default()),
                leftover: Mutex::new(Vec::new()),
                redelivered: Mutex::new(HashSet::new()),
                connections: Mutex::new(HashMap::new()),
                front_ends: Mutex::new(Vec::new()),
                activity: Activity::new(),
                memory_release: Mutex::new(None),
                replica: Arc::new(Replica::new(store.clone())),
                store,
            }),
        }
    }

    /// Sets the lifecycle hooks the gateway fires (FEATURES §12): `gateway:startup` when
    /// [`Gateway::run`] starts, `session:end` + `session:reset` when it ends a session
    /// (`/new`, `/reset`, the reset policy), `command:<name>` for each authorized chat
    /// command. Agents fire their own events through their options.
    pub fn set_hooks(&self, hooks: Hooks) {
        *lock(&self.inner.hooks) = hooks;
    }

    /// Names the front ends this process serves beside the chat adapters (the API server:
    /// `api_server`). They are listed in the `gateway:startup` event, and with at least one
    /// of them [`Gateway::run`] serves without any chat adapter too, so the startup hook
    /// fires whenever the gateway starts (FEATURES §12).
    pub fn set_front_ends(&self, names: Vec<String>) {
        *lock(&self.inner.front_ends) = names;
    }

    /// The activity handle of this gateway: other front ends of the process (the API server)
    /// report their work through it, so the idle memory release waits for them too
    /// ([`crate::idle`]).
    pub fn activity(&self) -> Activity {
        self.inner.activity.clone()
    }

    /// Sets the process-level memory release that [`Gateway::run`] calls, after the store's,
    /// once the gateway has been idle for `gateway.idle_release_after` ([`crate::idle`]).
    pub fn set_memory_release(&self, release: Arc<dyn MemoryRelease>) {
        *lock(&self.inner.memory_release) = Some(release);
    }

    /// Serves until `cancel` fires: every adapter runs in its own task and feeds one inbound
    /// channel; `gateway:startup` fires with the names of the adapters and of the other
    /// front ends ([`Gateway::set_front_ends`]). Before any inbound message, the messages of
    /// turns a stop cut (open claims of stopped replicas, this home's last run included) are
    /// taken over, then the messages the last stop saved are served ([`pending`]). On cancel,
    /// adapters stop, running turns are interrupted (every tool call keeps its result),
    /// workers end, and the idle agents are dropped. Without adapters (only other front ends)
    /// it waits for `cancel`.
    ///
    /// Errors: [`GatewayError::NoPlatforms`] when there is neither an adapter nor another
    /// front end.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), GatewayError> {
        let front_ends = lock(&self.inner.front_ends).clone();
        if self.inner.adapters.is_empty() && front_ends.is_empty() {
            return Err(GatewayError::NoPlatforms);
        }
        let (tx, mut rx) = mpsc::channel::<InboundMessage>(256);
        let adapters = TaskTracker::new();
        // Replicas share one PostgreSQL store; on SQLite there is one gateway per home.
        let replicated = self.inner.store.provider() == hermes_store::Provider::Postgresql;
        for adapter in self.inner.adapters.values() {
            let adapter = adapter.clone();
            let tx = tx.clone();
            let token = cancel.child_token();
            if replicated && adapter.single_connection() {
                self.set_connection(adapter.name(), observe::ConnectionState::Standby);
                let report = {
                    let (gateway, name) = (self.clone(), adapter.name().to_string());
                    move |state| gateway.set_connection(&name, state)
                };
                let (store, holder) = (
                    self.inner.store.clone(),
                    self.inner.replica.id().to_string(),
                );
                adapters.spawn(crate::replica::run_as_leader(
                    adapter,
                    tx,
                    token,
                    store,
                    holder,
                    crate::replica::REPLICA_TTL,
                    report,
                ));
                continue;
            }
            let gateway = self.clone();
            gateway.set_connection(adapter.name(), observe::ConnectionState::Running);
            adapters.spawn(async move {
                let state = match adapter.run(tx, token).await {
                    Ok(()) => observe::ConnectionState::Stopped,
                    Err(e) => {
                        tracing::error!(platform = adapter.name(), error = %e, "platform adapter stopped");
                        observe::ConnectionState::Failed
                    }
                };
                gateway.set_connection(adapter.name(), state);
            });
        }
        drop(tx);
        let mut platforms: Vec<String> = self.inner.adapters.keys().cloned().collect();
        platforms.extend(front_ends);
        self.inner.fire(
            "gateway:startup",
            None,
            None,
            serde_json::json!({ "platforms": platforms }),
        );
        tracing::info!(?platforms, replica = %self.inner.replica.id(), "gateway running");
        let beat = cancel.child_token();
        // The first beat runs before the messages saved by the last stop are served: the
        // message whose turn that stop cut kept its claim open and is taken over here, so it
        // is queued — and continues its turn — ahead of the messages that waited behind it
        // (served after it, in their order), not at whatever place the race gives it.
        self.replica_beat(0, &beat).await;
        let beat_task = tokio::spawn(self.clone().replica_heartbeat(beat.clone()));
        let idle = cancel.child_token();
        let idle_task = self.inner.config.idle_release_after.map(|after| {
            tokio::spawn(crate::idle::release_when_idle(
                self.inner.activity.clone(),
                after,
                self.inner.store.clone(),
                lock(&self.inner.memory_release).clone(),
                idle.clone(),
            ))
        });
        if self.inner.adapters.is_empty() {
            // Only other front ends: no chat can receive the saved messages; they stay saved.
            cancel.cancelled().await;
        } else {
            self.serve_pending().await;
        }
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                msg = rx.recv() => match msg {
                    Some(msg) => self.handle(msg).await,
                    None => break,
                },
            }
        }
        idle.cancel();
        if let Some(task) = idle_task {
            let _ = task.await;
        }
        adapters.close();
        self.shutdown().await;
        adapters.wait().await;
        beat.cancel();
        let _ = beat_task.await;
        let replica = self.inner.replica.clone();
        let _ = tokio::task::spawn_blocking(move || replica.leave()).await;
        Ok(())
    }

    /// This process's replica heartbeat until `cancel`, after the first beat (run by
    /// [`Gateway::run`] itself): a beat ([`Gateway::replica_beat`]) every third of
    /// [`crate::replica::REPLICA_TTL`].
    async fn replica_heartbeat(self, cancel: CancellationToken) {
        let mut beats: u64 = 1;
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(crate::replica::REPLICA_TTL / 3) => {}
            }
            self.replica_beat(beats, &cancel).await;
            beats += 1;
        }
    }

    /// One beat of the replica heartbeat (`beats` before it): renews the replica lease,
    /// adopts and queues the open messages of dead replicas (a stopped turn's message
    /// included), and now and then deletes old done claims.
    async fn replica_beat(&self, beats: u64, cancel: &CancellationToken) {
        let platforms: HashSet<String> = self.inner.adapters.keys().cloned().collect();
        let replica = self.inner.replica.clone();
        let adopted = tokio::task::spawn_blocking(move || {
            replica.beat()?;
            if beats.is_multiple_of(720) {
                replica.prune()?;
            }
            let mut adopted = Vec::new();
            // Only messages of platforms this process serves (replicas may differ).
            let served = |key: &str| key.split(':').next().is_some_and(|p| platforms.contains(p));
            for orphan in replica.orphans(64)?.into_iter().filter(|o| served(&o.key)) {
                if let Some(msg) = replica.adopt(&orphan)? {
                    tracing::info!(key = %orphan.key, from = %orphan.holder, "took over a message of a stopped replica");
                    adopted.push((orphan.key, msg));
                }
            }
            Ok::<_, hermes_store::StoreError>(adopted)
        })
        .await;
        match adopted {
            Ok(Ok(messages)) => {
                for (key, msg) in messages {
                    if cancel.is_cancelled() {
                        break;
                    }
                    lock(&self.inner.redelivered).insert(key);
                    self.handle_claimed(msg).await;
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "replica heartbeat failed"),
            Err(e) => tracing::warn!(error = %e, "replica heartbeat task failed"),
        }
    }

    /// Interrupts running turns, waits for workers (bounded), saves the messages still
    /// queued to `HERMES_HOME/gateway/pending.json` for the next start ([`pending`]) and drops
    /// the cached agents. Every completed message is already committed to the store.
    pub async fn shutdown(&self) {
        self.inner.stopping.cancel();
        {
            let mut sessions = lock(&self.inner.sessions);
            for state in sessions.values_mut() {
                self.inner.keep_queued(state);
                if let Some(c) = &state.cancel {
                    c.cancel();
                }
                if let Some(slot) = &state.approval {
                    slot.answer(Approval::Deny);
                }
            }
        }
        self.inner.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.inner.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some sessions did not stop within the shutdown grace period");
        }
        // What a worker still queued while it stopped (interrupt leftovers) is in here too.
        {
            let mut sessions = lock(&self.inner.sessions);
            for state in sessions.values_mut() {
                self.inner.keep_queued(state);
            }
        }
        let leftover = std::mem::take(&mut *lock(&self.inner.leftover));
        if !leftover.is_empty() {
            let home = self.inner.home.clone();
            let count = leftover.len();
            let keys: Vec<String> = leftover.iter().filter_map(inbound_key).collect();
            let saved = tokio::task::spawn_blocking(move || pending::save(&home, &leftover)).await;
            match saved {
                Ok(Ok(())) => {
                    tracing::info!(count, "queued messages saved; the next start serves them");
                    // The next start claims them again; unsaved, their open claims are
                    // adopted instead (by another replica, or by the next start).
                    let replica = self.inner.replica.clone();
                    let _ = tokio::task::spawn_blocking(move || replica.release(&keys)).await;
                }
                Ok(Err(e)) => tracing::error!(count, error = %e, "could not save queued messages"),
                Err(e) => tracing::error!(count, error = %e, "could not save queued messages"),
            }
        }
        self.inner.cache.clear();
    }

    /// Handles one inbound message: authorization first (unauthorized messages never reach
    /// an agent), then chat commands, then the session's queue. Returns once the message is
    /// queued or answered, not when its turn ends.
    ///
    /// A message with a platform message id is claimed in the store first
    /// ([`crate::replica`]): a message another replica — or this process before a restart —
    /// already took is dropped here.
    pub async fn handle(&self, msg: InboundMessage) {
        if self.inner.stopping.is_cancelled() {
            return;
        }
        let replica = self.inner.replica.clone();
        let probe = msg.clone();
        match tokio::task::spawn_blocking(move || replica.claim(&probe)).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => {
                tracing::info!(
                    platform = %msg.source.platform,
                    "dropped a message that was delivered before (another replica or an earlier run took it)"
                );
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(platform = %msg.source.platform, error = %e, "could not claim an inbound message; serving it unclaimed");
            }
            Err(e) => tracing::warn!(error = %e, "inbound claim task failed"),
        }
        self.handle_claimed(msg).await;
    }

    /// [`Gateway::handle`] for a message this replica holds the claim of (a new one, or one
    /// adopted from a dead replica). Only a message that reaches a session's queue keeps its
    /// claim open until its turn ends; every other outcome (ignored, answered at once, a
    /// command) marks it done here.
    async fn handle_claimed(&self, msg: InboundMessage) {
        let claim = inbound_key(&msg);
        let queued = self.route(msg).await;
        if !queued && let Some(key) = claim {
            let replica = self.inner.replica.clone();
            let _ = tokio::task::spawn_blocking(move || replica.finish(&[key])).await;
        }
    }

    /// Authorizes and routes `msg`; true when it was queued as a message for a turn.
    async fn route(&self, msg: InboundMessage) -> bool {
        let inner = &self.inner;
        if inner.stopping.is_cancelled() {
            return false;
        }
        inner.activity.touch();
        // One line per inbound message in the log: who and where, never the text (issue 20).
        tracing::info!(
            platform = %msg.source.platform,
            chat = %msg.source.chat_id.as_deref().unwrap_or("-"),
            user = %msg.source.user_id.as_deref().unwrap_or("-"),
            chars = msg.text.chars().count(),
            "message received"
        );
        hermes_telemetry::metrics().inbound_message(&msg.source.platform);
        let Some(adapter) = inner.adapters.get(&msg.source.platform).cloned() else {
            tracing::warn!(platform = %msg.source.platform, "message from a platform without adapter");
            return false;
        };
        let auth = inner.auth.clone();
        let src = msg.source.clone();
        let decision = tokio::task::spawn_blocking(move || auth.decide(&src, now_unix()))
            .await
            .unwrap_or(Decision::Ignore);
        match decision {
            Decision::Allow => {}
            Decision::Ignore => return false,
            Decision::Reply(text) => {
                if let Some(target) = ChatTarget::reply_to(&msg) {
                    reply(adapter.as_ref(), &target, &text).await;
                }
                return false;
            }
        }
        let key = session_key(&msg.source, &inner.config.keys);
        let home = inner.home.clone();
        let text = msg.text.clone();
        let input = tokio::task::spawn_blocking(move || commands::classify(&home, &text))
            .await
            .unwrap_or_else(|_| ChatInput::Text(msg.text.clone()));
        match input {
            ChatInput::Text(text) => {
                let mut msg = msg;
                msg.text = text;
                self.enqueue(key, Job::Message(msg), false);
                true
            }
            ChatInput::Reply(text) => {
                if let Some(target) = ChatTarget::reply_to(&msg) {
                    reply(adapter.as_ref(), &target, &text).await;
                }
                false
            }
            ChatInput::Command(inv) => {
                let store = inner.store.clone();
                let k = key.clone();
                let session =
                    tokio::task::spawn_blocking(move || crate::routing::routed_session(&store, &k))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .flatten();
                inner.fire(
                    &format!("command:{}", inv.name),
                    Some(&msg.source.platform),
                    session.as_deref(),
                    serde_json::json!({ "session_key": key, "command": inv.name, "text": msg.text }),
                );
                self.command(key, inv, msg, adapter).await;
                false
            }
        }
    }

    /// Serves the messages saved by the last shutdown ([`pending`]), oldest first, through
    /// [`Gateway::handle`]. A file that cannot be read is reported and left in place.
    async fn serve_pending(&self) {
        let home = self.inner.home.clone();
        match tokio::task::spawn_blocking(move || pending::take(&home)).await {
            Ok(Ok(messages)) => {
                if !messages.is_empty() {
                    tracing::info!(
                        count = messages.len(),
                        "serving messages queued before the last stop"
                    );
                }
                for msg in messages {
                    self.handle(msg).await;
                }
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "could not read the queued messages of the last stop")
            }
            Err(e) => {
                tracing::error!(error = %e, "could not read the queued messages of the last stop")
            }
        }
    }

    /// Number of sessions with work in progress or queued.
    pub fn busy_sessions(&self) -> usize {
        lock(&self.inner.sessions).len()
    }

    /// Number of idle agents held in memory.
    pub fn cached_agents(&self) -> usize {
        self.inner.cache.len()
    }

    /// Waits until no session has work left (tests, benchmarks, graceful drains).
    pub async fn wait_idle(&self) {
        while self.busy_sessions() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn enqueue(&self, key: String, job: Job, urgent: bool) {
        let mut sessions = lock(&self.inner.sessions);
        let state = sessions.entry(key.clone()).or_default();
        if let Job::Message(msg) = &job
            && let Some(claim) = inbound_key(msg)
        {
            state.claims.push(claim);
        }
        let running = state.worker && state.cancel.is_some();
        if !state.worker {
            state.queue.push_back(job);
            state.worker = true;
            let inner = self.inner.clone();
            let busy = self.inner.activity.busy();
            self.inner.tracker.spawn(async move {
                worker::run(inner, key).await;
                drop(busy);
            });
            return;
        }
        if urgent {
            // History-changing commands interrupt the running turn and go first.
            if let Some(c) = &state.cancel {
                c.cancel();
            }
            state.queue.push_front(job);
            return;
        }
        let mode = self.inner.config.busy_input_mode;
        if running && matches!(job, Job::Message(_)) {
            hermes_telemetry::metrics().busy_event(mode.as_str());
        }
        match (mode, job) {
            (BusyInputMode::Steer, Job::Message(msg)) if running => {
                state.steer.push(worker::input_text(&msg));
            }
            // A command that is not urgent (`/model WORDS`) waits for the running turn.
            (_, job @ Job::Command(..)) => state.queue.push_back(job),
            (BusyInputMode::Interrupt, job) => {
                state.queue.push_back(job);
                if let Some(c) = &state.cancel {
                    c.cancel();
                }
            }
            (_, job) => state.queue.push_back(job),
        }
    }

    async fn command(
        &self,
        key: String,
        inv: Invocation,
        msg: InboundMessage,
        adapter: Arc<dyn PlatformAdapter>,
    ) {
        let Some(target) = ChatTarget::reply_to(&msg) else {
            return;
        };
        let answer = match inv.id {
            CommandId::New | CommandId::Retry | CommandId::Undo | CommandId::Compress => {
                self.enqueue(key, Job::Command(inv, msg), true);
                return;
            }
            CommandId::Help => help_text(),
            CommandId::Status => self.status_text(&key).await,
            CommandId::Model => match inv.text() {
                None => model::describe(&self.inner, &key).await,
                Some(words) => match model::check(words) {
                    Ok(_) => {
                        self.enqueue(key, Job::Command(inv, msg), false);
                        return;
                    }
                    Err(reply) => reply,
                },
            },
            CommandId::Usage => self.session_text(&key).await,
            CommandId::Stop => {
                let mut sessions = lock(&self.inner.sessions);
                match sessions.get_mut(&key) {
                    Some(state) if state.worker => {
                        state.queue.clear();
                        state.steer.drain();
                        state.stopped = true;
                        if let Some(c) = &state.cancel {
                            c.cancel();
                        }
                        "Stopped.".to_string()
                    }
                    _ => "Nothing is running.".to_string(),
                }
            }
            CommandId::Approve => {
                let approval = if inv.text().is_some() {
                    Approval::Session
                } else {
                    Approval::Once
                };
                if self.answer_approval(&key, approval) {
                    "Approved.".to_string()
                } else {
                    "Nothing is waiting for approval.".to_string()
                }
            }
            CommandId::Deny => {
                if self.answer_approval(&key, Approval::Deny) {
                    "Denied.".to_string()
                } else {
                    "Nothing is waiting for approval.".to_string()
                }
            }
            CommandId::SetHome => {
                match crate::status::HomeChannels::for_store(&self.inner.home, &self.inner.store)
                    .set(&msg.source.platform, &target)
                {
                    Ok(()) => format!(
                        "This chat is now the home channel for {}.",
                        msg.source.platform
                    ),
                    Err(e) => format!("Could not save the home channel: {e}"),
                }
            }
            // Terminal-only commands do not parse as commands on the gateway surface.
            CommandId::Sessions
            | CommandId::Resume
            | CommandId::Memory
            | CommandId::Skills
            | CommandId::Cron
            | CommandId::Prompt
            | CommandId::Skin
            | CommandId::Statusbar
            | CommandId::Quit
            | CommandId::Title
            | CommandId::Insights
            | CommandId::Personality
            | CommandId::Platforms
            | CommandId::Version
            | CommandId::Config
            | CommandId::Toolsets
            | CommandId::History
            | CommandId::Clear => hermes_agent::commands::unknown_message(&inv.name),
        };
        reply(adapter.as_ref(), &target, &answer).await;
    }

    fn answer_approval(&self, key: &str, approval: Approval) -> bool {
        let slot = lock(&self.inner.sessions)
            .get(key)
            .and_then(|s| s.approval.clone());
        slot.is_some_and(|s| s.answer(approval))
    }

    async fn status_text(&self, key: &str) -> String {
        let (running, queued) = {
            let sessions = lock(&self.inner.sessions);
            sessions
                .get(key)
                .map(|s| (s.cancel.is_some(), s.queue.len()))
                .unwrap_or((false, 0))
        };
        let store = self.inner.store.clone();
        let k = key.to_string();
        let record = tokio::task::spawn_blocking(move || store.latest_session_for_key(&k))
            .await
            .ok()
            .and_then(|r| r.ok())
            .flatten();
        let mut out = format!("Session key: {key}\n");
        match record {
            Some(r) => out.push_str(&format!(
                "Session: {} ({} messages)\nModel: {} ({})\n",
                r.id, r.message_count, r.model, r.provider
            )),
            None => out.push_str("Session: none yet (your next message starts one)\n"),
        }
        out.push_str(&format!(
            "Running: {}\nQueued: {queued}\nBusy mode: {:?}",
            if running { "yes" } else { "no" },
            self.inner.config.busy_input_mode
        ));
        out
    }

    async fn session_text(&self, key: &str) -> String {
        let store = self.inner.store.clone();
        let k = key.to_string();
        let record = tokio::task::spawn_blocking(move || store.latest_session_for_key(&k))
            .await
            .ok()
            .and_then(|r| r.ok())
            .flatten();
        let Some(r) = record else {
            return "No session yet in this chat.".to_string();
        };
        format!(
            "Tokens in this session: {} input, {} output, {} cache read, {} cache write, {} reasoning; {} messages.",
            r.input_tokens,
            r.output_tokens,
            r.cache_read_tokens,
            r.cache_write_tokens,
            r.reasoning_tokens,
            r.message_count
        )
    }
}

/// Sends a short plain-text reply; failures are logged.
pub(crate) async fn reply(adapter: &dyn PlatformAdapter, target: &ChatTarget, text: &str) {
    match deliver::deliver(adapter, target, text).await {
        Ok(()) => log_reply(adapter.name(), target, text.chars().count()),
        Err(e) => tracing::warn!(platform = adapter.name(), error = %e, "could not send a reply"),
    }
}

/// The one log line of a reply sent: platform, chat and size, never the text (issue 20).
pub(crate) fn log_reply(platform: &str, target: &ChatTarget, chars: usize) {
    tracing::info!(platform = %platform, chat = %target.chat_id, chars, "reply sent");
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
