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
}

/// Every name and alias the REPL answers (for Tab completion; `crate::repl::complete`), from the
/// shared registry; shorthand aliases made of symbols (`?`) are left out.
pub fn command_names() -> Vec<String> {
    commands::commands(Surface::Cli)
        .flat_map(|c| std::iter::once(&c.name).chain(c.aliases))
        .filter(|n| n.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-'))
        .map(|n| n.to_string())
        .collect()
}

/// The action for `input` (a complete, non-empty input) in a REPL on `session_id`.
pub fn action(input: &str, session_id: &str, info: &mut SessionInfo) -> Action {
    match commands::parse(input, Surface::Cli) {
        None => match info.learning.first_message(input) {
            Ok(text) => Action::Submit(Op::UserInput { text }),
            Err(e) => Action::Problem(e.to_string()),
        },
        Some(Parsed::Command(inv)) => command(inv, session_id, info),
        Some(Parsed::Invalid(e)) => Action::Problem(e.to_string()),
        Some(Parsed::Unknown { name, arg }) => match info.learning.skill_message(&name, &arg) {
            Some(Ok(text)) => Action::Submit(Op::UserInput { text }),
            Some(Err(e)) => Action::Problem(format!("/{name}: {e}")),
            None => Action::Problem(commands::unknown_message(&name)),
        },
    }
}

fn command(inv: Invocation, session_id: &str, info: &SessionInfo) -> Action {
    match inv.id {
        CommandId::Quit => Action::Quit,
        CommandId::Skin => Action::Skin(inv.text().unwrap_or_default().to_string()),
        CommandId::Statusbar => Action::Statusbar,
        CommandId::Prompt => Action::Compose(inv.text().unwrap_or_default().to_string()),
        CommandId::Help => Action::Print(commands::help_text(Surface::Cli)),
        CommandId::Usage => Action::Print(info.usage_now(session_id)),
        CommandId::Status => Action::Print(format!(
            "session {session_id} · {} on {}\n{}",
            info.model,
            info.provider,
            info.usage_now(session_id)
        )),
        CommandId::Model => Action::Model(inv.text().unwrap_or_default().to_string()),
        CommandId::Memory => Action::Print(info.learning.memory_text()),
        CommandId::Skills => Action::Print(info.learning.skills_text()),
        CommandId::Cron => Action::Print(info.cron_jobs()),
        CommandId::Sessions => Action::Print(info.recent_sessions()),
        CommandId::Resume => Action::Print(format!(
            "To resume a session, restart with `hermes -r {}` (this REPL stays on {session_id}).",
            inv.text().unwrap_or_default()
        )),
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
