//! The interactive REPL (FEATURES §1 CLI): history, multi-line input (a line ending in `\`
//! continues; Alt-Enter inserts a newline), streamed answers, one line per tool call,
//! Ctrl-C interrupts the running turn, and slash commands.
//!
//! This folder owns the terminal side of a session: line editing and paste ([`input`]),
//! Tab completion ([`complete`]), slash commands ([`slash`]), the session facts the REPL
//! shows ([`session`]), the questions a turn asks the user — approvals ([`approver`]), MCP
//! elicitation ([`mcp_elicit`]), `clarify` ([`clarify_prompt`]) — and terminal hang-up and
//! signal handling ([`hangup`], [`terminate`]). The agent itself comes from `crate::assembly`.

pub mod approver;
pub mod clarify_prompt;
pub mod complete;
pub mod hangup;
pub mod input;
pub mod mcp_elicit;
pub mod session;
pub mod slash;
pub mod terminate;

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
    let handle = AgentHandle::spawn(agent);
    let questions = Questions {
        approvals,
        elicitations,
        clarifications,
    };
    run(handle, questions, info, args.quiet, args.verbose).await
}

/// Runs the REPL until `/quit`, Ctrl-D, or Ctrl-C on an empty prompt.
pub async fn run(
    mut handle: AgentHandle,
    mut questions: Questions,
    mut info: SessionInfo,
    quiet: bool,
    verbose: bool,
) -> Result<i32> {
    crate::repl::hangup::watch_stdin();
    let (mut editor, pastes) =
        crate::repl::input::build_editor(&info.history_file, info.completion.clone());
    let (mut display, warnings) = Display::load(&info.home, &info.display, quiet, verbose);
    for w in warnings {
        eprintln!("warning: {w}");
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
    let mut pending = String::new();
    let mut ctrl_c_armed = false;

    loop {
        let signal = tokio::task::block_in_place(|| editor.read_line(&prompt));
        let line = match signal {
            Ok(Signal::Success(line)) => line,
            Ok(Signal::CtrlC) => {
                if ctrl_c_armed {
                    break;
                }
                pending.clear();
                ctrl_c_armed = true;
                eprintln!("(press Ctrl-C again or type /quit to exit)");
                continue;
            }
            Ok(Signal::CtrlD) => break,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("error: terminal input failed: {e}");
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
        let mut action = crate::repl::slash::action(&input, &handle.session_id(), &mut info);
        if let Action::Compose(arg) = action {
            match tokio::task::block_in_place(|| crate::repl::input::compose_in_editor(&arg)) {
                Ok(Some(text)) => {
                    action = crate::repl::slash::action(&text, &handle.session_id(), &mut info)
                }
                Ok(None) => {
                    eprintln!("/prompt: the message was empty; nothing sent");
                    continue;
                }
                Err(e) => {
                    eprintln!("/prompt: {e:#}");
                    continue;
                }
            }
        }
        let op = match action {
            Action::Submit(op) => op,
            Action::Print(text) => {
                println!("{}", text.trim_end());
                continue;
            }
            Action::Problem(text) => {
                eprintln!("{text}");
                continue;
            }
            Action::Quit => break,
            Action::Skin(name) => {
                println!(
                    "{}",
                    crate::render::display::skin_command(&mut display, &mut renderer, &name)
                );
                prompt = SkinPrompt::new(&display.skin, display.opts.color);
                continue;
            }
            Action::Statusbar => {
                println!(
                    "{}",
                    crate::render::display::statusbar_command(&mut display)
                );
                continue;
            }
            Action::Model(words) => {
                info.model_command(&words, &handle).await;
                continue;
            }
            Action::Compose(_) => {
                eprintln!("/prompt: the composed message cannot be another /prompt");
                continue;
            }
        };
        let model_turn = matches!(op, Op::UserInput { .. } | Op::Retry);
        handle.submit(op);
        if !wait_for_turn(&mut handle, &mut questions, &mut renderer).await {
            break;
        }
        if model_turn && display.statusbar && !quiet {
            let cost = info
                .store
                .get_session(&handle.session_id())
                .ok()
                .flatten()
                .and_then(|s| s.cost_usd);
            let line = crate::render::display::status_after_turn(
                &renderer,
                &renderer.last_turn(),
                &info.model,
                &info.provider,
                info.context_window,
                cost,
            );
            eprintln!("{line}");
        }
    }
    println!("{}", info.usage_now(&handle.session_id()));
    let _ = handle.shutdown().await;
    Ok(0)
}

/// Shows events until the turn ends; Ctrl-C interrupts it. Returns false when the agent
/// task is gone.
async fn wait_for_turn(
    handle: &mut AgentHandle,
    questions: &mut Questions,
    renderer: &mut Renderer,
) -> bool {
    let mut ticker = tokio::time::interval(std::time::Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => renderer.tick(),
            event = handle.next_event() => match event {
                Some(ev) => {
                    let done = matches!(ev, AgentEvent::TurnFinished { .. });
                    renderer.handle(&ev);
                    if done {
                        return true;
                    }
                }
                None => return false,
            },
            Some((request, answer)) = questions.elicitations.recv() => {
                renderer.pause_live();
                let _ = answer.send(crate::repl::mcp_elicit::ask_on_terminal(&request));
            }
            Some((request, answer)) = questions.clarifications.recv() => {
                renderer.pause_live();
                let _ = answer.send(crate::repl::clarify_prompt::ask_on_terminal(&request));
            }
            Some((request, answer)) = questions.approvals.recv() => {
                renderer.pause_live();
                eprintln!("\n⚠ dangerous command ({}):\n    {}", request.reason, request.command);
                let reply = tokio::task::block_in_place(|| {
                    eprint!("run it? [y]es once / [a]lways this session / [N]o: ");
                    let mut line = String::new();
                    let _ = std::io::stdin().read_line(&mut line);
                    line
                });
                let _ = answer.send(parse_answer(&reply));
            }
            _ = tokio::signal::ctrl_c() => {
                handle.interrupt();
            }
        }
    }
}
