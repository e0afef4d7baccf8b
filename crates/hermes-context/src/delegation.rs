//! The model-visible texts of `delegate_task` (FEATURES §4): the tool's description and the
//! system-prompt layer of a subagent. The agent crate runs the subagents; it places
//! [`subagent_layer`] as the caller's system message of the child's [`crate::PromptBuilder`]
//! (the child gets no memory, user-profile or skills-index layers).

use crate::fragments::Fragment;

/// Description of the `delegate_task` tool shown to the model.
pub fn delegate_task_description() -> &'static str {
    Fragment::ToolDelegateTask.raw().trim()
}

/// The context line of one task of a batch that names the whole job (`aim`, the batch's
/// top-level goal).
pub fn subagent_part_of(aim: &str) -> String {
    Fragment::SubagentPartOf
        .render(&[("aim", aim.trim())])
        .trim()
        .to_string()
}

/// The subagent's layer: who it works for, its `goal`, the `context` pieces the parent
/// gave (blank ones skipped, the rest joined by blank lines; a fixed line when none is
/// left), and how to finish — one concise summary with the paths, commands and results the
/// parent needs.
pub fn subagent_layer(goal: &str, context: &[&str]) -> String {
    let pieces: Vec<&str> = context
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .collect();
    let context = if pieces.is_empty() {
        Fragment::SubagentNoContext.raw().trim().to_string()
    } else {
        pieces.join("\n\n")
    };
    Fragment::SubagentLayer
        .render(&[("goal", goal.trim()), ("context", &context)])
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_carries_goal_and_context_or_says_there_is_none() {
        let part = subagent_part_of("ship release 2.1");
        let text = subagent_layer(
            "  Find the flaky test ",
            &["CI runs `cargo test -p x`", " ", &part],
        );
        assert!(text.contains("Find the flaky test\n"), "{text}");
        assert!(
            text.contains("CI runs `cargo test -p x`\n\nThis task is one of several"),
            "{text}"
        );
        assert!(text.contains("ship release 2.1"), "{text}");
        assert!(!text.contains("{{"), "{text}");
        let bare = subagent_layer("Count the files", &["   "]);
        assert!(
            bare.contains(Fragment::SubagentNoContext.raw().trim()),
            "{bare}"
        );
        assert!(delegate_task_description().contains("tasks"));
    }
}
