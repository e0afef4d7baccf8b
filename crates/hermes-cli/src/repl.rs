//! The interactive REPL (FEATURES §1 CLI): history, multi-line input (a line ending in `\`
//! continues; Alt-Enter inserts a newline), streamed answers, one line per tool call,
//! Ctrl-C interrupts the running turn, and slash commands.

use anyhow::Result;
use hermes_agent::AgentHandle;
use hermes_protocol::{AgentEvent, Op};
use reedline::{
    DefaultPrompt, DefaultPromptSegment, Emacs, FileBackedHistory, KeyCode, KeyModifiers, Reedline,
    ReedlineEvent, Signal, default_emacs_keybindings,
};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::approver::{ApprovalQuestion, parse_answer};
use crate::render::{RenderMode, Renderer};
use crate::session::SessionInfo;
use crate::slash::{SlashCommand, help_text, parse_slash, slash_arg};

/// What the running turn may ask the user: dangerous-command approvals and MCP elicitation.
pub struct Questions {
    /// From the [`crate::approver::ReplApprover`].
    pub approvals: UnboundedReceiver<ApprovalQuestion>,
    /// From the [`crate::mcp_elicit::ReplElicitor`].
    pub elicitations: UnboundedReceiver<crate::mcp_elicit::ElicitQuestion>,
}

/// Runs the REPL until `/quit`, Ctrl-D, or Ctrl-C on an empty prompt.
pub async fn run(
    mut handle: AgentHandle,
    mut questions: Questions,
    mut info: SessionInfo,
    quiet: bool,
    verbose: bool,
) -> Result<i32> {
    crate::hangup::watch_stdin();
    let mut keybindings = default_emacs_keybindings();
    keybindings.add_binding(
        KeyModifiers::ALT,
        KeyCode::Enter,
        ReedlineEvent::Edit(vec![reedline::EditCommand::InsertNewline]),
    );
    let mut editor = Reedline::create().with_edit_mode(Box::new(Emacs::new(keybindings)));
    match FileBackedHistory::with_file(1000, info.history_file.clone()) {
        Ok(history) => editor = editor.with_history(Box::new(history)),
        Err(e) => eprintln!("warning: input history disabled ({e})"),
    }
    let prompt = DefaultPrompt::new(
        DefaultPromptSegment::Basic("hermes".to_string()),
        DefaultPromptSegment::Empty,
    );
    println!(
        "hermes {} — {} on {} · session {} · /help for commands",
        env!("CARGO_PKG_VERSION"),
        info.model,
        info.provider,
        handle.session_id()
    );
    let mut renderer = Renderer::new(RenderMode::Stream, quiet, verbose);
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
        let op = match parse_slash(&input) {
            Some(SlashCommand::Quit) => break,
            Some(SlashCommand::Help) => {
                println!("{}", help_text());
                continue;
            }
            Some(SlashCommand::Usage) => {
                let u = info.usage_now(&handle.session_id());
                println!("{u}");
                continue;
            }
            Some(SlashCommand::Model(words)) => {
                info.model_command(&words, &handle).await;
                continue;
            }
            Some(SlashCommand::Memory) => {
                print!("{}", info.learning.memory_text());
                continue;
            }
            Some(SlashCommand::Skills) => {
                print!("{}", info.learning.skills_text());
                continue;
            }
            Some(SlashCommand::Compress(focus)) => Op::Compress { focus },
            Some(SlashCommand::Cron) => {
                println!("{}", info.cron_jobs());
                continue;
            }
            Some(SlashCommand::Sessions) => {
                println!("{}", info.recent_sessions());
                continue;
            }
            Some(SlashCommand::Resume(key)) => {
                println!(
                    "To resume a session, restart with `hermes -r {key}` (this REPL stays on {}).",
                    handle.session_id()
                );
                continue;
            }
            Some(SlashCommand::New) => Op::NewSession,
            Some(SlashCommand::Retry) => Op::Retry,
            Some(SlashCommand::Undo(n)) => Op::Undo { count: n },
            Some(SlashCommand::Unknown(name)) => {
                match info.learning.skill_message(&name, slash_arg(&input)) {
                    Some(Ok(text)) => Op::UserInput { text },
                    Some(Err(e)) => {
                        eprintln!("/{name}: {e}");
                        continue;
                    }
                    None => {
                        eprintln!("unknown command /{name} — /help lists the commands");
                        continue;
                    }
                }
            }
            None => match info.learning.first_message(&input) {
                Ok(text) => Op::UserInput { text },
                Err(e) => {
                    eprintln!("{e}");
                    continue;
                }
            },
        };
        handle.submit(op);
        if !wait_for_turn(&mut handle, &mut questions, &mut renderer).await {
            break;
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
    loop {
        tokio::select! {
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
                let _ = answer.send(crate::mcp_elicit::ask_on_terminal(&request));
            }
            Some((request, answer)) = questions.approvals.recv() => {
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
