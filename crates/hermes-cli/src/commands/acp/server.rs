//! The ACP agent side of `hermes acp`: one [`Server`] per connection, its sessions, and the
//! handler of each ACP method (registered in [`Server::serve`]).
//!
//! Requests that take time (`session/new`, `session/load`, `session/prompt`, model choice)
//! run in their own tasks, so the connection's dispatch loop stays free for `session/cancel`
//! and for the client's answers to hermes' own requests (permissions, `fs/*`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    ClientCapabilities, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionId, SessionListCapabilities,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::{Agent, Client, ConnectTo, Error};
use hermes_agent::AgentHandle;
use hermes_protocol::{AgentEvent, Op, TurnOutcome};

use super::session::{AcpSession, ClientLink, Mode, Outcomes, Running, Shared};
use super::updates::{replay, text_chunk, tool_call, tool_finished};
use crate::assembly::AgentKit;
use crate::assembly::app::App;
use crate::assembly::model_switch::ModelSwitcher;

/// How long [`Server::shutdown`] waits for an interrupted turn to end.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How often a running prompt checks for a `session/cancel` its turn has not seen yet.
const CANCEL_RECHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// The id of the model option of `session/set_config_option`.
pub const MODEL_OPTION: &str = "model";

/// One ACP connection: the home, the agent kit every session is made from, and the sessions.
pub struct Server {
    app: App,
    kit: AgentKit,
    /// What the client offered in `initialize` (none until then).
    caps: Mutex<Arc<ClientCapabilities>>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

/// An `invalid_params` error saying `message`.
fn invalid(message: impl Into<String>) -> Error {
    let mut e = Error::invalid_params();
    e.message = message.into();
    e
}

/// An `internal_error` saying `message`.
fn internal(message: impl Into<String>) -> Error {
    let mut e = Error::internal_error();
    e.message = message.into();
    e
}

/// `provider:model` of `rt` (a value of the `model` option).
fn choice_of(rt: &hermes_llm::Runtime) -> String {
    format!("{}:{}", rt.provider, rt.model)
}

/// The protocol's "no such session" error.
fn no_session(id: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
}

/// The text of the embedded resource `uri` as the model may see it: a file the sandbox
/// does not let hermes read (`.env`, `auth.json`, …) is left out with the reason, and known
/// secrets are masked in the rest — an editor may attach a file the user did not look at.
fn screen_attachment(
    policy: &hermes_tools::SandboxPolicy,
    link: &super::session::ClientLink,
    uri: &str,
    text: String,
) -> String {
    if let Some(path) = super::prompt::file_path(uri)
        && let Err(refusal) = policy.check_read(&path)
    {
        tracing::warn!(%uri, "acp: an attachment the sandbox refuses was left out");
        return format!("[not shown: {refusal}]");
    }
    link.redact(text)
}

/// `cwd` of a session request: absolute and a directory.
fn session_cwd(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd must be an absolute path, not {}",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(invalid(format!("cwd {} is not a directory", cwd.display())));
    }
    Ok(cwd.to_path_buf())
}

impl Server {
    /// A server for `app`, its sessions made from `kit`.
    pub fn new(app: App, kit: AgentKit) -> Server {
        Server {
            app,
            kit,
            caps: Mutex::new(Arc::new(ClientCapabilities::new())),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Serves the connection until the client closes it.
    ///
    /// # Errors
    /// The transport failed.
    pub async fn serve(
        self: Arc<Self>,
        transport: impl ConnectTo<Agent> + 'static,
    ) -> Result<(), Error> {
        let (s1, s2, s3, s4, s5, s6, s7, s8, s9) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        Agent
            .v1()
            .name("hermes")
            .on_receive_request(
                async move |req: InitializeRequest, responder, _cx| {
                    responder.respond(s1.initialize(req))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |_req: AuthenticateRequest, responder, _cx| {
                    responder.respond(AuthenticateResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: NewSessionRequest, responder, cx| {
                    let s = s2.clone();
                    tokio::spawn(async move {
                        let _ = responder.respond_with_result(s.new_session(req, cx).await);
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: LoadSessionRequest, responder, cx| {
                    let s = s3.clone();
                    tokio::spawn(async move {
                        let _ = responder.respond_with_result(s.load_session(req, cx).await);
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: ListSessionsRequest, responder, _cx| {
                    let s = s9.clone();
                    tokio::spawn(async move {
                        let _ = responder.respond_with_result(s.list_sessions(req).await);
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: PromptRequest, responder, _cx| {
                    let s = s4.clone();
                    // Taken here, in the order messages arrive: a `session/cancel` read
                    // after this prompt cancels it, one read before does not.
                    // Its place in the session's queue, too.
                    let seen = s
                        .session(&req.session_id)
                        .map(|x| (x.cancels(), x.queue.ticket()))
                        .ok();
                    tokio::spawn(async move {
                        let _ = responder.respond_with_result(s.prompt(req, seen).await);
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |n: CancelNotification, _cx| {
                    s5.cancel(&n.session_id);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |req: SetSessionModeRequest, responder, _cx| {
                    responder.respond_with_result(s6.set_mode(&req))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: SetSessionConfigOptionRequest, responder, _cx| {
                    let s = s7.clone();
                    tokio::spawn(async move {
                        let _ = responder.respond_with_result(s.set_config_option(req).await);
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_close(async move |_cx| {
                s8.shutdown().await;
                Ok(())
            })
            .connect_to(transport)
            .await
    }

    /// `initialize`: protocol version 1 and what hermes really does.
    fn initialize(&self, req: InitializeRequest) -> InitializeResponse {
        tracing::info!(
            client = ?req.client_info.as_ref().map(|c| &c.name),
            version = %req.protocol_version,
            fs_read = req.client_capabilities.fs.read_text_file,
            fs_write = req.client_capabilities.fs.write_text_file,
            terminal = req.client_capabilities.terminal,
            "acp: initialize"
        );
        if let Ok(mut caps) = self.caps.lock() {
            *caps = Arc::new(req.client_capabilities);
        }
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .session_capabilities(
                        SessionCapabilities::new().list(SessionListCapabilities::new()),
                    )
                    .prompt_capabilities(
                        PromptCapabilities::new()
                            .image(false)
                            .audio(false)
                            .embedded_context(true),
                    ),
            )
            .agent_info(
                Implementation::new("hermes", env!("CARGO_PKG_VERSION"))
                    .title("Hermes Agent".to_string()),
            )
    }

    fn session(&self, id: &SessionId) -> Result<Arc<AcpSession>, Error> {
        self.sessions
            .lock()
            .ok()
            .and_then(|s| s.get(&*id.0).cloned())
            .ok_or_else(|| no_session(id))
    }

    /// Starts the hermes agent of a session in `cwd`: a new one (`resume` `None`) or a
    /// stored one. Returns the session and, for a stored one, the updates that replay it.
    async fn open(
        &self,
        cx: ConnectionTo<Client>,
        cwd: PathBuf,
        resume: Option<&str>,
    ) -> Result<(Arc<AcpSession>, Vec<SessionUpdate>), Error> {
        let id = match resume {
            Some(id) => id.to_string(),
            None => hermes_protocol::new_session_id(),
        };
        let caps = self.caps.lock().map(|c| c.clone()).unwrap_or_default();
        let redactor = Arc::new(hermes_protocol::SecretRedactor::load(&self.app.home));
        let shared = Arc::new(Shared {
            link: ClientLink::new(cx, &id, caps, redactor.clone()),
            cwd: cwd.clone(),
            mode: Mutex::new(Mode::Default),
            edits_allowed: Mutex::new(false),
            commands_allowed: Mutex::new(HashMap::new()),
            running: Running::default(),
            outcomes: Outcomes::default(),
        });
        let mut kit = self.kit.clone();
        kit.tools = super::tools::wrap(&kit.tools, &shared);
        kit.mcp = kit
            .mcp
            .map(|source| super::tools::wrap_source(source, &shared));
        kit.prompt = Arc::new(kit.prompt.for_cwd(cwd.clone()));
        let mut opts = kit.opts.clone();
        opts.cwd = cwd.clone();
        if resume.is_none() {
            opts.session_id = Some(id.clone());
        }
        let approver = Arc::new(super::tools::AcpApprover {
            shared: shared.clone(),
        });
        let mut agent = kit
            .agent(approver, opts, resume, &self.app.home)
            .await
            .map_err(|e| internal(format!("cannot start the session: {e:#}")))?;
        agent.set_redactor(redactor);
        let history = if resume.is_some() {
            replay(&agent.history(), &cwd)
        } else {
            Vec::new()
        };
        let handle = AgentHandle::spawn(agent);
        let session = Arc::new(AcpSession {
            shared,
            interrupter: handle.interrupter(),
            handle: tokio::sync::Mutex::new(handle),
            cancels: std::sync::atomic::AtomicU64::new(0),
            queue: Arc::default(),
            next_client: Mutex::new(None),
            runtime: Mutex::new(self.kit.runtime.clone()),
        });
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(id.clone(), session.clone());
        }
        tracing::info!(session = %id, cwd = %cwd.display(), resumed = resume.is_some(), "acp: session open");
        Ok((session, history))
    }

    /// `session/new`.
    async fn new_session(
        &self,
        req: NewSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let cwd = session_cwd(&req.cwd)?;
        if !req.mcp_servers.is_empty() {
            tracing::info!(
                count = req.mcp_servers.len(),
                "acp: the client's MCP servers are not used; hermes uses config.yaml mcp_servers"
            );
        }
        let (session, _) = self.open(cx, cwd, None).await?;
        Ok(
            NewSessionResponse::new(session.shared.link.session_id.clone())
                .modes(Mode::state(session.shared.mode()))
                .config_options(self.config_options(&session)),
        )
    }

    /// `session/load`: the stored session's history is streamed as updates, then answered.
    async fn load_session(
        &self,
        req: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let cwd = session_cwd(&req.cwd)?;
        let id = req.session_id.0.to_string();
        let open = self.sessions.lock().ok().and_then(|s| s.get(&id).cloned());
        let (session, history) = match open {
            Some(session) => {
                // A prompt still running finishes first: the replay then ends with it.
                drop(session.handle.lock().await);
                let messages: Vec<hermes_protocol::Message> = self
                    .kit
                    .store
                    .load_messages(&id)
                    .map_err(|e| internal(format!("cannot read the session: {e}")))?
                    .into_iter()
                    .map(|m| m.message)
                    .collect();
                (session, replay(&messages, &cwd))
            }
            None => {
                let stored = self
                    .kit
                    .store
                    .get_session(&id)
                    .map_err(|e| internal(format!("cannot read the session store: {e}")))?;
                if stored.is_none() {
                    return Err(no_session(&req.session_id));
                }
                self.open(cx, cwd, Some(&id)).await?
            }
        };
        for update in history {
            session.shared.link.notify(update);
        }
        Ok(LoadSessionResponse::new()
            .modes(Mode::state(session.shared.mode()))
            .config_options(self.config_options(&session)))
    }

    /// `session/list`: the stored editor sessions, a page at a time ([`super::list`]).
    async fn list_sessions(
        &self,
        req: ListSessionsRequest,
    ) -> Result<agent_client_protocol::v1::schema::ListSessionsResponse, Error> {
        if let Some(cwd) = &req.cwd
            && !cwd.is_absolute()
        {
            return Err(invalid(format!(
                "cwd must be an absolute path, not {}",
                cwd.display()
            )));
        }
        let store = self.kit.store.clone();
        tokio::task::spawn_blocking(move || {
            super::list::page(&store, req.cwd.as_deref(), req.cursor.as_deref())
        })
        .await
        .map_err(|e| internal(format!("listing sessions stopped: {e}")))?
        .map_err(|e| internal(format!("cannot read the session store: {e}")))
    }

    /// `session/prompt`: one turn, streamed as updates; the answer says how it ended.
    /// `arrival` is the session's cancel count when the prompt arrived and its place in the
    /// session's queue: a cancel after it interrupts this turn even when it came before the
    /// turn began (or while the prompt waited for the ones before it).
    async fn prompt(
        &self,
        req: PromptRequest,
        arrival: Option<(u64, super::session::Ticket)>,
    ) -> Result<PromptResponse, Error> {
        let session = self.session(&req.session_id)?;
        let (seen, ticket) = match arrival {
            Some(arrival) => arrival,
            None => (session.cancels(), session.queue.ticket()),
        };
        // Prompts of one session run in the order they arrived.
        ticket.turn().await;
        let policy = self
            .kit
            .opts
            .sandbox
            .policy(&session.shared.cwd, &self.app.home);
        let link = &session.shared.link;
        let text = super::prompt::to_text(&req.prompt, &|uri, text| {
            screen_attachment(&policy, link, uri, text)
        })
        .map_err(invalid)?;
        let mut handle = session.handle.lock().await;
        if let Some(client) = session.next_client.lock().ok().and_then(|mut c| c.take()) {
            handle.set_client(client);
        }
        let shared = &session.shared;
        let link = &shared.link;
        handle.submit(Op::user(text));
        let mut streamed_text = false;
        loop {
            // The turn's interrupt token is made when the turn starts: a cancel that came
            // earlier is repeated until the turn has ended.
            if session.cancels() != seen {
                session.interrupter.interrupt();
            }
            let next = tokio::select! {
                next = handle.next_event() => next,
                () = tokio::time::sleep(CANCEL_RECHECK) => continue,
            };
            let Some(event) = next else {
                return Err(internal("the agent stopped"));
            };
            match event {
                AgentEvent::TextDelta { text } => {
                    streamed_text = true;
                    link.notify(text_chunk(&link.redact(text), false));
                }
                AgentEvent::ReasoningDelta { text } => {
                    link.notify(text_chunk(&link.redact(text), true));
                }
                AgentEvent::ToolStarted {
                    call_id,
                    name,
                    args_preview,
                    arguments,
                } => {
                    streamed_text = false;
                    let call = tool_call(
                        &call_id,
                        &name,
                        &link.redact(args_preview),
                        &link.redact(arguments),
                        &shared.cwd,
                    );
                    link.notify(SessionUpdate::ToolCall(call));
                    shared.running.started(&call_id, &name);
                }
                AgentEvent::ToolFinished {
                    call_id,
                    ok,
                    preview,
                    ..
                } => {
                    shared.running.finished(&call_id);
                    // The event has a one-line preview; the tool kept the whole result.
                    let outcome = shared.outcomes.take(&call_id);
                    let result = outcome.result.unwrap_or(preview);
                    link.notify(SessionUpdate::ToolCallUpdate(tool_finished(
                        &call_id,
                        ok,
                        &link.redact(result),
                        outcome.terminal,
                    )));
                }
                AgentEvent::StreamRestarted { reason, .. } => {
                    link.notify(text_chunk(
                        &format!("\n\n[the answer was cut off ({reason}); it starts again]\n\n"),
                        false,
                    ));
                }
                AgentEvent::Status { message } => {
                    tracing::info!(session = %link.session_id, %message, "acp: status");
                }
                AgentEvent::TurnFinished {
                    outcome,
                    final_text,
                    ..
                } => {
                    shared.outcomes.clear();
                    let stop = match outcome {
                        TurnOutcome::Completed => StopReason::EndTurn,
                        TurnOutcome::BudgetExhausted => StopReason::MaxTurnRequests,
                        TurnOutcome::Interrupted => StopReason::Cancelled,
                        TurnOutcome::Failed => return Err(internal(link.redact(final_text))),
                    };
                    if !streamed_text && !final_text.is_empty() && stop != StopReason::Cancelled {
                        link.notify(text_chunk(&link.redact(final_text), false));
                    }
                    return Ok(PromptResponse::new(stop));
                }
                _ => {}
            }
        }
    }

    /// `session/cancel`: interrupts the session's turn (its tool calls all get results).
    fn cancel(&self, id: &SessionId) {
        match self.session(id) {
            Ok(session) => {
                tracing::info!(session = %id, "acp: cancel");
                session
                    .cancels
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                session.interrupter.interrupt();
            }
            Err(_) => tracing::info!(session = %id, "acp: cancel for an unknown session"),
        }
    }

    /// `session/set_mode`.
    fn set_mode(&self, req: &SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let session = self.session(&req.session_id)?;
        let mode = Mode::parse(&req.mode_id.0).ok_or_else(|| {
            invalid(format!(
                "unknown mode {}; the modes are default, accept_edits and dont_ask",
                req.mode_id.0
            ))
        })?;
        if let Ok(mut m) = session.shared.mode.lock() {
            *m = mode;
        }
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: the `model` option switches the model from the next
    /// prompt on (as `/model` does in the REPL).
    async fn set_config_option(
        &self,
        req: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let session = self.session(&req.session_id)?;
        if &*req.config_id.0 != MODEL_OPTION {
            return Err(invalid(format!(
                "unknown option {}; hermes has the option {MODEL_OPTION}",
                req.config_id.0
            )));
        }
        let value = req
            .value
            .as_value_id()
            .map(|v| v.0.to_string())
            .ok_or_else(|| invalid("the model option takes a model id"))?;
        let current = session
            .runtime
            .lock()
            .map(|rt| rt.clone())
            .unwrap_or_else(|_| self.kit.runtime.clone());
        let mut switcher = ModelSwitcher::new(&self.app, current);
        let (client, _note) = switcher
            .switch(&value)
            .await
            .map_err(|e| invalid(format!("cannot use model {value}: {e:#}")))?;
        if let Ok(mut next) = session.next_client.lock() {
            *next = Some(client);
        }
        // Shown as resolved: a bare model name is one of the current provider's.
        if let Ok(mut rt) = session.runtime.lock() {
            *rt = switcher.current;
        }
        Ok(SetSessionConfigOptionResponse::new(
            self.config_options(&session),
        ))
    }

    /// `provider:model` of the kit's runtime.
    fn current_choice(&self) -> String {
        choice_of(&self.kit.runtime)
    }

    /// The session's options: the model, with the configured one and `fallback_providers`
    /// to pick from (any `provider:model` the runtime resolves is taken).
    fn config_options(&self, session: &AcpSession) -> Vec<SessionConfigOption> {
        let current = session
            .runtime
            .lock()
            .map(|rt| choice_of(&rt))
            .unwrap_or_else(|_| self.current_choice());
        let mut values = vec![self.current_choice()];
        for entry in &self.app.config.fallback_providers {
            if let (Some(p), Some(m)) = (&entry.provider, &entry.default) {
                values.push(format!("{p}:{m}"));
            }
        }
        if !values.contains(&current) {
            values.insert(0, current.clone());
        }
        values.dedup();
        let options: Vec<SessionConfigSelectOption> = values
            .iter()
            .map(|v| {
                let name = v.split_once(':').map_or(v.as_str(), |(_, m)| m);
                SessionConfigSelectOption::new(v.clone(), name.to_string())
                    .description(format!("provider {}", v.split(':').next().unwrap_or("")))
            })
            .collect();
        vec![
            SessionConfigOption::select(MODEL_OPTION, "Model", current, options)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// Stops every session's agent (the client went away): a running turn is interrupted
    /// and given up to [`SHUTDOWN_WAIT`] to end as Ctrl-C ends it, so the store keeps a
    /// result for each of its tool calls.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .map(|mut s| s.drain().map(|(_, v)| v).collect())
            .unwrap_or_default();
        for session in &sessions {
            session.interrupter.interrupt();
        }
        for session in sessions {
            // The prompt holds the handle until its turn has ended.
            if tokio::time::timeout(SHUTDOWN_WAIT, session.handle.lock())
                .await
                .is_err()
            {
                tracing::warn!(
                    session = %session.shared.link.session_id,
                    "acp: a turn did not end after its interrupt; exiting anyway"
                );
                continue;
            }
            if let Ok(session) = Arc::try_unwrap(session) {
                let _ = session.handle.into_inner().shutdown().await;
            }
        }
    }
}
