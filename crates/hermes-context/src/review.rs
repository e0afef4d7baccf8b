//! The texts and rules of the learning loop's reviews (FEATURES §8; seeds 002 §6–7): which
//! review is due, the message that asks the forked agent for it, the tools it may use, and
//! the tool-use discipline layer for model families that need it (FEATURES §5). The agent
//! runs the reviews; this module only says what they contain.

use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;

use crate::fragments::Fragment;
use crate::memory::{ENTRY_DELIMITER, configured_memory_provider};

/// The tools a review may run (FEATURES §8: "only memory and skill tools"). Every other call
/// of the forked agent is refused without running.
pub const REVIEW_TOOLS: [&str; 4] = ["memory", "skills_list", "skill_view", "skill_manage"];

/// The answer the review prompts ask for when nothing is worth saving (FEATURES §8).
pub const NOTHING_TO_SAVE: &str = "Nothing to save.";

/// Most model calls one review may make (FEATURES §8: "at most 8 iterations").
pub const REVIEW_MAX_ITERATIONS: u32 = 8;

/// Which review the forked agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// Memory review: due every `memory.nudge_interval` user turns.
    Memory,
    /// Skill review: due every `skills.creation_nudge_interval` tool-calling iterations.
    Skills,
    /// Both were due after the same turn.
    Combined,
    /// The final review before a session is reset (`/new`, gateway idle/daily reset).
    SessionEnd,
}

impl ReviewKind {
    /// The periodic review for what is due, or `None` when neither is.
    pub fn due(memory: bool, skills: bool) -> Option<ReviewKind> {
        match (memory, skills) {
            (true, true) => Some(ReviewKind::Combined),
            (true, false) => Some(ReviewKind::Memory),
            (false, true) => Some(ReviewKind::Skills),
            (false, false) => None,
        }
    }

    /// `memory`, `skills`, `combined` or `session_end` (for logs and hook data).
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewKind::Memory => "memory",
            ReviewKind::Skills => "skills",
            ReviewKind::Combined => "combined",
            ReviewKind::SessionEnd => "session_end",
        }
    }

    /// The user message that asks for this review, appended after the conversation. The
    /// session-end review shows both memory files as they are on disk now (read from
    /// `home` with `memory`'s file switches), so an old session never undoes newer entries.
    /// Blocking I/O for [`ReviewKind::SessionEnd`].
    pub fn prompt(self, home: &HermesHome, memory: &MemoryConfig) -> String {
        let text = match self {
            ReviewKind::Memory => Fragment::ReviewMemory.raw().to_string(),
            ReviewKind::Skills => Fragment::ReviewSkills.raw().to_string(),
            ReviewKind::Combined => Fragment::ReviewCombined.raw().to_string(),
            ReviewKind::SessionEnd => {
                let live = configured_memory_provider(home, memory).snapshot();
                let show = |entries: &[String], enabled: bool| {
                    if !enabled {
                        "(turned off)".to_string()
                    } else if entries.is_empty() {
                        "(empty)".to_string()
                    } else {
                        entries.join(ENTRY_DELIMITER)
                    }
                };
                let mem = show(&live.memory, memory.memory_enabled);
                let user = show(&live.user, memory.user_profile_enabled);
                Fragment::ReviewSessionEnd.render(&[
                    ("memory_entries", mem.as_str()),
                    ("user_entries", user.as_str()),
                ])
            }
        };
        text.trim().to_string()
    }
}

/// Substrings of model names that get the tool-use discipline layer when
/// `agent.tool_use_enforcement` is `auto`: the GPT and Codex families, which Hermes singles
/// out for announcing work instead of doing it (seeds 002, "工具执行纪律").
pub const DISCIPLINE_MODEL_FAMILIES: [&str; 2] = ["gpt", "codex"];

/// The tool-use discipline layer ([`crate::LayerKind::ToolUseDiscipline`]) for `model`, or
/// `None` when the model does not need it or no tool is offered. `setting` is
/// `agent.tool_use_enforcement`: `None`/`"auto"` decides by [`DISCIPLINE_MODEL_FAMILIES`]
/// (case-insensitive substring of the model name, provider prefix included), `"true"`/
/// `"always"` and `"false"`/`"never"` force it on or off, anything else is a comma-separated
/// list of model-name substrings that replaces the default families.
pub fn tool_use_discipline(
    model: &str,
    setting: Option<&str>,
    tool_names: &[String],
) -> Option<String> {
    if tool_names.is_empty() {
        return None;
    }
    let m = model.to_ascii_lowercase();
    let on = match setting.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Some("true" | "always" | "on" | "yes") => true,
        Some("false" | "never" | "off" | "no") => false,
        None | Some("" | "auto") => DISCIPLINE_MODEL_FAMILIES.iter().any(|f| m.contains(f)),
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .any(|f| m.contains(f)),
    };
    on.then(|| Fragment::ToolUseDiscipline.raw().trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_picks_the_combined_review_when_both_are_due() {
        assert_eq!(ReviewKind::due(true, true), Some(ReviewKind::Combined));
        assert_eq!(ReviewKind::due(true, false), Some(ReviewKind::Memory));
        assert_eq!(ReviewKind::due(false, true), Some(ReviewKind::Skills));
        assert_eq!(ReviewKind::due(false, false), None);
    }

    #[test]
    fn every_review_prompt_asks_for_the_nothing_to_save_answer() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path().to_path_buf());
        for kind in [
            ReviewKind::Memory,
            ReviewKind::Skills,
            ReviewKind::Combined,
            ReviewKind::SessionEnd,
        ] {
            let text = kind.prompt(&home, &MemoryConfig::default());
            assert!(text.contains(NOTHING_TO_SAVE), "{kind:?}: {text}");
            assert!(!text.contains("{{"), "{kind:?}: {text}");
        }
    }

    #[test]
    fn session_end_prompt_shows_live_memory() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path().to_path_buf());
        std::fs::create_dir_all(home.memories_dir()).unwrap();
        std::fs::write(home.memories_dir().join("MEMORY.md"), "Repo uses nextest").unwrap();
        let text = ReviewKind::SessionEnd.prompt(&home, &MemoryConfig::default());
        assert!(
            text.contains("MEMORY.md (your notes):\nRepo uses nextest"),
            "{text}"
        );
        assert!(
            text.contains("USER.md (the user profile):\n(empty)"),
            "{text}"
        );
        let off = MemoryConfig {
            user_profile_enabled: false,
            ..MemoryConfig::default()
        };
        let text = ReviewKind::SessionEnd.prompt(&home, &off);
        assert!(
            text.contains("USER.md (the user profile):\n(turned off)"),
            "{text}"
        );
    }

    #[test]
    fn discipline_applies_to_gpt_and_codex_by_default() {
        let tools = vec!["terminal".to_string()];
        assert!(tool_use_discipline("gpt-4o", None, &tools).is_some());
        assert!(tool_use_discipline("openai/GPT-5", Some("auto"), &tools).is_some());
        assert!(tool_use_discipline("gpt-5-codex", None, &tools).is_some());
        assert!(tool_use_discipline("anthropic/claude-sonnet-4", None, &tools).is_none());
        assert!(tool_use_discipline("claude-sonnet-4", Some("true"), &tools).is_some());
        assert!(tool_use_discipline("gpt-4o", Some("never"), &tools).is_none());
        assert!(tool_use_discipline("gpt-4o", None, &[]).is_none());
        assert!(tool_use_discipline("gemini-2.5-pro", Some("gemini, grok"), &tools).is_some());
        assert!(tool_use_discipline("gpt-4o", Some("gemini,grok"), &tools).is_none());
    }
}
