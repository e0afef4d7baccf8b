//! Slash commands in chat (issue 7 item 6). Names, aliases, arguments and `/help` come from
//! the registry shared with the REPL ([`hermes_agent::commands`], surface
//! [`Surface::Gateway`]); this module decides what an inbound text is.

use hermes_agent::commands::{self, Invocation, Parsed, Surface};
use hermes_protocol::HermesHome;

/// What an authorized inbound text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatInput {
    /// Ordinary text for the agent (including a `/<skill>` message, already expanded).
    Text(String),
    /// A registry command the gateway serves.
    Command(Invocation),
    /// Answer this directly; nothing reaches the agent (an unknown command, a bad argument,
    /// a terminal-only command, a skill that failed to load).
    Reply(String),
}

/// Classifies `text`: a gateway command, a `/<skill> [instruction]` (expanded to the skill's
/// message from `HERMES_HOME/skills`), an unknown or misused command (a clear reply), or text.
/// Blocking file I/O for skill names; call from a blocking context.
pub fn classify(home: &HermesHome, text: &str) -> ChatInput {
    match commands::parse(text, Surface::Gateway) {
        None => ChatInput::Text(text.to_string()),
        Some(Parsed::Command(inv)) => ChatInput::Command(inv),
        Some(Parsed::Invalid(e)) => ChatInput::Reply(e.to_string()),
        Some(Parsed::Unknown { name, arg }) => {
            let catalog = hermes_context::skills::SkillCatalog::load_cached(&home.skills_dir());
            if catalog.find(&name).is_none() {
                return ChatInput::Reply(commands::unknown_message(&name));
            }
            match hermes_context::skill_invocation_message(home, &name, &arg) {
                Ok(message) => ChatInput::Text(message),
                Err(e) => ChatInput::Reply(format!("/{name}: {e}")),
            }
        }
    }
}

/// The gateway's `/help` reply.
pub fn help_text() -> String {
    commands::help_text(Surface::Gateway)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_agent::commands::CommandId;

    #[test]
    fn commands_skills_unknown_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path().to_path_buf());
        let skill = home.skills_dir().join("deploy-app");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: deploy-app\ndescription: Ship it\n---\nRun the deploy script.\n",
        )
        .unwrap();
        match classify(&home, "/undo@hermes_bot 2") {
            ChatInput::Command(inv) => assert_eq!((inv.id, inv.count()), (CommandId::Undo, 2)),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            classify(&home, "see /etc/hosts"),
            ChatInput::Text("see /etc/hosts".into())
        );
        assert_eq!(
            classify(&home, "/frob"),
            ChatInput::Reply("Unknown command /frob. /help lists the commands.".into())
        );
        assert!(matches!(classify(&home, "/quit"), ChatInput::Reply(r) if r.contains("terminal")));
        match classify(&home, "/deploy-app to staging") {
            ChatInput::Text(t) => {
                assert!(t.contains("Run the deploy script."), "{t}");
                assert!(t.contains("to staging"), "{t}");
            }
            other => panic!("{other:?}"),
        }
    }
}
