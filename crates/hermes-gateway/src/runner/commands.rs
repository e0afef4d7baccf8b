//! Slash commands in chat (issue 7 part 6): names and help shared by the chat front ends.

/// One command the gateway serves in chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    /// `/new`, `/reset`: a fresh session for this chat.
    New,
    /// `/retry`: run the last message again.
    Retry,
    /// `/undo [N]`: remove the last N turns.
    Undo(u32),
    /// `/status`: session, model, what is running and queued.
    Status,
    /// `/usage`: tokens used in this session.
    Usage,
    /// `/model`: the model this chat uses.
    Model,
    /// `/compress [focus]`: summarize the middle of the conversation now.
    Compress(Option<String>),
    /// `/stop`: interrupt the running turn and drop queued messages.
    Stop,
    /// `/approve [session]`: run the dangerous command waiting for approval.
    Approve {
        /// `/approve session`: stop asking for this kind of command in this session.
        session: bool,
    },
    /// `/deny`: refuse it.
    Deny,
    /// `/sethome`: make this chat the platform's home channel (cron deliveries).
    SetHome,
    /// `/help`.
    Help,
    /// A `/word` the gateway does not know (passed to the agent as text).
    Unknown(String),
}

/// The command table: (name, aliases, argument hint, help line), in `/help` order.
pub const COMMANDS: &[(&str, &[&str], &str, &str)] = &[
    ("new", &["reset"], "", "start a new session"),
    ("retry", &[], "", "run the last message again"),
    ("undo", &[], "[N]", "remove the last N turns (default 1)"),
    ("status", &[], "", "session, model, running and queued work"),
    ("usage", &[], "", "tokens used in this session"),
    ("model", &[], "", "the model this chat uses"),
    ("compress", &[], "[focus]", "summarize older messages now"),
    (
        "stop",
        &[],
        "",
        "interrupt the running turn, drop queued messages",
    ),
    (
        "approve",
        &[],
        "[session]",
        "allow the command waiting for approval",
    ),
    ("deny", &[], "", "refuse the command waiting for approval"),
    (
        "sethome",
        &[],
        "",
        "make this chat the home channel for deliveries",
    ),
    ("help", &[], "", "this list"),
];

/// Parses a chat message that is a command (one line starting with `/`, the name optionally
/// followed by `@botname` as Telegram sends in groups). `None` for ordinary text.
pub fn parse_command(text: &str) -> Option<ChatCommand> {
    let trimmed = text.trim();
    let rest = trimmed.strip_prefix('/')?;
    if trimmed.contains('\n') || rest.is_empty() || rest.starts_with('/') {
        return None;
    }
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    let name = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    Some(match name.as_str() {
        "new" | "reset" => ChatCommand::New,
        "retry" => ChatCommand::Retry,
        "undo" => ChatCommand::Undo(arg.parse().unwrap_or(1).max(1)),
        "status" => ChatCommand::Status,
        "usage" => ChatCommand::Usage,
        "model" => ChatCommand::Model,
        "compress" => ChatCommand::Compress((!arg.is_empty()).then(|| arg.to_string())),
        "stop" => ChatCommand::Stop,
        "approve" | "yes" => ChatCommand::Approve {
            session: matches!(arg, "session" | "always"),
        },
        "deny" | "no" => ChatCommand::Deny,
        "sethome" => ChatCommand::SetHome,
        "help" | "start" => ChatCommand::Help,
        _ => ChatCommand::Unknown(name),
    })
}

/// The `/help` reply.
pub fn help_text() -> String {
    let mut out = String::from("Commands:\n");
    for (name, aliases, hint, help) in COMMANDS {
        let mut head = format!("/{name}");
        for a in *aliases {
            head.push_str(&format!(", /{a}"));
        }
        if !hint.is_empty() {
            head.push(' ');
            head.push_str(hint);
        }
        out.push_str(&format!("{head} — {help}\n"));
    }
    out.push_str("Anything else goes to the agent.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_with_bot_suffix_and_arguments() {
        assert_eq!(parse_command("/reset"), Some(ChatCommand::New));
        assert_eq!(
            parse_command("/undo@hermes_bot 2"),
            Some(ChatCommand::Undo(2))
        );
        assert_eq!(parse_command("/undo x"), Some(ChatCommand::Undo(1)));
        assert_eq!(
            parse_command("/compress the API"),
            Some(ChatCommand::Compress(Some("the API".into())))
        );
        assert_eq!(
            parse_command("/approve session"),
            Some(ChatCommand::Approve { session: true })
        );
        assert_eq!(
            parse_command("/frob"),
            Some(ChatCommand::Unknown("frob".into()))
        );
        assert_eq!(parse_command("see /etc/hosts"), None);
        assert_eq!(parse_command("/new\nand more"), None);
    }

    #[test]
    fn help_lists_every_command() {
        let help = help_text();
        for (name, _, _, _) in COMMANDS {
            assert!(help.contains(&format!("/{name}")), "{name}");
        }
        insta::assert_snapshot!(help);
    }
}
