//! What slash commands do in the REPL (FEATURES §1 CLI). Names, aliases, arguments and help
//! come from the registry shared with the gateway ([`hermes_agent::commands`]); this file only
//! maps each [`CommandId`] the terminal serves to an action.

use hermes_agent::commands::{self, CommandId, Invocation, Parsed, Surface};
use hermes_protocol::Op;

use crate::repl::session::SessionInfo;

/// What the REPL does with one input.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this to the agent and wait for the turn.
    Submit(Op),
    /// Send this user message; it was built around the user's `text` (a skill preface), so
    /// a new session is titled from `text` rather than from the message.
    SubmitTitled {
        /// The message to send.
        message: String,
        /// What the user typed.
        text: String,
    },
    /// Print this (on stdout) and read the next input.
    Print(String),
    /// Print this problem (on stderr) and read the next input.
    Problem(String),
    /// Leave the REPL.
    Quit,
    /// `/prompt [text]`: compose the message in `$EDITOR` starting from this text, then
    /// treat what was written as the input.
    Compose(String),
    /// `/skin [name]`: list skins (empty name) or switch to one.
    Skin(String),
    /// `/model [[PROVIDER] MODEL]`: show the model (empty) or switch the following turns to
    /// another (`crate::assembly::model_switch`).
    Model(String),
    /// `/statusbar`: toggle the status line.
    Statusbar,
    /// `/resume ID`: switch to this stored session (its id, already resolved).
    Resume(String),
    /// `/resume` alone: list recent sessions and ask which one.
    PickSession,
    /// `/title [name]`: show (empty) or set the session's title.
    Title(String),
    /// `/history`: show the conversation.
    History,
    /// `/clear`: clear the screen, then start a new session.
    Clear,
}

/// Every name and alias the REPL offers for Tab completion (`crate::repl::complete`), from
/// the shared registry: the names `/help` shows, so an alias left out of help (`/start`, a
/// Telegram greeting; `/?`) is not offered either (issue 20 item 10).
pub fn command_names() -> Vec<String> {
    commands::commands(Surface::Cli)
        .flat_map(|c| {
            std::iter::once(&c.name).chain(c.aliases.iter().filter(|a| commands::shown_alias(a)))
        })
        .filter(|n| n.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-'))
        .map(|n| n.to_string())
        .collect()
}

/// The action for `input` (a complete, non-empty input) in a REPL on `session_id`.
pub fn action(input: &str, session_id: &str, info: &mut SessionInfo) -> Action {
    match commands::parse(input, Surface::Cli) {
        None => match info.learning.first_message(input) {
            Ok(message) if message != input => Action::SubmitTitled {
                message,
                text: input.to_string(),
            },
            Ok(text) => Action::Submit(Op::user(text)),
            Err(e) => Action::Problem(e.to_string()),
        },
        Some(Parsed::Command(inv)) => command(inv, session_id, info),
        Some(Parsed::Invalid(e)) => Action::Problem(e.to_string()),
        Some(Parsed::Unknown { name, arg }) => match info.learning.skill_message(&name, &arg) {
            Some(Ok(message)) => Action::SubmitTitled {
                message,
                text: if arg.trim().is_empty() {
                    format!("/{name}")
                } else {
                    arg
                },
            },
            Some(Err(e)) => Action::Problem(format!("/{name}: {e}")),
            None => Action::Problem(commands::unknown_message(&name)),
        },
    }
}

fn command(inv: Invocation, session_id: &str, info: &SessionInfo) -> Action {
    let text = inv.text().unwrap_or_default().to_string();
    match inv.id {
        CommandId::Quit => Action::Quit,
        CommandId::Skin => Action::Skin(text),
        CommandId::Statusbar => Action::Statusbar,
        CommandId::Prompt => Action::Compose(text),
        CommandId::Help => Action::Print(commands::help_text(Surface::Cli)),
        CommandId::Usage => Action::Print(info.usage_now(session_id)),
        CommandId::Status => Action::Print(format!(
            "session {session_id} · {} on {}\n{}",
            info.model,
            info.provider,
            info.usage_now(session_id)
        )),
        CommandId::Model => Action::Model(text),
        CommandId::Memory => Action::Print(info.learning.memory_text()),
        CommandId::Skills => Action::Print(info.learning.skills_text()),
        CommandId::Cron => Action::Print(info.cron_jobs()),
        CommandId::Sessions => Action::Print(info.recent_sessions()),
        CommandId::Resume if text.is_empty() => Action::PickSession,
        CommandId::Resume => match info.store.find_session(&text) {
            Ok(Some(s)) if s.id == session_id => {
                Action::Print(format!("already in session {session_id}"))
            }
            Ok(Some(s)) => Action::Resume(s.id),
            Ok(None) => Action::Problem(format!(
                "/resume: no session matches `{text}` (/resume alone lists the recent ones)"
            )),
            Err(e) => Action::Problem(format!("/resume: {e}")),
        },
        CommandId::Title => Action::Title(text),
        CommandId::History => Action::History,
        CommandId::Clear => Action::Clear,
        CommandId::Insights => match text.trim() {
            "" => Action::Print(info.insights(30)),
            days => match days.parse::<u32>() {
                Ok(n) if n > 0 => Action::Print(info.insights(n)),
                _ => Action::Problem(format!(
                    "/insights: expected a number of days, got \"{days}\" (usage: /insights [days])"
                )),
            },
        },
        CommandId::Personality => match crate::views::personality::command(&info.home, &text) {
            Ok(out) => Action::Print(out),
            Err(e) => Action::Problem(format!("/personality: {e}")),
        },
        CommandId::Platforms => Action::Print(info.platforms()),
        CommandId::Toolsets => Action::Print(info.toolsets_text()),
        CommandId::Config => Action::Print(info.config_text()),
        CommandId::Version => Action::Print(format!("hermes {}", env!("CARGO_PKG_VERSION"))),
        CommandId::Compress => Action::Submit(Op::Compress {
            focus: inv.text().map(str::to_string),
        }),
        CommandId::New => Action::Submit(Op::NewSession),
        CommandId::Retry => Action::Submit(Op::Retry),
        CommandId::Undo => Action::Submit(Op::Undo { count: inv.count() }),
        // Gateway-only commands never parse as commands on this surface.
        CommandId::Stop | CommandId::Approve | CommandId::Deny | CommandId::SetHome => {
            Action::Problem(commands::unknown_message(&inv.name))
        }
    }
}
