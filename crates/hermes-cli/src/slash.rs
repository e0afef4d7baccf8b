//! REPL slash commands (FEATURES §1 CLI; the subset this build serves).

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/new`, `/reset`
    New,
    /// `/retry`
    Retry,
    /// `/undo [N]`
    Undo(u32),
    /// `/sessions`
    Sessions,
    /// `/resume <id|title>`
    Resume(String),
    /// `/usage`
    Usage,
    /// `/model [[PROVIDER] MODEL]`: show or switch the model for the following turns
    Model(String),
    /// `/cron`: list scheduled jobs
    Cron,
    /// `/compress [focus]`: summarize the middle of the conversation now
    Compress(Option<String>),
    /// `/memory`: entries and usage
    Memory,
    /// `/skills`: installed skills
    Skills,
    /// `/skin [name]`: list skins or switch to one
    Skin(String),
    /// `/statusbar`: show or hide the status line
    Statusbar,
    /// `/help`
    Help,
    /// `/quit`, `/exit`
    Quit,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// Every command name the REPL answers (aliases included), for Tab completion. `model` is
/// offered for the provider's model names; `prompt` is served by the REPL itself
/// (`crate::input::compose_in_editor`).
pub const COMMAND_NAMES: &[&str] = &[
    "new",
    "reset",
    "retry",
    "undo",
    "sessions",
    "resume",
    "usage",
    "cron",
    "compress",
    "memory",
    "skills",
    "model",
    "prompt",
    "skin",
    "statusbar",
    "help",
    "quit",
    "exit",
];

/// Parses `input` when it is a slash command (a single line starting with `/`).
pub fn parse_slash(input: &str) -> Option<SlashCommand> {
    let trimmed = input.trim();
    let rest = trimmed.strip_prefix('/')?;
    if trimmed.contains('\n') || rest.starts_with('/') || rest.is_empty() {
        return None;
    }
    let (name, arg) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (rest, ""),
    };
    Some(match name {
        "new" | "reset" => SlashCommand::New,
        "retry" => SlashCommand::Retry,
        "undo" => SlashCommand::Undo(arg.parse().unwrap_or(1).max(1)),
        "sessions" => SlashCommand::Sessions,
        "resume" => SlashCommand::Resume(arg.to_string()),
        "usage" => SlashCommand::Usage,
        "model" => SlashCommand::Model(arg.to_string()),
        "cron" => SlashCommand::Cron,
        "compress" => SlashCommand::Compress((!arg.is_empty()).then(|| arg.to_string())),
        "memory" => SlashCommand::Memory,
        "skills" => SlashCommand::Skills,
        "skin" => SlashCommand::Skin(arg.to_string()),
        "statusbar" | "sb" => SlashCommand::Statusbar,
        "help" | "?" => SlashCommand::Help,
        "quit" | "exit" | "q" => SlashCommand::Quit,
        other => SlashCommand::Unknown(other.to_string()),
    })
}

/// The `/help` text.
pub fn help_text() -> &'static str {
    "Commands:
  /new, /reset     start a new session
  /retry           run the last message again
  /undo [N]        remove the last N turns (default 1)
  /sessions        recent sessions
  /resume <id>     switch to a stored session (id, title or id prefix)
  /usage           tokens used in this session
  /model [P] [M]   show the model, or switch model (and provider) for the next turns
  /cron            scheduled jobs (manage them with `hermes cron …`)
  /compress [focus] summarize older messages now (optionally what to keep in focus)
  /memory          memory entries and usage
  /skills          installed skills
  /skin [name]     list skins, or switch to one
  /statusbar       show or hide the status line after answers
  /prompt [text]   write the message in $EDITOR, then send it
  /<skill> [text]  load a skill into this message
  /help            this list
  /quit            leave (also Ctrl-D, or Ctrl-C twice)
Input: end a line with \\ to continue on the next line; Alt-Enter inserts a newline;
Tab completes commands, skills, /model names and file paths; Ctrl-R searches the history.
Ctrl-C while the agent works interrupts the turn."
}

/// The text after the command name of a slash command (`/deploy-app to staging` → `to staging`);
/// empty when there is none.
pub fn slash_arg(input: &str) -> &str {
    let rest = input.trim().strip_prefix('/').unwrap_or_default();
    rest.split_once(char::is_whitespace)
        .map_or("", |(_, arg)| arg.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_leaves_paths_alone() {
        assert_eq!(parse_slash("/undo 3"), Some(SlashCommand::Undo(3)));
        assert_eq!(parse_slash("/undo"), Some(SlashCommand::Undo(1)));
        assert_eq!(parse_slash("/reset"), Some(SlashCommand::New));
        assert_eq!(parse_slash("/cron"), Some(SlashCommand::Cron));
        assert_eq!(parse_slash("/compress"), Some(SlashCommand::Compress(None)));
        assert_eq!(
            parse_slash("/compress the API design"),
            Some(SlashCommand::Compress(Some("the API design".into())))
        );
        assert_eq!(
            parse_slash("/frob"),
            Some(SlashCommand::Unknown("frob".into()))
        );
        assert_eq!(parse_slash("what is /etc/hosts"), None);
        assert_eq!(parse_slash("//comment"), None);
        assert_eq!(parse_slash("/new\nmore"), None);
    }

    #[test]
    fn memory_skills_and_skill_arguments() {
        assert_eq!(parse_slash("/memory"), Some(SlashCommand::Memory));
        assert_eq!(parse_slash("/skills"), Some(SlashCommand::Skills));
        assert_eq!(
            parse_slash("/skin"),
            Some(SlashCommand::Skin(String::new()))
        );
        assert_eq!(
            parse_slash("/skin mono"),
            Some(SlashCommand::Skin("mono".into()))
        );
        assert_eq!(parse_slash("/statusbar"), Some(SlashCommand::Statusbar));
        assert_eq!(slash_arg("/deploy-app  to staging "), "to staging");
        assert_eq!(slash_arg("/deploy-app"), "");
    }
}
