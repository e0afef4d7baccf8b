//! The small API front-ends use to give a session memory, skills and session search: the
//! tools ([`learning_tools`]) and the prompt layers ([`LearningLayers`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;
use hermes_store::SessionStore;
use hermes_tools::Tool;

use crate::builder::{LayerKind, PromptBuilder};
use crate::fragments::Fragment;
use crate::memory::{MemoryTool, configured_memory_provider};
use crate::session_search::SessionSearchTool;
use crate::skills::{
    IndexFilter, SkillCatalog, SkillManageTool, SkillViewTool, SkillsListTool, check_skill_name_arg,
};

/// Toolset names of the tools from [`learning_tools`]: `memory` (`memory`), `skills`
/// (`skills_list`, `skill_view`, `skill_manage`), `session_search` (`session_search`).
pub const LEARNING_TOOLSETS: [&str; 3] = ["memory", "skills", "session_search"];

/// The tools of this crate, in a fixed order: `memory`, `skills_list`, `skill_view`,
/// `skill_manage`, then `session_search` when a store is given. Register them after the
/// built-in tools; their toolsets are [`LEARNING_TOOLSETS`].
pub fn learning_tools(home: &HermesHome, store: Option<Arc<SessionStore>>) -> Vec<Arc<dyn Tool>> {
    learning_tools_with(home, store, &MemoryConfig::default())
}

/// Like [`learning_tools`] with config `memory:` applied: the char limits, only the enabled
/// files writable, and no `memory` tool at all when both files are turned off.
pub fn learning_tools_with(
    home: &HermesHome,
    store: Option<Arc<SessionStore>>,
    memory: &MemoryConfig,
) -> Vec<Arc<dyn Tool>> {
    learning_tools_configured(home, store, memory, &BTreeSet::new())
}

/// Like [`learning_tools_with`], with the skills in `disabled_skills` (`skills.disabled`
/// united with the platform's `skills.platform_disabled`,
/// `hermes_protocol::config::SkillsConfig::disabled_for`) left out of `skills_list` and
/// refused by `skill_view`. The `memory` tool writes through the provider `memory.provider`
/// chooses ([`configured_memory_provider`]); one naming an external provider hermes does not
/// implement is logged as a warning here, and the built-in files serve.
pub fn learning_tools_configured(
    home: &HermesHome,
    store: Option<Arc<SessionStore>>,
    memory: &MemoryConfig,
    disabled_skills: &BTreeSet<String>,
) -> Vec<Arc<dyn Tool>> {
    let skills = home.skills_dir();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    if memory.memory_enabled || memory.user_profile_enabled {
        if let Some(warning) = memory.provider_warning() {
            tracing::warn!(target: "hermes::memory", "{warning}");
        }
        tools.push(Arc::new(
            MemoryTool::with_provider(configured_memory_provider(home, memory))
                .with_targets(memory.memory_enabled, memory.user_profile_enabled),
        ));
    }
    tools.push(Arc::new(
        SkillsListTool::new(skills.clone()).with_disabled(disabled_skills.clone()),
    ));
    tools.push(Arc::new(
        SkillViewTool::new(skills.clone()).with_disabled(disabled_skills.clone()),
    ));
    tools.push(Arc::new(SkillManageTool::new(skills)));
    if let Some(store) = store {
        tools.push(Arc::new(SessionSearchTool::new(store)));
    }
    tools
}

/// The memory, user-profile and skills-index layers of one session's prompt, read once at
/// session start (the frozen snapshot of FEATURES §6).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LearningLayers {
    /// The `MEMORY.md` block, when the `memory` tool is present and memory is not empty.
    pub memory: Option<String>,
    /// The `USER.md` block, same conditions.
    pub user: Option<String>,
    /// The skills index, when a skill tool is present and a skill is visible.
    pub skills_index: Option<String>,
    /// Notes for logs: skipped skills, entries left out.
    pub notes: Vec<String>,
}

impl LearningLayers {
    /// Reads memory and the skills catalog (disk snapshot) of `home` for a session whose tools
    /// and toolsets are in `filter`. Layers of absent tools stay `None`. Blocking I/O.
    pub fn load(home: &HermesHome, filter: &IndexFilter<'_>) -> LearningLayers {
        LearningLayers::load_with(home, filter, &MemoryConfig::default())
    }

    /// Like [`LearningLayers::load`] with config `memory:` applied: the char limits shown in
    /// the usage line, and no block for a file that is turned off.
    pub fn load_with(
        home: &HermesHome,
        filter: &IndexFilter<'_>,
        memory: &MemoryConfig,
    ) -> LearningLayers {
        LearningLayers::load_configured(home, filter, memory, &BTreeSet::new())
    }

    /// Like [`LearningLayers::load_with`], with the skills in `disabled_skills` left out of
    /// the index (`skills.disabled`, see [`learning_tools_configured`]).
    pub fn load_configured(
        home: &HermesHome,
        filter: &IndexFilter<'_>,
        memory: &MemoryConfig,
        disabled_skills: &BTreeSet<String>,
    ) -> LearningLayers {
        let mut layers = LearningLayers::default();
        if filter.tool_names.iter().any(|t| t == "memory") {
            let snap = configured_memory_provider(home, memory).snapshot();
            if memory.memory_enabled {
                layers.memory = snap.memory_block();
            }
            if memory.user_profile_enabled {
                layers.user = snap.user_block();
            }
            layers.notes.extend(snap.notes);
        }
        if filter
            .tool_names
            .iter()
            .any(|t| t == "skill_view" || t == "skills_list")
        {
            let catalog = SkillCatalog::load_cached(&home.skills_dir()).without(disabled_skills);
            layers.skills_index = catalog.render_index(filter);
            layers.notes.extend(
                catalog
                    .errors
                    .iter()
                    .map(|e| format!("skill skipped: {}: {}", e.path.display(), e.message)),
            );
        }
        layers
    }

    /// Adds the layers to `builder` in their prompt positions.
    pub fn apply<'a>(&self, mut builder: PromptBuilder<'a>) -> PromptBuilder<'a> {
        for (kind, text) in [
            (LayerKind::Memory, &self.memory),
            (LayerKind::UserProfile, &self.user),
            (LayerKind::SkillsIndex, &self.skills_index),
        ] {
            if let Some(text) = text {
                builder = builder.with_layer(kind, text.clone());
            }
        }
        builder
    }
}

/// The user message for `/<skill-name> [instruction]` or `-s <skill>`: the skill's `SKILL.md`
/// body with a short header, then the instruction (FEATURES §7).
///
/// # Errors
/// Text for the user when the name is invalid or no such skill exists.
pub fn skill_invocation_message(
    home: &HermesHome,
    name: &str,
    instruction: &str,
) -> Result<String, String> {
    check_skill_name_arg(name)?;
    let catalog = SkillCatalog::load_cached(&home.skills_dir());
    let skill = catalog
        .find(name)
        .ok_or_else(|| format!("no skill named {name:?}"))?;
    let text = std::fs::read_to_string(skill.dir.join("SKILL.md")).map_err(|e| e.to_string())?;
    let body = crate::skills::parse_skill_md(&text)
        .map(|p| p.body)
        .map_err(|e| e.to_string())?;
    let dir = skill.dir.display().to_string();
    Ok(Fragment::SkillMessage
        .render(&[
            ("name", skill.name.as_str()),
            ("dir", dir.as_str()),
            ("body", body.trim()),
            ("instruction", instruction.trim()),
        ])
        .trim()
        .to_string())
}
