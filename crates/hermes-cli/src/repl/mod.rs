//! The interactive REPL (FEATURES §1 CLI): history, multi-line input (a line ending in `\`
//! continues; Alt-Enter inserts a newline), streamed answers, one line per tool call,
//! Ctrl-C interrupts the running turn, and slash commands.
//!
//! This folder owns the terminal side of a session: line editing and paste ([`input`]),
//! Tab completion ([`complete`]), slash commands ([`slash`]), the session facts the REPL
//! shows ([`session`]), the questions a turn asks the user — approvals ([`approver`]), MCP
//! elicitation ([`mcp_elicit`]), `clarify` ([`clarify_prompt`]) — the lines about MCP servers
//! lost and back ([`mcp_watch`]), and terminal hang-up and signal handling ([`hangup`],
//! [`terminate`]). The agent itself comes from `crate::assembly`.

pub mod approver;
pub mod clarify_prompt;
pub mod complete;
pub mod hangup;
pub mod input;
pub mod mcp_elicit;
pub mod mcp_watch;
pub mod session;
pub mod slash;
pub mod terminate;
pub mod typeahead;

use std::sync::Arc;

use anyhow::Result;
use hermes_agent::AgentHandle;
use hermes_protocol::{AgentEvent, Op};
use reedline::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::render::display::Display;
use crate::render::prompt::SkinPrompt;
use crate::render::{RenderMode, Renderer};
use crate::repl::approver::{ApprovalQuestion, parse_answer};
use crate::repl::mcp_watch::McpWatch;
use crate::repl::session::SessionInfo;
use crate::repl::slash::Action;

/// What the running turn may ask the user: dangerous-command approvals and MCP elicitation.
pub struct Questions {
    /// From the [`crate::repl::approver::ReplApprover`].
    pub approvals: UnboundedReceiver<ApprovalQuestion>,
    /// From the [`crate::repl::mcp_elicit::ReplElicitor`].
    pub elicitations: UnboundedReceiver<crate::repl::mcp_elicit::ElicitQuestion>,
    /// From the [`crate::repl::clarify_prompt::ReplClarifier`] (the `clarify` tool).
    pub clarifications: UnboundedReceiver<crate::repl::clarify_prompt::ClarifyQuestion>,
}

/// Assembles the session's agent with the REPL's answerers of approvals, MCP elicitation and
/// `clarify`, then runs the REPL on it; returns the exit code.
pub async fn start(app: &App, args: &ChatArgs) -> Result<i32> {
    let (approver, approvals) = approver::ReplApprover::new();
    let (elicitor, elicitations) = mcp_elicit::ReplElicitor::new();
    let (clarifier, clarifications) = clarify_prompt::ReplClarifier::new();
    let (agent, kit) = crate::assembly::build_agent(
        app,
        args,
        Arc::new(approver),
        Some(Arc::new(elicitor)),
        Some(Arc::new(clarifier)),
    )
    .await?;
    let info = SessionInfo::new(app, args, &kit);
    let watch = kit.mcp_servers.clone().map(McpWatch::new);
    // While the user types the first question, the embedded model prefills the session's
    // start (issue 19: the first answer's time after Enter); the turn queues behind it.
    let client = Arc::clone(agent.client());
    let warm = agent.warm_request();
    tokio::spawn(async move {
        if let Err(e) = client.warm(&warm).await {
            tracing::debug!(error = %e, "model warm-up failed");
        }
    });
    let handle = AgentHandle::spawn(agent);
    let questions = Questions {
        approvals,
        elicitations,
        clarifications,
    };
    run(handle, questions, info, watch, args.quiet, args.verbose).await
}

/// The spinner's label while the session being left is closed (its end-of-session review of
/// memory and skills can take a model call).
const CLOSING_LABEL: &str = "closing the session…";

/// What the REPL loop keeps between inputs.
struct Repl {
    handle: AgentHandle,
    questions: Questions,
    info: SessionInfo,
    display: Display,
    renderer: Renderer,
    watch: Option<McpWatch>,
    quiet: bool,
    /// A `/title` given before the session's first message, set once it is stored.
    pending_title: Option<String>,
    /// Lines typed while the last turn ran, sent next in order ([`crate::repl::typeahead`]).
    queued: std::collections::VecDeque<String>,
}

/// Runs the REPL until `/quit`, Ctrl-D, or Ctrl-C on an empty prompt.
pub async fn run(
    handle: AgentHandle,
    questions: Questions,
    info: SessionInfo,
    watch: Option<McpWatch>,
    quiet: bool,
    verbose: bool,
) -> Result<i32> {
    crate::repl::hangup::watch_stdin();
    let (display, warnings) = Display::load(&info.home, &info.display, quiet, verbose);
    let (mut editor, pastes) = crate::repl::input::build_editor(
        &info.history_file,
        info.completion.clone(),
        &display.skin.prompt_symbol,
    );
    for w in warnings {
        errln!("warning: {w}");
    }
    let mut prompt = SkinPrompt::new(&display.skin, display.opts.color);
    println!(
        "{}",
        crate::render::display::banner(
            &display.skin,
            &info.model,
            &info.provider,
            &handle.session_id(),
            display.opts.color
        )
    );
    let mut renderer = display.renderer(RenderMode::Stream);
    if display.opts.live {
        renderer.follow_width(crate::render::resize::WidthWatch::on_signal());
    }
    let mut repl = Repl {
        handle,
        questions,
        info,
        display,
        renderer,
        watch,
        quiet,
        pending_title: None,
        queued: std::collections::VecDeque::new(),
    };
    let mut pending = String::new();
    let mut ctrl_c_armed = false;
    crate::repl::terminate::handling_ctrl_c();

    loop {
        repl.tell_mcp_changes();
        // A line typed while the last turn ran goes first, shown as if typed at this prompt.
        let signal = match repl.queued.pop_front() {
            Some(line) => {
                println!("{}{line}", repl.display.skin.prompt_symbol);
                Ok(Signal::Success(line))
            }
            None => tokio::task::block_in_place(|| editor.read_line(&prompt)),
        };
        let line = match signal {
            Ok(Signal::Success(line)) => line,
            Ok(Signal::CtrlC) => {
                if ctrl_c_armed {
                    break;
                }
                pending.clear();
                ctrl_c_armed = true;
                errln!("(press Ctrl-C again or type /quit to exit)");
                continue;
            }
            Ok(Signal::CtrlD) => break,
            Ok(_) => continue,
            Err(e) => {
                errln!("error: terminal input failed: {e}");
                return Ok(1);
            }
        };
        ctrl_c_armed = false;
        // Large pastes were shown as placeholders; the full text is what gets sent.
        let line = pastes.expand(&line);
        if let Some(stripped) = line.strip_suffix('\\') {
            pending.push_str(stripped);
            pending.push('\n');
            continue;
        }
        pending.push_str(&line);
        let input = std::mem::take(&mut pending);
        if input.trim().is_empty() {
            continue;
        }
        let sid = repl.handle.session_id();
        let mut action = crate::repl::slash::action(&input, &sid, &mut repl.info);
        if let Action::Compose(arg) = action {
            match tokio::task::block_in_place(|| {
                crate::repl::input::compose_in_editor(
                    &repl.info.home.cache_dir().join("editor"),
                    &arg,
                )
            }) {
                Ok(Some(text)) => action = crate::repl::slash::action(&text, &sid, &mut repl.info),
                Ok(None) => {
                    errln!("/prompt: the message was empty; nothing sent");
                    continue;
                }
                Err(e) => {
                    errln!("/prompt: {e:#}");
                    continue;
                }
            }
        }
        let (op, title_from) = match action {
            Action::Submit(op) => (op, None),
            Action::SubmitTitled { message, text } => (Op::user(message), Some(text)),
            Action::Print(text) => {
                println!("{}", text.trim_end());
                continue;
            }
            Action::Problem(text) => {
                errln!("{text}");
                continue;
            }
            Action::Quit => break,
            Action::Skin(name) => {
                println!(
                    "{}",
                    crate::render::display::skin_command(
                        &mut repl.display,
                        &mut repl.renderer,
                        &name
                    )
                );
                prompt = SkinPrompt::new(&repl.display.skin, repl.display.opts.color);
                continue;
            }
            Action::Statusbar => {
                println!(
                    "{}",
                    crate::render::display::statusbar_command(&mut repl.display)
                );
                continue;
            }
            Action::Model(words) => {
                repl.info.model_command(&words, &repl.handle).await;
                continue;
            }
            Action::Compose(_) => {
                errln!("/prompt: the composed message cannot be another /prompt");
                continue;
            }
            Action::Title(name) => {
                repl.title(&name);
                continue;
            }
            Action::History => {
                println!(
                    "{}",
                    crate::views::sessions::history_text(&repl.info.store, &sid)
                );
                continue;
            }
            Action::Clear => {
                print!("\x1b[2J\x1b[H");
                (Op::NewSession, None)
            }
            Action::Resume(id) => {
                if !repl.resume(&id).await {
                    break;
                }
                continue;
            }
            Action::PickSession => {
                match repl.pick_session(&sid) {
                    Some(id) => {
                        if !repl.resume(&id).await {
                            break;
                        }
                    }
                    None => println!("staying in session {sid}"),
                }
                continue;
            }
        };
        let model_turn = matches!(op, Op::UserInput { .. } | Op::Retry);
        let was_stored = repl.session_stored();
        if matches!(op, Op::NewSession) {
            repl.renderer.wait_with(CLOSING_LABEL);
        }
        repl.handle.submit(op);
        if !repl.wait_for_turn().await {
            break;
        }
        repl.after_first_message(was_stored, title_from.as_deref());
        if model_turn && repl.display.statusbar && !repl.quiet {
            repl.status_line();
        }
    }
    println!("{}", repl.info.usage_now(&repl.handle.session_id()));
    let _ = repl.handle.shutdown().await;
    Ok(0)
}

impl Repl {
    /// Prints the lines about MCP servers lost or back since the last look.
    fn tell_mcp_changes(&mut self) {
        let Some(watch) = &mut self.watch else { return };
        for line in watch.changes() {
            self.renderer.warning_line(&line);
        }
    }

    /// Whether the current session is in the store yet (its first message written).
    fn session_stored(&self) -> bool {
        self.info
            .store
            .get_session(&self.handle.session_id())
            .ok()
            .flatten()
            .is_some_and(|s| s.message_count > 0)
    }

    /// After a turn: a session that just got its first message takes the title given with
    /// `/title` before it, or the user's own words when the message was a skill preface.
    fn after_first_message(&mut self, was_stored: bool, title_from: Option<&str>) {
        if was_stored || !self.session_stored() {
            return;
        }
        let sid = self.handle.session_id();
        let title = self
            .pending_title
            .take()
            .or_else(|| title_from.and_then(crate::views::sessions::title_from_text));
        if let Some(title) = title
            && let Err(e) = self.info.store.set_title_numbered(&sid, &title)
        {
            errln!("could not title the session: {e}");
        }
    }

    /// `/title [name]`.
    fn title(&mut self, name: &str) {
        let sid = self.handle.session_id();
        let stored = self.info.store.get_session(&sid).ok().flatten();
        let name = name.trim();
        if name.is_empty() {
            match stored.and_then(|s| s.title) {
                Some(t) => println!("title: {t}"),
                None => println!("this session has no title yet (/title NAME sets one)"),
            }
            return;
        }
        if stored.is_none() {
            self.pending_title = Some(name.to_string());
            println!("title \"{name}\" is set when the session's first message is sent");
            return;
        }
        match self.info.store.set_title(&sid, name) {
            Ok(()) => println!("title: {name}"),
            Err(hermes_store::StoreError::TitleTaken { .. }) => {
                errln!("/title: another session is already titled \"{name}\"")
            }
            Err(e) => errln!("/title: {e}"),
        }
    }

    /// `/resume` alone: the recent sessions, numbered, and the user's pick (a number, an id
    /// or a title; Enter keeps the current session).
    fn pick_session(&mut self, current: &str) -> Option<String> {
        let sessions: Vec<_> = crate::views::sessions::recent_sessions(&self.info.store, 11, None)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.id != current)
            .take(10)
            .collect();
        if sessions.is_empty() {
            println!("no other sessions to resume yet");
            return None;
        }
        println!(
            "{}",
            crate::views::sessions::sessions_table(&sessions, true)
        );
        let answer = tokio::task::block_in_place(|| {
            use std::io::Write;
            eprint!("resume which? (number, id or title; Enter to stay): ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            line
        });
        let answer = answer.trim();
        if answer.is_empty() {
            return None;
        }
        if let Ok(n) = answer.parse::<usize>() {
            return match sessions.get(n.wrapping_sub(1)) {
                Some(s) => Some(s.id.clone()),
                None => {
                    errln!("/resume: no session number {n}");
                    None
                }
            };
        }
        match self.info.store.find_session(answer) {
            Ok(Some(s)) if s.id != current => Some(s.id),
            Ok(Some(_)) => None,
            Ok(None) => {
                errln!("/resume: no session matches `{answer}`");
                None
            }
            Err(e) => {
                errln!("/resume: {e}");
                None
            }
        }
    }

    /// Switches to session `id` in place (the current one is closed as `/new` closes it)
    /// and shows where the conversation was. Returns false when the agent task is gone.
    async fn resume(&mut self, id: &str) -> bool {
        self.renderer.wait_with(CLOSING_LABEL);
        self.handle.submit(Op::Resume {
            session: id.to_string(),
        });
        if !self.wait_for_turn().await {
            return false;
        }
        if self.handle.session_id() == id {
            self.pending_title = None;
            let recap = crate::views::sessions::recap_text(&self.info.store, id, 2);
            if !recap.is_empty() {
                println!("{recap}");
            }
        }
        true
    }

    /// The status line after a model turn.
    fn status_line(&self) {
        let cost = self
            .info
            .store
            .get_session(&self.handle.session_id())
            .ok()
            .flatten()
            .and_then(|s| s.cost_usd);
        let line = crate::render::display::status_after_turn(
            &self.renderer,
            &self.renderer.last_turn(),
            &self.info.model,
            &self.info.provider,
            self.info.context_window,
            cost,
        );
        errln!("{line}");
    }

    /// Shows events until the turn ends; Ctrl-C interrupts it. Returns false when the agent
    /// task is gone.
    /// Lines typed meanwhile are queued in `self.queued`, not echoed.
    async fn wait_for_turn(&mut self) -> bool {
        let mut typed = crate::repl::typeahead::TypeAhead::start();
        let outcome = self.show_turn(&mut typed).await;
        let lines = typed.finish();
        // A turn stopped with Ctrl-C does not go on to what was typed meanwhile.
        if outcome == Some(hermes_protocol::TurnOutcome::Interrupted) && !lines.is_empty() {
            errln!(
                "{} message(s) typed during the turn not sent (it was interrupted)",
                lines.len()
            );
        } else {
            self.queued.extend(lines);
        }
        outcome.is_some()
    }

    /// The event loop of [`Self::wait_for_turn`]: the turn's outcome, `None` when the agent
    /// task is gone.
    async fn show_turn(
        &mut self,
        typed: &mut crate::repl::typeahead::TypeAhead,
    ) -> Option<hermes_protocol::TurnOutcome> {
        let mut ticker = tokio::time::interval(std::time::Duration::from_millis(100));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let renderer = &mut self.renderer;
        let questions = &mut self.questions;
        let handle = &mut self.handle;
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    if let Some(watch) = &mut self.watch {
                        for line in watch.changes() {
                            renderer.warning_line(&line);
                        }
                    }
                    typed.collect();
                    renderer.tick();
                }
                event = handle.next_event() => match event {
                    Some(ev) => {
                        renderer.handle(&ev);
                        if let AgentEvent::TurnFinished { outcome, .. } = ev {
                            return Some(outcome);
                        }
                    }
                    None => return None,
                },
                // Ctrl-C at a question answers nothing and stops the turn, as it does
                // anywhere else during one.
                Some((request, answer)) = questions.elicitations.recv() => {
                    renderer.pause_live();
                    typed.pause();
                    let (reply, interrupted) = crate::repl::mcp_elicit::ask_on_terminal(&request);
                    let _ = answer.send(reply);
                    if interrupted {
                        handle.interrupt();
                    }
                    typed.resume();
                }
                Some((request, answer)) = questions.clarifications.recv() => {
                    renderer.pause_live();
                    typed.pause();
                    let (reply, interrupted) = crate::repl::clarify_prompt::ask_on_terminal(&request);
                    let _ = answer.send(reply);
                    if interrupted {
                        handle.interrupt();
                    }
                    typed.resume();
                }
                Some((request, answer)) = questions.approvals.recv() => {
                    renderer.pause_live();
                    typed.pause();
                    errln!(
                        "\n⚠ dangerous command ({}):\n    {}",
                        crate::render::style::visible_controls(&request.reason, "    "),
                        crate::render::style::visible_controls(&request.command, "    ")
                    );
                    {
                        use std::io::Write;
                        eprint!("run it? [y]es once / [a]lways this session / [N]o: ");
                        let _ = std::io::stderr().flush();
                    }
                    let reply = crate::repl::typeahead::read_answer();
                    typed.resume();
                    match reply {
                        Some(reply) => {
                            let _ = answer.send(parse_answer(&reply));
                        }
                        // Ctrl-C: the command is denied and the turn stops, as Ctrl-C stops
                        // it anywhere else.
                        None => {
                            eprintln!();
                            let _ = answer.send(hermes_tools::Approval::Deny);
                            handle.interrupt();
                        }
                    }
                }
                _ = tokio::signal::ctrl_c() => {
                    handle.interrupt();
                }
            }
        }
    }
}
