//! Model-visible texts, loaded from `prompts/*.md` at compile time (CONVENTIONS, "Prompts as
//! files"), and the two small mechanisms that assemble them: `{{name}}` placeholders and
//! tool-tagged guidance lines.
//!
//! No other module writes prose that the model reads.

/// One model-visible text fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fragment {
    /// Built-in identity (also the text seeded into `SOUL.md`).
    IdentityDefault,
    /// Short identity for the compact profile.
    IdentityCompact,
    /// Tool guidance lines for the full profile (tagged, see [`render_guidance`]).
    GuidanceFull,
    /// Tool guidance lines for the compact profile (tagged).
    GuidanceCompact,
    /// Project context section; placeholders `file`, `content`.
    ContextFile,
    /// Marker replacing the middle of an over-long context file; placeholders `omitted`,
    /// `file`, `path`.
    ContextTruncated,
    /// Line saying a context file was flagged and not loaded; placeholders `file`, `category`.
    ContextBlocked,
    /// Metadata line; placeholders `date`, `model`, `provider`.
    Metadata,
    /// Memory snapshot block; placeholders `usage`, `entries`.
    MemoryBlock,
    /// User-profile snapshot block; placeholders `usage`, `entries`.
    UserBlock,
    /// Skills index block; placeholder `skills`.
    SkillsIndex,
    /// A skill loaded into a user message (`/<skill>`, `-s`); placeholders `name`, `dir`,
    /// `body`, `instruction`.
    SkillMessage,
    /// Description of the `memory` tool.
    ToolMemory,
    /// Description of the `skills_list` tool.
    ToolSkillsList,
    /// Description of the `skill_view` tool.
    ToolSkillView,
    /// Description of the `skill_manage` tool.
    ToolSkillManage,
    /// Description of the `session_search` tool.
    ToolSessionSearch,
    /// Tool-use discipline layer for model families that tend to announce work instead of
    /// doing it ([`crate::tool_use_discipline`]).
    ToolUseDiscipline,
    /// Background memory review (FEATURES §8), sent as the last user message of the fork.
    ReviewMemory,
    /// Background skill review (FEATURES §8).
    ReviewSkills,
    /// Background memory and skill review when both are due (FEATURES §8).
    ReviewCombined,
    /// Session-end review before a reset; placeholders `memory_entries`, `user_entries` (the
    /// memory files as they are on disk now).
    ReviewSessionEnd,
    /// The system-prompt layer of a `delegate_task` subagent (FEATURES §4); placeholders
    /// `goal`, `context`.
    SubagentLayer,
    /// What [`Fragment::SubagentLayer`] says when the parent gave no context.
    SubagentNoContext,
    /// Context line of one task of a batch naming the whole job; placeholder `aim`.
    SubagentPartOf,
    /// Description of the `delegate_task` tool.
    ToolDelegateTask,
}

impl Fragment {
    /// Every fragment, for tests that check all of them.
    pub const ALL: [Fragment; 26] = [
        Fragment::IdentityDefault,
        Fragment::IdentityCompact,
        Fragment::GuidanceFull,
        Fragment::GuidanceCompact,
        Fragment::ContextFile,
        Fragment::ContextTruncated,
        Fragment::ContextBlocked,
        Fragment::Metadata,
        Fragment::MemoryBlock,
        Fragment::UserBlock,
        Fragment::SkillsIndex,
        Fragment::SkillMessage,
        Fragment::ToolMemory,
        Fragment::ToolSkillsList,
        Fragment::ToolSkillView,
        Fragment::ToolSkillManage,
        Fragment::ToolSessionSearch,
        Fragment::ToolUseDiscipline,
        Fragment::ReviewMemory,
        Fragment::ReviewSkills,
        Fragment::ReviewCombined,
        Fragment::ReviewSessionEnd,
        Fragment::SubagentLayer,
        Fragment::SubagentNoContext,
        Fragment::SubagentPartOf,
        Fragment::ToolDelegateTask,
    ];

    /// The raw text of the fragment as stored in `prompts/`.
    pub fn raw(self) -> &'static str {
        match self {
            Fragment::IdentityDefault => include_str!("../prompts/identity_default.md"),
            Fragment::IdentityCompact => include_str!("../prompts/identity_compact.md"),
            Fragment::GuidanceFull => include_str!("../prompts/guidance_full.md"),
            Fragment::GuidanceCompact => include_str!("../prompts/guidance_compact.md"),
            Fragment::ContextFile => include_str!("../prompts/context_file.md"),
            Fragment::ContextTruncated => include_str!("../prompts/context_truncated.md"),
            Fragment::ContextBlocked => include_str!("../prompts/context_blocked.md"),
            Fragment::Metadata => include_str!("../prompts/metadata.md"),
            Fragment::MemoryBlock => include_str!("../prompts/memory_block.md"),
            Fragment::UserBlock => include_str!("../prompts/user_block.md"),
            Fragment::SkillsIndex => include_str!("../prompts/skills_index.md"),
            Fragment::SkillMessage => include_str!("../prompts/skill_message.md"),
            Fragment::ToolMemory => include_str!("../prompts/tool_memory.md"),
            Fragment::ToolSkillsList => include_str!("../prompts/tool_skills_list.md"),
            Fragment::ToolSkillView => include_str!("../prompts/tool_skill_view.md"),
            Fragment::ToolSkillManage => include_str!("../prompts/tool_skill_manage.md"),
            Fragment::ToolSessionSearch => include_str!("../prompts/tool_session_search.md"),
            Fragment::ToolUseDiscipline => include_str!("../prompts/tool_use_discipline.md"),
            Fragment::ReviewMemory => include_str!("../prompts/review_memory.md"),
            Fragment::ReviewSkills => include_str!("../prompts/review_skills.md"),
            Fragment::ReviewCombined => include_str!("../prompts/review_combined.md"),
            Fragment::ReviewSessionEnd => include_str!("../prompts/review_session_end.md"),
            Fragment::SubagentLayer => include_str!("../prompts/subagent_layer.md"),
            Fragment::SubagentNoContext => include_str!("../prompts/subagent_no_context.md"),
            Fragment::SubagentPartOf => include_str!("../prompts/subagent_part_of.md"),
            Fragment::ToolDelegateTask => include_str!("../prompts/tool_delegate_task.md"),
        }
    }

    /// The placeholder names the fragment uses, in order of first appearance.
    pub fn placeholders(self) -> Vec<&'static str> {
        let raw = self.raw();
        let mut names = Vec::new();
        let mut rest = raw;
        while let Some(start) = rest.find("{{") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else { break };
            let name = &after[..end];
            if !names.contains(&name) {
                names.push(name);
            }
            rest = &after[end + 2..];
        }
        names
    }

    /// Fills the `{{name}}` placeholders from `values` in one left-to-right pass, so text that
    /// is substituted in (a context file that itself contains `{{file}}`) is never expanded
    /// again. A placeholder missing from `values` is left as written.
    pub fn render(self, values: &[(&str, &str)]) -> String {
        let raw = self.raw();
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                out.push_str(&rest[start..]);
                return out;
            };
            let name = &after[..end];
            match values.iter().find(|(k, _)| *k == name) {
                Some((_, v)) => out.push_str(v),
                None => out.push_str(&rest[start..start + 2 + end + 2]),
            }
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        out
    }
}

/// Renders a tagged guidance fragment for the tools present.
///
/// Format of the fragment: groups separated by blank lines; each line starts with
/// `[tool_a,tool_b] ` and is kept when any of those tools is in `tool_names`. A line starting
/// with `#` or ending with `:` is a heading: a group whose only kept lines are headings
/// disappears, so a heading never stands alone. Returns the kept lines without their tags (groups joined
/// by one blank line), or an empty string when no tool matched.
pub fn render_guidance(fragment: Fragment, tool_names: &[String]) -> String {
    let mut groups: Vec<String> = Vec::new();
    for group in fragment.raw().split("\n\n") {
        let mut kept: Vec<&str> = Vec::new();
        let mut has_body = false;
        for line in group.lines() {
            let Some(rest) = line.strip_prefix('[') else {
                continue;
            };
            let Some((tags, text)) = rest.split_once("] ") else {
                continue;
            };
            let wanted = tags
                .split(',')
                .any(|t| tool_names.iter().any(|n| n == t.trim()));
            if wanted {
                if !text.starts_with('#') && !text.ends_with(':') {
                    has_body = true;
                }
                kept.push(text);
            }
        }
        if has_body {
            groups.push(kept.join("\n"));
        }
    }
    groups.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_render_once_without_reexpanding() {
        let out = Fragment::ContextBlocked.render(&[("file", "{{category}}"), ("category", "x")]);
        assert_eq!(
            out,
            "Project context file `{{category}}` was not loaded: the injection scan flagged it (x).\n"
        );
    }

    #[test]
    fn placeholders_match_what_the_builder_supplies() {
        let expected: [(Fragment, &[&str]); 26] = [
            (Fragment::IdentityDefault, &[]),
            (Fragment::IdentityCompact, &[]),
            (Fragment::GuidanceFull, &[]),
            (Fragment::GuidanceCompact, &[]),
            (Fragment::ContextFile, &["file", "content"]),
            (Fragment::ContextTruncated, &["omitted", "file", "path"]),
            (Fragment::ContextBlocked, &["file", "category"]),
            (Fragment::Metadata, &["date", "model", "provider"]),
            (Fragment::MemoryBlock, &["usage", "entries"]),
            (Fragment::UserBlock, &["usage", "entries"]),
            (Fragment::SkillsIndex, &["skills"]),
            (
                Fragment::SkillMessage,
                &["name", "dir", "body", "instruction"],
            ),
            (Fragment::ToolMemory, &[]),
            (Fragment::ToolSkillsList, &[]),
            (Fragment::ToolSkillView, &[]),
            (Fragment::ToolSkillManage, &[]),
            (Fragment::ToolSessionSearch, &[]),
            (Fragment::ToolUseDiscipline, &[]),
            (Fragment::ReviewMemory, &[]),
            (Fragment::ReviewSkills, &[]),
            (Fragment::ReviewCombined, &[]),
            (
                Fragment::ReviewSessionEnd,
                &["memory_entries", "user_entries"],
            ),
            (Fragment::SubagentLayer, &["goal", "context"]),
            (Fragment::SubagentNoContext, &[]),
            (Fragment::SubagentPartOf, &["aim"]),
            (Fragment::ToolDelegateTask, &[]),
        ];
        for (fragment, names) in expected {
            assert_eq!(fragment.placeholders(), names.to_vec(), "{fragment:?}");
        }
        assert_eq!(Fragment::ALL.len(), expected.len());
    }

    #[test]
    fn placeholders_are_listed() {
        assert_eq!(
            Fragment::Metadata.placeholders(),
            vec!["date", "model", "provider"]
        );
        assert!(Fragment::IdentityDefault.placeholders().is_empty());
    }

    #[test]
    fn guidance_keeps_only_present_tools() {
        let tools = vec!["read_file".to_string()];
        let g = render_guidance(Fragment::GuidanceFull, &tools);
        assert!(g.contains("read_file"));
        assert!(!g.contains("`patch`"));
        assert!(!g.contains("terminal"));
        assert!(g.starts_with("## Working with files"));
        assert_eq!(render_guidance(Fragment::GuidanceFull, &[]), "");
        let web = render_guidance(Fragment::GuidanceFull, &["web_extract".to_string()]);
        assert!(
            web.starts_with(
                "## The web
"
            ),
            "{web}"
        );
        assert!(
            web.contains("`web_extract`") && !web.contains("`web_search`"),
            "{web}"
        );
        assert!(web.contains("not instructions"), "{web}");
        assert_eq!(
            render_guidance(Fragment::GuidanceCompact, &["web_search".to_string()]),
            ""
        );
    }

    #[test]
    fn every_guidance_line_is_tagged() {
        for f in [Fragment::GuidanceFull, Fragment::GuidanceCompact] {
            for line in f.raw().lines().filter(|l| !l.trim().is_empty()) {
                assert!(
                    line.starts_with('[') && line.contains("] "),
                    "untagged line {line:?}"
                );
            }
        }
    }
}
