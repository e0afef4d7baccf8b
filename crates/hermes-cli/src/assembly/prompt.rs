//! The CLI's system prompt source: `hermes-context`'s [`PromptBuilder`] with this machine's
//! home, working directory and today's local date (FEATURES §5), with the tool-use discipline
//! layer for the model families that need it.

use std::path::PathBuf;

use hermes_agent::SystemPromptSource;
use hermes_context::skills::{IndexFilter, current_platform};
use hermes_context::{
    LayerKind, LearningLayers, PromptBuilder, PromptInputs, PromptProfile, ensure_soul,
    tool_use_discipline,
};
use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;

/// Builds session prompts for the CLI.
#[derive(Clone)]
pub struct CliPrompt {
    home: HermesHome,
    cwd: PathBuf,
    profile: PromptProfile,
    context_window: Option<u64>,
    toolsets: Vec<String>,
    memory: MemoryConfig,
    tool_use_enforcement: Option<String>,
    disabled_skills: std::collections::BTreeSet<String>,
}

impl CliPrompt {
    /// A source for `home`/`cwd`; `compact` selects the small-window profile; `toolsets`
    /// are the enabled toolset names (they filter the skills index).
    pub fn new(
        home: HermesHome,
        cwd: PathBuf,
        compact: bool,
        context_window: Option<u64>,
        toolsets: Vec<String>,
    ) -> CliPrompt {
        CliPrompt {
            toolsets,
            memory: MemoryConfig::default(),
            tool_use_enforcement: None,
            disabled_skills: Default::default(),
            home,
            cwd,
            profile: if compact {
                PromptProfile::Compact
            } else {
                PromptProfile::Full
            },
            context_window,
        }
    }
}

impl CliPrompt {
    /// The same source for another working directory (its context files, `AGENTS.md` and
    /// the like, are read there): an ACP session's `cwd`.
    pub fn for_cwd(&self, cwd: PathBuf) -> CliPrompt {
        CliPrompt {
            cwd,
            ..self.clone()
        }
    }

    /// The same source with config `memory:` applied (limits, files turned off).
    pub fn with_memory(mut self, memory: MemoryConfig) -> CliPrompt {
        self.memory = memory;
        self
    }

    /// The same source with these skills left out of the index (`skills.disabled` and
    /// `skills.platform_disabled`).
    pub fn with_disabled_skills(mut self, names: std::collections::BTreeSet<String>) -> CliPrompt {
        self.disabled_skills = names;
        self
    }

    /// The same source with `agent.tool_use_enforcement` applied (`auto`, `true`, `false` or
    /// model-name substrings; see [`hermes_context::tool_use_discipline`]).
    pub fn with_tool_use_enforcement(mut self, setting: Option<String>) -> CliPrompt {
        self.tool_use_enforcement = setting;
        self
    }
}

impl CliPrompt {
    /// The prompt a session on `model`/`provider` with `tool_names` would get, section by
    /// section (what `hermes prompt-size` measures; [`SystemPromptSource::build`] returns
    /// its text).
    pub fn built(
        &self,
        model: &str,
        provider: &str,
        tool_names: &[String],
    ) -> hermes_context::BuiltPrompt {
        self.built_on(
            chrono::Local::now().date_naive(),
            model,
            provider,
            tool_names,
        )
    }

    /// [`CliPrompt::built`] with the metadata line's date set to `date` instead of today
    /// (`hermes debug prompt --session` rebuilds a session's prompt as of its start).
    pub fn built_on(
        &self,
        date: chrono::NaiveDate,
        model: &str,
        provider: &str,
        tool_names: &[String],
    ) -> hermes_context::BuiltPrompt {
        if let Err(e) = ensure_soul(&self.home) {
            tracing::warn!(error = %e, "could not seed SOUL.md; using the built-in identity");
        }
        // Memory and the skills index as they are now: a frozen snapshot for this session.
        let layers = LearningLayers::load_configured(
            &self.home,
            &IndexFilter {
                platform: current_platform(),
                tool_names,
                toolsets: &self.toolsets,
            },
            &self.memory,
            &self.disabled_skills,
        );
        for note in &layers.notes {
            tracing::info!("{note}");
        }
        let builder = PromptBuilder::new(PromptInputs {
            home: &self.home,
            cwd: &self.cwd,
            tool_names,
            model,
            provider,
            date,
            profile: self.profile,
            context_window: self.context_window,
            extra_system: None,
            load_context_files: true,
        });
        let mut builder = layers.apply(builder);
        if let Some(layer) =
            tool_use_discipline(model, self.tool_use_enforcement.as_deref(), tool_names)
        {
            builder = builder.with_layer(LayerKind::ToolUseDiscipline, layer);
        }
        let built = builder.build();
        for note in &built.notes {
            tracing::info!("{note}");
        }
        built
    }
}

impl SystemPromptSource for CliPrompt {
    fn build(&self, model: &str, provider: &str, tool_names: &[String]) -> String {
        self.built(model, provider, tool_names).text
    }
}
